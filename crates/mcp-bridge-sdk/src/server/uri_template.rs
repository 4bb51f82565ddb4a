//! Matching a URI against an RFC 6570 level-1 template (`note://{name}`):
//! enough for resource templates, where the server must find which template
//! a `resources/read` URI belongs to.

use std::collections::BTreeMap;

/// The variables of `uri` under `template`, or `None` when it does not
/// match. A variable matches one or more characters up to the next literal
/// part of the template; the last variable takes the rest, `/` excluded.
pub(crate) fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut rest = uri;
    let mut tpl = template;
    while !tpl.is_empty() {
        match tpl.find('{') {
            Some(0) => {
                let close = tpl.find('}')?;
                let name = &tpl[1..close];
                tpl = &tpl[close + 1..];
                let literal_end = tpl.find('{').unwrap_or(tpl.len());
                let next_literal = &tpl[..literal_end];
                let value_len = if next_literal.is_empty() {
                    if tpl.is_empty() { rest.find('/').unwrap_or(rest.len()) } else { return None }
                } else {
                    rest.find(next_literal)?
                };
                if value_len == 0 {
                    return None;
                }
                vars.insert(name.to_owned(), rest[..value_len].to_owned());
                rest = &rest[value_len..];
            }
            other => {
                let literal = &tpl[..other.unwrap_or(tpl.len())];
                rest = rest.strip_prefix(literal)?;
                tpl = &tpl[literal.len()..];
            }
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_extracted() {
        let v = match_template("note://{name}", "note://shopping").unwrap();
        assert_eq!(v["name"], "shopping");
        let v = match_template("repo://{owner}/{repo}/readme", "repo://a/b/readme").unwrap();
        assert_eq!((v["owner"].as_str(), v["repo"].as_str()), ("a", "b"));
    }

    #[test]
    fn non_matching_uris_are_refused() {
        assert!(match_template("note://{name}", "file://x").is_none());
        assert!(match_template("note://{name}", "note://").is_none());
        assert!(match_template("note://{name}", "note://a/b").is_none());
        assert!(match_template("repo://{owner}/x", "repo://a/y").is_none());
        assert!(match_template("plain://x", "plain://x").is_some());
    }
}
