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
mod config;
mod device;
pub mod discovery;
mod dpop;
mod exchange;
mod pkce;
pub mod store;

use mcp_bridge_protocol::method::{Method, SubscriptionsListen};
use std::sync::{Arc, Mutex};
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
use crate::transport::http::{AuthProvider, AuthRefusal, Credentials};
use dpop::{DpopKey, Nonces, Prover};

/// The tokens in use, and what the last sign-in asked for.
#[derive(Default)]
struct Session {
    record: Option<TokenRecord>,
    /// When `record` was obtained: a refusal of a request sent before is
    /// answered by sending it again with the newer token.
    obtained: Option<Instant>,
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
    /// One sign-in or refresh at a time.
    session: tokio::sync::Mutex<Session>,
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

/// Methods whose refusal never starts a sign-in (see `on_refusal`).
const PASSIVE_METHODS: [&str; 1] = [SubscriptionsListen::NAME];

/// The grant type of an assertion exchanged for tokens (RFC 7523 section 2.1).
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The grant type of a token exchange (RFC 8693 section 2.1).
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// The token type of an OpenID Connect ID token (RFC 8693 section 3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

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
        Ok(OAuthClient(Arc::new(Inner {
            config,
            server_url,
            http,
            authorize,
            store,
            session: tokio::sync::Mutex::new(Session::default()),
            problem: Mutex::new(None),
            obtained: tokio::sync::watch::channel(0).0,
            dpop_key: Mutex::new(None),
            nonces: Nonces::default(),
        })))
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
        let outcome = inner.sign_in(&mut session, &Challenge::default(), &[]).await;
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
        *session = Session::default();
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

    /// The stored record of this server (another process may have written
    /// a newer one).
    fn stored(&self) -> Option<TokenRecord> {
        crate::store::load(self.store.as_ref(), &store::tokens_key(&self.resource())).ok().flatten()
    }

    fn keep(&self, session: &mut Session, record: TokenRecord) -> Result<(), SignInError> {
        crate::store::save(self.store.as_ref(), &store::tokens_key(&self.resource()), &record)
            .map_err(SignInError::Store)?;
        session.record = Some(record);
        session.obtained = Some(Instant::now());
        self.obtained.send_modify(|n| *n += 1);
        Ok(())
    }

    /// The tokens to use now: the session's, or the store's when it holds
    /// newer ones; refreshed when they expire soon.
    async fn current(&self, session: &mut Session) -> Option<TokenRecord> {
        if let Some(stored) = self.stored()
            && session.record.as_ref().is_none_or(|r| r.access_token != stored.access_token)
        {
            session.record = Some(stored);
            session.obtained = Some(Instant::now());
        }
        let record = session.record.clone()?;
        if exchange::expires_soon(&record, REFRESH_MARGIN_S) {
            if record.refresh_token.is_some() {
                let outcome = self.refresh(session).await;
                self.note(&outcome);
            } else if !self.config.grant.has_a_user() {
                let outcome = self.sign_in(session, &Challenge::default(), &[]).await;
                self.note(&outcome);
            }
        }
        session.record.clone()
    }

    /// Exchanges the refresh token, after reading the store again: a newer
    /// record there (another process refreshed) is used as it is, and is
    /// never overwritten with an older one.
    async fn refresh(&self, session: &mut Session) -> Result<(), SignInError> {
        let ours = session.record.clone();
        if let Some(stored) = self.stored()
            && ours.as_ref().is_some_and(|r| r.access_token != stored.access_token)
            && !exchange::expires_soon(&stored, REFRESH_MARGIN_S)
        {
            session.record = Some(stored);
            session.obtained = Some(Instant::now());
            return Ok(());
        }
        let Some(record) = ours else { return Err(SignInError::Token("nothing to refresh".into())) };
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
        let fresh = self.token_request(&metadata.token_endpoint, &client, form, Some(&record)).await?;
        self.keep(session, fresh)
    }

