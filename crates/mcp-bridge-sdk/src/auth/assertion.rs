//! [`ClientKey`]: the private key of a client that authenticates with a
//! signed JWT (`private_key_jwt`, RFC 7523 section 2.2), and the client
//! assertions it signs.

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::{Value, json};

use super::SignInError;

/// How long a client assertion is valid: one token request.
const ASSERTION_LIFETIME_S: u64 = 60;

/// A signing algorithm of client assertions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl SigningAlgorithm {
    /// The algorithm of its JOSE name (`ES256`, `RS256`).
    pub fn from_name(name: &str) -> Option<SigningAlgorithm> {
        match name {
            "ES256" => Some(SigningAlgorithm::Es256),
            "RS256" => Some(SigningAlgorithm::Rs256),
            _ => None,
        }
    }

    /// Its JOSE name.
    pub fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Rs256 => "RS256",
        }
    }
}

/// Why a private key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientKeyError {
    /// Not a PEM `PRIVATE KEY` (PKCS #8) document.
    #[error(
        "the client key is not a PEM PKCS #8 private key (-----BEGIN PRIVATE KEY-----); convert one with `openssl pkcs8 -topk8 -nocrypt`"
    )]
    NotPkcs8,
    /// The key does not fit the algorithm.
    #[error("the client key is not a valid {0} key")]
    WrongKey(&'static str),
}

enum KeyPair {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// The private key of a `private_key_jwt` client. Its `Debug` shows the
/// algorithm and key id only.
pub struct ClientKey {
    algorithm: SigningAlgorithm,
    key: KeyPair,
    key_id: Option<String>,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey").field("algorithm", &self.algorithm).field("key_id", &self.key_id).finish()
    }
}

impl ClientKey {
    /// A key from a PEM PKCS #8 document (`-----BEGIN PRIVATE KEY-----`),
    /// for `algorithm`.
    ///
    /// # Errors
    /// See [`ClientKeyError`]; the texts never show the key.
    pub fn from_pem(pem: &str, algorithm: SigningAlgorithm) -> Result<ClientKey, ClientKeyError> {
        let der = pkcs8_der(pem).ok_or(ClientKeyError::NotPkcs8)?;
        ClientKey::from_pkcs8(&der, algorithm)
    }

    /// A key from a PKCS #8 document (DER), for `algorithm`.
    pub(crate) fn from_pkcs8(der: &[u8], algorithm: SigningAlgorithm) -> Result<ClientKey, ClientKeyError> {
        let key = match algorithm {
            SigningAlgorithm::Es256 => {
                let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
                KeyPair::Ecdsa(EcdsaKeyPair::from_pkcs8(alg, der, &SystemRandom::new()).map_err(|_| wrong(algorithm))?)
            }
            SigningAlgorithm::Rs256 => KeyPair::Rsa(RsaKeyPair::from_pkcs8(der).map_err(|_| wrong(algorithm))?),
        };
        Ok(ClientKey { algorithm, key, key_id: None })
    }

    /// Names the key in the assertions' `kid` header (for an authorization
    /// server that holds several keys of the client).
    pub fn with_key_id(mut self, key_id: impl Into<String>) -> Self {
        self.key_id = Some(key_id.into());
        self
    }

    /// The client assertion of one token request: `iss` and `sub` the
    /// client id, `aud` the authorization server's issuer, valid a minute,
    /// with a fresh `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str, now_s: u64) -> Result<String, SignInError> {
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now_s,
            "exp": now_s + ASSERTION_LIFETIME_S,
            "jti": super::pkce::state(),
        });
        self.sign(&claims)
    }

    /// The public key of an ECDSA key as its uncompressed point (0x04, x, y).
    pub(crate) fn ec_public_point(&self) -> Option<&[u8]> {
        use ring::signature::KeyPair as _;
        match &self.key {
            KeyPair::Ecdsa(pair) => Some(pair.public_key().as_ref()),
            KeyPair::Rsa(_) => None,
        }
    }

    /// A compact JWS of `claims`.
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, SignInError> {
        let mut header = json!({"typ": "JWT"});
        if let Some(kid) = &self.key_id {
            header["kid"] = json!(kid);
        }
        self.sign_with_header(header, claims)
    }

    /// A compact JWS of `claims` under `header`, its `alg` set to the key's.
    pub(crate) fn sign_with_header(&self, mut header: Value, claims: &Value) -> Result<String, SignInError> {
        header["alg"] = json!(self.algorithm.name());
        let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let input = format!("{}.{}", b64(&header), b64(claims));
        let rng = SystemRandom::new();
        let failed = || SignInError::Token("a JWT could not be signed".into());
        let signature = match &self.key {
            KeyPair::Ecdsa(key) => key.sign(&rng, input.as_bytes()).map_err(|_| failed())?.as_ref().to_vec(),
            KeyPair::Rsa(key) => {
                let mut out = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut out).map_err(|_| failed())?;
                out
            }
        };
        Ok(format!("{input}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature)))
    }
}

fn wrong(algorithm: SigningAlgorithm) -> ClientKeyError {
    ClientKeyError::WrongKey(algorithm.name())
}

/// The DER inside a PEM `PRIVATE KEY` block.
fn pkcs8_der(pem: &str) -> Option<Vec<u8>> {
    let body = pem.split("-----BEGIN PRIVATE KEY-----").nth(1)?.split("-----END PRIVATE KEY-----").next()?;
    let text: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::KeyPair as _;

    fn es256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let public = EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).unwrap().public_key().as_ref().to_vec();
        let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        (format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"), public)
    }

    #[test]
    fn an_assertion_verifies_with_the_public_key_and_names_the_client() {
        let (pem, public) = es256_pem();
        let key = ClientKey::from_pem(&pem, SigningAlgorithm::Es256).unwrap().with_key_id("k1");
        let jwt = key.assertion("client-7", "https://as.example", 1_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        let decode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap();
        let header: Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        let claims: Value = serde_json::from_slice(&decode(parts[1])).unwrap();
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}));
        assert_eq!((claims["iss"].as_str(), claims["sub"].as_str()), (Some("client-7"), Some("client-7")));
        assert_eq!((claims["aud"].as_str(), claims["exp"].as_u64()), (Some("https://as.example"), Some(1_060)));
        let verifier = signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, public);
        let signed = format!("{}.{}", parts[0], parts[1]);
        verifier.verify(signed.as_bytes(), &decode(parts[2])).unwrap();
        let other = key.assertion("client-7", "https://as.example", 1_000).unwrap();
        assert_ne!(other.split('.').nth(1), Some(parts[1]), "every assertion has its own jti");
    }

    #[test]
    fn keys_that_do_not_fit_are_refused_without_showing_them() {
        let (pem, _) = es256_pem();
        assert_eq!(ClientKey::from_pem(&pem, SigningAlgorithm::Rs256).unwrap_err(), ClientKeyError::WrongKey("RS256"));
        let sec1 = pem.replace("PRIVATE KEY", "EC PRIVATE KEY");
        let refused = ClientKey::from_pem(&sec1, SigningAlgorithm::Es256).unwrap_err();
        assert_eq!(refused, ClientKeyError::NotPkcs8);
        assert!(!refused.to_string().contains(&pem[40..60]));
        let key = ClientKey::from_pem(&pem, SigningAlgorithm::Es256).unwrap();
        assert_eq!(format!("{key:?}"), "ClientKey { algorithm: Es256, key_id: None }");
    }
}
