//! What an application gives an [`OAuthClient`](super::OAuthClient)(super::OAuthClient):
//! its configuration, the hook that shows the authorization URL to the
//! user, and what comes back from the browser; and how a sign-in fails.

use std::sync::Arc;

use reqwest::Url;

use super::assertion::ClientKey;
use crate::BoxFuture;
use crate::store::StoreError;
use crate::transport::credentials::AskUser;
use crate::transport::http::HttpConfig;

/// Why a sign-in failed. The texts never hold a token, code or secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignInError {
    /// A metadata, registration or token request could not be made.
    #[error("{0}")]
    Http(String),
    /// No protected resource metadata was found.
    #[error("the server's protected resource metadata was not found")]
    NoResourceMetadata,
    /// The metadata is about another resource than the server.
    #[error("the protected resource metadata is for {resource}, not for this server")]
    ResourceMismatch {
        /// The resource the metadata names.
        resource: String,
    },
    /// The metadata names no authorization server.
    #[error("the protected resource metadata names no authorization server")]
    NoAuthorizationServer,
    /// No usable metadata of the authorization server was found.
    #[error("no metadata of the authorization server {issuer} was found (or its issuer differs)")]
    NoServerMetadata {
        /// The issuer looked for.
        issuer: String,
    },
    /// The authorization server does not offer PKCE with S256.
    #[error("the authorization server does not support PKCE with S256")]
    NoPkce,
    /// No way to get a client id.
    #[error(
        "no client id: not pre-registered, and the authorization server offers neither client ID metadata documents nor registration"
    )]
    NoRegistration,
    /// Dynamic registration failed.
    #[error("client registration failed: {0}")]
    Registration(String),
    /// The [`Authorize`] hook failed (the user did not finish, a timeout).
    #[error("{0}")]
    Authorize(String),
    /// The address the browser was sent back to is not a URL.
    #[error("the redirect URL is not valid: {0}")]
    Redirect(String),
    /// The authorization response is for another request.
    #[error("the authorization response has the wrong state")]
    StateMismatch,
    /// The authorization response names another issuer (RFC 9207).
    #[error("the authorization response comes from another issuer than the authorization server's")]
    IssuerMismatch,
    /// The authorization server promised `iss` and left it out.
    #[error("the authorization response has no iss, which the authorization server promised")]
    IssuerMissing,
    /// The user or the server refused.
    #[error("the authorization server refused: {0}")]
    Denied(String),
    /// The authorization server does not know the client (`invalid_client`):
    /// a registration it forgot, or a client ID metadata document it will
    /// not use.
    #[error("the authorization server refused the client: {reason}")]
    ClientRejected {
        /// Whether the client id was a client ID metadata document's URL.
        metadata_document: bool,
        /// The server's answer, without secrets.
        reason: String,
    },
    /// The token endpoint refused or answered badly.
    #[error("the token request failed: {0}")]
    Token(String),
    /// The token store failed.
    #[error("the token store failed: {0}")]
    Store(StoreError),
    /// The authorization server offers no device authorization endpoint.
    #[error(
        "the authorization server does not offer the device authorization grant (no device_authorization_endpoint)"
    )]
    NoDeviceAuthorization,
    /// The device code expired before the user finished signing in.
    #[error("the sign-in code expired before the sign-in was finished")]
    DeviceCodeExpired,
    /// An OAuth endpoint (metadata, registration, authorization, token,
    /// device) that is not `https://`; only a loopback `http://` MCP server
    /// may use `http://` endpoints, on loopback.
    #[error(
        "the {what} {url} is not https: OAuth endpoints must be https (http only on loopback, for a loopback http MCP server)"
    )]
    InsecureEndpoint {
        /// Which endpoint it is.
        what: &'static str,
        /// Its URL, without query, fragment or credentials.
        url: String,
    },
    /// The client credentials grant without credentials to present.
    #[error(
        "signing in as the client itself (client credentials) needs a pre-registered client with a secret or a private key"
    )]
    NoClientCredentials,
}

