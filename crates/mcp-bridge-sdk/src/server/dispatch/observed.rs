//! A request under a server's observer: what is known of it before it is
//! answered (read from its raw params, before dispatch takes them) and the
//! operation reported when it ends.

use std::time::{Instant, SystemTime};

use mcp_bridge_protocol::JsonRpcRequest;
use mcp_bridge_protocol::meta::{CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY};
use mcp_bridge_protocol::trace::TraceContext;
use serde_json::Value;

use super::Outcome;
use crate::server::connection::ConnectionHandle;
use crate::telemetry::{Observer, Operation, Side, Span, Started, id_text, result_error_type, target_of};

/// A request being answered, as its operation will be reported.
pub(super) struct Observed {
    operation: Operation,
    since: Instant,
    /// The request's span, which its handler passes on.
    pub(super) span: Span,
}

impl Observed {
    /// Tells `observer` the request starts; its span is a child of the
    /// trace context in its `_meta`, when it has one.
    pub(super) fn start(request: &JsonRpcRequest, conn: &ConnectionHandle, observer: &dyn Observer) -> Self {
        observer.started(Started { side: Side::Server, method: &request.method });
        let params = request.params.as_ref().and_then(Value::as_object);
        let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
        let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).map(str::to_owned);
        let client_name = meta.and_then(|m| m.get(CLIENT_INFO_KEY)?.get("name")?.as_str().map(str::to_owned));
        let span = Span::child_of(meta.and_then(TraceContext::from_meta).as_ref());
        let operation = Operation {
            side: Side::Server,
            method: request.method.clone(),
            target: target_of(&request.method, params),
            request_id: Some(id_text(&request.id)),
            protocol_version: text(PROTOCOL_VERSION_KEY),
            principal: conn.caller.as_ref().map(|caller| caller.principal().to_owned()),
            client_name,
            started: SystemTime::now(),
            duration: Default::default(),
            error_type: None,
            span: span.clone(),
        };
        Observed { operation, since: Instant::now(), span }
    }

    /// Reports the operation with its outcome: a result (a tool's
    /// `isError` is a `tool_error`), an error by its code, or none (the
    /// request was cancelled).
    pub(super) fn finish(mut self, outcome: Option<&Outcome>, observer: &dyn Observer) {
        self.operation.duration = self.since.elapsed();
        self.operation.error_type = match outcome {
            Some(Ok(result)) => result_error_type(result),
            Some(Err(fault)) => Some(fault.to_error_object().code.to_string()),
            None => Some("cancelled".to_owned()),
        };
        observer.finished(&self.operation);
    }
}
