//! The rules of a protected endpoint, without I/O: what it publishes about
//! itself (RFC 9728 protected resource metadata), how a request presents
//! its token (RFC 6750 `Authorization: Bearer`), and how a refusal is
//! worded (`WWW-Authenticate` challenges, 401 or 403 for a step-up).
//!
//! [`Protection`] puts them on the HTTP endpoint ([`HttpOptions::with_protection`](crate::server::http::HttpOptions::with_protection)):
//! its metadata is served, every POST must carry a token its
//! [`TokenValidator`] accepts, and the handlers learn the [`Caller`]
//! through [`RequestContext::caller`](crate::RequestContext::caller).
//!
//! ```
//! use mcp_bridge_sdk::server::protect::{ProtectedResource, Refusal};
//!
//! let resource = ProtectedResource::new("https://mcp.example.com/mcp", "https://auth.example.com")
//!     .with_scopes_supported(["notes:read", "notes:write"]);
//! assert_eq!(resource.metadata_path(), "/.well-known/oauth-protected-resource/mcp");
//! let challenge = resource.challenge(&Refusal::InsufficientScope { scopes: vec!["notes:write".into()] });
//! assert_eq!(challenge.status, 403);
//! assert!(challenge.www_authenticate.contains(r#"error="insufficient_scope", scope="notes:write""#));
//! ```

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::BoxFuture;

#[cfg(feature = "protect")]
mod cache;
#[cfg(feature = "protect")]
pub mod introspection;
#[cfg(feature = "protect")]
pub mod jwt;
mod scopes;

pub(crate) use scopes::RequiredScopes;
pub use scopes::ScopeTarget;

/// Who a request speaks for, as its token says.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Caller {
    /// The token's subject (`sub`): the user, or the client itself.
    pub subject: Option<String>,
    /// The client the token was issued to (`client_id`).
    pub client_id: Option<String>,
    /// The scopes the token grants.
    pub scopes: Vec<String>,
    /// Every claim of the token (or of its introspection), as it came.
    pub claims: Map<String, Value>,
}

