//! The view of a request's HTTP headers a handler gets: every header but
//! those carrying credentials. A token is checked by the endpoint's
//! [`Protection`](super::protect::Protection) and handlers learn who called
//! from [`RequestContext::caller`](crate::RequestContext::caller); a
//! handler that could read the token itself could log it, return it or
//! replay it elsewhere.

use http::HeaderMap;
use http::header::{AUTHORIZATION, COOKIE, HeaderName, PROXY_AUTHORIZATION};

/// The headers (and gRPC metadata keys) kept from handlers: a bearer or
/// basic credential, its proof of possession, a browser's cookies.
const CREDENTIALS: [HeaderName; 4] = [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE, HeaderName::from_static("dpop")];

/// `headers` without the ones carrying credentials.
pub(crate) fn handler_view(mut headers: HeaderMap) -> HeaderMap {
    for name in &CREDENTIALS {
        headers.remove(name);
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_removed_and_every_other_header_kept() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer secret"),
            ("Proxy-Authorization", "Basic c2VjcmV0"),
            ("cookie", "session=secret"),
            ("cookie", "other=secret"),
            ("DPoP", "eyJ.secret"),
            ("x-trace", "42"),
            ("mcp-protocol-version", "2026-07-28"),
        ] {
            headers.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        let view = handler_view(headers);
        let mut names: Vec<_> = view.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["mcp-protocol-version", "x-trace"]);
        assert!(!view.values().any(|v| v.to_str().unwrap().contains("secret")));
    }
}
