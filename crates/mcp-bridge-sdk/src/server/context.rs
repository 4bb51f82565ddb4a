//! What a handler knows about the request it serves, and how it talks back
//! while it works: progress, log messages, cancellation.

use mcp_bridge_protocol::method::{Method, NotificationsMessage, NotificationsProgress};
use mcp_bridge_protocol::types::{ClientCapabilities, Implementation, InputResponses, LoggingLevel};
use mcp_bridge_protocol::{JsonRpcNotification, Message, ProgressToken};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Server;

/// The context of one request, given to its handler.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The client's capabilities, as declared in this request's `_meta`.
    pub client_capabilities: ClientCapabilities,
    /// The client's name and version, when it sent them.
    pub client_info: Option<Implementation>,
    /// The log level the request asked for; `None` means no log messages.
    pub log_level: Option<LoggingLevel>,
    /// Whom the request's token speaks for, on a protected endpoint
    /// ([`crate::server::protect`]); `None` elsewhere.
    pub caller: Option<std::sync::Arc<super::protect::Caller>>,
    /// The HTTP headers the request came with: its POST's, its
    /// connection's WebSocket upgrade's, or its gRPC call's metadata;
    /// `None` on stdio and sockets. Credentials (`Authorization`,
    /// `Proxy-Authorization`, `Cookie`, `DPoP`) are left out: [`Self::caller`]
    /// says who called.
    #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
    pub http_headers: Option<std::sync::Arc<http::HeaderMap>>,
    /// The client's TLS certificates, when it presented some to the
    /// server's own TLS ([`Server::serve_https`](crate::Server::serve_https)).
    pub peer_certificates: Option<super::protect::PeerCertificates>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancel: CancellationToken,
    pub(crate) out: mpsc::Sender<Message>,
    pub(crate) server: Server,
    pub(crate) input_responses: InputResponses,
    pub(crate) state: Option<Value>,
    pub(crate) trace: Option<mcp_bridge_protocol::trace::TraceContext>,
    pub(crate) connection: Option<u64>,
}

/// A number as JSON, whole numbers without a fraction (`3`, not `3.0`).
fn number(value: f64) -> Value {
    // Exactly representable integers only (below 2^53).
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 { json!(value as i64) } else { json!(value) }
}

impl RequestContext {
    /// The connection the request came on, when it is one that carries
    /// many (stdio, a socket, a WebSocket, an in-process link such as a
    /// 2025-11-25 session's): an id unique in this process. `None` for a
    /// request that is its own exchange (2026-07-28 over HTTP, gRPC).
    pub fn connection_id(&self) -> Option<u64> {
        self.connection
    }

    /// The trace context to send on with the requests this handler makes
    /// for the request (in their `_meta`): the request's own span when the
    /// server has an observer, else the context it came with; `None` when
    /// it came without one.
    pub fn trace_context(&self) -> Option<&mcp_bridge_protocol::trace::TraceContext> {
        self.trace.as_ref()
    }

    /// Reports progress, when the request asked for it with a progress token.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else { return };
        let mut params = json!({ "progressToken": token, "progress": number(progress) });
        if let Some(total) = total {
            params["total"] = number(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.send(JsonRpcNotification::new(NotificationsProgress::NAME, Some(params))).await;
    }

    /// Sends a log message, when the request asked for this level or a
    /// lower one (2026-07-28, Logging: no level means no messages).
    pub async fn log(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if self.log_level.is_none_or(|wanted| level < wanted) {
            return;
        }
        let mut params = json!({ "level": level, "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        self.send(JsonRpcNotification::new(NotificationsMessage::NAME, Some(params))).await;
    }

    /// The progress token of the request, when it asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.progress_token.as_ref()
    }

    /// Whether the client cancelled the request (or the connection ended).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// Answers to the previous round's input requests, by key (empty on
    /// the first round). The same as the handler's `input_responses`; here
    /// for typed handlers, which get only their arguments.
    pub fn input_responses(&self) -> &InputResponses {
        &self.input_responses
    }

    /// The state the handler returned with its input requests, verified
    /// (`None` on the first round).
    pub fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// The server, to publish changes or change its lists.
    pub fn server(&self) -> &Server {
        &self.server
    }

    async fn send(&self, notification: JsonRpcNotification) {
        if !self.cancel.is_cancelled() {
            // A closed connection cannot hear it; nothing else to do.
            let _ = self.out.send(Message::Notification(notification)).await;
        }
    }
}
