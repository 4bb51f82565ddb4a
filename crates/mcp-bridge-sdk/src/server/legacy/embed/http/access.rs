//! A shared secret every request to the endpoint must carry as
//! `Authorization: Bearer SECRET`: what keeps other users of the machine
//! out of a TCP endpoint (`mcp-bridge --listen`), since every local account
//! can reach a loopback port. Only a digest of the secret is kept.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use sha2::{Digest, Sha256};

/// Random bytes of a generated secret: 256 bits, beyond guessing.
const GENERATED_BYTES: usize = 32;

/// The access token of an endpoint: [`AccessToken::new`] from a secret the
/// user chose, or [`AccessToken::generate`].
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(..)")
    }
}

/// A secret that cannot be an access token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSecret {
    /// It is empty or only white space.
    #[error("the access token is empty")]
    Empty,
    /// It holds characters a header value cannot carry.
    #[error("the access token must be printable ASCII without spaces")]
    NotPrintable,
}

impl AccessToken {
    /// The token whose secret is `secret` (printable ASCII, no spaces).
    ///
    /// # Errors
    /// [`BadSecret`] when no client could send it in a header.
    pub fn new(secret: &str) -> Result<Self, BadSecret> {
        if secret.trim().is_empty() {
            return Err(BadSecret::Empty);
        }
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(BadSecret::NotPrintable);
        }
        Ok(AccessToken { digest: Sha256::digest(secret.as_bytes()).into() })
    }

    /// A new random token and its secret (43 URL-safe characters), for
    /// the caller to hand to the endpoint's users.
    ///
    /// # Errors
    /// The system's random source failed.
    pub fn generate() -> Result<(Self, String), getrandom::Error> {
        let mut bytes = [0u8; GENERATED_BYTES];
        getrandom::fill(&mut bytes)?;
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let token = AccessToken { digest: Sha256::digest(secret.as_bytes()).into() };
        Ok((token, secret))
    }

    /// Whether a request with `headers` carries this token in one of its
    /// `Authorization` headers (scheme `Bearer`, any case).
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        headers.get_all(header::AUTHORIZATION).iter().filter_map(|v| v.to_str().ok()).any(|value| {
            let Some((scheme, secret)) = value.split_once(' ') else { return false };
            scheme.eq_ignore_ascii_case("bearer") && self.is(secret.trim())
        })
    }

    /// Compares digests, so that how long the comparison takes says
    /// nothing about the secret.
    fn is(&self, secret: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        digest.iter().zip(self.digest.iter()).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
    }
}

/// The axum middleware of an endpoint with `token`: a request without it
/// gets 401 before any route sees it.
pub(super) async fn require(State(token): State<AccessToken>, request: Request, next: Next) -> Response {
    if token.admits(request.headers()) {
        return next.run(request).await;
    }
    let challenge = [(header::WWW_AUTHENTICATE, r#"Bearer realm="mcp-bridge""#)];
    (StatusCode::UNAUTHORIZED, challenge, "this endpoint needs its access token: Authorization: Bearer TOKEN")
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_authorization(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_the_bearer_secret_is_admitted() {
        let token = AccessToken::new("s3cret-token").unwrap();
        assert!(token.admits(&with_authorization(&["Bearer s3cret-token"])));
        assert!(token.admits(&with_authorization(&["bearer s3cret-token"])));
        assert!(token.admits(&with_authorization(&["Basic eA==", "Bearer s3cret-token"])));
        assert!(!token.admits(&with_authorization(&[])));
        assert!(!token.admits(&with_authorization(&["Bearer s3cret-tokeN"])));
        assert!(!token.admits(&with_authorization(&["Bearer s3cret-token2"])));
        assert!(!token.admits(&with_authorization(&["Basic s3cret-token"])));
        assert!(!token.admits(&with_authorization(&["s3cret-token"])));
    }

    #[test]
    fn secrets_no_header_can_carry_are_refused() {
        assert_eq!(AccessToken::new(""), Err(BadSecret::Empty));
        assert_eq!(AccessToken::new("  "), Err(BadSecret::Empty));
        assert_eq!(AccessToken::new("two words"), Err(BadSecret::NotPrintable));
        assert_eq!(AccessToken::new("é"), Err(BadSecret::NotPrintable));
    }

    #[test]
    fn generated_secrets_differ_and_are_admitted() {
        let (token, secret) = AccessToken::generate().unwrap();
        let (_, other) = AccessToken::generate().unwrap();
        assert_ne!(secret, other);
        assert_eq!(secret.len(), 43);
        assert!(token.admits(&with_authorization(&[&format!("Bearer {secret}")])));
        assert_eq!(format!("{token:?}"), "AccessToken(..)");
    }
}
