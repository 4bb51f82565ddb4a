//! The upstream server: the SDK's client on the transport a [`Connect`]
//! opens (a child process, a URL), on an in-memory link to the server of
//! the same process (the embedded bridge), or shared by many sessions.

use std::borrow::Cow;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use crate::client::Reply;
use crate::{Client, ClientOptions, RequestOptions};
use mcp_bridge_protocol::method::{Method, ToolsCall, ToolsList};
use mcp_bridge_protocol::types::{ClientCapabilities, DiscoverResult, Implementation};
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, error_code};

use crate::server::legacy::translate::Origin;

/// Where the upstream server is.
#[derive(Debug, Clone)]
pub enum UpstreamConfig {
    /// The server of this process, over an in-memory link that is never
    /// lost (the embedded bridge); its handlers see `caller` as the caller
    /// of each request (a protected endpoint's legacy session).
    Memory {
        /// The server.
        server: crate::Server,
        /// Whom the requests speak for.
        caller: crate::server::protect::CallerSlot,
    },
    /// An upstream already connected that several sessions share (the
    /// bridge's HTTP mode): each request carries its session's client info
    /// and capabilities; a session never closes it; what belongs to no
    /// request (log messages on stdio) goes to every session.
    Shared(Upstream, Arc<Fanout>),
    /// A server reached anew for each session: a child process, a URL.
    Connect(Arc<dyn Connect>),
}

/// How a session reaches its own upstream, and what it learns of a
/// sign-in in front of it: the transport, whether results need the
/// remote-origin rules, and after a refusal the error to tell the client.
pub trait Connect: Send + Sync + std::fmt::Debug {
    /// Opens the transport: starts the child, or makes the HTTP client.
    ///
    /// # Errors
    /// The SDK's error when it cannot.
    fn transport(&self) -> Result<crate::transport::Transport, crate::Error>;

    /// Whether the server is at a URL: its results follow the
    /// remote-origin rules, a closed connection is one lost stream, and a
    /// failed [`Connect::transport`] is `connect_failed` (else `spawn_failed`).
    fn origin(&self) -> Origin;

    /// After the server refused a request (401, 403): why the sign-in in
    /// front of it failed, as the error the client is told; `None` when no
    /// sign-in failed.
    fn sign_in_error(&self) -> Option<mcp_bridge_protocol::ErrorObject> {
        None
    }

    /// Changes each time new tokens are obtained (a listen stream refused
    /// for want of them is reopened then); `None` without sign-in.
    fn tokens_obtained(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// Whether clients may see and call the server's tool `name`: a tool
    /// it does not admit is left out of `tools/list` and called, gets the
    /// error of an unknown tool. Every tool by default.
    fn admits_tool(&self, name: &str) -> bool {
        let _ = name;
        true
    }
}

impl UpstreamConfig {
    /// `server` over an in-memory link, its requests of no caller.
    pub fn memory(server: &crate::Server) -> Self {
        UpstreamConfig::Memory { server: server.clone(), caller: Default::default() }
    }
}

/// The sessions of a shared upstream, for what belongs to none of their
/// requests. Holds each session's callback weakly: a session that ended
/// drops out.
#[derive(Default)]
pub struct Fanout {
    receivers: std::sync::Mutex<Vec<WeakReceiver>>,
}

/// A session's callback, held weakly by a [`Fanout`].
type WeakReceiver = std::sync::Weak<dyn Fn(&JsonRpcNotification) + Send + Sync>;

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout").finish_non_exhaustive()
    }
}

impl Fanout {
    /// Adds a receiver; it gets notifications while the caller keeps it.
    pub fn join(&self, receiver: &OnUnrouted) {
        self.lock().push(Arc::downgrade(receiver));
    }

