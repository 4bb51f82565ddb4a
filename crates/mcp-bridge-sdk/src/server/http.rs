//! Serving over Streamable HTTP (2026-07-28, Transports: Streamable HTTP):
//! one POST per message at one endpoint. A request is answered with one
//! JSON body, or with an SSE stream when the server sends notifications
//! before the result (progress, log messages, a `subscriptions/listen`
//! stream). Closing the stream cancels the request.
//!
//! Every POST of either era passes one gate before it reaches the server
//! (`gate.rs`): `Origin` and `Host` against the allow-lists (DNS
//! rebinding), the token of a protected endpoint, the content type, the
//! body size; then a 2026-07-28 request's headers are checked against its
//! body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, -32020
//! `HeaderMismatch` with status 400). Both eras answer through
//! `answers.rs`.

#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
mod activity;
#[cfg(feature = "http-server")]
mod answers;
#[cfg(feature = "http-server")]
mod connections;
#[cfg(feature = "http-server")]
mod endpoint;
#[cfg(feature = "http-server")]
mod gate;
#[cfg(feature = "http-server")]
mod health;
mod limits;
#[cfg(feature = "http-server")]
mod listener;
mod metrics;
#[cfg(feature = "http-server")]
mod quotas;
#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
mod slots;
#[cfg(feature = "https-server")]
mod tls;

use http::{HeaderMap, header};

#[cfg(all(feature = "http-server", feature = "legacy"))]
pub(crate) use answers::{answer_with, error_response, json_response, sse_response, sse_within};
#[cfg(feature = "http-server")]
pub use endpoint::serve_router;
#[cfg(all(feature = "http-server", feature = "legacy"))]
pub(crate) use endpoint::{serve_post, with_metadata};
#[cfg(all(feature = "http-server", feature = "legacy"))]
pub(crate) use gate::{CheckedPost, challenge_response, check_post, check_request, held_until_sent};
#[cfg(feature = "http-server")]
pub use health::{Readiness, ReadinessProbe, ReadyStatus};
pub use limits::ConnectionLimits;
pub(crate) use limits::refuse_connection;
#[cfg(feature = "http-server")]
pub use listener::Listener;
pub use metrics::MetricsExposition;
#[cfg(feature = "http-server")]
pub use quotas::{Quotas, Rate};
#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
pub(crate) use slots::{Slot, Slots};
#[cfg(feature = "https-server")]
pub use tls::serve_router_tls;

/// The largest request body accepted by default: generous for tool
/// arguments, small enough that a client cannot make the server buffer much.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How the HTTP endpoint checks what it is sent; the WebSocket endpoint
/// ([`Server::serve_websocket`](crate::Server::serve_websocket)) takes the same, with `max_body_bytes` the
/// limit of each message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The path of the endpoint.
    pub path: String,
    /// The largest accepted body.
    pub max_body_bytes: usize,
    /// Host names (without port) accepted in `Host`; loopback names by
    /// default, against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Origins (`scheme://host[:port]`) accepted in `Origin`; with the
    /// default empty list, loopback origins on any port.
    pub allowed_origins: Vec<String>,
    /// Time limits of slow or unused connections and the cap on open ones
    /// ([`Server::serve_http`](crate::Server::serve_http) and [`Server::serve_websocket`](crate::Server::serve_websocket)).
    pub connections: ConnectionLimits,
    /// Tokens every request must carry, and the metadata served about
    /// them (see [`crate::server::protect`]); none by default.
    pub protection: Option<crate::server::protect::Protection>,
    /// What one caller (a token's subject) may take of the endpoint: a
    /// rate of requests, requests under way, sessions; none by default.
    #[cfg(feature = "http-server")]
    pub quotas: Quotas,
    /// With a probe, `/healthz` and `/readyz` are served beside the
    /// endpoint (see [`ReadinessProbe`]); none by default.
    #[cfg(feature = "http-server")]
    pub readiness: Option<ReadinessProbe>,
    /// With an exposition, `/metrics` is served beside the endpoint, to
    /// callers with the endpoint's credentials (see [`MetricsExposition`]);
    /// none by default.
    #[cfg(feature = "http-server")]
    pub metrics: Option<MetricsExposition>,
}

crate::setters::with_setters! {
    HttpOptions {
        value with_path => path: impl Into<String>,
        value with_max_body_bytes => max_body_bytes: usize,
        value with_allowed_hosts => allowed_hosts: Vec<String>,
        value with_allowed_origins => allowed_origins: Vec<String>,
        value with_connections => connections: ConnectionLimits,
        some with_protection => protection: crate::server::protect::Protection,
    }
}

#[cfg(feature = "http-server")]
impl HttpOptions {
    /// Other quotas per caller than none.
    pub fn with_quotas(mut self, quotas: Quotas) -> Self {
        self.quotas = quotas;
        self
    }

    /// `/healthz` and `/readyz` served, `/readyz` asking `probe`.
    pub fn with_readiness(mut self, probe: ReadinessProbe) -> Self {
        self.readiness = Some(probe);
        self
    }

    /// `/metrics` served, rendered by `exposition`.
    pub fn with_metrics(mut self, exposition: MetricsExposition) -> Self {
        self.metrics = Some(exposition);
        self
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allowed_origins: Vec::new(),
            connections: ConnectionLimits::default(),
            protection: None,
            #[cfg(feature = "http-server")]
            quotas: Quotas::default(),
            #[cfg(feature = "http-server")]
            readiness: None,
            #[cfg(feature = "http-server")]
            metrics: None,
        }
    }
}

