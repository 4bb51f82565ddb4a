//! The upstream's `subscriptions/listen` stream as the client's change
//! notifications (seed milestone M3).
//!
//! One owner task holds the streams, the subscribed URIs and the state. A
//! stream's events are translated on the SDK's reader (inline), so a list
//! change the upstream writes before a result reaches the client before that
//! result; only the active stream's events pass (its generation is checked
//! as each event is written).
//!
//! ```text
//!  subscribe/unsubscribe ──▶ owner ──opens──▶ stream g+1 ──ack──▶ owner: g+1 active,
//!                                                               old stream cancelled, reply {}
//!  stream lost ──▶ owner ──after 0.5 s … 30 s──▶ new stream ──ack──▶ gap events
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::RequestOptions;
use crate::client::RetryPolicy;
use crate::limits::CLOSE_GRACE;
use crate::task_group::TaskGroup;
use mcp_bridge_protocol::method::{
    Method, PromptsListChanged, ResourcesListChanged, ResourcesUpdated, SubscriptionsAcknowledged, SubscriptionsListen,
    ToolsListChanged,
};
use mcp_bridge_protocol::reopen::{Backoff, Reopen, StreamEnd, reopen_after};
use mcp_bridge_protocol::types::SubscriptionFilter;
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, Message};
use serde_json::json;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::server::legacy::session::{ClientLogLevel, Outgoing};
use crate::server::legacy::translate::{Cause, error_for};
use crate::server::legacy::upstream::Upstream;

/// Time a local upstream gets to acknowledge a listen stream (the seed's
/// listen_ack_timeout): a child that takes longer is stuck, and the owner's
/// back-off opens a new stream.
pub(crate) const LISTEN_ACK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a forwarded request waits for the session's first listen
/// stream to be acknowledged: long enough for any local upstream (it
/// acknowledges at once), short enough that a slow one never stalls a
/// client's first request for long (VS Code gives up after 10 s).
pub(crate) const LISTEN_FIRST_WAIT: Duration = Duration::from_secs(2);
/// Commands queued for the owner.
const COMMAND_QUEUE: usize = 64;

/// The lists the initialize result declared, and subscriptions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    /// `tools.listChanged`.
    pub tools: bool,
    /// `prompts.listChanged`.
    pub prompts: bool,
    /// `resources.listChanged`.
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
}

impl Declared {
    /// Whether a listener is needed at all.
    pub(crate) fn any(self) -> bool {
        self.tools || self.prompts || self.resources || self.subscribe
    }

    fn filter(self, uris: &BTreeSet<String>) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools.then_some(true),
            prompts_list_changed: self.prompts.then_some(true),
            resources_list_changed: self.resources.then_some(true),
            resource_subscriptions: (self.subscribe && !uris.is_empty()).then(|| uris.iter().cloned().collect()),
            task_ids: None,
            extra: Default::default(),
        }
    }
}

/// A change of the subscribed URIs.
#[derive(Debug)]
enum Change {
    Subscribe(String),
    Unsubscribe(String),
}

/// The front end's handle on the listener.
#[derive(Debug, Clone)]
pub(crate) struct Listener {
    commands: mpsc::Sender<(Change, oneshot::Sender<Result<(), ErrorObject>>)>,
    /// The owner's task and its streams'.
    tasks: TaskGroup,
    /// True once the first stream was acknowledged or ended.
    settled: watch::Receiver<bool>,
}

impl Listener {
    /// Subscribes to a URI; completes when the new stream is acknowledged.
    ///
    /// # Errors
    /// The error for the client when the new stream failed (the old one
    /// and its URIs stay).
    pub(crate) async fn subscribe(&self, uri: String) -> Result<(), ErrorObject> {
        self.change(Change::Subscribe(uri)).await
    }

    /// Unsubscribes from a URI, the same way.
    ///
    /// # Errors
    /// As [`Listener::subscribe`].
    pub(crate) async fn unsubscribe(&self, uri: String) -> Result<(), ErrorObject> {
        self.change(Change::Unsubscribe(uri)).await
    }

