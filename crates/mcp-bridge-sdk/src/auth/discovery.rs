//! What a client learns before it signs in: the protected resource metadata
//! of the MCP server (RFC 9728) and the metadata of its authorization
//! server (RFC 8414, then OpenID Connect discovery), where each is looked
//! for, and the checks that keep a client from trusting the wrong one.
//! No I/O here.

use reqwest::Url;
use serde::Deserialize;

use super::SignInError;

/// The protected resource metadata of an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ResourceMetadata {
    /// The resource the metadata is about; must cover the server's URL.
    pub resource: String,
    /// The issuers of the authorization servers that grant access.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// The metadata of an authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServerMetadata {
    /// Its issuer identifier; must equal the one it was discovered for.
    pub issuer: String,
    /// Where the user is sent to sign in.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it grants.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; S256 is required.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether a URL can be a client id (client ID metadata documents).
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Where a device sign-in starts (RFC 8628).
    #[serde(default)]
    pub device_authorization_endpoint: Option<String>,
}

/// `origin` + `prefix` + `path`, without a trailing slash of `path`.
fn well_known(url: &Url, prefix: &str, path: &str) -> Option<Url> {
    let mut found = url.clone();
    found.set_path(&format!("{prefix}{}", path.trim_end_matches('/')));
    found.set_query(None);
    found.set_fragment(None);
    Some(found)
}

/// Where the protected resource metadata of the server at `server_url` is
/// looked for when the challenge names none: at the path-based well-known
/// URL, then at the root one.
pub fn resource_metadata_urls(server_url: &Url) -> Vec<Url> {
    let path = server_url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.extend(well_known(server_url, "/.well-known/oauth-protected-resource", path));
    }
    urls.extend(well_known(server_url, "/.well-known/oauth-protected-resource", ""));
    urls
}

/// Where the metadata of the authorization server `issuer` is looked for,
/// in order (2026-07-28, Authorization Server Metadata Discovery).
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return [
            well_known(issuer, "/.well-known/oauth-authorization-server", ""),
            well_known(issuer, "/.well-known/openid-configuration", ""),
        ]
        .into_iter()
        .flatten()
        .collect();
    }
    [
        well_known(issuer, "/.well-known/oauth-authorization-server", path),
        well_known(issuer, "/.well-known/openid-configuration", path),
        well_known(issuer, path, "/.well-known/openid-configuration"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Whether the metadata's `resource` covers the server's URL: the same
/// scheme, host and port, and a path that is the server's or a parent of
/// it (at a segment boundary).
pub fn resource_covers(resource: &str, server_url: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    let same_origin = resource.scheme() == server_url.scheme()
        && resource.host_str().map(str::to_ascii_lowercase) == server_url.host_str().map(str::to_ascii_lowercase)
        && resource.port_or_known_default() == server_url.port_or_known_default();
    let base = resource.path().trim_end_matches('/');
    let path = server_url.path();
    same_origin && (path.trim_end_matches('/') == base || path.starts_with(&format!("{base}/")))
}

/// The resource indicator (RFC 8707) of the server at `url`: the URL
/// without fragment, query, and trailing slash of a non-root path.
pub fn canonical_resource(url: &Url) -> String {
    let mut canonical = url.clone();
    canonical.set_fragment(None);
    canonical.set_query(None);
    canonical.to_string().trim_end_matches('/').to_owned()
}

/// Whether the client of the MCP server at `server_url` may use the OAuth
/// endpoint `endpoint` (fetch it, post to it, send the browser or the user
/// to it): an `https://` one always; an `http://` one only on loopback
/// when the MCP server is itself `http://` on loopback (development);
/// nothing else (OAuth 2.1, RFC 9728 and RFC 8414 want TLS).
pub fn endpoint_allowed(server_url: &Url, endpoint: &Url) -> bool {
    match endpoint.scheme() {
        "https" => true,
        "http" => server_url.scheme() == "http" && is_loopback(server_url) && is_loopback(endpoint),
        _ => false,
    }
}

/// [`endpoint_allowed`] of the endpoint `what` at `url`, parsed.
///
/// # Errors
/// [`SignInError::InsecureEndpoint`] naming the endpoint (without its
/// query), or [`SignInError::Http`] for a URL that does not parse.
pub fn check_endpoint(server_url: &Url, what: &'static str, url: &str) -> Result<Url, SignInError> {
    let endpoint = Url::parse(url).map_err(|_| SignInError::Http(format!("the {what} is not a URL")))?;
    if endpoint_allowed(server_url, &endpoint) {
        return Ok(endpoint);
    }
    let mut named = endpoint.clone();
    named.set_query(None);
    named.set_fragment(None);
    let _ = named.set_username("");
    let _ = named.set_password(None);
    Err(SignInError::InsecureEndpoint { what, url: named.to_string() })
}

/// [`check_endpoint`] of every endpoint `metadata` names, before any is
/// used.
///
/// # Errors
/// As [`check_endpoint`], for the first endpoint that breaks the rule.
pub fn check_server_metadata(server_url: &Url, metadata: &ServerMetadata) -> Result<(), SignInError> {
    check_endpoint(server_url, "authorization endpoint", &metadata.authorization_endpoint)?;
    check_endpoint(server_url, "token endpoint", &metadata.token_endpoint)?;
    if let Some(registration) = &metadata.registration_endpoint {
        check_endpoint(server_url, "registration endpoint", registration)?;
    }
    if let Some(device) = &metadata.device_authorization_endpoint {
        check_endpoint(server_url, "device authorization endpoint", device)?;
    }
    Ok(())
}

/// Whether `url`'s host is a loopback address or `localhost`.
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(address) => address.is_loopback(),
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    }
}