    async fn resource_metadata(&self, challenge: &Challenge) -> Result<ResourceMetadata, SignInError> {
        let mut candidates = Vec::new();
        if let Some(named) = challenge.resource_metadata.as_deref().filter(|u| Url::parse(u).is_ok()) {
            candidates.push(named.to_owned());
        }
        candidates.extend(discovery::resource_metadata_urls(&self.server_url).iter().map(Url::to_string));
        for url in candidates {
            let url = discovery::check_endpoint(&self.server_url, "protected resource metadata URL", &url)?;
            if let Some(found) =
                exchange::get_json::<ResourceMetadata>(&self.http, &url, "protected resource metadata").await?
            {
                if !discovery::resource_covers(&found.resource, &self.server_url) {
                    return Err(SignInError::ResourceMismatch { resource: found.resource });
                }
                return Ok(found);
            }
        }
        Err(SignInError::NoResourceMetadata)
    }

    async fn server_metadata(&self, issuer: &Url) -> Result<ServerMetadata, SignInError> {
        let wanted = issuer.as_str().trim_end_matches('/');
        discovery::check_endpoint(&self.server_url, "authorization server", issuer.as_str())?;
        for url in discovery::server_metadata_urls(issuer) {
            let found =
                match exchange::get_json::<ServerMetadata>(&self.http, &url, "authorization server metadata").await {
                    Ok(Some(found)) => found,
                    Ok(None) | Err(SignInError::Http(_)) => continue,
                    Err(e) => return Err(e),
                };
            // The issuer must be the one the metadata was looked up for
            // (RFC 8414 section 3.3); other metadata is not used at all.
            if found.issuer.trim_end_matches('/') == wanted {
                discovery::check_server_metadata(&self.server_url, &found)?;
                return Ok(found);
            }
            tracing::warn!(target: "mcp_auth", "authorization server metadata with another issuer ignored");
        }
        Err(SignInError::NoServerMetadata { issuer: issuer.to_string() })
    }

    /// The client at this authorization server: registered before (kept
    /// per issuer), pre-registered, a metadata document URL, or registered
    /// now.
    async fn client_for(&self, metadata: &ServerMetadata) -> Result<ClientRecord, SignInError> {
        let device = matches!(self.config.grant, Grant::DeviceCode(_));
        let key = if device { store::device_client_key(&metadata.issuer) } else { store::client_key(&metadata.issuer) };
        if let Some(known) =
            crate::store::load::<ClientRecord>(self.store.as_ref(), &key).map_err(SignInError::Store)?
            && known.issuer == metadata.issuer
        {
            return Ok(known);
        }
        let supported = metadata.token_endpoint_auth_methods_supported.as_ref();
        let client = if let Some(pre) = &self.config.pre_registered {
            ClientRecord {
                issuer: metadata.issuer.clone(),
                client_id: pre.client_id.clone(),
                token_endpoint_auth_method: pre.method(supported),
                client_secret: pre.client_secret.clone(),
            }
        } else if let (Some(url), Some(true)) =
            (&self.config.client_metadata_url, metadata.client_id_metadata_document_supported)
        {
            ClientRecord {
                issuer: metadata.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
            }
        } else if let Some(endpoint) = &metadata.registration_endpoint {
            let registered = exchange::register(
                &self.http,
                endpoint,
                &metadata.issuer,
                &self.config.client_name,
                (!device).then_some(self.config.redirect_uri.as_str()),
                supported,
            )
            .await?;
            crate::store::save(self.store.as_ref(), &key, &registered).map_err(SignInError::Store)?;
            registered
        } else {
            return Err(SignInError::NoRegistration);
        };
        Ok(client)
    }

