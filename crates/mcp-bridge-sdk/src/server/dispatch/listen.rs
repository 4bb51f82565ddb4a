//! `subscriptions/listen`: the client's filter narrowed to what the server
//! can send, acknowledged, then the stream held open until the client, the
//! server or a lost event ends it.

use mcp_bridge_protocol::types::{ClientCapabilities, SubscriptionFilter, SubscriptionsListenRequestParams};
use mcp_bridge_protocol::{Message, RequestId};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Outcome, parse};
#[cfg(feature = "tasks")]
use crate::error::HandlerError;
use crate::error::ServerFault;
use crate::server::connection::ConnectionHandle;
#[cfg(feature = "tasks")]
use crate::server::tasks;
use crate::server::{Server, subscriptions};

impl Server {
    /// Narrows a filter to what this server can send: the lists it
    /// offers, and the tasks it knows of `subject` (the token's that asks).
    async fn agreed_filter(&self, wanted: SubscriptionFilter, subject: Option<&str>) -> SubscriptionFilter {
        let offers = self.inner.offers;
        let keep = |on: bool, v: Option<bool>| if on { v.filter(|b| *b) } else { None };
        #[cfg(feature = "tasks")]
        let task_ids = match (&self.inner.tasks, wanted.task_ids) {
            (Some(registry), Some(ids)) => {
                let mut known = Vec::with_capacity(ids.len());
                for id in ids {
                    if registry.exists(&id, subject).await {
                        known.push(id);
                    }
                }
                Some(known)
            }
            _ => None,
        };
        #[cfg(not(feature = "tasks"))]
        let (task_ids, _) = (None, subject);
        SubscriptionFilter {
            tools_list_changed: keep(offers.tools, wanted.tools_list_changed),
            prompts_list_changed: keep(offers.prompts, wanted.prompts_list_changed),
            resources_list_changed: keep(offers.resources, wanted.resources_list_changed),
            resource_subscriptions: if offers.resources { wanted.resource_subscriptions } else { None },
            task_ids,
            extra: Map::new(),
        }
    }

    /// Serves one listen stream; `None` when it ends without an answer
    /// (cancelled, or the connection is gone).
    pub(super) async fn listen(
        &self,
        id: RequestId,
        params: Map<String, Value>,
        #[cfg_attr(not(feature = "tasks"), allow(unused_variables))] capabilities: &ClientCapabilities,
        subject: Option<&str>,
        conn: &ConnectionHandle,
        cancel: CancellationToken,
    ) -> Option<Outcome> {
        let filter = match parse::<SubscriptionsListenRequestParams>(params) {
            Ok(request) => request.notifications,
            Err(fault) => return Some(Err(fault)),
        };
        #[cfg(feature = "tasks")]
        if filter.task_ids.as_ref().is_some_and(|ids| !ids.is_empty()) && !tasks::declares_tasks(capabilities) {
            let required = tasks::tasks_capability();
            return Some(Err(ServerFault::Handler(HandlerError::missing_capability(required))));
        }
        let agreed = self.agreed_filter(filter, subject).await;
        // The acknowledgment is queued before the stream can receive events.
        let ack = subscriptions::acknowledgment(&id, &agreed);
        if conn.out.send(Message::Notification(ack)).await.is_err() {
            return None;
        }
        let end = self.inner.hub.open(conn.id, id.clone(), agreed, conn.out.clone());
        // Closes the stream however this future ends, dropped included.
        let _registered = subscriptions::Registration { hub: &self.inner.hub, connection: conn.id, id: &id };
        tokio::select! {
            _ = cancel.cancelled() => None,
            _ = end.graceful.cancelled() => Some(Ok(subscriptions::completion(&id))),
            _ = end.events_lost.cancelled() => Some(Err(ServerFault::EventsLost)),
        }
    }
}
