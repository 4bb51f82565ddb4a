//! JWT access tokens (RFC 9068) checked against their issuer's keys: the
//! issuer's metadata found as a client finds it (RFC 8414, then OpenID
//! discovery), its JWKS fetched and kept for a while, an unknown key id
//! fetching it again (key rotation) at most once per interval. The
//! signature is checked by `jsonwebtoken` with the configured algorithms
//! only; then `iss`, `aud` (this resource, RFC 8707), `exp` and `nbf`. A
//! token that passed is taken again for a while without a second signature
//! check (see [`JwtConfig::cache_lifetime`]).

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use reqwest::Url;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::cache::{CallerCache, TokenDigest, digest};
use super::{Caller, Refusal, TokenValidator};
use crate::BoxFuture;
use crate::auth::discovery::server_metadata_urls;
use crate::transport::http::HttpConfig;

/// How JWT access tokens are checked. [`JwtConfig::new`], then the
/// `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JwtConfig {
    /// The issuer (`iss`) tokens must name; its metadata gives the keys.
    pub issuer: String,
    /// The audience (`aud`) tokens must name: this endpoint's URL.
    pub audience: String,
    /// The signature algorithms accepted (RS256 and ES256 by default;
    /// never `none`, never a symmetric one unless listed).
    pub algorithms: Vec<Algorithm>,
    /// The clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// How long fetched keys are used before they are fetched again.
    pub keys_lifetime: Duration,
    /// The shortest time between two fetches for an unknown key id, so
    /// tokens with made-up ids cannot make the server hammer the issuer
    /// (the first such fetch is made at once: the issuer may have rotated
    /// its keys just after the server started).
    pub refresh_interval: Duration,
    /// Whether the header must say `typ: at+jwt` (RFC 9068 section 4).
    pub require_access_token_type: bool,
    /// How long a token that passed is taken again without checking its
    /// signature (never past its `exp`; forgotten when the keys are
    /// fetched again).
    pub cache_lifetime: Duration,
    /// The most tokens kept that way.
    pub max_cached: usize,
    /// TLS and proxy settings for reaching the issuer (its URL unused).
    pub connection: HttpConfig,
}

crate::setters::with_setters! {
    JwtConfig {
        value with_algorithms => algorithms: Vec<Algorithm>,
        value with_leeway => leeway: Duration,
        value with_keys_lifetime => keys_lifetime: Duration,
        value with_refresh_interval => refresh_interval: Duration,
        value with_require_access_token_type => require_access_token_type: bool,
        value with_cache_lifetime => cache_lifetime: Duration,
        value with_max_cached => max_cached: usize,
        value with_connection => connection: HttpConfig,
    }
}

impl JwtConfig {
    /// Tokens of `issuer` for `audience`, with the defaults: RS256 and
    /// ES256, 30 s of leeway, keys kept 10 min, one refresh per 30 s,
    /// tokens that passed kept 5 min (10 000 at most).
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        let issuer = issuer.into();
        JwtConfig {
            connection: HttpConfig::new(issuer.clone()),
            issuer,
            audience: audience.into(),
            algorithms: vec![Algorithm::RS256, Algorithm::ES256],
            leeway: Duration::from_secs(30),
            keys_lifetime: Duration::from_secs(600),
            refresh_interval: Duration::from_secs(30),
            require_access_token_type: true,
            cache_lifetime: Duration::from_secs(300),
            max_cached: 10_000,
        }
    }
}

/// Why the issuer's keys could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeysError {
    /// The issuer is not a URL.
    #[error("the issuer is not a URL: {0}")]
    Issuer(String),
    /// No metadata document of the issuer could be read, or none names it.
    #[error("no metadata of the issuer names it with a jwks_uri: {0}")]
    Metadata(String),
    /// The key set could not be fetched or read.
    #[error("the issuer's key set could not be read: {0}")]
    Jwks(String),
}

/// The issuer's keys as last fetched.
struct Keys {
    set: JwkSet,
    fetched: Instant,
    /// When a token's unknown key id last made it fetch the set.
    fetched_for_unknown_kid: Option<Instant>,
}

/// A [`TokenValidator`] of JWT access tokens. Cheap to clone.
#[derive(Clone)]
pub struct JwtValidator {
    inner: Arc<Inner>,
}

struct Inner {
    config: JwtConfig,
    http: reqwest::Client,
    jwks_uri: Url,
    keys: tokio::sync::Mutex<Keys>,
    /// The callers of tokens that passed, so a client's every request does
    /// not verify the same signature again.
    passed: CallerCache,
}