/// The scope to ask for: the challenge's when it names one, else every
/// scope the resource metadata lists, else none; with the scopes granted
/// before (a step-up keeps them), and `offline_access` when the
/// authorization server lists it (for a refresh token).
pub fn select_scope(
    challenged: Option<&str>,
    resource: &ResourceMetadata,
    server: &ServerMetadata,
    previous: &[String],
) -> Option<String> {
    let wanted: Vec<&str> = match challenged {
        Some(scope) => scope.split_whitespace().collect(),
        None => resource.scopes_supported.iter().flatten().map(String::as_str).collect(),
    };
    // A set, not a search of the list per scope: a huge hostile scope
    // string costs linear time, not quadratic.
    let mut seen = std::collections::HashSet::new();
    let mut scopes: Vec<&str> =
        previous.iter().map(String::as_str).chain(wanted).filter(|scope| seen.insert(*scope)).collect();
    let offline = server.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
    if offline && !scopes.is_empty() && !seen.contains("offline_access") {
        scopes.push("offline_access");
    }
    if !offline {
        scopes.retain(|s| *s != "offline_access");
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn metadata_is_looked_for_where_the_specification_says() {
        assert_eq!(
            strings(resource_metadata_urls(&url("https://mcp.example.com/public/mcp?x=1"))),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("https://mcp.example.com/"))),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            strings(server_metadata_urls(&url("https://auth.example.com/tenant1"))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            strings(server_metadata_urls(&url("https://auth.example.com"))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_covers_its_own_url_and_the_urls_below_it_only() {
        let server = url("https://MCP.example.com:443/api/mcp");
        assert!(resource_covers("https://mcp.example.com/api/mcp", &server));
        assert!(resource_covers("https://mcp.example.com/api/", &server));
        assert!(resource_covers("https://mcp.example.com", &server));
        assert!(!resource_covers("https://mcp.example.com/ap", &server));
        assert!(!resource_covers("https://mcp.example.com/other", &server));
        assert!(!resource_covers("http://mcp.example.com/api/mcp", &server));
        assert!(!resource_covers("https://evil.example.com/api/mcp", &server));
        assert!(!resource_covers("not a url", &server));
        assert_eq!(canonical_resource(&url("https://mcp.example.com/mcp/#x")), "https://mcp.example.com/mcp");
        assert_eq!(canonical_resource(&url("https://mcp.example.com/")), "https://mcp.example.com");
    }

    #[test]
    fn oauth_endpoints_are_https_except_on_loopback_for_a_loopback_http_server() {
        let allowed = |server: &str, endpoint: &str| endpoint_allowed(&url(server), &url(endpoint));
        for server in ["https://mcp.example.com/mcp", "https://127.0.0.1:8443/mcp"] {
            assert!(allowed(server, "https://as.example.com/token"), "{server}");
            assert!(allowed(server, "https://127.0.0.1:9/token"), "{server}");
            assert!(!allowed(server, "http://as.example.com/token"), "{server}");
            assert!(!allowed(server, "http://127.0.0.1:9/token"), "{server}: https means https everywhere");
            assert!(!allowed(server, "http://localhost/token"), "{server}");
        }
        for server in ["http://127.0.0.1:8080/mcp", "http://[::1]:8080/mcp", "http://localhost:8080/mcp"] {
            assert!(allowed(server, "http://127.0.0.1:9/token"), "{server}");
            assert!(allowed(server, "http://[::1]:9/token"), "{server}");
            assert!(allowed(server, "http://auth.localhost/token"), "{server}");
            assert!(allowed(server, "https://as.example.com/token"), "{server}");
            assert!(!allowed(server, "http://evil.example/token"), "{server}");
            assert!(!allowed(server, "http://10.0.0.1/token"), "{server}");
            assert!(!allowed(server, "http://127.0.0.1.evil.example/token"), "{server}");
        }
        assert!(!allowed("http://mcp.example.com/mcp", "http://mcp.example.com/token"), "plain http off loopback");
        assert!(!allowed("http://mcp.example.com/mcp", "http://127.0.0.1/token"));
        for other in ["file:///etc/passwd", "javascript:alert(1)", "ftp://as.example.com/t", "ws://127.0.0.1/t"] {
            assert!(!allowed("http://127.0.0.1/mcp", other), "{other}");
        }
        let err =
            check_endpoint(&url("https://mcp.example.com"), "token endpoint", "http://u:pw@as.example/t?k=s3cret#f")
                .unwrap_err();
        assert_eq!(err, SignInError::InsecureEndpoint { what: "token endpoint", url: "http://as.example/t".into() });
        assert!(err.to_string().contains("the token endpoint http://as.example/t is not https"), "{err}");
        let metadata: ServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://as", "authorization_endpoint": "https://as/a", "token_endpoint": "https://as/t",
            "registration_endpoint": "https://as/r", "device_authorization_endpoint": "http://as/d"
        }))
        .unwrap();
        let err = check_server_metadata(&url("https://mcp.example.com"), &metadata).unwrap_err();
        assert!(err.to_string().contains("device authorization endpoint http://as/d"), "{err}");
    }

    #[test]
    fn the_scope_comes_from_the_challenge_then_the_resource() {
        let resource = ResourceMetadata {
            resource: "https://r".into(),
            authorization_servers: vec![],
            scopes_supported: Some(vec!["a".into(), "b".into()]),
        };
        let mut server: ServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://as", "authorization_endpoint": "https://as/a", "token_endpoint": "https://as/t"
        }))
        .unwrap();
        assert_eq!(select_scope(Some("x y"), &resource, &server, &[]).as_deref(), Some("x y"));
        assert_eq!(select_scope(None, &resource, &server, &[]).as_deref(), Some("a b"));
        assert_eq!(select_scope(Some("z"), &resource, &server, &["x".into()]).as_deref(), Some("x z"));
        let bare = ResourceMetadata { scopes_supported: None, ..resource.clone() };
        assert_eq!(select_scope(None, &bare, &server, &[]), None);
        server.scopes_supported = Some(vec!["a".into(), "offline_access".into()]);
        assert_eq!(select_scope(None, &resource, &server, &[]).as_deref(), Some("a b offline_access"));
        server.scopes_supported = Some(vec!["a".into()]);
        assert_eq!(select_scope(Some("a offline_access"), &resource, &server, &[]).as_deref(), Some("a"));
    }
}