/// The host name of a `Host` value or an origin's authority, without its
/// port; `None` unless it is exactly `host` or `host:port` (an IPv6 host in
/// brackets), so `[::1]evil.example` or `localhost:80@evil.example` is no
/// host of ours.
fn host_name(authority: &str) -> Option<&str> {
    let (host, rest) = if authority.starts_with('[') {
        authority.split_at(authority.find(']')? + 1)
    } else {
        authority.split_at(authority.find(':').unwrap_or(authority.len()))
    };
    let port_ok = match rest.strip_prefix(':') {
        Some(port) => (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit()),
        None => rest.is_empty(),
    };
    (port_ok && !host.is_empty()).then_some(host)
}

fn origin_allowed(origin: &str, options: &HttpOptions) -> bool {
    if !options.allowed_origins.is_empty() {
        return options.allowed_origins.iter().any(|o| o == origin);
    }
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    authority.and_then(host_name).is_some_and(|h| ["localhost", "127.0.0.1", "[::1]"].contains(&h))
}

/// Why a request's `Origin` or `Host` is refused (DNS rebinding, a web
/// page of another site), or `None` when both are allowed. For a host that
/// serves its own routes beside the endpoint (the embedded bridge's legacy
/// sessions).
pub fn refusal_by_origin_or_host(headers: &HeaderMap, options: &HttpOptions) -> Option<&'static str> {
    if headers.get(header::ORIGIN).is_some_and(|o| !o.to_str().is_ok_and(|o| origin_allowed(o, options))) {
        return Some("origin not allowed");
    }
    let host_ok = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(host_name)
        .is_some_and(|h| options.allowed_hosts.iter().any(|a| a == h));
    (!host_ok).then_some("host not allowed")
}

/// Why a request is refused before anything of it is served.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Its `Origin` or `Host` is not allowed (403).
    OriginOrHost(&'static str),
    /// Its credentials are refused: the answer's status and challenge.
    Credentials(crate::server::protect::ChallengeResponse),
}

impl Refused {
    /// The answer to give: its status, its text, and on a refusal of
    /// credentials its `WWW-Authenticate` value.
    pub(crate) fn answer(&self) -> (http::StatusCode, &str, Option<&str>) {
        match self {
            Refused::OriginOrHost(reason) => (http::StatusCode::FORBIDDEN, reason, None),
            Refused::Credentials(challenge) => (
                http::StatusCode::from_u16(challenge.status).unwrap_or(http::StatusCode::UNAUTHORIZED),
                "the request's credentials are refused",
                Some(&challenge.www_authenticate),
            ),
        }
    }
}

/// The first checks of every request to an HTTP or WebSocket endpoint, in
/// their one order: `Origin` and `Host`, then on a protected endpoint the
/// token. The caller when the endpoint is protected.
///
/// # Errors
/// Why the request is refused.
pub(crate) async fn admit_request(
    headers: &HeaderMap,
    options: &HttpOptions,
) -> Result<Option<std::sync::Arc<crate::server::protect::Caller>>, Refused> {
    if let Some(refusal) = refusal_by_origin_or_host(headers, options) {
        return Err(Refused::OriginOrHost(refusal));
    }
    let Some(protection) = &options.protection else { return Ok(None) };
    let values: Vec<&str> = headers.get_all(header::AUTHORIZATION).iter().filter_map(|v| v.to_str().ok()).collect();
    match protection.authenticate(&values).await {
        Ok(caller) => Ok(Some(caller)),
        Err(refusal) => Err(Refused::Credentials(protection.challenge(&refusal))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins_are_checked_by_host_name() {
        let options = HttpOptions::default();
        assert_eq!(host_name("127.0.0.1:8080"), Some("127.0.0.1"));
        assert_eq!(host_name("[::1]:80"), Some("[::1]"));
        assert_eq!(host_name("[::1]"), Some("[::1]"));
        assert_eq!(host_name("localhost"), Some("localhost"));
        for malformed in [
            "[::1]evil.example",
            "[::1]:80evil",
            "localhost:80@evil.example",
            "localhost:",
            "::1",
            "[::1",
            ":80",
            "localhost:123456",
        ] {
            assert_eq!(host_name(malformed), None, "{malformed}");
        }
        assert!(origin_allowed("http://localhost:3000", &options));
        assert!(origin_allowed("https://127.0.0.1", &options));
        assert!(!origin_allowed("https://evil.example", &options));
        assert!(!origin_allowed("http://localhost.evil.example", &options));
        assert!(!origin_allowed("http://[::1]evil.example", &options));
        let host = |value: &str| HeaderMap::from_iter([(header::HOST, value.parse().unwrap())]);
        assert_eq!(refusal_by_origin_or_host(&host("[::1]:8080"), &options), None);
        assert_eq!(refusal_by_origin_or_host(&host("[::1]evil.example"), &options), Some("host not allowed"));
        let listed = HttpOptions { allowed_origins: vec!["https://app.example".into()], ..HttpOptions::default() };
        assert!(origin_allowed("https://app.example", &listed));
        assert!(!origin_allowed("http://localhost", &listed));
    }
}
