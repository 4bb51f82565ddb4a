//! DPoP (RFC 9449): tokens bound to a key of the client, so that a stolen
//! token is useless without it. [`DpopKey`] signs the proof that goes with
//! each token request and each request to the server; [`Nonces`] keeps the
//! nonce each server asked for. The key is kept in the token store, sealed
//! like the tokens, so that tokens stored before a restart stay usable.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Url;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::SignInError;
use super::assertion::{ClientKey, SigningAlgorithm};

/// The token type (and `Authorization` scheme) of a key-bound token.
pub(crate) const DPOP_TOKEN_TYPE: &str = "DPoP";

/// The header that carries a proof, and the one that carries a nonce.
pub(crate) const DPOP_HEADER: &str = "DPoP";
pub(crate) const NONCE_HEADER: &str = "DPoP-Nonce";

/// The OAuth error of a server that wants a proof with its nonce.
pub(crate) const USE_NONCE: &str = "use_dpop_nonce";

/// The key record in the store: the PKCS #8 document, base64.
#[derive(Serialize, Deserialize)]
pub(crate) struct KeyRecord {
    pkcs8: String,
}

/// A P-256 key (ES256) that proofs are signed with. Its `Debug` shows the
/// public key's thumbprint only.
pub(crate) struct DpopKey {
    key: ClientKey,
    pkcs8: Vec<u8>,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`).
    jwk: Value,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").field("thumbprint", &self.thumbprint()).finish()
    }
}

fn key_failed() -> SignInError {
    SignInError::Token("the DPoP key could not be made or read".into())
}

impl DpopKey {
    /// A new random key.
    pub(crate) fn generate() -> Result<DpopKey, SignInError> {
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let document = EcdsaKeyPair::generate_pkcs8(alg, &SystemRandom::new()).map_err(|_| key_failed())?;
        DpopKey::from_pkcs8(document.as_ref())
    }

    /// The key of a stored record.
    pub(crate) fn from_record(record: &KeyRecord) -> Result<DpopKey, SignInError> {
        let der = base64::engine::general_purpose::STANDARD.decode(&record.pkcs8).map_err(|_| key_failed())?;
        DpopKey::from_pkcs8(&der)
    }

    fn from_pkcs8(der: &[u8]) -> Result<DpopKey, SignInError> {
        let key = ClientKey::from_pkcs8(der, SigningAlgorithm::Es256).map_err(|_| key_failed())?;
        // An uncompressed point: 0x04, then x and y of 32 bytes each.
        let point = key.ec_public_point().filter(|p| p.len() == 65).ok_or_else(key_failed)?;
        let jwk = json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        Ok(DpopKey { key, pkcs8: der.to_vec(), jwk })
    }

    /// The record the store keeps.
    pub(crate) fn record(&self) -> KeyRecord {
        KeyRecord { pkcs8: base64::engine::general_purpose::STANDARD.encode(&self.pkcs8) }
    }

    /// The JWK thumbprint of the public key (RFC 7638): what a bound token's
    /// `cnf.jkt` names.
    pub(crate) fn thumbprint(&self) -> String {
        // The required members in lexicographic order, no whitespace.
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":{},"y":{}}}"#, self.jwk["x"], self.jwk["y"]);
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// The proof of one request (RFC 9449 section 4.2): `method` to `url`
    /// (its query and fragment left out), with the server's `nonce`, and
    /// bound to `access_token` when one goes with it (`ath`).
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
        now_s: u64,
    ) -> Result<String, SignInError> {
        let header = json!({"typ": "dpop+jwt", "jwk": self.jwk});
        let mut claims = json!({
            "jti": super::pkce::state(),
            "htm": method,
            "htu": htu(url),
            "iat": now_s,
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        self.key.sign_with_header(header, &claims)
    }
}

/// The `htu` of a request: its URL without query and fragment.
fn htu(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) => {
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or(url).to_owned(),
    }
}

/// What signs the proofs of one client: its key, and the nonces servers
/// gave it.
#[derive(Clone, Copy)]
pub(crate) struct Prover<'a> {
    /// The key.
    pub(crate) key: &'a DpopKey,
    /// The nonces.
    pub(crate) nonces: &'a Nonces,
}

impl Prover<'_> {
    /// The proof of a request to `url` with the nonce its server gave last.
    pub(crate) fn proof(&self, method: &str, url: &str, access_token: Option<&str>) -> Result<String, SignInError> {
        let nonce = self.nonces.for_url(url);
        self.key.proof(method, url, access_token, nonce.as_deref(), crate::clock::unix_seconds())
    }
}

/// The nonce each server (by origin) last gave; a proof to it carries it.
#[derive(Debug, Default)]
pub(crate) struct Nonces(Mutex<HashMap<String, String>>);

fn origin(url: &str) -> Option<String> {
    Url::parse(url).ok().map(|u| u.origin().ascii_serialization())
}

impl Nonces {
    /// The nonce to send to the server at `url`.
    pub(crate) fn for_url(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&origin).cloned()
    }

    /// Keeps the nonce the server at `url` gave; `true` when it is new.
    pub(crate) fn remember(&self, url: &str, nonce: &str) -> bool {
        let Some(origin) = origin(url) else { return false };
        let mut nonces = self.0.lock().unwrap_or_else(|e| e.into_inner());
        nonces.insert(origin, nonce.to_owned()).as_deref() != Some(nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_names_the_request_binds_the_token_and_verifies_with_its_jwk() {
        let key = DpopKey::generate().unwrap();
        let proof = key.proof("POST", "https://mcp.example/mcp?x=1#f", Some("tok"), Some("n-1"), 1_000).unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        assert_eq!((header["typ"].as_str(), header["alg"].as_str()), (Some("dpop+jwt"), Some("ES256")));
        assert!(header["jwk"].get("d").is_none(), "no private part in the header");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(claims["iat"], 1_000);
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")));
        let mut point = vec![4u8];
        for member in ["x", "y"] {
            point.extend(URL_SAFE_NO_PAD.decode(header["jwk"][member].as_str().unwrap()).unwrap());
        }
        let verifier = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point);
        let signed = format!("{}.{}", parts[0], parts[1]);
        verifier.verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        let again = key.proof("POST", "https://mcp.example/mcp", Some("tok"), None, 1_000).unwrap();
        assert_ne!(decode(again.split('.').nth(1).unwrap())["jti"], claims["jti"], "a fresh jti per proof");
    }

    #[test]
    fn a_stored_key_is_the_same_key() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_record(&key.record()).unwrap();
        assert_eq!(key.thumbprint(), again.thumbprint());
        assert_ne!(key.thumbprint(), DpopKey::generate().unwrap().thumbprint());
        assert!(!format!("{key:?}").contains(&key.record().pkcs8[..20]));
    }

    #[test]
    fn nonces_are_kept_per_origin() {
        let nonces = Nonces::default();
        assert!(nonces.remember("https://as.example/token", "a"));
        assert!(!nonces.remember("https://as.example/other", "a"), "the same nonce is not new");
        assert_eq!(nonces.for_url("https://as.example/x").as_deref(), Some("a"));
        assert_eq!(nonces.for_url("https://mcp.example/mcp"), None);
    }
}