impl std::fmt::Debug for JwtValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtValidator").field("issuer", &self.inner.config.issuer).finish_non_exhaustive()
    }
}

impl JwtValidator {
    /// Finds the issuer's key set through its metadata and fetches it.
    ///
    /// # Errors
    /// The [`KeysError`] of the step that failed.
    pub async fn discover(config: JwtConfig) -> Result<Self, KeysError> {
        let (http, metadata) = discover_issuer(&config.connection, &config.issuer).await?;
        let jwks_uri = endpoint_of(&metadata, "jwks_uri")?;
        let set = fetch_keys(&http, &jwks_uri).await?;
        let keys = tokio::sync::Mutex::new(Keys { set, fetched: Instant::now(), fetched_for_unknown_kid: None });
        let passed = CallerCache::new(config.max_cached);
        Ok(JwtValidator { inner: Arc::new(Inner { config, http, jwks_uri, keys, passed }) })
    }

    /// The key for a token's `kid` (or its only key of the algorithm's
    /// family when the token names none), fetching the set again when it
    /// is old, or when the id is unknown and the last fetch is not recent.
    async fn key_for(&self, kid: Option<&str>, algorithm: Algorithm) -> Result<DecodingKey, Refusal> {
        let config = &self.inner.config;
        let mut keys = self.inner.keys.lock().await;
        let found = find_key(&keys.set, kid, algorithm);
        let old = keys.fetched.elapsed() >= config.keys_lifetime;
        let unknown =
            found.is_none() && keys.fetched_for_unknown_kid.is_none_or(|at| at.elapsed() >= config.refresh_interval);
        let refresh = old || unknown;
        if refresh {
            let now = Instant::now();
            if unknown {
                keys.fetched_for_unknown_kid = Some(now);
            }
            match fetch_keys(&self.inner.http, &self.inner.jwks_uri).await {
                Ok(set) => {
                    (keys.set, keys.fetched) = (set, now);
                    // A key the issuer dropped vouches for nothing any more.
                    self.inner.passed.clear();
                }
                Err(e) => tracing::warn!(target: "mcp_protect", "{e}; the keys fetched before stay in use"),
            }
        }
        let jwk = if refresh { find_key(&keys.set, kid, algorithm) } else { found };
        let jwk = jwk.ok_or(Refusal::InvalidToken { description: "the token's signing key is not the issuer's" })?;
        DecodingKey::from_jwk(&jwk).map_err(|_| Refusal::InvalidToken { description: "the issuer's key is not usable" })
    }

    /// Checks a token whose caller is not kept (by its `digest`).
    async fn check(&self, digest: TokenDigest, token: &str) -> Result<Arc<Caller>, Refusal> {
        let config = &self.inner.config;
        let malformed = Refusal::InvalidToken { description: "the token is not a JWT" };
        let header = jsonwebtoken::decode_header(token).map_err(|_| malformed)?;
        if !config.algorithms.contains(&header.alg) {
            return Err(Refusal::InvalidToken { description: "the token's algorithm is not accepted" });
        }
        let typed = header.typ.as_deref().is_some_and(|t| {
            let t = t.to_ascii_lowercase();
            t == "at+jwt" || t == "application/at+jwt"
        });
        if config.require_access_token_type && !typed {
            return Err(Refusal::InvalidToken { description: "the token is not a JWT access token (typ at+jwt)" });
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&config.issuer]);
        validation.set_audience(&[&config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| Refusal::InvalidToken { description: refusal_of(e.kind()) })?;
        let caller = Arc::new(caller_of(data.claims));
        self.inner.passed.insert(digest, &caller, config.cache_lifetime);
        Ok(caller)
    }
}

impl TokenValidator for JwtValidator {
    fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>> {
        let shared = self.validate_shared(token);
        Box::pin(async move { shared.await.map(Arc::unwrap_or_clone) })
    }

    /// A kept caller at once; else the token is checked.
    fn validate_shared(&self, token: &str) -> BoxFuture<Result<Arc<Caller>, Refusal>> {
        let digest = digest(token);
        if let Some(caller) = self.inner.passed.get(&digest) {
            return Box::pin(std::future::ready(Ok(caller)));
        }
        let (me, token) = (self.clone(), token.to_owned());
        Box::pin(async move { me.check(digest, &token).await })
    }
}

/// The words of a refusal, by what `jsonwebtoken` found.
fn refusal_of(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired",
        ErrorKind::ImmatureSignature => "the token is not valid yet",
        ErrorKind::InvalidIssuer => "the token is of another issuer",
        ErrorKind::InvalidAudience => "the token is for another resource",
        ErrorKind::InvalidSignature => "the token's signature does not verify",
        ErrorKind::MissingRequiredClaim(_) => "the token lacks a required claim",
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key",
        _ => "the token is not valid",
    }
}

