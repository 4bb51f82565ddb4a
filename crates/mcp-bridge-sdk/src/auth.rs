//! OAuth sign-in at a protected MCP server (2026-07-28, Authorization): an
//! [`OAuthClient`] is the HTTP transport's [`AuthProvider`]. When the server
//! refuses a request it discovers the server's authorization server, gets a
//! client id (pre-registered, a client ID metadata document, or dynamic
//! registration), runs the authorization code flow with PKCE through the
//! application's [`Authorize`] hook (a browser, a test), keeps the tokens
//! in a [`RecordStore`], refreshes them, and steps up the scope once when
//! the server asks for more. An agent or a service signs in as itself
//! instead ([`OAuthClient::client_credentials`]): a client secret or a
//! private key (`private_key_jwt`), no user; a workload with its
//! platform's identity token ([`OAuthClient::workload_identity`]); a user
//! through their enterprise's single sign-on
//! ([`OAuthClient::enterprise_managed`]). On a machine without a browser a
//! user signs in on another device with a code ([`OAuthClient::device_code`]).
//!
//! - [`challenge`]: the `WWW-Authenticate` header.
//! - [`discovery`]: where metadata is, and the checks of what it says.
//! - [`store`]: the records of a sign-in, kept in any [`RecordStore`]
//!   ([`crate::store`]: keychain, encrypted files, memory).

mod assertion;
pub mod challenge;
mod code;
mod config;
mod device;
pub mod discovery;
mod dpop;
mod exchange;
mod pkce;
mod refusal;
mod servers;
pub mod store;
mod tokens;
mod without_user;

use std::sync::{Arc, Mutex, RwLock};
use tokio::time::Instant;

use reqwest::Url;

pub use assertion::{ClientKey, ClientKeyError, SigningAlgorithm};
pub use challenge::Challenge;
pub use config::{
    AuthorizationRequest, AuthorizationResponse, Authorize, ClientAuthMethod, EnterpriseIdp, Grant, OAuthConfig,
    PreRegistered, SignInError, TokenSource, authorize,
};
pub use device::{DeviceAuthorization, DevicePrompt};
pub use discovery::{ResourceMetadata, ServerMetadata};
pub use store::{ClientRecord, TokenRecord};

use crate::BoxFuture;
use crate::store::RecordStore;
pub use crate::transport::http::AskUser;
use crate::transport::http::{AuthProvider, AuthRefusal, Credentials};
use dpop::{DpopKey, Nonces};
use tokens::authorization_value;

/// The tokens in use: every request reads them without waiting, even
/// while a sign-in is under way.
#[derive(Clone, Default)]
struct Held {
    record: Option<Arc<TokenRecord>>,
    /// When `record` was obtained: a refusal of a request sent before is
    /// answered by sending it again with the newer token.
    obtained: Option<Instant>,
}

/// What only the sign-in or refresh under way touches: holding it (the
/// `session` lock) is the turn to change the tokens.
#[derive(Default)]
struct TokenState {
    /// The scope set a step-up last asked for; the same set is not asked
    /// for twice in a row.
    last_step_up: Option<String>,
}

/// An OAuth client for one MCP server; give it to [`HttpConfig::auth`](crate::transport::http::HttpConfig::auth).
/// Cheap to clone: clones share the session and the store.
#[derive(Clone)]
pub struct OAuthClient(Arc<Inner>);

struct Inner {
    config: OAuthConfig,
    server_url: Url,
    http: reqwest::Client,
    authorize: Authorize,
    store: Arc<dyn RecordStore>,
    /// The tokens in use, read from the store at the start and kept in
    /// memory; the store is read again before a refresh and after a 401.
    held: RwLock<Held>,
    /// One sign-in or refresh at a time.
    session: tokio::sync::Mutex<TokenState>,
    problem: Mutex<Option<SignInError>>,
    /// Counts the tokens obtained (sign-ins and refreshes).
    obtained: tokio::sync::watch::Sender<u64>,
    /// The DPoP key, once made or read from the store.
    dpop_key: Mutex<Option<Arc<DpopKey>>>,
    /// The DPoP nonces servers gave.
    nonces: Nonces,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient").field("server_url", &self.0.config.server_url).finish_non_exhaustive()
    }
}