impl Caller {
    /// A caller with `subject` and `scopes`, no other claim.
    pub fn new<I, S>(subject: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Caller {
            subject: Some(subject.into()),
            scopes: scopes.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Whom the caller's requests count for (the tasks it owns, its
    /// quotas): the token's subject, else its client id, else nobody named
    /// (every such token is then the one principal `""`). Tokens of the
    /// client credentials grant and introspection answers may carry no
    /// `sub`.
    pub fn principal(&self) -> &str {
        self.subject.as_deref().or(self.client_id.as_deref()).unwrap_or("")
    }

    /// Whether the caller's token grants every scope of `needed`.
    pub fn has_scopes(&self, needed: &[String]) -> bool {
        needed.iter().all(|scope| self.scopes.contains(scope))
    }
}

/// The certificates a client presented in its TLS handshake (DER), its own
/// first: the identity of a client with a certificate (mutual TLS), for
/// handlers to read with the X.509 parser of their choice. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCertificates(Arc<[Vec<u8>]>);

impl PeerCertificates {
    /// The chain as presented: `chain[0]` is the client's certificate.
    pub fn new(chain: Vec<Vec<u8>>) -> Self {
        PeerCertificates(chain.into())
    }

    /// The whole chain, DER, the client's certificate first.
    pub fn chain(&self) -> &[Vec<u8>] {
        &self.0
    }

    /// The client's own certificate, DER.
    pub fn leaf(&self) -> Option<&[u8]> {
        self.0.first().map(Vec::as_slice)
    }
}

/// The caller of the requests that come over an in-process link, as the
/// link's owner learns it: the embedded bridge sets it from each request
/// of a 2025-11-25 session (always the same subject, its latest token's
/// scopes). Cheap to clone; the clones share the caller.
#[derive(Debug, Clone, Default)]
pub struct CallerSlot(Arc<std::sync::RwLock<Option<Arc<Caller>>>>);

impl CallerSlot {
    /// A slot holding `caller`.
    pub fn new(caller: Option<Arc<Caller>>) -> Self {
        CallerSlot(Arc::new(std::sync::RwLock::new(caller)))
    }

    /// Replaces the caller: the requests that arrive from now on see it.
    pub fn set(&self, caller: Option<Arc<Caller>>) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = caller;
    }

    /// The caller now.
    pub fn get(&self) -> Option<Arc<Caller>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Checks a bearer token and says whom it speaks for: a JWT checked
/// against its issuer's keys, an introspection call, or a table of your
/// own.
pub trait TokenValidator: Send + Sync + 'static {
    /// The caller `token` speaks for, or [`Refusal::InvalidToken`] with
    /// why (never quoting the token).
    fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>>;

    /// [`validate`](Self::validate), the caller shared: a validator that
    /// keeps the callers of tokens it checked before hands out the one it
    /// keeps, without a copy per request. By default, `validate`'s caller.
    fn validate_shared(&self, token: &str) -> BoxFuture<Result<Arc<Caller>, Refusal>> {
        let validated = self.validate(token);
        Box::pin(async move { validated.await.map(Arc::new) })
    }
}

/// A protected endpoint: what it publishes, how its tokens are checked,
/// and the scopes every request needs.
#[derive(Clone)]
#[non_exhaustive]
pub struct Protection {
    /// What the endpoint publishes about itself.
    pub resource: ProtectedResource,
    /// Checks each request's token.
    pub validator: Arc<dyn TokenValidator>,
    /// Scopes every request needs (a tool may need more).
    pub required_scopes: Vec<String>,
}

impl std::fmt::Debug for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Protection")
            .field("resource", &self.resource)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl Protection {
    /// `resource`, its tokens checked by `validator`, no scope required.
    pub fn new(resource: ProtectedResource, validator: impl TokenValidator) -> Self {
        Protection { resource, validator: Arc::new(validator), required_scopes: Vec::new() }
    }

    /// Sets [`required_scopes`](Self::required_scopes).
    #[must_use]
    pub fn with_required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Whether `caller` may make a request that needs `needed` besides the
    /// endpoint's own scopes.
    ///
    /// # Errors
    /// [`Refusal::InsufficientScope`] naming every scope the request needs.
    pub fn admit(&self, caller: &Caller, needed: &[String]) -> Result<(), Refusal> {
        let all = self.required_scopes.iter().chain(needed);
        if all.clone().all(|scope| caller.scopes.contains(scope)) {
            return Ok(());
        }
        Err(Refusal::InsufficientScope { scopes: all.cloned().collect() })
    }

    /// How `refusal` is answered: as [`ProtectedResource::challenge`]
    /// words it, and a 401 also names the endpoint's
    /// [`required_scopes`](Self::required_scopes), so a client asks for
    /// them at its first sign-in (rather than for every scope the metadata
    /// lists: a step-up asks for more when a tool needs it).
    pub fn challenge(&self, refusal: &Refusal) -> ChallengeResponse {
        self.resource.challenge_naming(refusal, &self.required_scopes)
    }

    /// The caller of a request with these `Authorization` header values,
    /// or why it is refused: no token, a malformed one, one the validator
    /// refuses, or one without a required scope.
    ///
    /// # Errors
    /// The [`Refusal`], which [`ProtectedResource::challenge`] words.
    pub async fn authenticate(&self, authorization: &[&str]) -> Result<Arc<Caller>, Refusal> {
        let token = bearer_token(authorization)?.ok_or(Refusal::NoToken)?;
        let caller = self.validator.validate_shared(token).await?;
        self.admit(&caller, &[])?;
        Ok(caller)
    }
}

/// A protected endpoint as its clients discover it: the resource (the
/// endpoint's URL, the audience of its tokens), the authorization servers
/// that issue them and the scopes it knows. Build it with
/// [`ProtectedResource::new`], then the `with_*` setters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedResource {
    /// The endpoint's URL (`https://host/mcp`): the `resource` of the
    /// metadata and the audience a token must be issued for (RFC 8707).
    pub resource: String,
    /// The issuers whose tokens are accepted (RFC 8414 issuer identifiers).
    pub authorization_servers: Vec<String>,
    /// The scopes this endpoint knows, published for clients to ask for.
    pub scopes_supported: Vec<String>,
}

impl ProtectedResource {
    /// The endpoint at `resource`, with tokens of `authorization_server`.
    pub fn new(resource: impl Into<String>, authorization_server: impl Into<String>) -> Self {
        ProtectedResource {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
        }
    }

