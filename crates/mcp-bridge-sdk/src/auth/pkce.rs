//! The one-time values of an authorization request: the PKCE verifier and
//! its S256 challenge (RFC 7636), and the `state`.

use base64::Engine;
use sha2::{Digest, Sha256};

/// Random bytes as URL-safe Base64 without padding.
fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).expect("invariant: the OS random source is available");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer)
}

/// A PKCE verifier and its S256 challenge.
#[derive(Clone)]
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pkce(***)")
    }
}

impl Pkce {
    /// A fresh verifier (43 characters, 256 bits) and its challenge.
    pub(crate) fn new() -> Pkce {
        let verifier = random_token(32);
        let challenge = s256(&verifier);
        Pkce { verifier, challenge }
    }
}

/// `BASE64URL(SHA256(verifier))`.
pub(crate) fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A fresh `state` value (128 bits).
pub(crate) fn state() -> String {
    random_token(16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_s256_of_the_verifier() {
        // RFC 7636 appendix B.
        assert_eq!(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let pkce = Pkce::new();
        assert_eq!(pkce.verifier.len(), 43);
        assert_ne!(Pkce::new().verifier, pkce.verifier);
        assert_eq!(format!("{pkce:?}"), "Pkce(***)");
        assert_ne!(state(), state());
    }
}
