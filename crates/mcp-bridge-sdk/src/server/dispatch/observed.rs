//! A request under a server's observer: what is known of it before it is
//! answered (read from its raw params, before dispatch takes them), and
//! its outcome as the conventions name it.

use std::sync::Arc;
use std::time::SystemTime;

use mcp_bridge_protocol::JsonRpcRequest;
use mcp_bridge_protocol::meta::{CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY};
use mcp_bridge_protocol::trace::TraceContext;
use serde_json::Value;

use super::Outcome;
use crate::server::connection::ConnectionHandle;
use crate::telemetry::{InFlight, Observer, Operation, Side, Span, id_text, result_error_type, target_of};

/// Tells `observer` the request starts; its span is a child of the trace
/// context in its `_meta`, when it has one.
pub(super) fn start(request: &JsonRpcRequest, conn: &ConnectionHandle, observer: Arc<dyn Observer>) -> InFlight {
    let params = request.params.as_ref().and_then(Value::as_object);
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let text = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str).map(str::to_owned);
    let client_name = meta.and_then(|m| m.get(CLIENT_INFO_KEY)?.get("name")?.as_str().map(str::to_owned));
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
        span: Span::child_of(meta.and_then(TraceContext::from_meta).as_ref()),
    };
    InFlight::start(observer, operation)
}

/// The `error.type` of an outcome: a tool's `isError` is a `tool_error`,
/// an error its code; `None` (no answer) was cancelled.
pub(super) fn error_type(outcome: Option<&Outcome>) -> Option<String> {
    match outcome {
        Some(Ok(result)) => result_error_type(result),
        Some(Err(fault)) => Some(fault.to_error_object().code.to_string()),
        None => Some(crate::telemetry::error_type::CANCELLED.to_owned()),
    }
}