    /// Keeps the tokens of a sign-in for `resource`, with the scope asked
    /// for when the answer names none.
    fn keep_signed_in(
        &self,
        session: &mut Session,
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

    /// A token request of this client: its authentication, and a DPoP
    /// proof when it asks for key-bound tokens.
    async fn token_request(
        &self,
        endpoint: &str,
        client: &ClientRecord,
        form: exchange::Form,
        previous: Option<&TokenRecord>,
    ) -> Result<TokenRecord, SignInError> {
        self.token_answer(endpoint, client, form, previous).await?.map_err(|refused| refused.error)
    }

    /// [`Inner::token_request`], with how the endpoint refused.
    async fn token_answer(
        &self,
        endpoint: &str,
        client: &ClientRecord,
        form: exchange::Form,
        previous: Option<&TokenRecord>,
    ) -> Result<Result<TokenRecord, exchange::Refused>, SignInError> {
        let key = if self.config.dpop { Some(self.dpop_key()?) } else { None };
        let prover = key.as_deref().map(|key| Prover { key, nonces: &self.nonces });
        exchange::token_request(&self.http, endpoint, client, self.client_key(), prover, form, previous).await
    }

    /// The DPoP key used with this server: the one in memory, else the
    /// store's, else a new one (kept in the store).
    fn dpop_key(&self) -> Result<Arc<DpopKey>, SignInError> {
        let mut slot = self.dpop_key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = slot.as_ref() {
            return Ok(key.clone());
        }
        let name = store::dpop_key(&self.resource());
        let key = match crate::store::load::<dpop::KeyRecord>(self.store.as_ref(), &name).map_err(SignInError::Store)? {
            Some(record) => DpopKey::from_record(&record)?,
            None => {
                let key = DpopKey::generate()?;
                crate::store::save(self.store.as_ref(), &name, &key.record()).map_err(SignInError::Store)?;
                key
            }
        };
        let key = Arc::new(key);
        *slot = Some(key.clone());
        Ok(key)
    }

    /// The credential headers of a request to the server with `record`'s
    /// token: a DPoP token with its proof for this request.
    fn credentials(&self, record: &TokenRecord, method: &str, url: &str) -> Result<Credentials, SignInError> {
        let dpop = match record.token_type.as_deref() {
            Some(dpop::DPOP_TOKEN_TYPE) => {
                let key = self.dpop_key()?;
                Some(Prover { key: &key, nonces: &self.nonces }.proof(method, url, Some(&record.access_token))?)
            }
            _ => None,
        };
        Ok(Credentials { authorization: Some(authorization_value(record)), dpop })
    }

    /// The private key of a `private_key_jwt` client.
    fn client_key(&self) -> Option<&assertion::ClientKey> {
        self.config.pre_registered.as_ref().and_then(|p| p.private_key.as_deref())
    }

    /// The resource's metadata and its (first) authorization server's.
    async fn discover(&self, challenge: &Challenge) -> Result<(ResourceMetadata, ServerMetadata), SignInError> {
        let resource = self.resource_metadata(challenge).await?;
        let issuer_text = resource.authorization_servers.first().ok_or(SignInError::NoAuthorizationServer)?;
        let issuer =
            Url::parse(issuer_text).map_err(|_| SignInError::NoServerMetadata { issuer: issuer_text.clone() })?;
        let metadata = self.server_metadata(&issuer).await?;
        Ok((resource, metadata))
    }

    /// The whole sign-in of the configured grant.
    async fn sign_in(
        &self,
        session: &mut Session,
        challenge: &Challenge,
        previous: &[String],
    ) -> Result<(), SignInError> {
        match &self.config.grant {
            Grant::AuthorizationCode => self.sign_in_user(session, challenge, previous).await,
            Grant::DeviceCode(prompt) => self.sign_in_device(session, challenge, previous, prompt).await,
            _ => self.sign_in_without_user(session, challenge, previous).await,
        }
    }

    /// A grant without a user at the token endpoint, for the resource and
    /// scope a user's sign-in would ask for.
    async fn sign_in_without_user(
        &self,
        session: &mut Session,
        challenge: &Challenge,
        previous: &[String],
    ) -> Result<(), SignInError> {
        let (resource, metadata) = self.discover(challenge).await?;
        let client = self.client_for(&metadata).await?;
        let scope = discovery::select_scope(challenge.scope.as_deref(), &resource, &metadata, previous);
        let mut form = self.grant_without_user(&resource, &metadata, scope.as_deref()).await?;
        form.push(("resource", resource.resource.clone()));
        if let Some(scope) = &scope {
            form.push(("scope", scope.clone()));
        }
        let record = self.token_request(&metadata.token_endpoint, &client, form, None).await?;
        self.keep_signed_in(session, record, scope, resource.resource)
    }

    /// The grant type of a sign-in without a user and what it presents.
    async fn grant_without_user(
        &self,
        resource: &ResourceMetadata,
        metadata: &ServerMetadata,
        scope: Option<&str>,
    ) -> Result<Vec<(&'static str, String)>, SignInError> {
        match &self.config.grant {
            Grant::ClientCredentials => {
                let pre = self.config.pre_registered.as_ref();
                if !pre.is_some_and(|p| p.client_secret.is_some() || p.private_key.is_some()) {
                    return Err(SignInError::NoClientCredentials);
                }
                Ok(vec![("grant_type", "client_credentials".to_owned())])
            }
            Grant::JwtBearer(token) => {
                let assertion = token
                    .read()
                    .await
                    .map_err(|e| SignInError::Token(format!("the workload's identity token cannot be read: {e}")))?;
                Ok(vec![("grant_type", JWT_BEARER_GRANT.to_owned()), ("assertion", assertion)])
            }
            Grant::EnterpriseManaged(idp) => {
                let grant = self.identity_assertion_grant(idp, resource, metadata, scope).await?;
                Ok(vec![("grant_type", JWT_BEARER_GRANT.to_owned()), ("assertion", grant)])
            }
            Grant::AuthorizationCode | Grant::DeviceCode(_) => {
                Err(SignInError::Token("this grant needs a user".into()))
            }
        }
    }

    /// Exchanges the user's ID token at their identity provider for an
    /// identity assertion grant to this server's authorization server
    /// (enterprise-managed authorization, RFC 8693).
    async fn identity_assertion_grant(
        &self,
        idp: &EnterpriseIdp,
        resource: &ResourceMetadata,
        metadata: &ServerMetadata,
        scope: Option<&str>,
    ) -> Result<String, SignInError> {
        let endpoint = match &idp.token_endpoint {
            Some(endpoint) => {
                discovery::check_endpoint(&self.server_url, "identity provider's token endpoint", endpoint)?;
                endpoint.clone()
            }
            None => {
                let issuer = Url::parse(&idp.issuer)
                    .map_err(|_| SignInError::NoServerMetadata { issuer: idp.issuer.clone() })?;
                self.server_metadata(&issuer).await?.token_endpoint
            }
        };
        let id_token = idp
            .id_token
            .read()
            .await
            .map_err(|e| SignInError::Token(format!("the ID token of the single sign-on cannot be read: {e}")))?;
        let client = ClientRecord {
            issuer: idp.issuer.clone(),
            client_id: idp.client.client_id.clone(),
            token_endpoint_auth_method: idp.client.method(None),
            client_secret: idp.client.client_secret.clone(),
        };
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
            ("requested_token_type", exchange::ID_JAG_TOKEN_TYPE.to_owned()),
            ("audience", metadata.issuer.clone()),
            ("resource", resource.resource.clone()),
            ("subject_token", id_token),
            ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope.to_owned()));
        }
        let key = idp.client.private_key.as_deref();
        exchange::identity_assertion_grant(&self.http, &endpoint, &client, key, form).await
    }

    /// The authorization code flow: discovery, client, the user's
    /// authorization, tokens.
    async fn sign_in_user(
        &self,
        session: &mut Session,
        challenge: &Challenge,
        previous: &[String],
    ) -> Result<(), SignInError> {
        let (resource, metadata) = self.discover(challenge).await?;
        if !metadata.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256")) {
            return Err(SignInError::NoPkce);
        }
        let client = self.client_for(&metadata).await?;
        let scope = discovery::select_scope(challenge.scope.as_deref(), &resource, &metadata, previous);
        let pkce = pkce::Pkce::new();
        let state = pkce::state();
        let mut url = Url::parse(&metadata.authorization_endpoint)
            .map_err(|e| SignInError::Http(format!("the authorization endpoint is not a URL: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.config.redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &resource.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let request = AuthorizationRequest {
            url: url.to_string(),
            redirect_uri: self.config.redirect_uri.clone(),
            state: state.clone(),
        };
        let response = (self.authorize)(request).await.map_err(|e| SignInError::Authorize(e.to_string()))?;
        // RFC 9207 before anything else of the response is acted on.
        match (&response.iss, metadata.authorization_response_iss_parameter_supported) {
            (Some(iss), _) if *iss != metadata.issuer => return Err(SignInError::IssuerMismatch),
            (None, Some(true)) => return Err(SignInError::IssuerMissing),
            _ => {}
        }
        if response.state.as_deref() != Some(state.as_str()) {
            return Err(SignInError::StateMismatch);
        }
        if let Some(error) = &response.error {
            let detail = match &response.error_description {
                Some(d) => format!("{error} ({})", d.chars().filter(|c| !c.is_control()).take(200).collect::<String>()),
                None => error.clone(),
            };
            return Err(SignInError::Denied(detail));
        }
        let code = response.code.ok_or_else(|| SignInError::Denied("no authorization code".into()))?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", pkce.verifier),
            // Exactly as the metadata publishes it (RFC 8707 wants the
            // server to recognise it; no slash added by a URL parser).
            ("resource", resource.resource.clone()),
        ];
        if let Some(scope) = &scope {
            form.push(("scope", scope.clone()));
        }
        let record = self.token_request(&metadata.token_endpoint, &client, form, None).await?;
        self.keep_signed_in(session, record, scope, resource.resource)
    }

    async fn on_refusal(&self, refusal: AuthRefusal) -> bool {
        let challenge = refusal.www_authenticate.as_deref().and_then(Challenge::parse).unwrap_or_default();
        // A server that wants a DPoP nonce (RFC 9449 section 9): the request
        // goes again with a proof carrying it; the token is fine.
        if challenge.error.as_deref() == Some(dpop::USE_NONCE) {
            return refusal.dpop_nonce.is_some_and(|nonce| self.nonces.remember(&self.config.server_url, &nonce));
        }
        let mut session = self.session.lock().await;
        // Another request signed in (or refreshed) since this one was sent:
        // send it again with the new token.
        if session.obtained.is_some_and(|obtained| obtained > refusal.sent_at) {
            return true;
        }
        let granted: Vec<String> = session
            .record
            .as_ref()
            .and_then(|r| r.scope.as_deref())
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        // A long-lived stream does not start a sign-in of its own: it only
        // refreshes, and waits for the sign-in of another request.
        // (Signing in as the client asks nobody: any request may.)
        let interactive = !PASSIVE_METHODS.contains(&refusal.method.as_str()) || !self.config.grant.has_a_user();
        let outcome = match refusal.status {
            401 => {
                if session.record.as_ref().is_some_and(|r| r.refresh_token.is_some())
                    && self.refresh(&mut session).await.is_ok()
                {
                    return true;
                }
                if !interactive {
                    return false;
                }
                self.sign_in(&mut session, &challenge, &[]).await
            }
            403 if !interactive => return false,
            403 if challenge.error.as_deref() == Some("insufficient_scope") => {
                let wanted = discovery::select_scope(
                    challenge.scope.as_deref(),
                    &ResourceMetadata {
                        resource: String::new(),
                        authorization_servers: Vec::new(),
                        scopes_supported: None,
                    },
                    &no_offline(),
                    &granted,
                );
                // One step-up per scope set: a server that keeps refusing the
                // same set is not asked again and again.
                if wanted.is_some() && session.last_step_up == wanted {
                    return false;
                }
                session.last_step_up = wanted;
                self.sign_in(&mut session, &challenge, &granted).await
            }
            _ => return false,
        };
        self.note(&outcome);
        outcome.is_ok()
    }
}

