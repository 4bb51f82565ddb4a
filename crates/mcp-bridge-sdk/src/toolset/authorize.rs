//! Who may use a server's tools: the scopes a caller's token must grant,
//! by glob over the server's own tool names (`"authorize": {"delete_*":
//! ["admin"]}` beside a server's entry). A gateway applies them to its
//! lists and calls alike. No I/O here.

use super::exposure::BadGlob;

/// The scopes a server's tools need, each rule a glob and its scopes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolScopes(Vec<(glob::Pattern, Vec<String>)>);

impl ToolScopes {
    /// Rules of `(glob, scopes)`.
    ///
    /// # Errors
    /// The first glob that is not valid.
    pub fn new<I, S>(rules: I) -> Result<Self, BadGlob>
    where
        I: IntoIterator<Item = (S, Vec<String>)>,
        S: AsRef<str>,
    {
        let compile = |(glob, scopes): (S, Vec<String>)| {
            let glob = glob.as_ref();
            let pattern =
                glob::Pattern::new(glob).map_err(|e| BadGlob { glob: glob.to_owned(), reason: e.msg.to_owned() })?;
            Ok((pattern, scopes))
        };
        rules.into_iter().map(compile).collect::<Result<_, _>>().map(ToolScopes)
    }

    /// The scopes the tool `name` (the server's own name) needs: those of
    /// every rule whose glob matches it, each once; none when no rule does.
    pub fn of(&self, name: &str) -> Vec<String> {
        unique(self.0.iter().filter(|(glob, _)| glob.matches(name)).flat_map(|(_, scopes)| scopes))
    }

    /// Every scope a rule of `rules` names, each once: what an endpoint's
    /// metadata lists as supported.
    pub fn union<'a>(rules: impl IntoIterator<Item = &'a ToolScopes>) -> Vec<String> {
        unique(rules.into_iter().flat_map(|r| &r.0).flat_map(|(_, scopes)| scopes))
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `scopes` in their first order, each once.
fn unique<'a>(scopes: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut once: Vec<String> = Vec::new();
    for scope in scopes {
        if !once.contains(scope) {
            once.push(scope.clone());
        }
    }
    once
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_needs_the_scopes_of_every_rule_that_matches_it() {
        let rules = ToolScopes::new([
            ("delete_*", vec!["admin".to_owned()]),
            ("*", vec!["use".to_owned()]),
            ("delete_all", vec!["admin".to_owned(), "danger".to_owned()]),
        ])
        .unwrap();
        assert_eq!(rules.of("read"), ["use"]);
        assert_eq!(rules.of("delete_all"), ["admin", "use", "danger"]);
        let other = ToolScopes::new([("*", vec!["use".to_owned(), "read".to_owned()])]).unwrap();
        assert_eq!(ToolScopes::union([&rules, &other]), ["admin", "use", "danger", "read"]);
        assert!(ToolScopes::default().of("read").is_empty());
        let bad = ToolScopes::new([("[oops", Vec::new())]).unwrap_err();
        assert_eq!(bad.glob, "[oops");
    }
}