    /// Hands a notification to every receiver still there.
    pub fn deliver(&self, n: &JsonRpcNotification) {
        let live: Vec<OnUnrouted> = {
            let mut receivers = self.lock();
            receivers.retain(|r| r.strong_count() > 0);
            receivers.iter().filter_map(std::sync::Weak::upgrade).collect()
        };
        for receiver in live {
            receiver(n);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<WeakReceiver>> {
        self.receivers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A forwarded request that failed: the SDK's error, and what the HTTP
/// transport saw of it.
#[derive(Debug)]
pub struct Failed {
    /// The SDK's error.
    pub error: crate::Error,
    /// The HTTP status of the last response, over HTTP.
    pub http_status: Option<u16>,
    /// Why the sign-in failed, as the client's error, when the server
    /// refused (401, 403) after one.
    pub sign_in: Option<mcp_bridge_protocol::ErrorObject>,
    /// Whether the upstream is at a URL: a closed connection there is one
    /// lost stream, not the end of a process.
    pub remote: bool,
}

impl From<crate::Error> for Failed {
    fn from(error: crate::Error) -> Self {
        Failed { error, http_status: None, sign_in: None, remote: false }
    }
}

/// A connected upstream server.
#[derive(Debug, Clone)]
pub struct Upstream {
    client: Client,
    origin: Origin,
    /// How it was reached, for what it knows of a sign-in and which tools
    /// it shows.
    connector: Option<Arc<dyn Connect>>,
    /// A session's handle on a shared upstream: closing it is its owner's.
    shared: bool,
}

/// Receives the upstream's notifications that belong to no request (log
/// messages on stdio; a 2025-11-25 upstream's change notifications).
pub type OnUnrouted = Arc<dyn Fn(&JsonRpcNotification) + Send + Sync>;

/// Who the upstream's client speaks for: the legacy client's info,
/// capabilities and requested version, and how the upstream's own requests
/// (a 2025-11-25 upstream's elicitation, sampling, roots) are answered.
#[derive(Debug)]
pub struct Speaker {
    /// The client's name and version.
    pub info: Implementation,
    /// The capabilities the upstream sees.
    pub capabilities: ClientCapabilities,
    /// The version the client asked for in its `initialize`, asked of a
    /// 2025-11-25 upstream in turn; the SDK's default when `None`.
    pub requested_version: Option<String>,
    /// Answers the upstream's own requests.
    pub hooks: crate::client::InputHooks,
    /// The upstream's revision, or how to find it out.
    pub era: crate::client::Era,
    /// Where the found era is remembered.
    pub era_cache: Option<crate::client::EraCache>,
    /// Hears of every request sent to the upstream (see
    /// [`crate::telemetry`]).
    pub observer: Option<std::sync::Arc<dyn crate::telemetry::Observer>>,
}

impl Speaker {
    /// A client with this info and capabilities that answers no request of
    /// the upstream.
    pub fn new(info: Implementation, capabilities: ClientCapabilities) -> Speaker {
        Speaker {
            info,
            capabilities,
            requested_version: None,
            hooks: Default::default(),
            era: Default::default(),
            era_cache: None,
            observer: None,
        }
    }
}

impl Upstream {
    /// Connects: starts the child process. `speaker` is the legacy
    /// client's, so the upstream sees who is really calling.
    ///
    /// # Errors
    /// The SDK's error when the process cannot be started.
    pub fn connect(
        config: &UpstreamConfig,
        speaker: Speaker,
        on_unrouted: OnUnrouted,
    ) -> Result<Upstream, crate::Error> {
        let (transport, origin, connector) = match config {
            UpstreamConfig::Connect(connector) => (connector.transport()?, connector.origin(), Some(connector.clone())),
            UpstreamConfig::Memory { server, caller } => {
                (crate::transport::memory::connect_as(server, caller.clone()), Origin::Local, None)
            }
            UpstreamConfig::Shared(shared, fanout) => {
                fanout.join(&on_unrouted);
                return Ok(Upstream { shared: true, ..shared.clone() });
            }
        };
        let mut options = ClientOptions::new(speaker.info.name.clone(), speaker.info.version.clone());
        options.info = speaker.info;
        options.capabilities = speaker.capabilities;
        options.hooks = speaker.hooks;
        options.era = speaker.era;
        options.era_cache = speaker.era_cache;
        options.observer = speaker.observer;
        if let Some(version) = speaker.requested_version.filter(|v| mcp_bridge_protocol::legacy::is_known_version(v)) {
            options.legacy_protocol_version = version;
        }
        options.on_notification = Some(on_unrouted);
        Ok(Upstream { client: Client::new(options, transport), origin, connector, shared: false })
    }

    /// Whether several sessions share this upstream (`--listen`).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The child's process id (also its process group id), for a child.
    pub fn process_id(&self) -> Option<u32> {
        #[cfg(feature = "stdio")]
        return self.client.process().map(|p| p.id());
        #[cfg(not(feature = "stdio"))]
        None
    }

    /// The upstream's `initialize` result when it speaks 2025-11-25 (known
    /// after the first request: [`Upstream::discover`]).
    pub fn legacy_initialize(&self) -> Option<&mcp_bridge_protocol::legacy::InitializeResult> {
        match self.client.spoken() {
            Some(crate::client::Spoken::Legacy(result)) => Some(result),
            _ => None,
        }
    }

    /// Whether the upstream's results need the remote-origin rules.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// `server/discover` within `timeout`.
    ///
    /// # Errors
    /// The SDK's error ([`crate::Error::Timeout`] included), with what
    /// the HTTP transport saw.
    pub async fn discover(&self, timeout: Duration) -> Result<DiscoverResult, Failed> {
        let diagnostics = Arc::new(std::sync::Mutex::new(crate::client::Diagnostics::default()));
        let options = RequestOptions::default()
            .with_timeout(timeout)
            .with_max_total_timeout(timeout)
            .with_diagnostics(diagnostics.clone());
        self.client.discover(&options).await.map_err(|error| self.failed(error, &diagnostics))
    }

    /// The failure of a request, with the HTTP status its diagnostics got
    /// and, after a refusal, why the sign-in failed.
    fn failed(&self, error: crate::Error, diagnostics: &std::sync::Mutex<crate::client::Diagnostics>) -> Failed {
        let http_status = diagnostics.lock().unwrap_or_else(|e| e.into_inner()).http_status;
        let sign_in = match http_status {
            Some(401 | 403) => self.connector.as_ref().and_then(|c| c.sign_in_error()),
            _ => None,
        };
        Failed { error, http_status, sign_in, remote: self.origin == Origin::Remote }
    }

    /// Sends a forwarded request and returns its result as a tree.
    ///
    /// # Errors
    /// The SDK's error, with what the HTTP transport saw.
    pub async fn request(
        &self,
        method: &str,
        params: serde_json::Map<String, serde_json::Value>,
        options: &RequestOptions,
    ) -> Result<serde_json::Value, Failed> {
        let reply = self.relay(method, Cow::Owned(params), options).await?;
        reply.into_value(method).map_err(|error| self.unreadable(error))
    }

    /// The failure of a request whose result could not be read.
    fn unreadable(&self, error: crate::Error) -> Failed {
        Failed { remote: self.origin == Origin::Remote, ..Failed::from(error) }
    }

    /// Sends a forwarded request and returns its result: as it came when
    /// the client passes it on untouched (see [`Client::relay`]).
    pub(crate) async fn relay(
        &self,
        method: &str,
        params: Cow<'_, serde_json::Map<String, serde_json::Value>>,
        options: &RequestOptions,
    ) -> Result<Reply, Failed> {
        let Some(connector) = self.connector.as_ref() else { return self.send(method, params, options).await };
        let named = params.get("name").and_then(serde_json::Value::as_str);
        if method == ToolsCall::NAME
            && let Some(name) = named.filter(|name| !connector.admits_tool(name))
        {
            let unknown = ErrorObject::new(error_code::INVALID_PARAMS, format!("Unknown tool: {name}"));
            return Err(Failed::from(crate::Error::Rpc { error: unknown }));
        }
        let reply = self.send(method, params, options).await?;
        if method != ToolsList::NAME {
            return Ok(reply);
        }
        let mut result = reply.into_value(method).map_err(|error| self.unreadable(error))?;
        if let Some(tools) = result.get_mut("tools").and_then(serde_json::Value::as_array_mut) {
            tools.retain(|tool| {
                tool.get("name").and_then(serde_json::Value::as_str).is_none_or(|n| connector.admits_tool(n))
            });
        }
        Ok(Reply::Tree(result))
    }

    /// [`Upstream::relay`] as the client sends it.
    async fn send(
        &self,
        method: &str,
        params: Cow<'_, serde_json::Map<String, serde_json::Value>>,
        options: &RequestOptions,
    ) -> Result<Reply, Failed> {
        match &options.diagnostics {
            Some(diagnostics) => {
                self.client.relay(method, params, options).await.map_err(|error| self.failed(error, diagnostics))
            }
            // Without HTTP there is no status to record: no copy of the options per request.
            None if self.origin == Origin::Local => self
                .client
                .relay(method, params, options)
                .await
                .map_err(|error| self.failed(error, &Default::default())),
            None => {
                let diagnostics = Arc::<std::sync::Mutex<crate::client::Diagnostics>>::default();
                let options = options.clone().with_diagnostics(diagnostics.clone());
                self.client.relay(method, params, &options).await.map_err(|error| self.failed(error, &diagnostics))
            }
        }
    }

    /// Opens a `subscriptions/listen` stream; returns when it ends.
    ///
    /// # Errors
    /// The SDK's error ([`crate::Error::Cancelled`] when `options.cancel`
    /// fired), with what the HTTP transport saw.
    pub async fn listen(
        &self,
        filter: mcp_bridge_protocol::types::SubscriptionFilter,
        options: &RequestOptions,
    ) -> Result<mcp_bridge_protocol::types::SubscriptionsListenResult, Failed> {
        let diagnostics = options.diagnostics.clone().unwrap_or_default();
        let options = options.clone().with_diagnostics(diagnostics.clone());
        self.client.listen(filter, &options).await.map_err(|error| self.failed(error, &diagnostics))
    }

    /// Changes each time the upstream's OAuth client obtains new tokens;
    /// `None` without OAuth.
    pub fn tokens_obtained(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.connector.as_ref().and_then(|c| c.tokens_obtained())
    }

    /// Completes when the upstream is lost for good (a child process that
    /// ended), with its exit status. Never completes for an upstream that
    /// cannot be lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> Option<ExitStatus> {
        #[cfg(feature = "stdio")]
        if let Some(process) = self.client.process() {
            return process.wait().await;
        }
        std::future::pending().await
    }

    /// Stops the upstream: for a child, stdin closed, then SIGTERM and
    /// SIGKILL to its group after each grace period.
    pub async fn close(&self) -> Option<ExitStatus> {
        if self.shared {
            return None;
        }
        self.client.close().await
    }
}

/// Describes how a child ended, for the log line after a loss.
pub fn describe_exit(status: Option<ExitStatus>) -> String {
    match status {
        Some(s) if s.code().is_some() => format!("exit code {}", s.code().unwrap_or_default()),
        Some(s) => match killed_by(s) {
            Some(signal) => format!("signal {signal}"),
            None => "an unknown status".to_owned(),
        },
        None => "an unknown status".to_owned(),
    }
}

/// The signal that ended the process; Unix only has them.
fn killed_by(status: ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}
