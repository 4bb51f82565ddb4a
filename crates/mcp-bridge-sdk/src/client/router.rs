//! The client's reader: routes each response to the request it answers (by
//! id) and each notification to its request (by progress token or
//! subscription id); both are the request's id, as this client sets them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY;
use mcp_bridge_protocol::method::{Method, NotificationsCancelled};
use mcp_bridge_protocol::{JsonRpcNotification, Message, RequestId};
use tokio::sync::{mpsc, oneshot};

use mcp_bridge_protocol::types::SubscriptionFilter;

use super::legacy_listen;
use super::options::{Callbacks, Diagnostics, NotificationCallback};
use super::reply::Reply;
use super::server_requests::{Asker, FromServer};
use crate::error::Error;
use crate::limits::REQUEST_EVENT_QUEUE;
use crate::transport::Incoming;

/// Where a request's notifications go.
pub(crate) enum Route {
    /// Queued for the request's own task.
    Queued(mpsc::Sender<Box<JsonRpcNotification>>),
    /// Delivered on the reader, in order of arrival.
    Inline(Arc<Callbacks>),
}

pub(crate) struct Pending {
    pub(crate) reply: oneshot::Sender<Result<Reply, Error>>,
    pub(crate) route: Route,
    pub(crate) method: String,
    /// Where the transport's findings about the request go.
    pub(crate) diagnostics: Option<Arc<Mutex<Diagnostics>>>,
    /// Who answers the server's requests on this request's stream, when
    /// not the client.
    pub(crate) answers: Option<Asker>,
}

/// The table of requests waiting for their response.
pub(crate) struct Router {
    pending: Mutex<HashMap<RequestId, Pending>>,
    /// The listen streams of a 2025-11-25 session and what each was
    /// granted: the session's change notifications are their events.
    legacy_listens: Mutex<Vec<(RequestId, SubscriptionFilter)>>,
    closed: Mutex<bool>,
    /// The most requests waiting at once; one more fails with Busy.
    max_pending: usize,
}

