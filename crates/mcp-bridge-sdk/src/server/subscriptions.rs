//! The server's `subscriptions/listen` streams: which connection wants which
//! events, and the delivery of a published change to every stream that asked
//! for it (2026-07-28, Subscriptions).

use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::method::{
    Method, PromptsListChanged, ResourcesListChanged, ResourcesUpdated, SubscriptionsAcknowledged, TasksStatus,
    ToolsListChanged,
};
use mcp_bridge_protocol::types::SubscriptionFilter;
use mcp_bridge_protocol::{JsonRpcNotification, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bus::ChangeBus;

/// A change a server publishes. Serializable so a [`ChangeBus`] can carry
/// it between replicas.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ChangeEvent {
    /// The tool list changed.
    ToolsListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// One resource changed.
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// A task changed (`notifications/tasks`, the Tasks extension); the
    /// server publishes these itself.
    Task(Box<mcp_bridge_protocol::types::Task>),
}

impl ChangeEvent {
    fn wanted_by(&self, filter: &SubscriptionFilter) -> bool {
        match self {
            ChangeEvent::ToolsListChanged => filter.tools_list_changed == Some(true),
            ChangeEvent::PromptsListChanged => filter.prompts_list_changed == Some(true),
            ChangeEvent::ResourcesListChanged => filter.resources_list_changed == Some(true),
            ChangeEvent::ResourceUpdated { uri } => {
                filter.resource_subscriptions.as_ref().is_some_and(|uris| uris.iter().any(|u| u == uri))
            }
            ChangeEvent::Task(task) => filter.task_ids.as_ref().is_some_and(|ids| ids.contains(&task.task_id)),
        }
    }

    fn to_notification(&self, subscription: &RequestId) -> JsonRpcNotification {
        let meta = json!({ mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY: subscription });
        let (method, params) = match self {
            ChangeEvent::ToolsListChanged => (ToolsListChanged::NAME, json!({ "_meta": meta })),
            ChangeEvent::PromptsListChanged => (PromptsListChanged::NAME, json!({ "_meta": meta })),
            ChangeEvent::ResourcesListChanged => (ResourcesListChanged::NAME, json!({ "_meta": meta })),
            ChangeEvent::ResourceUpdated { uri } => (ResourcesUpdated::NAME, json!({ "_meta": meta, "uri": uri })),
            ChangeEvent::Task(task) => {
                let mut params = serde_json::to_value(task).unwrap_or_default();
                params["_meta"] = meta;
                (TasksStatus::NAME, params)
            }
        };
        JsonRpcNotification::new(method, Some(params))
    }
}

/// One open stream.
#[derive(Debug, Clone)]
struct Stream {
    /// The connection the stream belongs to.
    connection: u64,
    /// The id of its `subscriptions/listen` request.
    id: RequestId,
    /// The events it agreed to carry.
    filter: SubscriptionFilter,
    /// The connection's writer.
    out: mpsc::Sender<Message>,
    /// Fired to end the stream.
    end: StreamEnd,
}

/// How a stream is told to end: gracefully (with its completion result),
/// or because events it should have carried were lost (with an error, so
/// its client opens a new stream and lists again).
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamEnd {
    pub(crate) graceful: CancellationToken,
    pub(crate) events_lost: CancellationToken,
}

/// Every open stream of a server, across its connections, and the bus that
/// links them to the streams of the server's other replicas.
#[derive(Debug, Default)]
pub(crate) struct Hub {
    streams: Mutex<Vec<Stream>>,
    bus: Option<Arc<dyn ChangeBus>>,
    remote_tasks: std::sync::OnceLock<RemoteTaskWatcher>,
}

/// Told the id of each task event another replica published.
pub(crate) struct RemoteTaskWatcher(Box<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for RemoteTaskWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RemoteTaskWatcher")
    }
}

impl Hub {
    /// A hub whose published events also go on `bus`.
    pub(crate) fn new(bus: Option<Arc<dyn ChangeBus>>) -> Self {
        Hub { streams: Mutex::default(), bus, remote_tasks: std::sync::OnceLock::new() }
    }