/// What the application shows the user to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationRequest {
    /// The authorization URL to open.
    pub url: String,
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
    /// The `state` the answer must carry.
    pub state: String,
    /// Asks the user of the request the server refused, when a request's
    /// refusal started this sign-in: its client can be asked to open the
    /// URL (a URL elicitation) where no browser should be opened for it.
    /// `None` for a sign-in no request started
    /// ([`super::OAuthClient::sign_in_now`]).
    pub ask_user: Option<AskUser>,
}

impl AuthorizationRequest {
    /// The request to open `url`, answered at `redirect_uri` with `state`.
    pub fn new(url: impl Into<String>, redirect_uri: impl Into<String>, state: impl Into<String>) -> Self {
        AuthorizationRequest { url: url.into(), redirect_uri: redirect_uri.into(), state: state.into(), ask_user: None }
    }
}

/// The parameters of the redirect back to the client.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<String>,
    /// The state.
    pub state: Option<String>,
    /// The issuer (RFC 9207).
    pub iss: Option<String>,
    /// An OAuth error.
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &self.code.as_ref().map(|_| "***"))
            .field("iss", &self.iss)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl AuthorizationResponse {
    /// The parameters of a redirect URL (its query).
    ///
    /// # Errors
    /// The URL does not parse.
    pub fn from_redirect(url: &str) -> Result<AuthorizationResponse, SignInError> {
        let url = Url::parse(url).map_err(|e| SignInError::Redirect(e.to_string()))?;
        let mut response = AuthorizationResponse::default();
        for (name, value) in url.query_pairs() {
            let slot = match name.as_ref() {
                "code" => &mut response.code,
                "state" => &mut response.state,
                "iss" => &mut response.iss,
                "error" => &mut response.error,
                "error_description" => &mut response.error_description,
                _ => continue,
            };
            *slot = Some(value.into_owned());
        }
        Ok(response)
    }
}

/// Shows the authorization URL to the user and waits for the redirect.
/// [`authorize`] makes one of an async closure.
pub type Authorize =
    Arc<dyn Fn(AuthorizationRequest) -> BoxFuture<Result<AuthorizationResponse, crate::BoxError>> + Send + Sync>;

/// An [`Authorize`] hook of an async function or closure, whose error is
/// any error (or a `String`).
pub fn authorize<F, Fut, E>(sign_in: F) -> Authorize
where
    F: Fn(AuthorizationRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<AuthorizationResponse, E>> + Send + 'static,
    E: Into<crate::BoxError>,
{
    Arc::new(move |request| {
        let signed_in = sign_in(request);
        Box::pin(async move { signed_in.await.map_err(Into::into) })
    })
}

/// How a client authenticates at the token endpoint
/// (`token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuthMethod {
    /// A public client: its id alone.
    None,
    /// The id and secret in HTTP Basic authentication.
    ClientSecretBasic,
    /// The id and secret in the form.
    ClientSecretPost,
    /// A JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
}

impl ClientAuthMethod {
    /// The method of its registered name (`client_secret_basic`, …).
    pub fn from_name(name: &str) -> Option<ClientAuthMethod> {
        match name {
            "none" => Some(ClientAuthMethod::None),
            "client_secret_basic" => Some(ClientAuthMethod::ClientSecretBasic),
            "client_secret_post" => Some(ClientAuthMethod::ClientSecretPost),
            "private_key_jwt" => Some(ClientAuthMethod::PrivateKeyJwt),
            _ => None,
        }
    }

