//! The checks every request to the HTTP endpoint passes before either era
//! sees it, in one order: `Origin` and `Host` (403: DNS rebinding, a page of
//! another site), the token of a protected endpoint (401, 403), then for a
//! POST the content type (415) and the body (413, 408). Nothing is read of
//! a body its sender may not send.

use axum::body::Bytes;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{HttpOptions, Refused, admit_request};
use crate::server::protect::{Caller, Protection, Refusal};

/// A POST that passed the gate.
pub(crate) struct CheckedPost {
    /// Its head: the headers and the extensions (the client's address, its
    /// TLS certificates).
    pub(crate) parts: Parts,
    /// Whom its token speaks for, on a protected endpoint.
    pub(crate) caller: Option<Caller>,
    /// Its body, within the endpoint's limit.
    pub(crate) body: Bytes,
}

/// The checks of any request (a GET or DELETE of a session too): `Origin`
/// and `Host`, then the token. The caller when the endpoint is protected.
///
/// # Errors
/// The refusal to answer.
pub(crate) async fn check_request(headers: &HeaderMap, options: &HttpOptions) -> Result<Option<Caller>, Response> {
    admit_request(headers, options).await.map_err(|refused| refused_response(&refused))
}

/// [`check_request`], then the content type, then the body, which gets the
/// time a request has to arrive so that a client trickling it cannot hold
/// the connection (the head's time is the connection watchdog's).
///
/// # Errors
/// The refusal to answer.
pub(crate) async fn check_post(request: Request, options: &HttpOptions) -> Result<CheckedPost, Response> {
    let (parts, body) = request.into_parts();
    let caller = check_request(&parts.headers, options).await?;
    if let Some(refused) = refusal_unless_json(&parts.headers) {
        return Err(refused);
    }
    let read = axum::body::to_bytes(body, options.max_body_bytes);
    let body = match tokio::time::timeout(options.connections.request_read_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return Err((StatusCode::PAYLOAD_TOO_LARGE, "the body is over the limit").into_response()),
        Err(_) => return Err((StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time").into_response()),
    };
    Ok(CheckedPost { parts, caller, body })
}

/// The answer to a refused request: its status and `WWW-Authenticate`.
pub(crate) fn challenge_response(protection: &Protection, refusal: &Refusal) -> Response {
    refused_response(&Refused::Credentials(protection.challenge(refusal)))
}

fn refused_response(refused: &Refused) -> Response {
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
