//! One client connection of a server: admission of requests under the
//! in-flight bound, cancellation by `notifications/cancelled`, and the
//! orderly end. Transports feed it decoded messages and own its writer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::meta::RequestMeta;
use mcp_bridge_protocol::method::{Method, NotificationsCancelled, SubscriptionsListen};
use mcp_bridge_protocol::slots::{Kind, SlotRefusal, Slots};
use mcp_bridge_protocol::{
    DecodeError, ErrorObject, JsonRpcErrorResponse, JsonRpcRequest, JsonRpcResultResponse, Message, RequestId,
    error_code,
};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Server;
use crate::error::ServerFault;

/// The requests of one connection that are still running: the protocol
/// crate's slot table (duplicate ids, the in-flight bound, listen streams
/// bounded on their own, answered-xor-cancelled), each with its token.
type InFlight = Arc<Mutex<Slots<CancellationToken>>>;

const LISTEN: &str = SubscriptionsListen::NAME;

/// The connection a request came on: where its answers and events go.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionHandle {
    pub(crate) id: u64,
    /// Whether it carries more than one request (stdio, a socket, a
    /// WebSocket, an in-process link); not an HTTP exchange or a gRPC call.
    pub(crate) lasting: bool,
    pub(crate) out: mpsc::Sender<Message>,
    /// Whom the connection's token speaks for (a protected HTTP request).
    pub(crate) caller: Option<std::sync::Arc<super::protect::Caller>>,
    /// The HTTP headers of the request or of the WebSocket upgrade.
    #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
    pub(crate) http_headers: Option<Arc<http::HeaderMap>>,
    /// The client's TLS certificates (the server's own TLS).
    pub(crate) peer_certificates: Option<super::protect::PeerCertificates>,
}

/// The server side of one connection.
pub(crate) struct Connection {
    server: Server,
    handle: ConnectionHandle,
    in_flight: InFlight,
    tasks: TaskTracker,
    /// Parent of every request's token; fired when the connection ends.
    cancel: CancellationToken,
}

/// The next connection's id: unique in the process, not only in its
/// server, so that a gateway serving several servers (a daemon's views)
/// keeps each connection's per-session instances apart.
static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

impl Connection {
    pub(crate) fn new(server: Server, out: mpsc::Sender<Message>) -> Self {
        let id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
        let limit = server.inner.limits.max_in_flight;
        Connection {
            server,
            handle: ConnectionHandle {
                id,
                lasting: true,
                out,
                caller: None,
                #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
                http_headers: None,
                peer_certificates: None,
            },
            in_flight: Arc::new(Mutex::new(Slots::new(limit))),
            tasks: TaskTracker::new(),
            cancel: CancellationToken::new(),
        }
    }

    /// The connection of a request whose token speaks for `caller`.
    pub(crate) fn with_caller(mut self, caller: Option<Arc<super::protect::Caller>>) -> Self {
        self.handle.caller = caller;
        self
    }

    /// A connection made for one request (an HTTP exchange, a gRPC call).
    pub(crate) fn for_one_request(mut self) -> Self {
        self.handle.lasting = false;
        self
    }

    /// The connection of a client that presented these TLS certificates.
    pub(crate) fn with_peer_certificates(mut self, peer: Option<super::protect::PeerCertificates>) -> Self {
        self.handle.peer_certificates = peer;
        self
    }

    /// From now on, requests speak for `caller` (an in-process link whose
    /// owner authenticated them).
    pub(crate) fn set_caller(&mut self, caller: Option<Arc<super::protect::Caller>>) {
        self.handle.caller = caller;
    }

    /// The connection of a request (or upgrade) with these HTTP headers,
    /// as its handlers see them: without credentials.
    #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
    pub(crate) fn with_http_headers(mut self, headers: Option<http::HeaderMap>) -> Self {
        self.handle.http_headers = headers.map(|headers| Arc::new(super::handler_headers::handler_view(headers)));
        self
    }

