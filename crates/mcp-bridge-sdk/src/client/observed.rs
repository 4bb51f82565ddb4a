//! A request under the client's observer: its span, child of the trace
//! context the caller put in its `_meta` (a server handler passing on its
//! own), goes to the server in the request's `_meta`; its operation is
//! reported when it ends, or as cancelled when its future is dropped.

use std::sync::Arc;
use std::time::SystemTime;

use mcp_bridge_protocol::trace::TraceContext;
use serde_json::{Map, Value};

use super::{Client, RequestOptions};
use crate::error::{Error, Result};
use crate::telemetry::{InFlight, Observer, Operation, Side, Span, result_error_type, target_of};

impl Client {
    /// [`Client::request_raw`] reported to `observer`.
    pub(super) async fn request_observed(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
        observer: Arc<dyn Observer>,
    ) -> Result<Value> {
        let span = Span::child_of(TraceContext::from_meta(&options.meta).as_ref());
        let mut traced = options.clone();
        span.context().write_to(&mut traced.meta);
        let legacy = self.spoken().is_some_and(super::Spoken::is_legacy);
        let opts = &self.inner.options;
        let version = if legacy { &opts.legacy_protocol_version } else { &opts.protocol_version };
        let client = options.on_behalf_of.as_ref().map_or(&opts.info, |identity| identity.info());
        let operation = Operation {
            side: Side::Client,
            method: method.to_owned(),
            target: target_of(method, Some(&params)),
            request_id: None,
            protocol_version: Some(version.clone()),
            principal: None,
            client_name: Some(client.name.clone()),
            started: SystemTime::now(),
            duration: Default::default(),
            error_type: None,
            span,
        };
        let in_flight = InFlight::start(observer, operation);
        let outcome = self.request_unobserved(method, params, &traced).await;
        in_flight.finish(match &outcome {
            Ok(result) => result_error_type(result),
            Err(error) => Some(error_type(error)),
        });
        outcome
    }
}

/// `error.type` of a failed request: the JSON-RPC code of a server's
/// error, else a word for what failed.
fn error_type(error: &Error) -> String {
    use crate::telemetry::error_type::*;
    let word = match error {
        Error::Rpc { error } => return error.code.to_string(),
        Error::Timeout { .. } => TIMEOUT,
        Error::Cancelled { .. } => CANCELLED,
        Error::Closed => CLOSED,
        Error::Transport { .. } | Error::Connect { .. } | Error::Upgrade { .. } | Error::Spawn { .. } => TRANSPORT,
        Error::Busy { .. } => BUSY,
        Error::InvalidResponse { .. } => INVALID_RESPONSE,
        _ => CLIENT_ERROR,
    };
    word.to_owned()
}