    /// Sets [`scopes_supported`](Self::scopes_supported).
    #[must_use]
    pub fn with_scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The protected resource metadata document (RFC 9728 section 2);
    /// tokens are taken in the `Authorization` header only.
    pub fn metadata(&self) -> Value {
        let mut metadata = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            metadata["scopes_supported"] = json!(self.scopes_supported);
        }
        metadata
    }

    /// Where the metadata is served: `/.well-known/oauth-protected-resource`
    /// followed by the resource's path, when it has one (RFC 9728 section 3.1).
    pub fn metadata_path(&self) -> String {
        let (_, path) = split_origin(&self.resource);
        let path = path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
        format!("/.well-known/oauth-protected-resource{path}")
    }

    /// The metadata's URL: the resource's origin and [`Self::metadata_path`].
    pub fn metadata_url(&self) -> String {
        let (origin, _) = split_origin(&self.resource);
        format!("{origin}{}", self.metadata_path())
    }

    /// How `refusal` is answered: its status and `WWW-Authenticate` value.
    pub fn challenge(&self, refusal: &Refusal) -> ChallengeResponse {
        self.challenge_naming(refusal, &[])
    }

    /// [`Self::challenge`], a 401 naming `sign_in_scopes` (what to sign in for).
    fn challenge_naming(&self, refusal: &Refusal, sign_in_scopes: &[String]) -> ChallengeResponse {
        let mut params = vec![("resource_metadata", self.metadata_url())];
        let status = match refusal {
            Refusal::NoToken => 401,
            Refusal::InvalidToken { description } => {
                params.push(("error", "invalid_token".to_owned()));
                params.push(("error_description", (*description).to_owned()));
                401
            }
            Refusal::InsufficientScope { scopes } => {
                params.push(("error", "insufficient_scope".to_owned()));
                params.push(("scope", scopes.join(" ")));
                403
            }
            Refusal::InvalidRequest { description } => {
                params.push(("error", "invalid_request".to_owned()));
                params.push(("error_description", (*description).to_owned()));
                400
            }
        };
        if status == 401 && !sign_in_scopes.is_empty() {
            params.push(("scope", sign_in_scopes.join(" ")));
        }
        let params: Vec<String> = params.iter().map(|(name, value)| format!("{name}={}", quoted(value))).collect();
        ChallengeResponse { status, www_authenticate: format!("Bearer {}", params.join(", ")) }
    }
}

/// Why a request is refused. The descriptions are fixed words: a
/// challenge never echoes what the client sent (its token least of all).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No credentials: the client is told where to learn how to get them.
    NoToken,
    /// A token that is not valid here (malformed, bad signature, another
    /// issuer or audience, expired, revoked).
    InvalidToken {
        /// Why, in a few fixed words.
        description: &'static str,
    },
    /// A valid token without every scope the request needs (the client
    /// may ask for them: a step-up).
    InsufficientScope {
        /// The scopes the request needs.
        scopes: Vec<String>,
    },
    /// Credentials presented in a way the endpoint does not take (two
    /// `Authorization` headers, another scheme's syntax).
    InvalidRequest {
        /// Why, in a few fixed words.
        description: &'static str,
    },
}

/// A refusal as the HTTP answer says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeResponse {
    /// 401, 403 (insufficient scope) or 400 (a malformed request).
    pub status: u16,
    /// The `WWW-Authenticate` header value.
    pub www_authenticate: String,
}

/// The bearer token of a request's `Authorization` header values (RFC 6750
/// section 2.1): `None` without the header or with another scheme.
///
/// # Errors
/// [`Refusal::InvalidRequest`] for two headers, and for a `Bearer` value
/// that is not one token68 string.
pub fn bearer_token<'a>(authorization: &[&'a str]) -> Result<Option<&'a str>, Refusal> {
    let value = match authorization {
        [] => return Ok(None),
        [value] => value.trim(),
        _ => return Err(Refusal::InvalidRequest { description: "more than one Authorization header" }),
    };
    let malformed = Refusal::InvalidRequest { description: "the Bearer credentials are not one token" };
    let Some((scheme, token)) = value.split_once(' ') else {
        // The scheme alone: a Bearer header without its token.
        return if value.eq_ignore_ascii_case("bearer") { Err(malformed) } else { Ok(None) };
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim_start_matches(' ');
    let token68 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/');
    let (body, padding) = token.split_at(token.trim_end_matches('=').len());
    if body.is_empty() || !body.chars().all(token68) || !padding.chars().all(|c| c == '=') {
        return Err(malformed);
    }
    Ok(Some(token))
}