    /// Sends a message on this connection's writer.
    pub(crate) async fn send(&self, message: Message) {
        // A closed writer means the peer is gone; nothing to tell it.
        let _ = self.handle.out.send(message).await;
    }

    /// Answers a request that is refused before it runs.
    pub(crate) async fn reject(&self, id: Option<RequestId>, error: ErrorObject) {
        self.send(Message::Error(JsonRpcErrorResponse::new(id, error))).await;
    }

    /// Handles one message from the client. Never waits for a request to
    /// finish: a request runs in its own task, or is refused at once when the
    /// connection is at its in-flight limit.
    pub(crate) async fn handle(&self, message: Message) {
        match message {
            Message::Request(request) => self.admit(request, None).await,
            Message::Notification(n) if n.method == NotificationsCancelled::NAME => {
                if let Some(token) = n.cancelled_request().and_then(|id| lock(&self.in_flight).cancel(&id).cloned()) {
                    token.cancel();
                }
            }
            Message::Notification(n) => tracing::debug!(method = %n.method, "notification ignored"),
            // A 2026-07-28 server sends no requests, so no response is awaited.
            Message::Result(r) => tracing::debug!(id = %r.id, "unexpected response dropped"),
            Message::Error(e) => tracing::debug!(code = e.error.code, "unexpected error response dropped"),
        }
    }

    /// Takes a request into the slot table and runs it in its own task.
    /// `meta` is its `_meta` when a transport already read it (see
    /// [`check_envelope`](super::dispatch::check_envelope)).
    pub(crate) async fn admit(&self, request: JsonRpcRequest, meta: Option<RequestMeta>) {
        let kind = if request.method == LISTEN { Kind::Listen } else { Kind::Request };
        let token = self.cancel.child_token();
        let admitted = lock(&self.in_flight).admit(request.id.clone(), kind, token.clone());
        if let Err(refusal) = admitted {
            let fault = match refusal {
                SlotRefusal::DuplicateId { id } => ServerFault::DuplicateId { id },
                SlotRefusal::TooMany { limit } => ServerFault::TooManyRequests { limit },
            };
            return self.reject(Some(request.id), fault.to_error_object()).await;
        }
        let server = self.server.clone();
        let handle = self.handle.clone();
        let in_flight = self.in_flight.clone();
        self.tasks.spawn(async move {
            let id = request.id.clone();
            // The handler is polled first, so one that watches its token
            // sees the cancellation; one that ignores it is dropped.
            let outcome = tokio::select! {
                biased;
                outcome = server.dispatch(request, meta, &handle, token.clone()) => outcome,
                _ = token.cancelled() => None,
            };
            // The table's finish excludes its cancel; the token also says
            // whether the whole connection ended.
            let answer = lock(&in_flight).finish(&id).filter(|token| !token.is_cancelled()).and(outcome);
            let message = match answer {
                None => return,
                Some(Ok(result)) => Message::Result(JsonRpcResultResponse::new(id, result)),
                Some(Err(fault)) => Message::Error(JsonRpcErrorResponse::new(Some(id), fault.to_error_object())),
            };
            let _ = handle.out.send(message).await;
        });
    }

    /// Whether nothing runs on the connection: no request, no listen stream.
    pub(crate) fn is_idle(&self) -> bool {
        lock(&self.in_flight).is_empty()
    }

    /// Cancels every request of the connection at once (its peer is gone).
    pub(crate) fn abort(&self) {
        self.cancel.cancel();
    }

    /// Ends the connection: its listen streams complete gracefully, the
    /// requests in flight get the grace period, then the rest are cancelled
    /// (and get no response).
    pub(crate) async fn finish(self) {
        self.server.inner.hub.end_all(Some(self.handle.id));
        self.tasks.close();
        let grace = self.server.inner.limits.shutdown_grace;
        if tokio::time::timeout(grace, self.tasks.wait()).await.is_err() {
            tracing::debug!(left = self.tasks.len(), "cancelling requests still running after the grace period");
            self.cancel.cancel();
            self.tasks.wait().await;
        }
        self.cancel.cancel();
    }
}

