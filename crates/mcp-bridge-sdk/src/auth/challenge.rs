//! The `WWW-Authenticate: Bearer …` challenge of a protected MCP server
//! (RFC 6750 section 3, RFC 9728 section 5.1): where its resource metadata
//! is, the scope it wants, and why it refused.

/// The parameters of a Bearer challenge the client acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the URL of the protected resource metadata.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
}

impl Challenge {
    /// Reads the Bearer (or DPoP, RFC 9449 section 7.1) challenge of a
    /// `WWW-Authenticate` value, the first of them; `None` when it has neither. Other schemes in the same value are
    /// skipped; a malformed parameter ends the parse with what was read.
    pub fn parse(header: &str) -> Option<Challenge> {
        let mut rest = header.trim_start();
        loop {
            let (scheme, after) = split_token(rest);
            if scheme.is_empty() {
                return None;
            }
            let (params, next) = parse_params(after);
            if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop") {
                let get =
                    |name: &str| params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
                return Some(Challenge {
                    resource_metadata: get("resource_metadata"),
                    scope: get("scope"),
                    error: get("error"),
                });
            }
            rest = next?;
        }
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A token and what follows it (leading spaces removed).
fn split_token(s: &str) -> (&str, &str) {
    let end = s.bytes().position(|b| !is_token_byte(b)).unwrap_or(s.len());
    (&s[..end], s[end..].trim_start())
}

/// The `name=value` parameters after a scheme, and the rest of the header
/// when another challenge follows.
fn parse_params(mut s: &str) -> (Vec<(String, String)>, Option<&str>) {
    let mut params = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        let (name, after) = split_token(s);
        if name.is_empty() {
            return (params, None);
        }
        let Some(after) = after.strip_prefix('=') else {
            // A bare token: the scheme of the next challenge.
            return (params, Some(s));
        };
        let after = after.trim_start();
        let (value, rest) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            match end {
                Some(end) => (value, &quoted[end..]),
                None => return (params, None),
            }
        } else {
            let (token, rest) = split_token(after);
            (token.to_owned(), rest)
        };
        params.push((name.to_owned(), value));
        s = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters_are_read_quoted_or_not() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error=insufficient_scope"#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    }

    #[test]
    fn other_schemes_are_skipped_and_garbage_is_survived() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer scope="a\"b""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("a\"b"));
        assert_eq!(Challenge::parse("Bearer").unwrap(), Challenge::default());
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), None);
        assert_eq!(Challenge::parse(""), None);
        assert_eq!(Challenge::parse(r#"Bearer scope="unterminated"#).unwrap().scope, None);
    }
}
