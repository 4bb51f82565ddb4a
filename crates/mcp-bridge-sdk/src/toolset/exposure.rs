//! What of a server a toolset shows, and under which names: allow and deny
//! globs for its tools, prompts and resources, renames, and whether its
//! names take the server's prefix. No I/O here.

use std::collections::BTreeMap;

/// Whether a server's tool and prompt names take the `<server>__` prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Prefix {
    /// Always `<server>__<name>`.
    #[default]
    Always,
    /// The server's own names. Two servers that both show one name: the
    /// first keeps it, the other's entry is left out and the collision is
    /// reported ([`Toolset::collisions`](super::Toolset::collisions)).
    Never,
    /// The server's own names, but `<server>__<name>` for a name another
    /// server shows too.
    OnCollision,
}

/// Which names pass: those an `allow` glob matches (every name when there
/// is none) that no `deny` glob matches. Globs take `*`, `?` and `[...]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFilter {
    allow: Vec<glob::Pattern>,
    deny: Vec<glob::Pattern>,
}

/// A glob that is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the glob {glob:?} is not valid: {reason}")]
pub struct BadGlob {
    /// The glob as written.
    pub glob: String,
    /// What is wrong with it.
    pub reason: String,
}

impl NameFilter {
    /// A filter of these globs.
    ///
    /// # Errors
    /// The first glob that is not valid.
    pub fn new<S: AsRef<str>>(allow: &[S], deny: &[S]) -> Result<Self, BadGlob> {
        let compile = |globs: &[S]| -> Result<Vec<glob::Pattern>, BadGlob> {
            globs
                .iter()
                .map(|g| {
                    glob::Pattern::new(g.as_ref())
                        .map_err(|e| BadGlob { glob: g.as_ref().to_owned(), reason: e.msg.to_owned() })
                })
                .collect()
        };
        Ok(NameFilter { allow: compile(allow)?, deny: compile(deny)? })
    }

    /// Whether `name` passes.
    pub fn admits(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| p.matches(name)))
            && !self.deny.iter().any(|p| p.matches(name))
    }
}

/// Names some globs match; none match when there is no glob.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Globs(Vec<glob::Pattern>);

impl Globs {
    /// These globs.
    ///
    /// # Errors
    /// The first glob that is not valid.
    pub fn new<S: AsRef<str>>(globs: &[S]) -> Result<Self, BadGlob> {
        let filter = NameFilter::new(globs, &[])?;
        Ok(Globs(filter.allow))
    }

    /// Whether a glob matches `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.0.iter().any(|p| p.matches(name))
    }
}

/// What a toolset shows of one server: [`Exposure::default`] shows all of
/// it, prefixed; then the `with_*` setters. Filters and renames take the
/// server's own names (a resource's URI).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exposure {
    /// Its tools, by their names on the server.
    pub tools: NameFilter,
    /// Its prompts, by their names on the server.
    pub prompts: NameFilter,
    /// Its resources, by URI.
    pub resources: NameFilter,
    /// Whether its tool and prompt names take its prefix.
    pub prefix: Prefix,
    /// New names of tools and prompts, by their names on the server.
    pub rename: BTreeMap<String, String>,
}

crate::setters::with_setters! {
    Exposure {
        value with_tools => tools: NameFilter,
        value with_prompts => prompts: NameFilter,
        value with_resources => resources: NameFilter,
        value with_prefix => prefix: Prefix,
        value with_rename => rename: BTreeMap<String, String>,
    }
}

impl Exposure {
    /// The name `name` of the server takes before any prefix.
    pub(crate) fn renamed<'a>(&'a self, name: &'a str) -> &'a str {
        self.rename.get(name).map_or(name, String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_then_deny() {
        let all = NameFilter::default();
        assert!(all.admits("anything"));
        let filter = NameFilter::new(&["read_*", "list"], &["read_secret*"]).unwrap();
        assert!(filter.admits("read_file") && filter.admits("list"));
        assert!(!filter.admits("write_file") && !filter.admits("read_secrets"));
        let deny_only = NameFilter::new::<&str>(&[], &["delete_*"]).unwrap();
        assert!(deny_only.admits("read") && !deny_only.admits("delete_all"));
        let bad = NameFilter::new(&["[unclosed"], &[]).unwrap_err();
        assert_eq!(bad.glob, "[unclosed");
    }

    #[test]
    fn prefix_modes_are_written_as_in_the_file() {
        let modes: Vec<Prefix> = serde_json::from_str(r#"["always", "never", "on-collision"]"#).unwrap();
        assert_eq!(modes, [Prefix::Always, Prefix::Never, Prefix::OnCollision]);
    }
}