/// Seconds before expiry an access token is refreshed.
const REFRESH_MARGIN_S: u64 = 60;

impl OAuthClient {
    /// A client that signs in through `authorize` and keeps its records in
    /// `store`.
    ///
    /// # Errors
    /// [`crate::Error::InvalidRequest`] for a server URL that does not
    /// parse, or connection options that cannot be used.
    pub fn new(config: OAuthConfig, authorize: Authorize, store: Arc<dyn RecordStore>) -> crate::Result<OAuthClient> {
        let server_url = Url::parse(&config.server_url)
            .map_err(|e| crate::Error::InvalidRequest { reason: format!("the server URL is not valid: {e}") })?;
        // Redirects are not followed: a metadata or token endpoint that
        // redirects is refused, not trusted elsewhere.
        let http = crate::transport::http::build_client_with(&config.connection, reqwest::redirect::Policy::none())?;
        let client = OAuthClient(Arc::new(Inner {
            config,
            server_url,
            http,
            authorize,
            store,
            held: RwLock::default(),
            session: tokio::sync::Mutex::new(TokenState::default()),
            problem: Mutex::new(None),
            obtained: tokio::sync::watch::channel(0).0,
            dpop_key: Mutex::new(None),
            nonces: Nonces::default(),
        }));
        // The tokens a sign-in of an earlier run (or another process) left.
        client.0.adopt_stored();
        Ok(client)
    }

    /// A client that signs in as itself (the client credentials grant) with
    /// `client`'s secret or private key, and keeps its tokens in `store`;
    /// a token about to expire is replaced by signing in again.
    ///
    /// ```no_run
    /// # async fn run() -> mcp_bridge_sdk::Result<()> {
    /// use std::sync::Arc;
    /// use mcp_bridge_sdk::auth::{OAuthClient, PreRegistered};
    /// use mcp_bridge_sdk::store::MemoryStore;
    ///
    /// let secret = std::env::var("MCP_CLIENT_SECRET").unwrap_or_default();
    /// let client = PreRegistered::new("reporting-agent").with_client_secret(secret);
    /// let auth = OAuthClient::client_credentials("https://mcp.example.com/mcp", client, Arc::new(MemoryStore::default()))?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`OAuthClient::new`].
    pub fn client_credentials(
        server_url: impl Into<String>,
        client: PreRegistered,
        store: Arc<dyn RecordStore>,
    ) -> crate::Result<OAuthClient> {
        OAuthClient::without_user(server_url, client, Grant::ClientCredentials, store)
    }

    /// A client that signs a workload in with the identity token its
    /// platform issued (`token`, exchanged with the JWT-bearer grant), as
    /// the pre-registered client `client_id`; tokens kept in `store`, a new
    /// exchange when the access token expires.
    ///
    /// ```no_run
    /// # async fn run() -> mcp_bridge_sdk::Result<()> {
    /// use std::sync::Arc;
    /// use mcp_bridge_sdk::auth::{OAuthClient, TokenSource};
    /// use mcp_bridge_sdk::store::MemoryStore;
    ///
    /// let token = TokenSource::file("/var/run/secrets/tokens/mcp-token");
    /// let store = Arc::new(MemoryStore::default());
    /// let auth = OAuthClient::workload_identity("https://mcp.example.com/mcp", "billing-job", token, store)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`OAuthClient::new`].
    pub fn workload_identity(
        server_url: impl Into<String>,
        client_id: impl Into<String>,
        token: TokenSource,
        store: Arc<dyn RecordStore>,
    ) -> crate::Result<OAuthClient> {
        OAuthClient::without_user(server_url, PreRegistered::new(client_id), Grant::JwtBearer(token), store)
    }

