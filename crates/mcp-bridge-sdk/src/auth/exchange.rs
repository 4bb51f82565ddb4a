//! The HTTP exchanges of a sign-in: reading metadata, registering a client,
//! and the token endpoint (codes and refresh tokens). Error texts name the
//! step and the server's own `error`, never a token, code or secret.

use base64::Engine;
use reqwest::Url;
use serde::Deserialize;
use serde_json::{Value, json};

use super::SignInError;
use super::assertion::ClientKey;
use super::dpop::{DPOP_HEADER, DPOP_TOKEN_TYPE, NONCE_HEADER, Prover, USE_NONCE};
use super::store::{ClientRecord, TokenRecord};

/// The fields of a token request's form.
pub(crate) type Form = Vec<(&'static str, String)>;

/// The largest metadata or token response read.
const MAX_BODY: usize = 1024 * 1024;

async fn body_of(response: reqwest::Response, what: &str) -> Result<(u16, Vec<u8>), SignInError> {
    let status = response.status().as_u16();
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|e| SignInError::Http(format!("{what}: {}", e.without_url())))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(SignInError::Http(format!("{what}: the answer is over {MAX_BODY} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// GETs a JSON document; `Ok(None)` for a status other than 200 (the next
/// well-known location is tried then).
pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    url: &Url,
    what: &str,
) -> Result<Option<T>, SignInError> {
    let response = http
        .get(url.clone())
        .header("accept", "application/json")
        .header("mcp-protocol-version", mcp_bridge_protocol::PROTOCOL_VERSION)
        .send()
        .await
        .map_err(|e| SignInError::Http(format!("{what}: {}", e.without_url())))?;
    let (status, body) = body_of(response, what).await?;
    if status != 200 {
        return Ok(None);
    }
    serde_json::from_slice(&body).map(Some).map_err(|e| SignInError::Http(format!("{what} is not valid: {e}")))
}

/// What a client registration answers.
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The token endpoint authentication of a client with (or without) a
/// secret: the registration's choice, else basic when the server allows
/// it, else post; `none` without a secret.
pub(crate) fn auth_method(secret: bool, chosen: Option<String>, supported: Option<&Vec<String>>) -> String {
    if let Some(method) = chosen {
        return method;
    }
    if !secret {
        return "none".into();
    }
    let allows = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
    if allows("client_secret_basic") { "client_secret_basic".into() } else { "client_secret_post".into() }
}

/// The grant type of the device authorization grant (RFC 8628 section 3.4).
pub(crate) const DEVICE_CODE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// Dynamic client registration (RFC 7591) of a native client: of the
/// authorization code flow redirecting to `redirect_uri`, or without one,
/// of the device authorization grant.
pub(crate) async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    issuer: &str,
    client_name: &str,
    redirect_uri: Option<&str>,
    supported: Option<&Vec<String>>,
) -> Result<ClientRecord, SignInError> {
    let mut body = json!({
        "client_name": client_name,
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    match redirect_uri {
        Some(redirect_uri) => {
            body["redirect_uris"] = json!([redirect_uri]);
            body["grant_types"] = json!(["authorization_code", "refresh_token"]);
            body["response_types"] = json!(["code"]);
        }
        None => {
            body["grant_types"] = json!([DEVICE_CODE_GRANT, "refresh_token"]);
            body["response_types"] = json!([]);
        }
    }
    let response = http
        .post(endpoint)
        .json(&body)
        .send()
        .await
        .map_err(|e| SignInError::Http(format!("client registration: {}", e.without_url())))?;
    let (status, body) = body_of(response, "client registration").await?;
    if !(200..300).contains(&status) {
        return Err(SignInError::Registration(format!("HTTP {status}{}", oauth_error(&body))));
    }
    let registered: Registered = serde_json::from_slice(&body)
        .map_err(|e| SignInError::Registration(format!("the answer is not valid: {e}")))?;
    Ok(ClientRecord {
        issuer: issuer.to_owned(),
        token_endpoint_auth_method: auth_method(
            registered.client_secret.is_some(),
            registered.token_endpoint_auth_method,
            supported,
        ),
        client_id: registered.client_id,
        client_secret: registered.client_secret,
    })
}

/// `: error (description)` of an OAuth error body, or nothing.
/// The `error` code of an OAuth error answer.
fn oauth_error_code(body: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    value.get("error")?.as_str().map(str::to_owned)
}

/// Whether the client id is a client ID metadata document's URL.
fn is_metadata_document(client: &ClientRecord) -> bool {
    client.client_id.starts_with("https://")
}

fn oauth_error(body: &[u8]) -> String {
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return String::new() };
    let printable = |v: &Value| v.as_str().map(|s| s.chars().filter(|c| !c.is_control()).take(200).collect::<String>());
    match (value.get("error").and_then(printable), value.get("error_description").and_then(printable)) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        _ => String::new(),
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    /// What a token exchange issued (RFC 8693 section 2.2.1).
    #[serde(default)]
    issued_token_type: Option<String>,
}

fn now_s() -> u64 {
    crate::clock::unix_seconds()
}

/// The client assertion type of `private_key_jwt` (RFC 7523 section 2.2).
const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How a token endpoint refused a grant.
pub(crate) struct Refused {
    /// Its OAuth `error` code (`authorization_pending`, `invalid_grant`, ...).
    pub(crate) code: Option<String>,
    /// The error to report, without secrets.
    pub(crate) error: SignInError,
}

impl Refused {
    /// The refusal of an answer with `status` and the OAuth error `body`:
    /// `invalid_client` is the client's rejection, anything else a failed
    /// token request (its reason after `context`).
    fn of(client: &ClientRecord, status: u16, body: &[u8], context: &str) -> Refused {
        let code = oauth_error_code(body);
        let reason = format!("HTTP {status}{}", oauth_error(body));
        let error = match code.as_deref() {
            Some("invalid_client") => {
                SignInError::ClientRejected { metadata_document: is_metadata_document(client), reason }
            }
            _ => SignInError::Token(format!("{context}{reason}")),
        };
        Refused { code, error }
    }
}

/// POSTs a grant to the token endpoint with the client's authentication
/// (`key` signs the assertion of a `private_key_jwt` client) and reads the
/// answer: the tokens, or how the endpoint refused, its reason after
/// `context` (the outer error: it could not be asked).
async fn post_grant(
    http: &reqwest::Client,
    endpoint: &str,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    dpop: Option<Prover<'_>>,
    form: Form,
    context: &str,
) -> Result<Result<TokenResponse, Refused>, SignInError> {
    // A server that wants a DPoP nonce (RFC 9449 section 8) is asked once more
    // with the nonce it gave.
    let mut retried = false;
    loop {
        let proof = dpop.map(|prover| prover.proof("POST", endpoint, None)).transpose()?;
        let (status, nonce, body) =
            post_form(http, endpoint, client, key, form.clone(), proof, "token endpoint").await?;
        let new_nonce = match (dpop, nonce) {
            (Some(prover), Some(nonce)) => prover.nonces.remember(endpoint, &nonce),
            _ => false,
        };
        if status == 200 {
            let tokens = serde_json::from_slice(&body)
                .map_err(|e| SignInError::Token(format!("the answer is not valid: {e}")))?;
            return Ok(Ok(tokens));
        }
        let refused = Refused::of(client, status, &body, context);
        if refused.code.as_deref() == Some(USE_NONCE) && new_nonce && !retried {
            retried = true;
            continue;
        }
        return Ok(Err(refused));
    }
}

/// POSTs `form` to `endpoint` with the client's authentication (and a DPoP
/// proof when given); the status, the `DPoP-Nonce` the server gave, the
/// body. `what` names the endpoint in errors.
async fn post_form(
    http: &reqwest::Client,
    endpoint: &str,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    form: Form,
    dpop_proof: Option<String>,
    what: &str,
) -> Result<(u16, Option<String>, Vec<u8>), SignInError> {
    let (mut request, form) = authenticated(http.post(endpoint), client, key, form)?;
    request = request.header("accept", "application/json");
    if let Some(proof) = dpop_proof {
        request = request.header(DPOP_HEADER, proof);
    }
    let response =
        request.form(&form).send().await.map_err(|e| SignInError::Http(format!("{what}: {}", e.without_url())))?;
    let nonce = response.headers().get(NONCE_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (status, body) = body_of(response, what).await?;
    Ok((status, nonce, body))
}

/// A token request with the client's authentication: a header, or fields
/// of the form (`key` signs the assertion of a `private_key_jwt` client, a
/// new one for each request).
fn authenticated(
    mut request: reqwest::RequestBuilder,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    mut form: Form,
) -> Result<(reqwest::RequestBuilder, Form), SignInError> {
    use super::ClientAuthMethod as Method;
    match (Method::from_name(&client.token_endpoint_auth_method), &client.client_secret) {
        (Some(Method::ClientSecretBasic), Some(secret)) => {
            let encode = |s: &str| url_encode(s);
            let credentials = format!("{}:{}", encode(&client.client_id), encode(secret));
            let mut value = reqwest::header::HeaderValue::from_str(&format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(credentials)
            ))
            .map_err(|_| SignInError::Token("the client credentials cannot go into a header".into()))?;
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        (Some(Method::ClientSecretPost), Some(secret)) => {
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_secret", secret.clone()));
        }
        (Some(Method::PrivateKeyJwt), _) => {
            let key = key.ok_or_else(|| SignInError::Token("private_key_jwt needs the client's private key".into()))?;
            // The audience is the issuer, as RFC 7523bis settles it.
            let assertion = key.assertion(&client.client_id, &client.issuer, now_s())?;
            form.push(("client_id", client.client_id.clone()));
            form.push(("client_assertion_type", JWT_BEARER_ASSERTION.to_owned()));
            form.push(("client_assertion", assertion));
        }
        _ => form.push(("client_id", client.client_id.clone())),
    }
    Ok((request, form))
}

/// POSTs a grant to the token endpoint (see `post_grant`; with a DPoP
/// proof when `dpop` is given) and makes the record of the tokens it
/// answers, or says how it refused. `previous` gives what an answer may
/// leave out (a refresh that issues no new refresh token).
pub(crate) async fn token_request(
    http: &reqwest::Client,
    endpoint: &str,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    dpop: Option<Prover<'_>>,
    form: Form,
    previous: Option<&TokenRecord>,
) -> Result<Result<TokenRecord, Refused>, SignInError> {
    let tokens = match post_grant(http, endpoint, client, key, dpop, form, "").await? {
        Ok(tokens) => tokens,
        Err(refused) => return Ok(Err(refused)),
    };
    let token_type = match tokens.token_type.as_deref() {
        None => None,
        Some(t) if t.eq_ignore_ascii_case("bearer") => None,
        // A key-bound token is of use only to a client that sent a proof.
        Some(t) if t.eq_ignore_ascii_case(DPOP_TOKEN_TYPE) && dpop.is_some() => Some(DPOP_TOKEN_TYPE.to_owned()),
        Some(_) => {
            let error = SignInError::Token("the token is neither a Bearer nor a DPoP token".into());
            return Ok(Err(Refused { code: None, error }));
        }
    };
    Ok(Ok(TokenRecord {
        issuer: client.issuer.clone(),
        client_id: client.client_id.clone(),
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token.or_else(|| previous.and_then(|p| p.refresh_token.clone())),
        expires_at: tokens.expires_in.map(|s| now_s().saturating_add(s)),
        issued_at: Some(now_s()),
        scope: tokens.scope.or_else(|| previous.and_then(|p| p.scope.clone())),
        resource: previous.and_then(|p| p.resource.clone()),
        token_type,
    }))
}

/// What a device authorization endpoint answers (RFC 8628 section 3.2).
#[derive(Deserialize)]
pub(crate) struct DeviceCodeAnswer {
    /// The code the client polls with; a secret.
    pub(crate) device_code: String,
    /// The code the user types.
    pub(crate) user_code: String,
    /// Where the user types it (`verification_url` in some older servers).
    #[serde(alias = "verification_url")]
    pub(crate) verification_uri: String,
    /// The same with the code in it.
    #[serde(default)]
    pub(crate) verification_uri_complete: Option<String>,
    /// Seconds the codes are valid.
    pub(crate) expires_in: u64,
    /// Seconds between polls; 5 when not given.
    #[serde(default)]
    pub(crate) interval: Option<u64>,
}

/// A device authorization request (RFC 8628 section 3.1) with the client's
/// authentication.
pub(crate) async fn device_authorization(
    http: &reqwest::Client,
    endpoint: &str,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    form: Form,
) -> Result<DeviceCodeAnswer, SignInError> {
    let (status, _, body) = post_form(http, endpoint, client, key, form, None, "device authorization").await?;
    if status != 200 {
        return Err(Refused::of(client, status, &body, "the device authorization request failed: ").error);
    }
    serde_json::from_slice(&body)
        .map_err(|e| SignInError::Token(format!("the device authorization answer is not valid: {e}")))
}

/// The token type of an identity assertion grant (ID-JAG).
pub(crate) const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// A token exchange (RFC 8693) at an identity provider that answers an
/// identity assertion grant: the grant itself (the answer's `access_token`).
pub(crate) async fn identity_assertion_grant(
    http: &reqwest::Client,
    endpoint: &str,
    client: &ClientRecord,
    key: Option<&ClientKey>,
    form: Form,
) -> Result<String, SignInError> {
    let context = "the identity provider's token exchange: ";
    let answer = post_grant(http, endpoint, client, key, None, form, context).await?.map_err(|r| r.error)?;
    match answer.issued_token_type.as_deref() {
        Some(ID_JAG_TOKEN_TYPE) => Ok(answer.access_token),
        other => Err(SignInError::Token(format!(
            "the identity provider answered a token of type {} instead of an identity assertion grant",
            other.unwrap_or("(none)")
        ))),
    }
}

/// Whether a record's access token expires within `margin_s` seconds, or
/// within half its lifetime for a short-lived one (a 30 s token is not
/// refreshed the moment it arrives).
pub(crate) fn expires_soon(record: &TokenRecord, margin_s: u64) -> bool {
    let Some(at) = record.expires_at else { return false };
    let margin = match record.issued_at {
        Some(issued) => margin_s.min(at.saturating_sub(issued) / 2),
        None => margin_s,
    };
    at <= now_s().saturating_add(margin)
}

/// `application/x-www-form-urlencoded` of one value (RFC 6749 section 2.3.1
/// encodes the client id and secret so before Basic authentication).
fn url_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._*".contains(&b) {
            out.push(b as char);
        } else if b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_endpoint_authentication_follows_the_registration_then_the_server() {
        assert_eq!(auth_method(true, Some("client_secret_post".into()), None), "client_secret_post");
        assert_eq!(auth_method(false, None, None), "none");
        assert_eq!(auth_method(true, None, None), "client_secret_basic");
        assert_eq!(auth_method(true, None, Some(&vec!["client_secret_post".into()])), "client_secret_post");
        assert_eq!(url_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
    }

    #[test]
    fn oauth_errors_are_short_and_printable() {
        assert_eq!(
            oauth_error(br#"{"error":"invalid_grant","error_description":"bad\ncode"}"#),
            ": invalid_grant (badcode)"
        );
        assert_eq!(oauth_error(b"<html>"), "");
    }
}