/// What a host that reads requests itself knows of where one came from,
/// for [`Server::answer_from`]: the handler's view of it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RequestOrigin {
    /// The request's HTTP headers (or a gRPC call's metadata); handlers see
    /// them without credentials.
    #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
    pub http_headers: Option<http::HeaderMap>,
    /// The client's TLS certificates, when it presented some.
    pub peer_certificates: Option<super::protect::PeerCertificates>,
    /// Whom the request speaks for, as the host authenticated it.
    pub caller: Option<super::protect::Caller>,
}

crate::setters::with_setters! {
    RequestOrigin {
        #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
    some with_http_headers => http_headers: http::HeaderMap,
        some with_peer_certificates => peer_certificates: super::protect::PeerCertificates,
        some with_caller => caller: super::protect::Caller,
    }
}

fn lock(map: &InFlight) -> std::sync::MutexGuard<'_, Slots<CancellationToken>> {
    map.lock().unwrap_or_else(|e| e.into_inner())
}

impl super::frames::Receiver for Connection {
    async fn message(&self, message: Message) {
        self.handle(message).await;
    }

    async fn undecodable(&self, id: Option<RequestId>, error: &DecodeError) {
        self.reject(id, error.to_error_object()).await;
    }

    async fn too_long(&self, id: Option<RequestId>) {
        let error = ErrorObject::new(error_code::INVALID_REQUEST, "Invalid request: line too long")
            .with_data(json!({ "cause": "line_too_long", "detail": self.server.limits().max_line_bytes }));
        self.reject(id, error).await;
    }
}

impl Server {
    /// Serves one request outside any connection and returns its response;
    /// notifications sent on the way are dropped. For a host that reads the
    /// request itself (the embedded bridge answers `server/discover` this
    /// way). A `subscriptions/listen` needs a connection: it is refused.
    /// Dropping the future before it completes cancels the request.
    pub async fn answer(&self, request: JsonRpcRequest) -> Message {
        if request.method == SubscriptionsListen::NAME {
            let error = ErrorObject::new(
                mcp_bridge_protocol::error_code::INVALID_REQUEST,
                "Invalid request: subscriptions/listen needs a connection",
            );
            return Message::Error(JsonRpcErrorResponse::new(Some(request.id), error));
        }
        self.answer_on(request, |connection| connection).await
    }

    /// [`Server::answer`] for a host that mounts the server in its own
    /// HTTP or TLS stack: the handler sees what `origin` says of the
    /// request (its headers, without credentials; the client's
    /// certificates; the caller the host authenticated).
    pub async fn answer_from(&self, request: JsonRpcRequest, origin: RequestOrigin) -> Message {
        if request.method == SubscriptionsListen::NAME {
            return self.answer(request).await;
        }
        let RequestOrigin { caller, peer_certificates, .. } = origin;
        #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
        let headers = origin.http_headers;
        self.answer_on(request, move |connection| {
            #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
            let connection = connection.with_http_headers(headers);
            connection.with_caller(caller.map(Arc::new)).with_peer_certificates(peer_certificates)
        })
        .await
    }

    /// Serves `request` on a connection of its own (`setup` sets its
    /// context) and returns its response. A caller that stops waiting
    /// (drops the future: a gRPC call reset by its client) cancels the
    /// request.
    async fn answer_on(&self, request: JsonRpcRequest, setup: impl FnOnce(Connection) -> Connection) -> Message {
        let id = request.id.clone();
        let (out, mut rx) = mpsc::channel(crate::limits::OUTGOING_QUEUE);
        let connection = setup(Connection::new(self.clone(), out).for_one_request());
        let _cancel_when_dropped = connection.cancel.clone().drop_guard();
        connection.handle(Message::Request(request)).await;
        while let Some(message) = rx.recv().await {
            if matches!(message, Message::Result(_) | Message::Error(_)) {
                return message;
            }
        }
        let error = ErrorObject::new(mcp_bridge_protocol::error_code::INTERNAL_ERROR, "Internal error: no response");
        Message::Error(JsonRpcErrorResponse::new(Some(id), error))
    }
}