    async fn change(&self, change: Change) -> Result<(), ErrorObject> {
        let (tx, rx) = oneshot::channel();
        let closed = || error_for(Cause::Closed, Some(json!("the change notifications have stopped")));
        self.commands.send((change, tx)).await.map_err(|_| closed())?;
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Completes once the first stream was acknowledged or ended (or the
    /// listener stopped). A request forwarded after it cannot cause a
    /// change the client misses: its events come on a live stream.
    pub(crate) async fn settled(&self) {
        let mut settled = self.settled.clone();
        let _ = settled.wait_for(|settled| *settled).await;
    }

    /// Stops the listener and cancels its streams.
    pub(crate) fn stop(&self) {
        self.tasks.cancel();
    }
}

/// What streams tell the owner.
enum StreamEvent {
    Acknowledged(u64),
    Ended { generation: u64, error: Option<ErrorObject>, retry: Reopen },
}

/// What follows the end of a stream: the protocol crate's policy
/// ([`reopen_after`]) on how it ended. A closed connection ends a local
/// upstream (the child is gone) but only one stream of a remote one (a
/// redeploy, a proxy's idle cut).
fn retry_after(failed: &crate::server::legacy::upstream::Failed) -> Reopen {
    use crate::Error;
    let end = match (&failed.error, failed.http_status) {
        (error, _) if error.is_events_lost() => StreamEnd::EventsLost,
        (Error::Closed, _) => StreamEnd::ConnectionLost { reconnects: failed.remote },
        (Error::Cancelled { .. }, _) => StreamEnd::Cancelled,
        (Error::Rpc { .. }, _) => StreamEnd::Refused,
        (_, status) => StreamEnd::Http { status },
    };
    reopen_after(end)
}

struct Stream {
    generation: u64,
    cancel: CancellationToken,
    acknowledged_at: Option<Instant>,
}

/// Starts the listener's owner task. Each stream it opens carries the
/// level of the client's last `logging/setLevel` (`log_level`).
pub(crate) fn start(
    upstream: Upstream,
    declared: Declared,
    out: mpsc::Sender<Outgoing>,
    log_level: Arc<ClientLogLevel>,
    on_behalf_of: Option<Arc<crate::client::ClientIdentity>>,
) -> Listener {
    let (commands, command_rx) = mpsc::channel(COMMAND_QUEUE);
    let (settle, settled) = watch::channel(false);
    let tasks = TaskGroup::default();
    let owner = Owner {
        settle,
        upstream,
        declared,
        out,
        active: Arc::new(AtomicU64::new(0)),
        next_generation: 0,
        uris: BTreeSet::new(),
        tasks: tasks.clone(),
        log_level,
        on_behalf_of,
    };
    tasks.spawn_to_finish(CLOSE_GRACE, owner.run(command_rx));
    Listener { commands, tasks, settled }
}

struct Owner {
    /// Set once the first stream was acknowledged or ended.
    settle: watch::Sender<bool>,
    upstream: Upstream,
    declared: Declared,
    out: mpsc::Sender<Outgoing>,
    /// The generation whose events reach the client (0: none yet).
    active: Arc<AtomicU64>,
    next_generation: u64,
    uris: BTreeSet<String>,
    /// Stops the owner; runs each stream.
    tasks: TaskGroup,
    log_level: Arc<ClientLogLevel>,
    on_behalf_of: Option<Arc<crate::client::ClientIdentity>>,
}

/// A change waiting for its new stream.
struct PendingChange {
    uris: BTreeSet<String>,
    reply: oneshot::Sender<Result<(), ErrorObject>>,
}

impl Owner {
    async fn run(mut self, mut commands: mpsc::Receiver<(Change, oneshot::Sender<Result<(), ErrorObject>>)>) {
        let (events_tx, mut events) = mpsc::unbounded_channel::<StreamEvent>();
        let mut current: Option<Stream> = Some(self.open(&self.uris.clone(), &events_tx));
        let mut candidate: Option<(Stream, PendingChange)> = None;
        // True from the loss of a stream until a new one is acknowledged;
        // the first stream follows no gap (nothing was missed before it).
        let mut in_gap = false;
        let mut backoff = Backoff::default();
        let mut reconnect_at: Option<tokio::time::Instant> = None;
        let mut retrying = true;
        // Set while the stream waits for another request's sign-in.
        let mut sign_ins = self.upstream.tokens_obtained();
        let mut waiting_sign_in = false;
        let stopping = self.tasks.stopping();
        loop {
            let sleep_until = reconnect_at.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
            tokio::select! {
                () = stopping.cancelled() => break,
                command = commands.recv(), if candidate.is_none() => {
                    let Some((change, reply)) = command else { break };
                    let mut uris = self.uris.clone();
                    match change {
                        Change::Subscribe(uri) => { uris.insert(uri); }
                        Change::Unsubscribe(uri) => { uris.remove(&uri); }
                    }
                    if uris == self.uris && current.is_some() {
                        let _ = reply.send(Ok(()));
                        continue;
                    }
                    let stream = self.open(&uris, &events_tx);
                    candidate = Some((stream, PendingChange { uris, reply }));
                }
                _ = tokio::time::sleep_until(sleep_until), if reconnect_at.is_some() => {
                    reconnect_at = None;
                    current = Some(self.open(&self.uris.clone(), &events_tx));
                }
                changed = async { match sign_ins.as_mut() { Some(rx) => rx.changed().await, None => std::future::pending().await } }, if waiting_sign_in => {
                    waiting_sign_in = false;
                    if changed.is_ok() {
                        tracing::info!("signed in again; opening the listen stream");
                        current = Some(self.open(&self.uris.clone(), &events_tx));
                    }
                }
                Some(event) = events.recv() => match event {
                    StreamEvent::Acknowledged(generation) => {
                        self.settle.send_replace(true);
                        if let Some((stream, change)) = candidate.take_if(|(s, _)| s.generation == generation) {
                            if let Some(old) = current.replace(Stream { acknowledged_at: Some(Instant::now()), ..stream }) {
                                old.cancel.cancel();
                            }
                            self.uris = change.uris;
                            self.active.store(generation, Ordering::SeqCst);
                            let _ = change.reply.send(Ok(()));
                            if in_gap {
                                in_gap = false;
                                self.gap_events().await;
                            }
                        } else if let Some(stream) = current.as_mut().filter(|s| s.generation == generation) {
                            // A later acknowledgment of the same stream: the
                            // SDK opened its request again after a loss.
                            let reopened = stream.acknowledged_at.replace(Instant::now()).is_some();
                            self.active.store(generation, Ordering::SeqCst);
                            if std::mem::take(&mut in_gap) || reopened {
                                self.gap_events().await;
                            }
                        }
                    }
                    StreamEvent::Ended { generation, error, retry } => {
                        self.settle.send_replace(true);
                        if let Some((_, change)) = candidate.take_if(|(s, _)| s.generation == generation) {
                            let _ = change.reply.send(Err(error.unwrap_or_else(|| error_for(Cause::Closed, None))));
                            continue;
                        }
                        let Some(stream) = current.take_if(|s| s.generation == generation) else { continue };
                        match &error {
                            Some(error) => tracing::info!(generation, code = error.code, "the listen stream of the upstream ended"),
                            None => tracing::debug!(generation, "the listen stream of the upstream ended"),
                        }
                        in_gap = true;
                        if retry == Reopen::AfterSignIn && retrying {
                            tracing::info!("the listen stream was refused; it waits for the next sign-in");
                            if let Some(rx) = sign_ins.as_mut() {
                                rx.mark_unchanged();
                            }
                            waiting_sign_in = true;
                            continue;
                        }
                        if retry == Reopen::Never || !retrying {
                            retrying = false;
                            continue;
                        }
                        let lived = stream.acknowledged_at.map(|t| t.elapsed());
                        reconnect_at = Some(tokio::time::Instant::now() + backoff.wait_after(lived));
                    }
                },
            }
        }
        for stream in current.into_iter().chain(candidate.map(|(s, _)| s)) {
            stream.cancel.cancel();
        }
    }

    /// Opens a stream for `uris`; its acknowledgment and end come back as
    /// [`StreamEvent`]s.
    fn open(&mut self, uris: &BTreeSet<String>, events: &mpsc::UnboundedSender<StreamEvent>) -> Stream {
        self.next_generation += 1;
        let generation = self.next_generation;
        let cancel = self.tasks.child_token();
        let (out, active, acked) = (self.out.clone(), self.active.clone(), events.clone());
        let ack_seen = Arc::new(tokio::sync::Notify::new());
        let on_ack = ack_seen.clone();
        let on_notification: crate::client::NotificationCallback = Arc::new(move |n: &JsonRpcNotification| {
            if n.method == SubscriptionsAcknowledged::NAME {
                on_ack.notify_one();
                let _ = acked.send(StreamEvent::Acknowledged(generation));
            } else if active.load(Ordering::SeqCst) == generation {
                forward_event(&out, n);
            }
        });
        // A lost stream is opened again at once, a few times, before the
        // owner's back-off takes over.
        let mut options = RequestOptions::default()
            .with_on_notification(on_notification)
            .with_inline_notifications(true)
            .with_cancel(cancel.clone())
            .with_retry(RetryPolicy::Force);
        (options.log_level, options.on_behalf_of) = (self.log_level.get(), self.on_behalf_of.clone());
        let (upstream, filter, ended) = (self.upstream.clone(), self.declared.filter(uris), events.clone());
        let remote = self.upstream.origin() == crate::server::legacy::translate::Origin::Remote;
        let stream_cancel = cancel.clone();
        // Cancelled with the owner, the stream ends its listen request its own way.
        self.tasks.spawn_to_finish(CLOSE_GRACE, async move {
            let listening = upstream.listen(filter, &options);
            tokio::pin!(listening);
            // A local upstream acknowledges at once or not at all (the
            // acknowledgment goes out before any event); over HTTP the
            // request's own time limits and statuses apply.
            let unacknowledged = async {
                if remote {
                    return std::future::pending().await;
                }
                if tokio::time::timeout(LISTEN_ACK_TIMEOUT, ack_seen.notified()).await.is_ok() {
                    std::future::pending().await
                }
            };
            let outcome = tokio::select! {
                outcome = &mut listening => outcome,
                () = unacknowledged => {
                    tracing::info!(generation, "the listen stream was not acknowledged within {LISTEN_ACK_TIMEOUT:?}");
                    stream_cancel.cancel();
                    let _ = listening.await;
                    let error = error_for(Cause::Timeout, Some(json!("the upstream did not acknowledge the listen stream")));
                    let _ = ended.send(StreamEvent::Ended { generation, error: Some(error), retry: Reopen::AfterWait });
                    return;
                }
            };
            let (error, retry) = match outcome {
                Ok(_) => (None, Reopen::AfterWait),
                Err(failed) => {
                    let error = match &failed.error {
                        crate::Error::Rpc { error } => Some(error.clone()),
                        crate::Error::Cancelled { .. } | crate::Error::Closed => None,
                        _ => crate::server::legacy::translate::errors::error_of_failed(&failed, SubscriptionsListen::NAME),
                    };
                    (error, retry_after(&failed))
                }
            };
            let _ = ended.send(StreamEvent::Ended { generation, error, retry });
        });
        Stream { generation, cancel, acknowledged_at: None }
    }

    /// After a gap the client may have missed events: one list change per
    /// declared list, one update per subscribed URI.
    async fn gap_events(&self) {
        let lists = [
            (self.declared.tools, ToolsListChanged::NAME),
            (self.declared.prompts, PromptsListChanged::NAME),
            (self.declared.resources, ResourcesListChanged::NAME),
        ];
        for (_, method) in lists.iter().filter(|(on, _)| *on) {
            let _ = self
                .out
                .send(Outgoing::unrelated(Message::Notification(JsonRpcNotification::new(*method, None))))
                .await;
        }
        for uri in &self.uris {
            let n = JsonRpcNotification::new(ResourcesUpdated::NAME, Some(json!({ "uri": uri })));
            let _ = self.out.send(Outgoing::unrelated(Message::Notification(n))).await;
        }
    }
}

/// Writes one event of the active stream to the client, without the
/// subscription id; anything else of the stream stays in the bridge.
fn forward_event(out: &mpsc::Sender<Outgoing>, n: &JsonRpcNotification) {
    const EVENTS: [&str; 4] =
        [ToolsListChanged::NAME, PromptsListChanged::NAME, ResourcesListChanged::NAME, ResourcesUpdated::NAME];
    if !EVENTS.contains(&n.method.as_str()) {
        return;
    }
    let params = n.params.clone().and_then(|mut p| {
        let obj = p.as_object_mut()?;
        obj.remove("_meta");
        (!obj.is_empty()).then_some(p)
    });
    let event = JsonRpcNotification::new(n.method.clone(), params);
    if out.try_send(Outgoing::unrelated(Message::Notification(event))).is_err() {
        tracing::debug!("output queue full; a change notification was dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn the_filter_asks_for_the_declared_lists_and_the_uris() {
        let declared = Declared { tools: true, prompts: false, resources: true, subscribe: true };
        let uris: BTreeSet<String> = ["a://1".to_owned()].into();
        let filter = serde_json::to_value(declared.filter(&uris)).unwrap();
        assert_eq!(
            filter,
            json!({"toolsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": ["a://1"]})
        );
        let none = serde_json::to_value(Declared::default().filter(&BTreeSet::new())).unwrap();
        assert_eq!(none, json!({}));
        assert!(!Declared::default().any());
    }

    #[tokio::test]
    async fn events_lose_their_subscription_id_and_acks_stay_inside() {
        let (out, mut rx) = mpsc::channel(8);
        let tagged = |method: &str, extra: Value| {
            let mut params = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 3}});
            if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
                p.extend(e.clone());
            }
            JsonRpcNotification::new(method, Some(params))
        };
        forward_event(&out, &tagged("notifications/tools/list_changed", json!({})));
        forward_event(&out, &tagged("notifications/resources/updated", json!({"uri": "a://1"})));
        forward_event(&out, &tagged("notifications/subscriptions/acknowledged", json!({"notifications": {}})));
        drop(out);
        let mut seen = Vec::new();
        while let Some(Some(Message::Notification(n))) = rx.recv().await.map(Outgoing::into_message) {
            seen.push(serde_json::to_value(n).unwrap());
        }
        assert_eq!(
            seen,
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "a://1"}}),
            ]
        );
    }
}

