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
