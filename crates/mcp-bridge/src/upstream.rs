//! The upstream server: the SDK's client on its transport: a child process
//! on stdio, a URL over Streamable HTTP (with its OAuth sign-in in the
//! transport's authorization provider), or the server of the same process
//! (the embedded bridge).

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::JsonRpcNotification;
use mcp_protocol::types::{ClientCapabilities, DiscoverResult, Implementation};
use mcp_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_sdk::{Client, ClientOptions, RequestOptions};

use crate::translate::Origin;

/// Where the upstream server is.
#[derive(Debug, Clone)]
pub enum UpstreamConfig {
    /// A command started as a child process, spoken to on stdio.
    Stdio(StdioCommand),
    /// The server of this process, over an in-memory link that is never
    /// lost (the embedded bridge).
    Memory(mcp_sdk::Server),
    /// A server at a URL; a failed request fails alone, the upstream is
    /// never lost.
    Http(mcp_sdk::transport::http::HttpConfig),
}

/// A connected upstream server.
#[derive(Debug, Clone)]
pub struct Upstream {
    client: Client,
    origin: Origin,
}

/// Receives the upstream's notifications that belong to no request (log
/// messages on stdio).
pub type OnUnrouted = Arc<dyn Fn(&JsonRpcNotification) + Send + Sync>;

impl Upstream {
    /// Connects: starts the child process. `client_info` is the legacy
    /// client's, so the upstream sees who is really calling.
    ///
    /// # Errors
    /// The SDK's error when the process cannot be started.
    pub fn connect(
        config: &UpstreamConfig,
        client_info: Implementation,
        capabilities: ClientCapabilities,
        on_unrouted: OnUnrouted,
    ) -> Result<Upstream, mcp_sdk::Error> {
        let mut options = ClientOptions::new(client_info.name.clone(), client_info.version.clone());
        options.info = client_info;
        options.capabilities = capabilities;
        options.on_notification = Some(on_unrouted);
        let (transport, origin) = match config {
            UpstreamConfig::Stdio(command) => (spawn(command.clone())?, Origin::Local),
            UpstreamConfig::Memory(server) => (mcp_sdk::transport::memory::connect(server), Origin::Local),
            UpstreamConfig::Http(config) => (mcp_sdk::transport::http::connect(config.clone())?, Origin::Remote),
        };
        Ok(Upstream { client: Client::new(options, transport), origin })
    }

    /// The child's process id (also its process group id), for a child.
    pub fn process_id(&self) -> Option<u32> {
        self.client.process().map(|p| p.id())
    }

    /// Whether the upstream's results need the remote-origin rules.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// `server/discover` within `timeout`.
    ///
    /// # Errors
    /// The SDK's error, [`mcp_sdk::Error::Timeout`] included.
    pub async fn discover(&self, timeout: Duration) -> Result<DiscoverResult, mcp_sdk::Error> {
        let options = RequestOptions { timeout: Some(timeout), max_total_timeout: Some(timeout), ..Default::default() };
        self.client.discover(&options).await
    }

    /// Sends a forwarded request and returns its raw result.
    ///
    /// # Errors
    /// The SDK's error.
    pub async fn request(
        &self,
        method: &str,
        params: serde_json::Map<String, serde_json::Value>,
        options: &RequestOptions,
    ) -> Result<serde_json::Value, mcp_sdk::Error> {
        self.client.request(method, params, options).await
    }

    /// Opens a `subscriptions/listen` stream; returns when it ends.
    ///
    /// # Errors
    /// The SDK's error ([`mcp_sdk::Error::Cancelled`] when `options.cancel` fired).
    pub async fn listen(
        &self,
        filter: mcp_protocol::types::SubscriptionFilter,
        options: &RequestOptions,
    ) -> Result<mcp_protocol::types::SubscriptionsListenResult, mcp_sdk::Error> {
        self.client.listen(filter, options).await
    }

    /// Completes when the upstream is lost for good (a child process that
    /// ended), with its exit status. Never completes for an upstream that
    /// cannot be lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn lost(&self) -> Option<ExitStatus> {
        match self.client.process() {
            Some(process) => process.wait().await,
            None => std::future::pending().await,
        }
    }

    /// Stops the upstream: for a child, stdin closed, then SIGTERM and
    /// SIGKILL to its group after each grace period.
    pub async fn close(&self) -> Option<ExitStatus> {
        self.client.close().await
    }
}

/// Describes how a child ended, for the log line after a loss.
pub fn describe_exit(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.code().is_some() => format!("exit code {}", s.code().unwrap_or_default()),
        Some(s) => match s.signal() {
            Some(signal) => format!("signal {signal}"),
            None => "an unknown status".to_owned(),
        },
        None => "an unknown status".to_owned(),
    }
}