#[cfg(test)]
mod retry_tests {
    use super::*;
    use crate::server::legacy::upstream::Failed;

    fn failed(error: crate::Error, http_status: Option<u16>, remote: bool) -> Failed {
        Failed { error, http_status, sign_in: None, remote }
    }

    #[test]
    fn a_lost_stream_is_opened_again_unless_the_upstream_is_gone_or_said_no() {
        use crate::Error;
        let rpc = || Error::Rpc { error: ErrorObject::new(-32601, "no") };
        assert_eq!(retry_after(&failed(Error::Closed, None, true)), Reopen::AfterWait);
        assert_eq!(retry_after(&failed(Error::Closed, None, false)), Reopen::Never);
        assert_eq!(retry_after(&failed(rpc(), Some(200), true)), Reopen::Never);
        assert_eq!(retry_after(&failed(Error::Cancelled { method: "m".into() }, None, true)), Reopen::Never);
        assert_eq!(retry_after(&failed(Error::Closed, Some(503), true)), Reopen::AfterWait);
        assert_eq!(retry_after(&failed(Error::Closed, Some(401), true)), Reopen::AfterWait);
        let broken = || Error::InvalidResponse { method: "m".into(), reason: "cut".into() };
        assert_eq!(retry_after(&failed(broken(), Some(401), true)), Reopen::AfterSignIn);
        assert_eq!(retry_after(&failed(broken(), Some(429), true)), Reopen::AfterWait);
        assert_eq!(retry_after(&failed(broken(), Some(501), true)), Reopen::Never);
        assert_eq!(retry_after(&failed(broken(), Some(404), true)), Reopen::Never);
        let lost = || Error::Rpc {
            error: ErrorObject::new(-32603, "events lost").with_data(serde_json::json!({"eventsLost": true})),
        };
        assert_eq!(retry_after(&failed(lost(), Some(200), true)), Reopen::AfterWait, "a replica's bus was interrupted");
        assert_eq!(retry_after(&failed(lost(), None, false)), Reopen::AfterWait);
    }
}
