//! Opaque access tokens checked by asking their issuer (RFC 7662 token
//! introspection) with the server's own client credentials; an active
//! answer is kept for a short while (and never past the token's `exp`), so
//! a busy client does not cost one call per request, and a revoked token
//! stops working within that while.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value};

use super::cache::{CallerCache, TokenDigest, digest};
use super::jwt::{KeysError, caller_of, discover_issuer, endpoint_of};
use super::{Caller, Refusal, TokenValidator};
use crate::BoxFuture;
use crate::transport::http::HttpConfig;

/// How opaque tokens are introspected. [`IntrospectionConfig::new`], then
/// the `with_*` setters.
#[derive(Clone)]
#[non_exhaustive]
pub struct IntrospectionConfig {
    /// The issuer; its metadata names the introspection endpoint, and an
    /// answer's `iss`, when given, must be it.
    pub issuer: String,
    /// The audience tokens must name (this endpoint's URL), when the answer
    /// gives an `aud`.
    pub audience: String,
    /// The server's client id at the issuer.
    pub client_id: String,
    /// The server's client secret (sent with HTTP Basic; never logged).
    pub client_secret: String,
    /// How long an active answer is used before asking again.
    pub cache_lifetime: Duration,
    /// The most answers kept.
    pub max_cached: usize,
    /// TLS and proxy settings for reaching the issuer.
    pub connection: HttpConfig,
}

impl std::fmt::Debug for IntrospectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionConfig")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("client_id", &self.client_id)
            .field("client_secret", &"***")
            .field("cache_lifetime", &self.cache_lifetime)
            .finish_non_exhaustive()
    }
}

crate::setters::with_setters! {
    IntrospectionConfig {
        value with_cache_lifetime => cache_lifetime: Duration,
        value with_max_cached => max_cached: usize,
        value with_connection => connection: HttpConfig,
    }
}

impl IntrospectionConfig {
    /// Tokens of `issuer` for `audience`, introspected as client
    /// `client_id`; answers kept 30 s, at most 10 000 of them.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let issuer = issuer.into();
        IntrospectionConfig {
            connection: HttpConfig::new(issuer.clone()),
            issuer,
            audience: audience.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            cache_lifetime: Duration::from_secs(30),
            max_cached: 10_000,
        }
    }
}

/// A [`TokenValidator`] of opaque tokens by introspection. Cheap to clone.
#[derive(Clone)]
pub struct IntrospectionValidator {
    inner: Arc<Inner>,
}

struct Inner {
    config: IntrospectionConfig,
    http: reqwest::Client,
    endpoint: Url,
    /// Active answers.
    cache: CallerCache,
}

impl std::fmt::Debug for IntrospectionValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionValidator").field("endpoint", &self.inner.endpoint.path()).finish_non_exhaustive()
    }
}

impl IntrospectionValidator {
    /// Finds the issuer's `introspection_endpoint` through its metadata.
    ///
    /// # Errors
    /// The [`KeysError`] of the step that failed (the issuer is not a URL,
    /// no metadata names it, or it names no introspection endpoint).
    pub async fn discover(config: IntrospectionConfig) -> Result<Self, KeysError> {
        let (http, metadata) = discover_issuer(&config.connection, &config.issuer).await?;
        let endpoint = endpoint_of(&metadata, "introspection_endpoint")?;
        let cache = CallerCache::new(config.max_cached);
        Ok(IntrospectionValidator { inner: Arc::new(Inner { config, http, endpoint, cache }) })
    }

    /// Checks a token whose caller is not kept (by its `digest`).
    async fn check(&self, digest: TokenDigest, token: &str) -> Result<Arc<Caller>, Refusal> {
        let config = &self.inner.config;
        let unavailable = Refusal::InvalidToken { description: "the token could not be checked" };
        let response = self
            .inner
            .http
            .post(self.inner.endpoint.clone())
            .basic_auth(&config.client_id, Some(&config.client_secret))
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(target: "mcp_protect", "introspection failed: {}", crate::error::report(&e.without_url()));
                unavailable.clone()
            })?;
        if !response.status().is_success() {
            tracing::warn!(target: "mcp_protect", status = response.status().as_u16(), "introspection refused");
            return Err(unavailable);
        }
        let answer: Map<String, Value> = response.json().await.map_err(|_| unavailable)?;
        let caller = Arc::new(judge(answer, config)?);
        self.inner.cache.insert(digest, &caller, config.cache_lifetime);
        Ok(caller)
    }
}

/// Whether an introspection answer lets the request in: active, of this
/// issuer and for this audience when it says, not expired.
fn judge(answer: Map<String, Value>, config: &IntrospectionConfig) -> Result<Caller, Refusal> {
    if answer.get("active").and_then(Value::as_bool) != Some(true) {
        return Err(Refusal::InvalidToken { description: "the token is not active" });
    }
    if answer.get("iss").and_then(Value::as_str).is_some_and(|iss| iss != config.issuer) {
        return Err(Refusal::InvalidToken { description: "the token is of another issuer" });
    }
    let for_us = match answer.get("aud") {
        None => true,
        Some(Value::String(aud)) => *aud == config.audience,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(config.audience.as_str())),
        Some(_) => false,
    };
    if !for_us {
        return Err(Refusal::InvalidToken { description: "the token is for another resource" });
    }
    if answer.get("exp").and_then(Value::as_u64).is_some_and(|exp| exp <= crate::clock::unix_seconds()) {
        return Err(Refusal::InvalidToken { description: "the token has expired" });
    }
    Ok(caller_of(answer))
}

impl TokenValidator for IntrospectionValidator {
    fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>> {
        let shared = self.validate_shared(token);
        Box::pin(async move { shared.await.map(Arc::unwrap_or_clone) })
    }

    /// A kept caller at once; else the token is checked.
    fn validate_shared(&self, token: &str) -> BoxFuture<Result<Arc<Caller>, Refusal>> {
        let digest = digest(token);
        if let Some(caller) = self.inner.cache.get(&digest) {
            return Box::pin(std::future::ready(Ok(caller)));
        }
        let (me, token) = (self.clone(), token.to_owned());
        Box::pin(async move { me.check(digest, &token).await })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config() -> IntrospectionConfig {
        IntrospectionConfig::new("https://as.example", "https://rs.example/mcp", "rs", "s3cr3t-value")
    }

    fn answer(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_answer_is_judged_by_activity_issuer_audience_and_expiry() {
        let later = crate::clock::unix_seconds() + 60;
        let good = answer(
            json!({"active": true, "sub": "u", "scope": "a b", "aud": ["https://rs.example/mcp"], "exp": later}),
        );
        let caller = judge(good, &config()).unwrap();
        assert_eq!((caller.subject.as_deref(), caller.scopes.len()), (Some("u"), 2));
        let refused = |v: Value| match judge(answer(v), &config()) {
            Err(Refusal::InvalidToken { description }) => description,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(json!({"active": false})), "the token is not active");
        assert_eq!(refused(json!({})), "the token is not active");
        assert_eq!(refused(json!({"active": true, "iss": "https://evil.example"})), "the token is of another issuer");
        assert_eq!(
            refused(json!({"active": true, "aud": "https://other.example"})),
            "the token is for another resource"
        );
        assert_eq!(refused(json!({"active": true, "exp": 1})), "the token has expired");
    }

    #[test]
    fn the_secret_stays_out_of_debug() {
        assert!(!format!("{:?}", config()).contains("s3cr3t-value"));
    }
}