    /// A client that signs its user in through their enterprise's single
    /// sign-on (enterprise-managed authorization): the ID token from `idp`
    /// is exchanged there for an identity assertion grant, and that here,
    /// by the pre-registered `client`, for tokens; no browser, no consent
    /// screen. Tokens kept in `store`, the exchange made again when they
    /// expire.
    ///
    /// ```no_run
    /// # async fn run() -> mcp_bridge_sdk::Result<()> {
    /// use std::sync::Arc;
    /// use mcp_bridge_sdk::auth::{EnterpriseIdp, OAuthClient, PreRegistered, TokenSource};
    /// use mcp_bridge_sdk::store::MemoryStore;
    ///
    /// let id_token = TokenSource::file("/run/user/1000/sso/id_token");
    /// let idp = EnterpriseIdp::new("https://acme.idp.example", PreRegistered::new("chat-desktop"), id_token);
    /// let client = PreRegistered::new("chat-desktop-at-mcp").with_client_secret("from-the-admin");
    /// let auth = OAuthClient::enterprise_managed("https://mcp.example.com/mcp", client, idp, Arc::new(MemoryStore::default()))?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`OAuthClient::new`].
    pub fn enterprise_managed(
        server_url: impl Into<String>,
        client: PreRegistered,
        idp: EnterpriseIdp,
        store: Arc<dyn RecordStore>,
    ) -> crate::Result<OAuthClient> {
        OAuthClient::without_user(server_url, client, Grant::EnterpriseManaged(idp), store)
    }

    /// A client whose user signs in on another device (the device
    /// authorization grant, RFC 8628): `prompt` shows them where to go and
    /// the code to type, and the client polls until they finished. For
    /// machines without a browser (an SSH session, a dev container).
    ///
    /// ```no_run
    /// # async fn run() -> mcp_bridge_sdk::Result<()> {
    /// use std::sync::Arc;
    /// use mcp_bridge_sdk::auth::{DeviceAuthorization, DevicePrompt, OAuthClient};
    /// use mcp_bridge_sdk::store::MemoryStore;
    ///
    /// let prompt = DevicePrompt::new(|shown: DeviceAuthorization| async move {
    ///     eprintln!("Sign in at {} with the code {}", shown.verification_uri, shown.user_code);
    ///     Ok::<_, String>(())
    /// });
    /// let auth = OAuthClient::device_code("https://mcp.example.com/mcp", "my-cli", prompt, Arc::new(MemoryStore::default()))?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`OAuthClient::new`].
    pub fn device_code(
        server_url: impl Into<String>,
        client_name: impl Into<String>,
        prompt: DevicePrompt,
        store: Arc<dyn RecordStore>,
    ) -> crate::Result<OAuthClient> {
        let config = OAuthConfig::new(server_url, "", client_name).with_grant(Grant::DeviceCode(prompt));
        OAuthClient::new(config, never_authorize("this client signs in with a code"), store)
    }

    /// A client of a grant without a user (its [`Authorize`] hook is never
    /// called).
    fn without_user(
        server_url: impl Into<String>,
        client: PreRegistered,
        grant: Grant,
        store: Arc<dyn RecordStore>,
    ) -> crate::Result<OAuthClient> {
        let config = OAuthConfig::new(server_url, "", "").with_pre_registered(client).with_grant(grant);
        OAuthClient::new(config, never_authorize("this client signs in without a user"), store)
    }

    /// Changes each time new tokens are obtained (a sign-in, a refresh): a
    /// request refused before can be sent again then.
    pub fn tokens_obtained(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.obtained.subscribe()
    }

    /// Where the authorization server sends the browser back: the redirect
    /// URI a registration must list.
    pub fn redirect_uri(&self) -> &str {
        &self.0.config.redirect_uri
    }

