//! A server that answers by forwarding ([`ServerBuilder::forward`](super::ServerBuilder::forward)):
//! every request goes to one handler, a proxy in front of another server,
//! under this server's own rules (the `_meta` check, the slot table, the
//! sealed request state of input rounds, the HTTP gate).

use mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY;
use mcp_bridge_protocol::types::InputResponses;
use mcp_bridge_protocol::{JsonRpcNotification, Message, RequestId};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// A request as a forwarding handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Forwarded {
    /// The method.
    pub method: String,
    /// Its params, without `_meta` (read into the request's context),
    /// `inputResponses` and `requestState` (the two fields below).
    pub params: Map<String, Value>,
    /// Answers to the previous round's input requests, by key.
    pub input_responses: InputResponses,
    /// The state the handler returned with its input requests, verified.
    pub state: Option<Value>,
    /// For `subscriptions/listen`: the client's stream, where its
    /// acknowledgment and events go. `None` for other methods.
    pub stream: Option<ListenStream>,
}

/// The client's end of a forwarded `subscriptions/listen` stream.
#[derive(Debug, Clone)]
pub struct ListenStream {
    id: RequestId,
    out: mpsc::Sender<Message>,
}

/// Why a notification did not reach the client's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamFull {
    /// The client reads too slowly: its writer's queue is full. The
    /// stream should end so that the client opens a new one and lists
    /// again, as after any lost stream.
    #[error("the client's listen stream fell behind")]
    Behind,
    /// The client's connection is gone.
    #[error("the client's connection is closed")]
    Closed,
}

impl ListenStream {
    pub(crate) fn new(id: RequestId, out: mpsc::Sender<Message>) -> Self {
        ListenStream { id, out }
    }

    /// Queues a notification of the stream (its acknowledgment, an event)
    /// for the client without waiting, named as this stream's (its
    /// `_meta` subscription id is the client's request id).
    ///
    /// # Errors
    /// [`StreamFull`] when it cannot be queued.
    pub fn send(&self, notification: &JsonRpcNotification) -> Result<(), StreamFull> {
        let mut notification = notification.clone();
        let params = notification.params.get_or_insert_with(|| json!({}));
        name_stream(params, &self.id);
        self.out.try_send(Message::Notification(notification)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => StreamFull::Behind,
            mpsc::error::TrySendError::Closed(_) => StreamFull::Closed,
        })
    }

    /// The result that ends the stream, named as this stream's.
    pub(crate) fn name_result(&self, mut result: Value) -> Value {
        name_stream(&mut result, &self.id);
        result
    }
}

/// Sets `_meta`'s subscription id of a stream's message to `id`.
fn name_stream(message: &mut Value, id: &RequestId) {
    let Some(object) = message.as_object_mut() else { return };
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(SUBSCRIPTION_ID_KEY.into(), json!(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_streams_notifications_and_result_carry_the_clients_request_id() {
        let (out, mut sent) = mpsc::channel(1);
        let stream = ListenStream::new(RequestId::Number(7), out);
        let upstream = json!({"_meta": {SUBSCRIPTION_ID_KEY: "upstream-3", "k": 1}});
        stream.send(&JsonRpcNotification::new("notifications/tools/list_changed", Some(upstream))).unwrap();
        let Some(Message::Notification(n)) = sent.recv().await else { panic!("nothing sent") };
        assert_eq!(n.params, Some(json!({"_meta": {SUBSCRIPTION_ID_KEY: 7, "k": 1}})));
        stream.send(&JsonRpcNotification::new("notifications/tools/list_changed", None)).unwrap();
        let full = stream.send(&JsonRpcNotification::new("notifications/tools/list_changed", None));
        assert_eq!(full, Err(StreamFull::Behind));
        assert_eq!(stream.name_result(json!({"resultType": "complete"}))["_meta"][SUBSCRIPTION_ID_KEY], json!(7));
    }
}