    /// Calls `watcher` with the task id of each task event another replica
    /// publishes (the replica running that task reads its record again).
    pub(crate) fn watch_remote_tasks(&self, watcher: Box<dyn Fn(&str) + Send + Sync>) {
        let _ = self.remote_tasks.set(RemoteTaskWatcher(watcher));
    }

    /// An event another replica published: to the streams, and to the
    /// task watcher.
    pub(crate) fn deliver_remote(&self, event: &ChangeEvent) {
        self.deliver(event);
        if let (ChangeEvent::Task(task), Some(watcher)) = (event, self.remote_tasks.get()) {
            (watcher.0)(&task.task_id);
        }
    }

    /// Adds a stream and returns what ends it.
    pub(crate) fn open(
        &self,
        connection: u64,
        id: RequestId,
        filter: SubscriptionFilter,
        out: mpsc::Sender<Message>,
    ) -> StreamEnd {
        // Tests behind a load balancer read this line to find a stream's replica.
        tracing::debug!(connection, subscription = %id, "a listen stream opened");
        let end = StreamEnd::default();
        let stream = Stream { connection, id, filter, out, end: end.clone() };
        self.lock().push(stream);
        end
    }

    pub(crate) fn close(&self, connection: u64, id: &RequestId) {
        self.lock().retain(|s| !(s.connection == connection && &s.id == id));
    }

    /// Sends the event to every stream that asked for it, without waiting:
    /// each notification is queued on its connection's writer before this
    /// returns, so an event published by a handler reaches the client before
    /// that handler's result. A stream whose writer is full has fallen
    /// behind: it is ended with its completion result (the client opens a
    /// new one and re-lists, as after any lost stream), so one client that
    /// never reads cannot stall the publishers or grow memory.
    ///
    /// The event also goes on the bus, to the other replicas' streams.
    pub(crate) fn publish(&self, event: &ChangeEvent) {
        self.deliver(event);
        if let Some(bus) = &self.bus {
            bus.publish(event);
        }
    }

    /// [`Hub::publish`] to this server's streams alone: an event another
    /// replica published.
    pub(crate) fn deliver(&self, event: &ChangeEvent) {
        self.lock().retain(|s| {
            if !event.wanted_by(&s.filter) {
                return true;
            }
            match s.out.try_send(Message::Notification(event.to_notification(&s.id))) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::info!(connection = s.connection, subscription = %s.id, "listen stream fell behind; ending it");
                    s.end.graceful.cancel();
                    false
                }
                // A closed connection has no stream left to feed.
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }

    /// Ends every stream (of one connection, or all) with a completion result.
    pub(crate) fn end_all(&self, connection: Option<u64>) {
        for s in self.lock().iter().filter(|s| connection.is_none_or(|c| c == s.connection)) {
            s.end.graceful.cancel();
        }
    }

    /// Ends every stream with the events-lost error: the bus lost events
    /// that some of them should have carried, and which is unknown.
    pub(crate) fn events_lost(&self) {
        let streams = std::mem::take(&mut *self.lock());
        if !streams.is_empty() {
            tracing::info!(streams = streams.len(), "change events were lost on the bus; ending the listen streams");
        }
        for s in streams {
            s.end.events_lost.cancel();
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Stream>> {
        self.streams.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Removes a stream from the hub when dropped.
pub(crate) struct Registration<'a> {
    pub(crate) hub: &'a Hub,
    pub(crate) connection: u64,
    pub(crate) id: &'a RequestId,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.hub.close(self.connection, self.id);
    }
}

/// The acknowledgment of a stream: the filter narrowed to what the server
/// can send, tagged with the subscription id.
pub(crate) fn acknowledgment(id: &RequestId, agreed: &SubscriptionFilter) -> JsonRpcNotification {
    JsonRpcNotification::new(
        SubscriptionsAcknowledged::NAME,
        Some(json!({
            "_meta": { mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY: id },
            "notifications": agreed,
        })),
    )
}

/// The result that ends a stream gracefully.
pub(crate) fn completion(id: &RequestId) -> Value {
    json!({ "resultType": "complete", "_meta": { mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY: id } })
}
