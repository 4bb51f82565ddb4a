//! The JWT access-token validator against an issuer on loopback that
//! publishes its metadata and key set and rotates its keys: every class of
//! bad token is refused (with the reason, never the token), a good one
//! gives its caller, and an unknown key id fetches the key set once.

use std::sync::atomic::Ordering;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_bridge_sdk::server::protect::jwt::{JwtConfig, JwtValidator, KeysError};
use mcp_bridge_sdk::server::protect::{Refusal, TokenValidator};
use serde_json::{Value, json};
use test_support::jwt::{SigningKey, access_token, issuer, now, signing_key};

const AUDIENCE: &str = "http://127.0.0.1:1/mcp";

fn claims(issuer: &str) -> Value {
    test_support::jwt::claims(issuer, AUDIENCE, "notes:read notes:write")
}

fn token(key: &SigningKey, claims: &Value) -> String {
    access_token(key, claims)
}

/// A token with this header and claims, its signature made up.
fn unsigned(header: Value, claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.{}", part(&header), part(claims), URL_SAFE_NO_PAD.encode(b"not a signature"))
}

fn refused(outcome: Result<mcp_bridge_sdk::server::protect::Caller, Refusal>) -> &'static str {
    match outcome {
        Err(Refusal::InvalidToken { description }) => description,
        other => panic!("a refusal was expected: {other:?}"),
    }
}

#[tokio::test]
async fn every_bad_token_is_refused_and_a_good_one_gives_its_caller() {
    let issuer = issuer().await;
    let key = signing_key("k1");
    issuer.published.lock().unwrap().push(key.jwk.clone());
    let validator = JwtValidator::discover(JwtConfig::new(&issuer.url, AUDIENCE)).await.unwrap();

    let good = token(&key, &claims(&issuer.url));
    let caller = validator.validate(&good).await.unwrap();
    assert_eq!(caller.subject.as_deref(), Some("alice"));
    assert_eq!(caller.client_id.as_deref(), Some("app-1"));
    assert_eq!(caller.scopes, ["notes:read", "notes:write"]);
    assert_eq!(caller.claims["aud"], AUDIENCE);

    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = claims(&issuer.url);
        change(&mut c);
        token(&key, &c)
    };
    let other_key = signing_key("k1");
    let cases: Vec<(&str, String)> = vec![
        ("garbage", "garbage".into()),
        ("empty", String::new()),
        ("wrong signature", token(&other_key, &claims(&issuer.url))),
        ("wrong issuer", with(&|c| c["iss"] = json!("https://evil.example"))),
        ("wrong audience", with(&|c| c["aud"] = json!("https://other.example/mcp"))),
        ("expired", with(&|c| c["exp"] = json!(now() - 120))),
        ("not yet valid", with(&|c| c["nbf"] = json!(now() + 120))),
        (
            "no subject",
            with(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
        ),
        ("alg none", unsigned(json!({"alg": "none", "typ": "at+jwt", "kid": "k1"}), &claims(&issuer.url))),
        ("HS256 with the public key", {
            let secret = key.jwk.to_string();
            let mut header = Header::new(Algorithm::HS256);
            (header.kid, header.typ) = (Some("k1".into()), Some("at+jwt".into()));
            jsonwebtoken::encode(&header, &claims(&issuer.url), &EncodingKey::from_secret(secret.as_bytes())).unwrap()
        }),
        ("an ID token, not an access token", {
            let mut header = Header::new(Algorithm::ES256);
            (header.kid, header.typ) = (Some("k1".into()), Some("JWT".into()));
            jsonwebtoken::encode(&header, &claims(&issuer.url), &key.encoding).unwrap()
        }),
    ];
    let mut reasons = Vec::new();
    for (what, bad) in &cases {
        let why = refused(validator.validate(bad).await);
        eprintln!("{what}: refused, {why}");
        reasons.push(why);
    }
    assert_eq!(reasons[3], "the token is of another issuer");
    assert_eq!(reasons[4], "the token is for another resource");
    assert_eq!(reasons[5], "the token has expired");
    assert_eq!(reasons[6], "the token is not valid yet");
    assert_eq!(reasons[7], "the token lacks a required claim");
    assert_eq!(reasons[8], "the token is not a JWT");
    assert_eq!(reasons[9], "the token's algorithm is not accepted");
    assert_eq!(reasons[10], "the token is not a JWT access token (typ at+jwt)");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_made_up_key_ids_do_not_hammer_the_issuer() {
    let issuer = issuer().await;
    let (old, new) = (signing_key("old"), signing_key("new"));
    issuer.published.lock().unwrap().push(old.jwk.clone());
    let validator =
        JwtValidator::discover(JwtConfig::new(&issuer.url, AUDIENCE).with_refresh_interval(std::time::Duration::ZERO))
            .await
            .unwrap();
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);
    validator.validate(&token(&old, &claims(&issuer.url))).await.unwrap();
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "a known key is not fetched again");
    // The issuer rotates: a token of the new key fetches the set once.
    issuer.published.lock().unwrap().push(new.jwk.clone());
    validator.validate(&token(&new, &claims(&issuer.url))).await.unwrap();
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);
    validator.validate(&token(&new, &claims(&issuer.url))).await.unwrap();
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);

    // With the default interval, made-up key ids cost one fetch: the first
    // is fetched for at once (a rotation just after the start), the others
    // wait for the interval.
    let guarded = JwtValidator::discover(JwtConfig::new(&issuer.url, AUDIENCE)).await.unwrap();
    let before = issuer.fetches.load(Ordering::SeqCst);
    for i in 0..5 {
        let mut header = Header::new(Algorithm::ES256);
        (header.kid, header.typ) = (Some(format!("made-up-{i}")), Some("at+jwt".into()));
        let forged = jsonwebtoken::encode(&header, &claims(&issuer.url), &new.encoding).unwrap();
        assert_eq!(refused(guarded.validate(&forged).await), "the token's signing key is not the issuer's");
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), before + 1, "one fetch; none more within the interval");
}