/// The [`Authorize`] hook of a grant that needs no browser: never called,
/// it says `why`.
fn never_authorize(why: &'static str) -> Authorize {
    authorize(move |_request| async move { Err::<AuthorizationResponse, _>(why) })
}

/// The `Authorization` header value of `record`'s access token, with the
/// scheme of its type (`DPoP` for a key-bound one, else `Bearer`).
fn authorization_value(record: &TokenRecord) -> String {
    let scheme = match record.token_type.as_deref() {
        Some(dpop::DPOP_TOKEN_TYPE) => dpop::DPOP_TOKEN_TYPE,
        _ => "Bearer",
    };
    format!("{scheme} {}", record.access_token)
}

/// Metadata that lists no scopes: the scope set of a step-up is compared
/// without `offline_access`.
fn no_offline() -> ServerMetadata {
    ServerMetadata {
        issuer: String::new(),
        authorization_endpoint: String::new(),
        token_endpoint: String::new(),
        registration_endpoint: None,
        scopes_supported: None,
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: None,
        authorization_response_iss_parameter_supported: None,
        device_authorization_endpoint: None,
    }
}

impl AuthProvider for OAuthClient {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, crate::BoxError>> {
        let inner = self.0.clone();
        Box::pin(async move {
            let mut session = inner.session.lock().await;
            Ok(inner.current(&mut session).await.as_ref().map(authorization_value))
        })
    }

    fn credentials(&self, method: &str, url: &str) -> BoxFuture<Result<Credentials, crate::BoxError>> {
        let (inner, method, url) = (self.0.clone(), method.to_owned(), url.to_owned());
        Box::pin(async move {
            let mut session = inner.session.lock().await;
            match inner.current(&mut session).await {
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