    /// Its registered name.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuthMethod::None => "none",
            ClientAuthMethod::ClientSecretBasic => "client_secret_basic",
            ClientAuthMethod::ClientSecretPost => "client_secret_post",
            ClientAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// A client id the application was given for every authorization server,
/// with what proves it: nothing (a public client), a secret, or a private
/// key.
#[derive(Clone)]
#[non_exhaustive]
pub struct PreRegistered {
    /// The client id.
    pub client_id: String,
    /// The secret of a confidential client.
    pub client_secret: Option<String>,
    /// The private key of a `private_key_jwt` client.
    pub private_key: Option<Arc<ClientKey>>,
    /// How it authenticates; by default `private_key_jwt` with a key, else
    /// with a secret what the authorization server prefers of
    /// `client_secret_basic` and `client_secret_post`, else `none`.
    pub auth_method: Option<ClientAuthMethod>,
}

impl PreRegistered {
    /// A public client with this id (a confidential one adds
    /// [`PreRegistered::with_client_secret`] or
    /// [`PreRegistered::with_private_key`]).
    pub fn new(client_id: impl Into<String>) -> Self {
        PreRegistered { client_id: client_id.into(), client_secret: None, private_key: None, auth_method: None }
    }

    /// Authenticates with a JWT signed by `key` (`private_key_jwt`).
    pub fn with_private_key(mut self, key: ClientKey) -> Self {
        self.private_key = Some(Arc::new(key));
        self
    }

    /// The method the authorization server expects, when the default
    /// choice is not it.
    pub(crate) fn method(&self, supported: Option<&Vec<String>>) -> String {
        match (self.auth_method, &self.private_key) {
            (Some(method), _) => method.name().to_owned(),
            (None, Some(_)) => ClientAuthMethod::PrivateKeyJwt.name().to_owned(),
            (None, None) => super::exchange::auth_method(self.client_secret.is_some(), None, supported),
        }
    }
}

crate::setters::with_setters! {
    PreRegistered {
        some with_client_secret => client_secret: impl Into<String>,
        some with_auth_method => auth_method: ClientAuthMethod,
    }
}

impl std::fmt::Debug for PreRegistered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreRegistered")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("private_key", &self.private_key)
            .field("auth_method", &self.auth_method)
            .finish()
    }
}

/// How an [`OAuthClient`](super::OAuthClient) gets its tokens.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A user signs in in a browser (the authorization code flow with
    /// PKCE, through the [`Authorize`] hook).
    #[default]
    AuthorizationCode,
    /// The client signs in as itself with its pre-registered credentials
    /// (`client_credentials`, OAuth 2.1 section 4.2): no user, no browser.
    ClientCredentials,
    /// A workload signs in with the identity token its platform issued it
    /// (the JWT-bearer grant, RFC 7523 section 2.1: workload identity
    /// federation); the client is the pre-registered one.
    JwtBearer(TokenSource),
    /// The user's single sign-on at their enterprise's identity provider
    /// vouches for them (enterprise-managed authorization): the ID token is
    /// exchanged at the provider for an identity assertion grant (ID-JAG,
    /// RFC 8693), and that at the server's authorization server for tokens
    /// (the JWT-bearer grant) by the pre-registered client. No browser, no
    /// consent screen per server.
    EnterpriseManaged(EnterpriseIdp),
    /// A user signs in on another device with a code (the device
    /// authorization grant, RFC 8628), shown through the prompt.
    DeviceCode(super::DevicePrompt),
}

impl Grant {
    /// Whether a person takes part (a browser, consent): only then may a
    /// refused request wait for a sign-in of its own.
    pub(crate) fn has_a_user(&self) -> bool {
        matches!(self, Grant::AuthorizationCode | Grant::DeviceCode(_))
    }
}

type ReadToken = dyn Fn() -> BoxFuture<Result<String, crate::BoxError>> + Send + Sync;

/// Where a token that proves who signs in comes from, read anew at each
/// sign-in since its issuer rotates it: a workload's JWT from its platform
/// (a Kubernetes service account token, a cloud's workload identity, a CI
/// job's OIDC token), or a user's ID token from their enterprise's single
/// sign-on. Its `Debug` never shows the token.
#[derive(Clone)]
pub struct TokenSource(Arc<ReadToken>);

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenSource")
    }
}

impl TokenSource {
    /// The token in a file (the platform's projected token), whitespace
    /// around it ignored.
    pub fn file(path: impl Into<std::path::PathBuf>) -> Self {
        let path = path.into();
        TokenSource::from_fn(move || {
            let path = path.clone();
            async move {
                let text = tokio::fs::read_to_string(&path).await.map_err(|e| format!("{}: {e}", path.display()))?;
                Ok::<_, crate::BoxError>(text.trim().to_owned())
            }
        })
    }