/// The caller a token's claims describe: `sub`, `client_id` and the
/// space-separated `scope` (or a `scp` list, as some issuers write it).
pub(super) fn caller_of(claims: Map<String, Value>) -> Caller {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_ascii_whitespace().map(str::to_owned).collect(),
        (_, Some(Value::Array(list))) => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    Caller { subject: text("sub"), client_id: text("client_id"), scopes, claims }
}

/// The key of `kid` in `set`; without a `kid`, the set's only key that
/// fits the algorithm's family.
fn find_key(set: &JwkSet, kid: Option<&str>, algorithm: Algorithm) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None => {
            let fits: Vec<&Jwk> = set.keys.iter().filter(|k| fits_family(k, algorithm)).collect();
            match fits.as_slice() {
                [only] => Some((*only).clone()),
                _ => None,
            }
        }
    }
}

fn fits_family(jwk: &Jwk, algorithm: Algorithm) -> bool {
    use jsonwebtoken::jwk::AlgorithmParameters as P;
    use jsonwebtoken::jwk::EllipticCurve;
    match (&jwk.algorithm, algorithm) {
        (P::RSA(_), Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512)
        | (P::RSA(_), Algorithm::PS256 | Algorithm::PS384 | Algorithm::PS512) => true,
        (P::EllipticCurve(ec), Algorithm::ES256) => ec.curve == EllipticCurve::P256,
        (P::EllipticCurve(ec), Algorithm::ES384) => ec.curve == EllipticCurve::P384,
        (P::OctetKeyPair(_), Algorithm::EdDSA) => true,
        _ => false,
    }
}

/// The HTTP client for `issuer` and its metadata: the first of its
/// documents that answers and names it.
pub(super) async fn discover_issuer(
    connection: &HttpConfig,
    issuer: &str,
) -> Result<(reqwest::Client, Value), KeysError> {
    let http = crate::transport::http::build_client_with(connection, reqwest::redirect::Policy::none())
        .map_err(|e| KeysError::Issuer(e.to_string()))?;
    let url = Url::parse(issuer).map_err(|e| KeysError::Issuer(e.to_string()))?;
    let metadata = issuer_metadata(&http, &url, issuer).await?;
    Ok((http, metadata))
}

/// The URL of the metadata's `member` (`jwks_uri`, `introspection_endpoint`).
pub(super) fn endpoint_of(metadata: &Value, member: &str) -> Result<Url, KeysError> {
    let uri =
        metadata.get(member).and_then(Value::as_str).ok_or_else(|| KeysError::Metadata(format!("no {member}")))?;
    Url::parse(uri).map_err(|e| KeysError::Metadata(format!("{member}: {e}")))
}

/// The first of the issuer's metadata documents that answers and names
/// this issuer (`named`, as configured).
async fn issuer_metadata(http: &reqwest::Client, issuer: &Url, named: &str) -> Result<Value, KeysError> {
    let mut tried = Vec::new();
    for url in server_metadata_urls(issuer) {
        match get_json(http, &url).await {
            Ok(metadata) if metadata.get("issuer").and_then(Value::as_str) == Some(named) => return Ok(metadata),
            Ok(_) => tried.push(format!("{} names another issuer", url.path())),
            Err(why) => tried.push(why),
        }
    }
    Err(KeysError::Metadata(tried.join("; ")))
}

async fn fetch_keys(http: &reqwest::Client, jwks_uri: &Url) -> Result<JwkSet, KeysError> {
    let set = get_json(http, jwks_uri).await.map_err(KeysError::Jwks)?;
    serde_json::from_value(set).map_err(|e| KeysError::Jwks(e.to_string()))
}

/// A JSON document, at most 1 MiB; errors name the path, not the host.
pub(super) async fn get_json(http: &reqwest::Client, url: &Url) -> Result<Value, String> {
    const MAX: usize = 1 << 20;
    let failed = |e: reqwest::Error| format!("{}: {}", url.path(), crate::error::report(&e.without_url()));
    let response = http.get(url.clone()).header("accept", "application/json").send().await.map_err(failed)?;
    if !response.status().is_success() {
        return Err(format!("{}: HTTP {}", url.path(), response.status().as_u16()));
    }
    let body = response.bytes().await.map_err(failed)?;
    if body.len() > MAX {
        return Err(format!("{}: larger than {MAX} bytes", url.path()));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{}: {e}", url.path()))
}
