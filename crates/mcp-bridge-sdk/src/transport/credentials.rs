//! What a network transport sends as credentials, and how it hears that
//! the server refused them: shared by HTTP and WebSocket.

use std::sync::Arc;

use mcp_bridge_protocol::types::{InputRequest, InputResponse};

use crate::{BoxError, BoxFuture};

/// The largest JSON body or SSE event accepted by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// A URL with its `user:password@` part replaced by `***@`, for messages.
pub(crate) fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Asks the user one request was sent for: an input request (a sign-in's
/// URL elicitation, say) answered as the server's own requests on that
/// request's stream are, by the input hooks it was sent with
/// ([`crate::RequestOptions::hooks`]: a gateway's request for one of its
/// clients). A request sent with none has no user of its own:
/// [`crate::Error::NoUserToAsk`].
#[derive(Clone)]
pub struct AskUser(Arc<dyn Fn(InputRequest) -> BoxFuture<crate::Result<InputResponse>> + Send + Sync>);

impl AskUser {
    /// The asker that answers with `ask`.
    pub fn new(ask: impl Fn(InputRequest) -> BoxFuture<crate::Result<InputResponse>> + Send + Sync + 'static) -> Self {
        AskUser(Arc::new(ask))
    }

    /// The user's answer to `request`, checked as any input request's
    /// answer is; an error when the request's client did not declare
    /// its kind, has no hook for it, or is gone.
    pub async fn ask(&self, request: InputRequest) -> crate::Result<InputResponse> {
        (self.0)(request).await
    }
}

impl std::fmt::Debug for AskUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskUser")
    }
}

impl PartialEq for AskUser {
    /// The same asker.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for AskUser {}

/// What a server said when it refused a request's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthRefusal {
    /// 401 or 403.
    pub status: u16,
    /// The `WWW-Authenticate` challenge, when the server sent one.
    pub www_authenticate: Option<String>,
    /// When the refused request was sent: credentials obtained after it
    /// may be good.
    pub sent_at: tokio::time::Instant,
    /// The method of the refused request (a provider may sign in for some
    /// methods only).
    pub method: String,
    /// The `DPoP-Nonce` header: the nonce a server that wants one gave
    /// (RFC 9449 section 9).
    pub dpop_nonce: Option<String>,
    /// Asks the user of the refused request, when the transport can (a
    /// sign-in's consent goes to whoever sent it).
    pub ask_user: Option<AskUser>,
}

/// The credential headers of one request.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Credentials {
    /// The `Authorization` header value (`Bearer …`, `DPoP …`).
    pub authorization: Option<String>,
    /// The `DPoP` header: the proof of possession of the key a `DPoP` token
    /// is bound to, made for this request (RFC 9449).
    pub dpop: Option<String>,
}

impl Credentials {
    /// An `Authorization` header value, and a `DPoP` proof when the token
    /// is bound to a key.
    pub fn new(authorization: Option<String>, dpop: Option<String>) -> Self {
        Credentials { authorization, dpop }
    }

    /// The request headers, marked sensitive.
    pub(crate) fn into_headers(self) -> Result<http::HeaderMap, &'static str> {
        let mut headers = http::HeaderMap::new();
        for (name, value) in
            [(http::header::AUTHORIZATION, self.authorization), (http::HeaderName::from_static("dpop"), self.dpop)]
        {
            let Some(value) = value else { continue };
            let mut value =
                http::HeaderValue::from_str(&value).map_err(|_| "the credentials are not a valid header value")?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(headers)
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("authorization", &self.authorization.as_ref().map(|_| "***"))
            .field("dpop", &self.dpop.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Supplies the credentials of each HTTP request, and hears when the
/// server refuses them; an OAuth client is one, [`BearerToken`] another.
pub trait AuthProvider: Send + Sync + std::fmt::Debug {
    /// The `Authorization` header value of the next request (for example
    /// `Bearer …`), or `None` to send none.
    ///
    /// # Errors
    /// Why no credentials can be had; the request fails with it.
    fn authorization(&self) -> BoxFuture<Result<Option<String>, BoxError>>;

    /// The credential headers of a request with the HTTP `method` to
    /// `url`: by default the [`AuthProvider::authorization`] alone; a
    /// provider of key-bound tokens adds the request's DPoP proof.
    ///
    /// # Errors
    /// Why no credentials can be had; the request fails with it.
    fn credentials(&self, method: &str, url: &str) -> BoxFuture<Result<Credentials, BoxError>> {
        let _ = (method, url);
        let authorization = self.authorization();
        Box::pin(async move { Ok(Credentials { authorization: authorization.await?, dpop: None }) })
    }

    /// The server refused the request (401 or 403). `true` when new
    /// credentials are ready: the request is sent once more with them.
    fn refused(&self, refusal: AuthRefusal) -> BoxFuture<bool>;
}

/// A fixed bearer token, for servers that hand out long-lived tokens.
#[derive(Clone)]
pub struct BearerToken(String);

impl BearerToken {
    /// The token, without the `Bearer ` prefix.
    pub fn new(token: impl Into<String>) -> Self {
        BearerToken(token.into())
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(***)")
    }
}

impl AuthProvider for BearerToken {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, BoxError>> {
        let value = format!("Bearer {}", self.0);
        Box::pin(async move { Ok(Some(value)) })
    }

    fn refused(&self, _refusal: AuthRefusal) -> BoxFuture<bool> {
        // The same token would be refused again.
        Box::pin(async { false })
    }
}
