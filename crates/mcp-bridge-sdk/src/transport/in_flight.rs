//! The requests a client transport that sends each request on an exchange
//! of its own (an HTTP POST, a gRPC call) has in flight, by id: what a
//! `notifications/cancelled` ends, and what closing the transport ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_bridge_protocol::{JsonRpcNotification, RequestId};
use tokio_util::sync::CancellationToken;

/// Each request's exchange, by its id, as the token that ends it.
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight(Arc<Mutex<HashMap<RequestId, CancellationToken>>>);

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, HashMap<RequestId, CancellationToken>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Request `id` is sent on an exchange that `ends` ends. Known before
    /// the exchange starts, so one that ends at once still finds its entry.
    pub(crate) fn started(&self, id: RequestId, ends: CancellationToken) {
        self.lock().insert(id, ends);
    }

    /// Request `id`'s exchange is over.
    pub(crate) fn finished(&self, id: &RequestId) {
        self.lock().remove(id);
    }

    /// Ends the exchange of the request `notification` cancels, when it is
    /// a `notifications/cancelled` naming one in flight.
    pub(crate) fn cancel(&self, notification: &JsonRpcNotification) {
        if let Some(exchange) = notification.cancelled_request().and_then(|id| self.lock().remove(&id)) {
            exchange.cancel();
        }
    }

    /// Ends every exchange: the transport closes.
    pub(crate) fn cancel_all(&self) {
        for (_, exchange) in self.lock().drain() {
            exchange.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cancelled(id: i64) -> JsonRpcNotification {
        JsonRpcNotification::new("notifications/cancelled", Some(json!({"requestId": id})))
    }

    #[test]
    fn a_cancellation_ends_the_exchange_it_names_and_closing_ends_the_rest() {
        let in_flight = InFlight::default();
        let (one, two, done) = (CancellationToken::new(), CancellationToken::new(), CancellationToken::new());
        in_flight.started(RequestId::Number(1), one.clone());
        in_flight.started(RequestId::Number(2), two.clone());
        in_flight.started(RequestId::Number(3), done.clone());
        in_flight.finished(&RequestId::Number(3));
        in_flight.cancel(&cancelled(1));
        assert!(one.is_cancelled() && !two.is_cancelled());
        // A request already over, or unknown, is not touched.
        in_flight.cancel(&cancelled(3));
        in_flight.cancel(&cancelled(9));
        assert!(!done.is_cancelled());
        in_flight.cancel_all();
        assert!(two.is_cancelled() && !done.is_cancelled());
    }
}