/// The scopes of `needed` that `granted` (a token's space-separated
/// `scope`) lacks, in the order needed: none when the token may go on.
pub fn missing_scopes<'a>(granted: &str, needed: &'a [String]) -> Vec<&'a str> {
    let granted: Vec<&str> = granted.split_ascii_whitespace().collect();
    needed.iter().map(String::as_str).filter(|scope| !granted.contains(scope)).collect()
}

/// `scheme://authority` and the rest (which starts with `/` when present).
fn split_origin(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find(['/', '?', '#']) {
        Some(i) => url.split_at(after_scheme + i),
        None => (url, ""),
    }
}

/// A quoted-string (RFC 9110 section 5.6.4): `"` and `\` escaped; other
/// control characters, which no value here holds, are dropped.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars().filter(|c| !c.is_control()) {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callers_principal_is_its_subject_else_its_client() {
        assert_eq!(Caller::new("alice", ["read"]).principal(), "alice");
        let client = Caller { client_id: Some("ci-bot".into()), ..Default::default() };
        assert_eq!(client.principal(), "ci-bot");
        assert_eq!(Caller::default().principal(), "", "no name: the one nameless principal");
    }

    fn resource() -> ProtectedResource {
        ProtectedResource::new("https://mcp.example.com/api/mcp", "https://auth.example.com")
    }

    #[test]
    fn the_metadata_names_the_resource_its_issuers_and_header_tokens() {
        let metadata = resource().with_scopes_supported(["notes:write"]).metadata();
        assert_eq!(
            metadata,
            json!({
                "resource": "https://mcp.example.com/api/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["notes:write"],
            })
        );
        assert!(resource().metadata().get("scopes_supported").is_none(), "no empty list");
    }

    #[test]
    fn the_metadata_lives_under_the_well_known_prefix_and_the_resources_path() {
        assert_eq!(resource().metadata_path(), "/.well-known/oauth-protected-resource/api/mcp");
        assert_eq!(resource().metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp");
        let root = ProtectedResource::new("http://127.0.0.1:8080", "https://a.example");
        assert_eq!(root.metadata_url(), "http://127.0.0.1:8080/.well-known/oauth-protected-resource");
        let slash = ProtectedResource::new("https://h.example/mcp/?x=1", "https://a.example");
        assert_eq!(slash.metadata_path(), "/.well-known/oauth-protected-resource/mcp");
    }

    #[test]
    fn refusals_are_401_403_or_400_with_their_challenge() {
        let metadata = r#"resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp""#;
        let none = resource().challenge(&Refusal::NoToken);
        assert_eq!((none.status, none.www_authenticate), (401, format!("Bearer {metadata}")));
        let bad = resource().challenge(&Refusal::InvalidToken { description: "the token has expired" });
        assert_eq!(bad.status, 401);
        assert_eq!(
            bad.www_authenticate,
            format!(r#"Bearer {metadata}, error="invalid_token", error_description="the token has expired""#)
        );
        let scopes = vec!["notes:read".to_owned(), "notes:write".to_owned()];
        let step_up = resource().challenge(&Refusal::InsufficientScope { scopes });
        assert_eq!(step_up.status, 403);
        assert!(step_up.www_authenticate.ends_with(r#"error="insufficient_scope", scope="notes:read notes:write""#));
        let twice =
            resource().challenge(&Refusal::InvalidRequest { description: "more than one Authorization header" });
        assert_eq!(twice.status, 400);
    }

    #[test]
    fn quoted_values_escape_quotes_and_backslashes_and_drop_controls() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(quoted("line\r\nbreak"), r#""linebreak""#);
    }

    #[test]
    fn a_bearer_token_is_one_token68_in_one_header() {
        assert_eq!(bearer_token(&[]), Ok(None));
        assert_eq!(bearer_token(&["Basic dXNlcjpwdw=="]), Ok(None));
        assert_eq!(bearer_token(&["Bearer abc.DEF-_~+/=="]), Ok(Some("abc.DEF-_~+/==")));
        assert_eq!(bearer_token(&["bearer  abc"]), Ok(Some("abc")), "the scheme is case-insensitive");
        for bad in ["Bearer ", "Bearer a b", "Bearer a=b", "Bearer \"abc\"", "Bearer ab,c"] {
            assert!(matches!(bearer_token(&[bad]), Err(Refusal::InvalidRequest { .. })), "{bad:?}");
        }
        assert!(matches!(bearer_token(&["Bearer a", "Bearer b"]), Err(Refusal::InvalidRequest { .. })));
    }

    struct Nobody;

    impl TokenValidator for Nobody {
        fn validate(&self, _token: &str) -> BoxFuture<Result<Caller, Refusal>> {
            Box::pin(async { Err(Refusal::InvalidToken { description: "no token is valid" }) })
        }
    }

    #[test]
    fn a_request_needs_the_endpoints_scopes_and_its_targets() {
        let protection = Protection::new(resource(), Nobody).with_required_scopes(["read"]);
        let mut declared = RequiredScopes::default();
        declared.insert(ScopeTarget::tool("erase"), vec!["write".into()]);
        let erase = declared.of_request("tools/call", Some(&json!({"name": "erase"})));
        assert_eq!(erase, ["write"]);
        assert!(declared.of_request("tools/call", Some(&json!({"name": "other"}))).is_empty());
        assert!(declared.of_request("tools/list", None).is_empty());
        let reader = Caller::new("rita", ["read"]);
        assert_eq!(protection.admit(&reader, &[]), Ok(()));
        assert_eq!(
            protection.admit(&reader, &erase),
            Err(Refusal::InsufficientScope { scopes: vec!["read".into(), "write".into()] }),
            "the step-up names every scope the request needs"
        );
        assert_eq!(protection.admit(&Caller::new("alice", ["write", "read"]), &erase), Ok(()));
        assert!(!declared.grants(&reader, &ScopeTarget::tool("erase")), "not in rita's lists");
        assert!(declared.grants(&reader, &ScopeTarget::tool("other")), "no scopes of its own");
        declared.set(ScopeTarget::tool("erase"), Vec::new());
        assert!(declared.grants(&reader, &ScopeTarget::tool("erase")) && declared.is_empty(), "set to none: removed");
    }

    #[test]
    fn prompts_and_resources_need_the_scopes_declared_for_them() {
        let mut declared = RequiredScopes::default();
        declared.insert(ScopeTarget::prompt("review"), vec!["prompts:review".into()]);
        declared.insert(ScopeTarget::resource("note://secret"), vec!["notes:secret".into()]);
        assert_eq!(declared.of_request("prompts/get", Some(&json!({"name": "review"}))), ["prompts:review"]);
        assert!(declared.of_request("prompts/get", Some(&json!({"name": "other"}))).is_empty());
        assert_eq!(declared.of_request("resources/read", Some(&json!({"uri": "note://secret"}))), ["notes:secret"]);
        assert!(declared.of_request("resources/read", Some(&json!({"uri": "note://open"}))).is_empty());
        // A tool of the prompt's name is another target.
        assert!(declared.of_request("tools/call", Some(&json!({"name": "review"}))).is_empty());
    }

    #[test]
    fn a_401_names_the_endpoints_scopes_for_the_first_sign_in() {
        let open = Protection::new(resource(), Nobody);
        assert!(!open.challenge(&Refusal::NoToken).www_authenticate.contains("scope="));
        let protection = Protection::new(resource(), Nobody).with_required_scopes(["notes:read", "openid"]);
        let none = protection.challenge(&Refusal::NoToken);
        assert_eq!(none.status, 401);
        assert!(none.www_authenticate.ends_with(r#", scope="notes:read openid""#), "{}", none.www_authenticate);
        let bad = protection.challenge(&Refusal::InvalidToken { description: "the token has expired" });
        assert!(bad.www_authenticate.ends_with(r#", scope="notes:read openid""#), "{}", bad.www_authenticate);
        let step_up = protection.challenge(&Refusal::InsufficientScope { scopes: vec!["notes:write".into()] });
        assert!(step_up.www_authenticate.ends_with(r#"error="insufficient_scope", scope="notes:write""#));
    }

    #[test]
    fn missing_scopes_are_those_needed_and_not_granted() {
        let needed = vec!["notes:read".to_owned(), "notes:write".to_owned()];
        assert_eq!(missing_scopes("notes:read openid", &needed), ["notes:write"]);
        assert!(missing_scopes("notes:write notes:read", &needed).is_empty());
        assert_eq!(missing_scopes("", &needed), ["notes:read", "notes:write"]);
    }
}