    /// Why the last sign-in or refresh failed, if it did.
    pub fn last_problem(&self) -> Option<SignInError> {
        self.0.problem.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Signs in now, without waiting for the server to refuse a request.
    ///
    /// # Errors
    /// Why the sign-in failed.
    pub async fn sign_in_now(&self) -> Result<(), SignInError> {
        let inner = &self.0;
        let mut session = inner.session.lock().await;
        let outcome = inner.sign_in(&mut session, &Challenge::default(), &[], None).await;
        inner.note(&outcome);
        outcome
    }

    /// Forgets this server's tokens and DPoP key (in the store too).
    ///
    /// # Errors
    /// The store's error.
    pub async fn sign_out(&self) -> Result<(), SignInError> {
        let inner = &self.0;
        let mut session = inner.session.lock().await;
        *session = TokenState::default();
        *inner.held.write().unwrap_or_else(|e| e.into_inner()) = Held::default();
        *inner.dpop_key.lock().unwrap_or_else(|e| e.into_inner()) = None;
        for key in store::sign_in_keys(&inner.resource()) {
            inner.store.remove(&key).map_err(SignInError::Store)?;
        }
        Ok(())
    }
}

impl Inner {
    fn note(&self, outcome: &Result<(), SignInError>) {
        let mut problem = self.problem.lock().unwrap_or_else(|e| e.into_inner());
        *problem = outcome.as_ref().err().cloned();
        if let Err(e) = outcome {
            tracing::warn!(target: "mcp_auth", "sign-in failed: {e}");
        }
    }

    fn resource(&self) -> String {
        discovery::canonical_resource(&self.server_url)
    }

    /// The tokens in use now, as read by a request.
    fn held(&self) -> Held {
        self.held.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Makes `record` the tokens in use.
    fn hold(&self, record: TokenRecord) {
        *self.held.write().unwrap_or_else(|e| e.into_inner()) =
            Held { record: Some(Arc::new(record)), obtained: Some(Instant::now()) };
    }

    /// Uses the store's record when another process wrote another one (it
    /// signed in, stepped up, or refreshed and so rotated the refresh
    /// token), whatever its expiry: a refresh then uses its refresh token.
    /// Says whether the tokens in use are now that record and do not expire
    /// soon (a request can go again at once).
    fn adopt_stored(&self) -> bool {
        let stored = crate::store::load::<TokenRecord>(self.store.as_ref(), &store::tokens_key(&self.resource()));
        let Some(stored) = stored.ok().flatten() else { return false };
        if self.held().record.is_some_and(|r| r.access_token == stored.access_token) {
            return false;
        }
        let fresh = !exchange::expires_soon(&stored, REFRESH_MARGIN_S);
        self.hold(stored);
        fresh
    }

    /// Stores `record` and uses it; `_turn` shows the caller holds the
    /// turn to change the tokens.
    fn keep(&self, _turn: &mut TokenState, record: TokenRecord) -> Result<(), SignInError> {
        crate::store::save(self.store.as_ref(), &store::tokens_key(&self.resource()), &record)
            .map_err(SignInError::Store)?;
        self.hold(record);
        self.obtained.send_modify(|n| *n += 1);
        Ok(())
    }

    /// The tokens to use now; refreshed when they expire soon. A token
    /// still valid is used as it is while another request's sign-in or
    /// refresh is under way: a step-up waiting for the user never stalls
    /// the requests the current token serves.
    async fn current(&self) -> Option<Arc<TokenRecord>> {
        let held = self.held().record;
        if held.as_ref().is_some_and(|r| !exchange::expires_soon(r, REFRESH_MARGIN_S)) {
            return held;
        }
        let mut session = match self.session.try_lock() {
            Ok(session) => session,
            Err(_) if held.as_ref().is_some_and(|r| !exchange::expires_soon(r, 0)) => return held,
            Err(_) => self.session.lock().await,
        };
        // Another request may have renewed the tokens while this one waited.
        let record = self.held().record?;
        if exchange::expires_soon(&record, REFRESH_MARGIN_S) {
            if record.refresh_token.is_some() {
                let outcome = self.refresh(&mut session).await;
                self.note(&outcome);
            } else if !self.config.grant.has_a_user() {
                let outcome = self.sign_in(&mut session, &Challenge::default(), &[], None).await;
                self.note(&outcome);
            }
        }
        self.held().record
    }

    /// Exchanges the refresh token, after reading the store again: another
    /// record there (another process refreshed) is used as it is when it
    /// does not expire soon, else refreshed with its own refresh token; it
    /// is never overwritten with an older one.
    async fn refresh(&self, session: &mut TokenState) -> Result<(), SignInError> {
        if self.adopt_stored() {
            return Ok(());
        }
        self.refresh_held(session).await
    }

    /// Exchanges the refresh token of the tokens in use (the store read
    /// already).
    async fn refresh_held(&self, session: &mut TokenState) -> Result<(), SignInError> {
        let Some(record) = self.held().record else { return Err(SignInError::Token("nothing to refresh".into())) };
        let Some(refresh_token) = record.refresh_token.clone() else {
            return Err(SignInError::Token("no refresh token".into()));
        };
        let issuer =
            Url::parse(&record.issuer).map_err(|_| SignInError::NoServerMetadata { issuer: record.issuer.clone() })?;
        let metadata = self.server_metadata(&issuer).await?;
        let client = self.client_for(&metadata).await?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token),
            ("resource", record.resource.clone().unwrap_or_else(|| self.resource())),
        ];
        let fresh = self.token_request(&metadata.token_endpoint, &client, form, Some(&*record)).await?;
        self.keep(session, fresh)
    }

