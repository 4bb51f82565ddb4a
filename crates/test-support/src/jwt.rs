//! An issuer of access tokens on loopback: its metadata (RFC 8414), its key
//! set (ES256 keys made with ring, tokens signed with jsonwebtoken; the set
//! can change under it and counts its fetches), and an introspection
//! endpoint (RFC 7662) for opaque tokens, for client `rs` / `rs-secret`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// An ES256 key: its id, the private key for signing, the public JWK.
pub struct SigningKey {
    /// The key id (`kid`).
    pub kid: String,
    /// The private key.
    pub encoding: EncodingKey,
    /// The public key as the key set publishes it.
    pub jwk: Value,
}

/// A fresh P-256 key named `kid`.
pub fn signing_key(kid: &str) -> SigningKey {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    // An uncompressed point: 0x04, then x and y.
    let point = pair.public_key().as_ref();
    let (x, y) = point[1..].split_at(32);
    let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)});
    SigningKey { kid: kid.into(), encoding: EncodingKey::from_ec_der(pkcs8.as_ref()), jwk }
}

/// The issuer on loopback: its URL (also its issuer identifier), the
/// published keys, and how often the key set was fetched.
pub struct Issuer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The keys the JWKS endpoint publishes.
    pub published: Arc<Mutex<Vec<Value>>>,
    /// How many times the key set was fetched.
    pub fetches: Arc<AtomicUsize>,
    /// The active opaque tokens and what introspection says of each.
    pub opaque: Arc<Mutex<HashMap<String, Value>>>,
    /// How many times a token was introspected.
    pub introspections: Arc<AtomicUsize>,
}

/// The client id and secret the introspection endpoint takes.
pub const INTROSPECTION_CLIENT: (&str, &str) = ("rs", "rs-secret");

/// Starts an issuer publishing no key yet.
pub async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let published = Arc::new(Mutex::new(Vec::new()));
    let fetches = Arc::new(AtomicUsize::new(0));
    let metadata = json!({"issuer": url, "jwks_uri": format!("{url}/jwks"),
        "authorization_endpoint": format!("{url}/authorize"), "token_endpoint": format!("{url}/token"),
        "introspection_endpoint": format!("{url}/introspect")});
    let (keys, count) = (published.clone(), fetches.clone());
    let opaque: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
    let introspections = Arc::new(AtomicUsize::new(0));
    let (active, asked) = (opaque.clone(), introspections.clone());
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("rs:rs-secret"));
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || async move { metadata.to_string() }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || async move {
                count.fetch_add(1, Ordering::SeqCst);
                json!({"keys": *keys.lock().unwrap()}).to_string()
            }),
        )
        .route(
            "/introspect",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, form: axum::extract::Form<HashMap<String, String>>| async move {
                    asked.fetch_add(1, Ordering::SeqCst);
                    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
                        return (axum::http::StatusCode::UNAUTHORIZED, String::new());
                    }
                    let token = form.get("token").cloned().unwrap_or_default();
                    let answer = active.lock().unwrap().get(&token).cloned().unwrap_or(json!({"active": false}));
                    (axum::http::StatusCode::OK, answer.to_string())
                },
            ),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    Issuer { url, published, fetches, opaque, introspections }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// The claims of a 5-minute access token of `issuer` for `audience`, for
/// subject `alice` of client `app-1`, with `scope`.
pub fn claims(issuer: &str, audience: &str, scope: &str) -> Value {
    json!({"iss": issuer, "aud": audience, "sub": "alice", "client_id": "app-1", "scope": scope,
        "iat": now(), "exp": now() + 300})
}

/// `claims` signed with `key` as an access token (`typ: at+jwt`).
pub fn access_token(key: &SigningKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    header.typ = Some("at+jwt".into());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}