#[tokio::test]
async fn a_token_that_passed_is_kept_until_the_keys_change() {
    let issuer = issuer().await;
    let (old, new) = (signing_key("old"), signing_key("new"));
    issuer.published.lock().unwrap().push(old.jwk.clone());
    let validator = JwtValidator::discover(JwtConfig::new(&issuer.url, AUDIENCE)).await.unwrap();
    let good = token(&old, &claims(&issuer.url));
    let first = validator.validate_shared(&good).await.unwrap();
    // The kept caller is handed out itself, not a copy per request.
    assert!(std::sync::Arc::ptr_eq(&first, &validator.validate_shared(&good).await.unwrap()));
    // The issuer drops the old key: the cached caller still stands (no
    // fetch without a reason)...
    *issuer.published.lock().unwrap() = vec![new.jwk.clone()];
    assert!(validator.validate(&good).await.is_ok(), "kept");
    // ...until a token of the new key makes the validator fetch the set:
    // what the old key vouched for is forgotten with it.
    validator.validate(&token(&new, &claims(&issuer.url))).await.unwrap();
    assert_eq!(refused(validator.validate(&good).await), "the token's signing key is not the issuer's");
}

#[tokio::test]
async fn an_issuer_without_metadata_or_keys_is_a_clear_error() {
    let nobody = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let err = JwtValidator::discover(JwtConfig::new(format!("http://{nobody}"), AUDIENCE)).await.unwrap_err();
    assert!(matches!(err, KeysError::Metadata(_)), "{err:?}");
    let err = JwtValidator::discover(JwtConfig::new("not a url", AUDIENCE)).await.unwrap_err();
    assert!(matches!(err, KeysError::Issuer(_)), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn opaque_tokens_are_introspected_kept_a_while_and_stop_working_once_revoked() {
    use mcp_bridge_sdk::server::protect::introspection::{IntrospectionConfig, IntrospectionValidator};
    use test_support::jwt::INTROSPECTION_CLIENT;
    let issuer = issuer().await;
    let (id, secret) = INTROSPECTION_CLIENT;
    let config = IntrospectionConfig::new(&issuer.url, AUDIENCE, id, secret);
    let validator = IntrospectionValidator::discover(config.clone()).await.unwrap();
    issuer.opaque.lock().unwrap().insert(
        "opaque-1".into(),
        json!({"active": true, "sub": "bob", "scope": "notes:read", "aud": AUDIENCE, "iss": issuer.url,
            "exp": now() + 3600}),
    );
    let caller = validator.validate("opaque-1").await.unwrap();
    assert_eq!(
        (caller.subject.as_deref(), caller.scopes.as_slice()),
        (Some("bob"), ["notes:read".to_owned()].as_slice())
    );
    validator.validate("opaque-1").await.unwrap();
    assert_eq!(issuer.introspections.load(Ordering::SeqCst), 1, "the answer is kept");
    assert_eq!(refused(validator.validate("unknown").await), "the token is not active");
    // Revoked: still taken for the cache's 30 s, refused after.
    issuer.opaque.lock().unwrap().clear();
    validator.validate("opaque-1").await.unwrap();
    tokio::time::advance(std::time::Duration::from_secs(31)).await;
    assert_eq!(refused(validator.validate("opaque-1").await), "the token is not active");
    // Wrong client credentials: the issuer refuses, so does the validator.
    let wrong = IntrospectionConfig::new(&issuer.url, AUDIENCE, id, "not-the-secret");
    let wrong = IntrospectionValidator::discover(wrong).await.unwrap();
    assert_eq!(refused(wrong.validate("opaque-1").await), "the token could not be checked");
}