    /// Always this token (a test, a token handed over once).
    pub fn fixed(token: impl Into<String>) -> Self {
        let token = token.into();
        TokenSource::from_fn(move || {
            let token = token.clone();
            async move { Ok::<_, crate::BoxError>(token) }
        })
    }

    /// The token `read` gives (an API of the platform).
    pub fn from_fn<F, Fut>(read: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, crate::BoxError>> + Send + 'static,
    {
        TokenSource(Arc::new(move || Box::pin(read())))
    }

    /// The token now.
    pub(crate) async fn read(&self) -> Result<String, crate::BoxError> {
        (self.0)().await
    }
}

/// The enterprise identity provider of [`Grant::EnterpriseManaged`]: where
/// the user's ID token is exchanged, as which client, and where the ID
/// token comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EnterpriseIdp {
    /// The provider's issuer; its token endpoint is found through its
    /// metadata (OpenID discovery or RFC 8414) unless `token_endpoint` is set.
    pub issuer: String,
    /// Its token endpoint, when it is known without discovery.
    pub token_endpoint: Option<String>,
    /// This application's client at the provider (the ID token's audience);
    /// a public client by default.
    pub client: PreRegistered,
    /// The user's ID token from the provider.
    pub id_token: TokenSource,
}

impl EnterpriseIdp {
    /// The provider `issuer`, where this application is the client
    /// `client` and the user's ID token comes from `id_token`.
    pub fn new(issuer: impl Into<String>, client: PreRegistered, id_token: TokenSource) -> Self {
        EnterpriseIdp { issuer: issuer.into(), token_endpoint: None, client, id_token }
    }
}

crate::setters::with_setters! {
    EnterpriseIdp {
        some with_token_endpoint => token_endpoint: impl Into<String>,
    }
}

/// How an [`OAuthClient`](super::OAuthClient) signs in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The MCP server's URL (the protected resource).
    pub server_url: String,
    /// The redirect URI registered for the client.
    pub redirect_uri: String,
    /// The client's name in a registration.
    pub client_name: String,
    /// A pre-registered client, tried first.
    pub pre_registered: Option<PreRegistered>,
    /// How tokens are obtained.
    pub grant: Grant,
    /// The URL of the client's metadata document, used as its client id
    /// where the authorization server accepts that.
    pub client_metadata_url: Option<String>,
    /// Proxy, CA file and client certificate of the OAuth requests (the
    /// URL and the limits are not used).
    pub connection: HttpConfig,
    /// Ask for tokens bound to a key of this client (DPoP, RFC 9449): a
    /// stolen token is useless without the key. The key (P-256) is made at
    /// the first sign-in and kept in the store beside the tokens; every
    /// token request and every request to the server carries a proof. An
    /// authorization server that does not do DPoP answers Bearer tokens,
    /// which are then used as such.
    pub dpop: bool,
}

impl OAuthConfig {
    /// Signs in at the server `server_url` with dynamic registration (or a
    /// client metadata document, or a pre-registered client, when set),
    /// redirecting to `redirect_uri`; the OAuth requests use the system's
    /// proxy and trust settings.
    pub fn new(server_url: impl Into<String>, redirect_uri: impl Into<String>, client_name: impl Into<String>) -> Self {
        let server_url = server_url.into();
        OAuthConfig {
            connection: HttpConfig::new(&server_url),
            server_url,
            redirect_uri: redirect_uri.into(),
            client_name: client_name.into(),
            pre_registered: None,
            grant: Grant::default(),
            client_metadata_url: None,
            dpop: false,
        }
    }
}

crate::setters::with_setters! {
    OAuthConfig {
        some with_pre_registered => pre_registered: PreRegistered,
        value with_grant => grant: Grant,
        some with_client_metadata_url => client_metadata_url: impl Into<String>,
        value with_connection => connection: HttpConfig,
        value with_dpop => dpop: bool,
    }
}