    /// Keeps the tokens of a sign-in for `resource`, with the scope asked
    /// for when the answer names none.
    fn keep_signed_in(
        &self,
        session: &mut TokenState,
        mut record: TokenRecord,
        scope: Option<String>,
        resource: String,
    ) -> Result<(), SignInError> {
        if record.scope.is_none() {
            record.scope = scope;
        }
        record.resource = Some(resource);
        self.keep(session, record)
    }

    /// The whole sign-in of the configured grant; `ask_user` asks the user
    /// of the request that needed it (see [`AuthorizationRequest::ask_user`]).
    async fn sign_in(
        &self,
        session: &mut TokenState,
        challenge: &Challenge,
        previous: &[String],
        ask_user: Option<AskUser>,
    ) -> Result<(), SignInError> {
        match &self.config.grant {
            Grant::AuthorizationCode => self.sign_in_user(session, challenge, previous, ask_user).await,
            Grant::DeviceCode(prompt) => self.sign_in_device(session, challenge, previous, prompt).await,
            _ => self.sign_in_without_user(session, challenge, previous).await,
        }
    }
}

/// The [`Authorize`] hook of a grant that needs no browser: never called,
/// it says `why`.
fn never_authorize(why: &'static str) -> Authorize {
    authorize(move |_request| async move { Err::<AuthorizationResponse, _>(why) })
}

impl AuthProvider for OAuthClient {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, crate::BoxError>> {
        let inner = self.0.clone();
        Box::pin(async move { Ok(inner.current().await.as_deref().map(authorization_value)) })
    }

    fn credentials(&self, method: &str, url: &str) -> BoxFuture<Result<Credentials, crate::BoxError>> {
        let (inner, method, url) = (self.0.clone(), method.to_owned(), url.to_owned());
        Box::pin(async move {
            match inner.current().await {
                Some(record) => Ok(inner.credentials(&record, &method, &url)?),
                None => Ok(Credentials::default()),
            }
        })
    }

    fn refused(&self, refusal: AuthRefusal) -> BoxFuture<bool> {
        let inner = self.0.clone();
        Box::pin(async move { inner.on_refusal(refusal).await })
    }
}
