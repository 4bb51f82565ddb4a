//! The checks every request to the HTTP endpoint passes before either era
//! sees it, in one order: `Origin` and `Host` (403: DNS rebinding, a page of
//! another site), the token of a protected endpoint (401, 403), the
//! caller's quotas (429), then for a POST the content type (415) and the
//! body (413, 408). Nothing is read of a body its sender may not send.

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use mcp_bridge_protocol::method::{Method, SubscriptionsListen};

use super::quotas::{InFlight, OverQuota};
use super::{HttpOptions, Refused, admit_request};
use crate::server::protect::{Caller, Protection, Refusal};

/// A POST that passed the gate.
pub(crate) struct CheckedPost {
    /// Its head: the headers and the extensions (the client's address, its
    /// TLS certificates).
    pub(crate) parts: Parts,
    /// Whom its token speaks for, on a protected endpoint.
    pub(crate) caller: Option<Arc<Caller>>,
    /// Its body, within the endpoint's limit.
    pub(crate) body: Bytes,
    /// Counts it among its caller's requests under way while it lives.
    pub(crate) held: Option<InFlight>,
}

/// The caller a request counts for in the quotas: its token's principal
/// (see [`Caller::principal`]), or the one caller of an endpoint without
/// tokens.
fn quota_key(caller: Option<&Caller>) -> &str {
    caller.map_or("", Caller::principal)
}

/// The caller's quotas: its rate, its requests under way.
/// [`admit_request`], then the caller's quotas: its rate, its requests
/// under way (the hold counts the request while it lives).
async fn admit(
    headers: &HeaderMap,
    options: &HttpOptions,
) -> Result<(Option<Arc<Caller>>, Option<InFlight>), Response> {
    let caller = admit_request(headers, options).await.map_err(|refused| refused_response(&refused))?;
    let now = std::time::Instant::now();
    let held = options.quotas.admit(quota_key(caller.as_deref()), now).map_err(|over| over_quota(&over))?;
    Ok((caller, held))
}

/// Whether the request's `Mcp-Method` header names `method`.
fn names_method(headers: &HeaderMap, method: &str) -> bool {
    headers.get("mcp-method").is_some_and(|value| value.as_bytes() == method.as_bytes())
}

/// A 429 answer, with `Retry-After` when waiting helps.
fn over_quota(over: &OverQuota) -> Response {
    let mut response = (StatusCode::TOO_MANY_REQUESTS, over.reason).into_response();
    if let Some(seconds) = over.retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// `response` with `held` kept until its body is sent (an event stream's
/// end): the request is under way for as long.
pub(crate) fn held_until_sent(response: Response, held: Option<InFlight>) -> Response {
    use futures_util::StreamExt;
    let Some(held) = held else { return response };
    response.map(|body| {
        axum::body::Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _counted = &held;
            chunk
        }))
    })
}

/// The checks of any request (a GET or DELETE of a session too): `Origin`
/// and `Host`, then the token. The caller when the endpoint is protected.
///
/// # Errors
/// The refusal to answer.
pub(crate) async fn check_request(headers: &HeaderMap, options: &HttpOptions) -> Result<Option<Arc<Caller>>, Response> {
    // Within the caller's rate; a GET's stream or a DELETE is no request under way.
    let (caller, _held) = admit(headers, options).await?;
    Ok(caller)
}

/// [`check_request`], then the content type, then the body, which gets the
/// time a request has to arrive so that a client trickling it cannot hold
/// the connection (the head's time is the connection watchdog's).
///
/// # Errors
/// The refusal to answer.
pub(crate) async fn check_post(request: Request, options: &HttpOptions) -> Result<CheckedPost, Response> {
    let (parts, body) = request.into_parts();
    let (caller, held) = admit(&parts.headers, options).await?;
    // A listen stream is open for as long as its client wants, not a
    // request under way (its `Mcp-Method` is checked against its body later).
    let held = held.filter(|_| !names_method(&parts.headers, SubscriptionsListen::NAME));
    if let Some(refused) = refusal_unless_json(&parts.headers) {
        return Err(refused);
    }
    let read = axum::body::to_bytes(body, options.max_body_bytes);
    let body = match tokio::time::timeout(options.connections.request_read_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return Err((StatusCode::PAYLOAD_TOO_LARGE, "the body is over the limit").into_response()),
        Err(_) => return Err((StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time").into_response()),
    };
    Ok(CheckedPost { parts, caller, body, held })
}

/// The answer to a refused request: its status and `WWW-Authenticate`.
pub(crate) fn challenge_response(protection: &Protection, refusal: &Refusal) -> Response {
    refused_response(&Refused::Credentials(protection.challenge(refusal)))
}

pub(crate) fn refused_response(refused: &Refused) -> Response {
    let (status, text, challenge) = refused.answer();
    let mut response = (status, text.to_owned()).into_response();
    if let Some(value) = challenge.and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// A 415 answer unless the request's body is declared `application/json`:
/// a web page may POST `text/plain` (or nothing) to any port without a
/// CORS preflight, never JSON.
fn refusal_unless_json(headers: &HeaderMap) -> Option<Response> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    (!is_json).then(|| (StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/json").into_response())
}