impl Router {
    pub(crate) fn new(max_pending: usize) -> Self {
        Router {
            pending: Mutex::default(),
            legacy_listens: Mutex::default(),
            closed: Mutex::default(),
            max_pending: max_pending.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a request; fails when the connection is already closed, or
    /// when as many requests as allowed are waiting already.
    pub(crate) fn register(&self, id: RequestId, pending: Pending) -> Result<(), Error> {
        let closed = self.closed.lock().unwrap_or_else(|e| e.into_inner());
        if *closed {
            return Err(Error::Closed);
        }
        let mut table = self.lock();
        if table.len() >= self.max_pending {
            return Err(Error::Busy { limit: self.max_pending });
        }
        table.insert(id, pending);
        Ok(())
    }

    /// Adds the listen stream of a 2025-11-25 session, which ends only
    /// when the connection does (or its caller stops waiting).
    pub(crate) fn register_legacy_listen(
        &self,
        id: RequestId,
        pending: Pending,
        granted: SubscriptionFilter,
    ) -> Result<(), Error> {
        self.register(id.clone(), pending)?;
        self.listens().push((id, granted));
        Ok(())
    }

    fn listens(&self) -> std::sync::MutexGuard<'_, Vec<(RequestId, SubscriptionFilter)>> {
        self.legacy_listens.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes a request that stopped waiting (cancelled, timed out).
    pub(crate) fn forget(&self, id: &RequestId) -> bool {
        self.listens().retain(|(listen, _)| listen != id);
        self.lock().remove(id).is_some()
    }

    /// Runs the reader until the transport closes; then every waiting
    /// request fails with [`Error::Closed`].
    pub(crate) async fn run(
        self: Arc<Self>,
        mut incoming: mpsc::Receiver<Incoming>,
        out: mpsc::Sender<Message>,
        on_unrouted: Option<NotificationCallback>,
        server_requests: mpsc::Sender<FromServer>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        loop {
            let item = tokio::select! {
                item = incoming.recv() => item,
                () = stop.cancelled() => None,
            };
            let Some(item) = item else { break };
            match item {
                Incoming::Message(Message::Result(r)) => self.resolve(&r.id, Ok(Reply::Tree(r.result))),
                Incoming::Result(raw) => self.resolve(&raw.id().clone(), Ok(Reply::Raw(raw))),
                Incoming::Message(Message::Error(e)) => match e.id {
                    Some(id) => self.resolve(&id, Err(Error::Rpc { error: e.error })),
                    None => {
                        tracing::warn!(target: "mcp_router", code = e.error.code, "error response without id dropped")
                    }
                },
                Incoming::Message(Message::Notification(n)) if n.method == NotificationsCancelled::NAME => {
                    // Only a 2025-11-25 server cancels: one of its own requests.
                    if let Some(id) = n.cancelled_request() {
                        let _ = server_requests.send(FromServer::Cancelled(id)).await;
                    }
                }
                Incoming::Message(Message::Notification(n)) => self.route(n, None, on_unrouted.as_ref()),
                Incoming::OnStream { id, notification } => self.route(notification, Some(id), on_unrouted.as_ref()),
                // A 2025-11-25 server's request (elicitation, sampling, roots, ping).
                Incoming::Message(Message::Request(r)) => {
                    if server_requests.send(FromServer::Request(r, None)).await.is_err() {
                        tracing::warn!(target: "mcp_router", "a server request came after the client stopped answering");
                    }
                }
                // Asked on a request's stream: answered for whom that request was sent.
                Incoming::RequestOnStream { id, request } => {
                    let asker = self.lock().get(&id).and_then(|p| p.answers.clone());
                    if server_requests.send(FromServer::Request(request, asker)).await.is_err() {
                        tracing::warn!(target: "mcp_router", "a server request came after the client stopped answering");
                    }
                }
                #[cfg(any(feature = "http-client", feature = "websocket"))]
                Incoming::AskUser { id, request, answer } => {
                    let Some(asker) = self.lock().get(&id).and_then(|p| p.answers.clone()) else {
                        let _ = answer.send(Err(Error::NoUserToAsk));
                        continue;
                    };
                    if let Err(mpsc::error::SendError(FromServer::Ask { answer, .. })) =
                        server_requests.send(FromServer::Ask { request, asker, answer }).await
                    {
                        let _ = answer.send(Err(Error::Closed));
                    }
                }
                Incoming::HttpStatus { id, status } => {
                    if let Some(diagnostics) = self.lock().get(&id).and_then(|p| p.diagnostics.clone()) {
                        diagnostics.lock().unwrap_or_else(|e| e.into_inner()).http_status = Some(status);
                    }
                }
                Incoming::Disconnected => self.fail_all(),
                Incoming::Failed { id, error } => {
                    if let Some(pending) = self.lock().remove(&id) {
                        let _ = pending.reply.send(Err(error));
                    }
                }
                Incoming::Lost { id } => {
                    if let Some(pending) = self.lock().remove(&id) {
                        let _ = pending.reply.send(Err(Error::Closed));
                    }
                }
                Incoming::Undecodable { id, reason } => {
                    let failed = id.as_ref().and_then(|id| self.lock().remove(id).map(|p| (id.clone(), p)));
                    match failed {
                        Some((id, pending)) => {
                            tracing::warn!(target: "mcp_router", %id, "unreadable response: {reason}");
                            let _ = pending
                                .reply
                                .send(Err(Error::InvalidResponse { method: pending.method, reason: reason.clone() }));
                            // The server may still be working on it.
                            let _ = out
                                .send(Message::Notification(cancelled_notification(&id, "unreadable response")))
                                .await;
                        }
                        None => tracing::warn!(target: "mcp_router", "unreadable frame dropped: {reason}"),
                    }
                }
            }
        }
        *self.closed.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.fail_all();
    }

    /// Fails every waiting request with [`Error::Closed`].
    fn fail_all(&self) {
        for (_, pending) in self.lock().drain() {
            let _ = pending.reply.send(Err(Error::Closed));
        }
    }

    fn resolve(&self, id: &RequestId, reply: Result<Reply, Error>) {
        match self.lock().remove(id) {
            Some(pending) => {
                let _ = pending.reply.send(reply);
            }
            // A request that stopped waiting (cancelled, timed out) can
            // still be answered; nothing is wrong.
            None => tracing::debug!(target: "mcp_router", %id, "response for an unknown id dropped"),
        }
    }

    /// Routes a notification by its subscription id or progress token, or,
    /// when it has neither, to the request whose stream carried it.
    fn route(&self, n: JsonRpcNotification, stream: Option<RequestId>, on_unrouted: Option<&NotificationCallback>) {
        let key = n
            .params
            .as_ref()
            .and_then(|p| p.get("_meta").and_then(|m| m.get(SUBSCRIPTION_ID_KEY)).or_else(|| p.get("progressToken")));
        let Some(key) = key.and_then(|k| RequestId::try_from_value(k).ok()).or(stream) else {
            let streams: Vec<RequestId> = self
                .listens()
                .iter()
                .filter(|(_, granted)| legacy_listen::covers(granted, &n))
                .map(|(id, _)| id.clone())
                .collect();
            if streams.is_empty()
                && let Some(cb) = on_unrouted
            {
                cb(&n);
            }
            for id in streams {
                self.deliver(&id, legacy_listen::as_event(&n, &id));
            }
            return;
        };
        self.deliver(&key, n);
    }

    /// Hands a notification to the request `key` it belongs to.
    fn deliver(&self, key: &RequestId, n: JsonRpcNotification) {
        let pending = self.lock();
        match pending.get(key).map(|p| &p.route) {
            Some(Route::Inline(callbacks)) => {
                let callbacks = callbacks.clone();
                drop(pending);
                callbacks.deliver(&n);
            }
            Some(Route::Queued(tx)) => {
                if tx.try_send(Box::new(n)).is_err() {
                    tracing::warn!(target: "mcp_router", %key, "notification queue of a request is full; dropped");
                }
            }
            None => tracing::debug!(target: "mcp_router", %key, "notification for no request in flight dropped"),
        }
    }
}

/// `notifications/cancelled` for a request.
pub(crate) fn cancelled_notification(id: &RequestId, reason: &str) -> JsonRpcNotification {
    JsonRpcNotification::new(
        NotificationsCancelled::NAME,
        Some(serde_json::json!({ "requestId": id, "reason": reason })),
    )
}

/// A queue for a request's notifications. Boxed, so that the queue's first
/// block (made with every request) is a small allocation.
pub(crate) fn event_queue() -> (mpsc::Sender<Box<JsonRpcNotification>>, mpsc::Receiver<Box<JsonRpcNotification>>) {
    mpsc::channel(REQUEST_EVENT_QUEUE)
}
