//! What a server and a client report of each request they answer or send,
//! for metrics, traces and access logs: an [`Observer`] set on a server
//! ([`ServerBuilder::observer`](crate::server::ServerBuilder::observer)) or a
//! client ([`ClientOptions::observer`](crate::ClientOptions::observer)) hears
//! of every request as it starts and when it ends, with the attributes of
//! OpenTelemetry's conventions for MCP and the span ids of its trace. The
//! SDK carries the W3C trace context in `params._meta` (`traceparent`,
//! `tracestate`) on every hop; exporting is the observer's business, so
//! the SDK itself depends on no telemetry crate.
//!
//! ```
//! use std::sync::Arc;
//! use mcp_bridge_sdk::telemetry::{Observer, Operation};
//!
//! struct Printer;
//! impl Observer for Printer {
//!     fn finished(&self, op: &Operation) {
//!         eprintln!("{} {:?} in {:?}: {:?}", op.method, op.target, op.duration, op.error_type);
//!     }
//! }
//! let _observer: Arc<dyn Observer> = Arc::new(Printer);
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcp_bridge_protocol::trace::{TraceContext, TraceParent};
use serde_json::{Map, Value};

/// The `error.type` words the SDK reports for failures without a
/// JSON-RPC code (a code is reported as its number, `-32602`).
pub mod error_type {
    /// A tool's result with `isError`.
    pub const TOOL_ERROR: &str = "tool_error";
    /// Cancelled by its client, or its connection gone.
    pub const CANCELLED: &str = "cancelled";
    /// No answer in time.
    pub const TIMEOUT: &str = "timeout";
    /// The connection closed before the answer.
    pub const CLOSED: &str = "closed";
    /// The server could not be reached or started.
    pub const TRANSPORT: &str = "transport";
    /// Too many requests in flight at the client.
    pub const BUSY: &str = "busy";
    /// An answer that breaks the protocol.
    pub const INVALID_RESPONSE: &str = "invalid_response";
    /// Any other failure of the client.
    pub const CLIENT_ERROR: &str = "client_error";
    /// Every word above.
    pub const WORDS: [&str; 8] =
        [TOOL_ERROR, CANCELLED, TIMEOUT, CLOSED, TRANSPORT, BUSY, INVALID_RESPONSE, CLIENT_ERROR];
}

/// Which end of a request an operation was observed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Side {
    /// A request this process answered (`mcp.server.operation.duration`).
    Server,
    /// A request this process sent (`mcp.client.operation.duration`).
    Client,
}

/// A span's ids: where an operation sits in its trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The trace's id: the caller's, or a new one when the request came
    /// without a trace context.
    pub trace_id: [u8; 16],
    /// This operation's own span id, new for each.
    pub span_id: [u8; 8],
    /// The span the request was sent under, when it came with one.
    pub parent_span_id: Option<[u8; 8]>,
    /// The trace flags (bit 0: recorded), the caller's or "recorded".
    pub flags: u8,
    /// The caller's `tracestate`, passed on unchanged.
    pub state: Option<String>,
}

impl Span {
    /// A new span under `parent`, or the first of a new trace.
    pub fn child_of(parent: Option<&TraceContext>) -> Self {
        let span_id = random_id::<8>();
        match parent {
            Some(context) => Span {
                trace_id: context.parent.trace_id,
                span_id,
                parent_span_id: Some(context.parent.span_id),
                flags: context.parent.flags,
                state: context.state.clone(),
            },
            None => Span { trace_id: random_id::<16>(), span_id, parent_span_id: None, flags: 1, state: None },
        }
    }

    /// This span as the parent of the requests sent under it.
    pub fn context(&self) -> TraceContext {
        let parent = TraceParent { trace_id: self.trace_id, span_id: self.span_id, flags: self.flags };
        TraceContext { parent, state: self.state.clone() }
    }
}

/// An id of `N` bytes, never all zero (an invalid id): a counter mixed
/// with a key drawn once per process (SplitMix64), so that ids are unique
/// in the process, unpredictable without the key, and cost no system call
/// (a request makes two to four).
fn random_id<const N: usize>() -> [u8; N] {
    use std::sync::atomic::{AtomicU64, Ordering};
    static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let key = *KEY.get_or_init(|| {
        let mut bytes = [0u8; 8];
        // Without an entropy source, the clock still keeps processes apart.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
            bytes = (nanos as u64).to_le_bytes();
        }
        u64::from_le_bytes(bytes)
    });
    let mut id = [0u8; N];
    for chunk in id.chunks_mut(8) {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mixed = split_mix(key ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        chunk.copy_from_slice(&mixed.to_le_bytes()[..chunk.len()]);
    }
    if id == [0u8; N] {
        id[0] = 1;
    }
    id
}

/// SplitMix64's finalizer: every input bit moves every output bit.
fn split_mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A request as it starts: what [`Observer::started`] hears.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Started<'a> {
    /// Which end observed it.
    pub side: Side,
    /// The method (`mcp.method.name`).
    pub method: &'a str,
}

/// A request that ended: what [`Observer::finished`] hears.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Operation {
    /// Which end observed it.
    pub side: Side,
    /// The method (`mcp.method.name`).
    pub method: String,
    /// What it named: the tool (`gen_ai.tool.name`) or prompt
    /// (`gen_ai.prompt.name`) by name, the resource (`mcp.resource.uri`)
    /// by URI.
    pub target: Option<String>,
    /// The JSON-RPC id (`jsonrpc.request.id`).
    pub request_id: Option<String>,
    /// The protocol version it was made at (`mcp.protocol.version`).
    pub protocol_version: Option<String>,
    /// Whom a server's request spoke for (a token's subject, else its
    /// client), on a protected endpoint.
    pub principal: Option<String>,
    /// The client's name (`clientInfo.name`), when it sent one.
    pub client_name: Option<String>,
    /// When it started.
    pub started: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// Why it failed (`error.type`): the JSON-RPC error code (`-32602`),
    /// `tool_error` for a tool result with `isError`, or a word for a
    /// failure without a code (`timeout`, `cancelled`, `transport`, ...);
    /// `None` when it succeeded.
    pub error_type: Option<String>,
    /// Its span in the trace.
    pub span: Span,
}

impl Operation {
    /// The span's name by the conventions: `{mcp.method.name} {target}`
    /// for a tool or a prompt, the method alone otherwise (a resource's
    /// URI is left out of names: too many distinct values).
    pub fn span_name(&self) -> String {
        use mcp_bridge_protocol::method::{Method, PromptsGet, ToolsCall};
        match &self.target {
            Some(target) if [ToolsCall::NAME, PromptsGet::NAME].contains(&self.method.as_str()) => {
                format!("{} {target}", self.method)
            }
            _ => self.method.clone(),
        }
    }
}

/// An operation under way, reported once: when finished, or as
/// `cancelled` when dropped unfinished (a request whose future was
/// dropped: cancelled by its client, or its connection gone), so that
/// every start has its end.
pub(crate) struct InFlight {
    observer: Arc<dyn Observer>,
    operation: Option<Operation>,
    since: Instant,
}

impl InFlight {
    /// Tells `observer` that `operation` starts.
    pub(crate) fn start(observer: Arc<dyn Observer>, operation: Operation) -> Self {
        observer.started(Started { side: operation.side, method: &operation.method });
        InFlight { observer, operation: Some(operation), since: Instant::now() }
    }

    /// The operation's span.
    pub(crate) fn span(&self) -> Option<&Span> {
        self.operation.as_ref().map(|op| &op.span)
    }

    /// Reports the operation, failed with `error_type` or not.
    pub(crate) fn finish(mut self, error_type: Option<String>) {
        self.report(error_type);
    }

    fn report(&mut self, error_type: Option<String>) {
        if let Some(mut operation) = self.operation.take() {
            operation.duration = self.since.elapsed();
            operation.error_type = error_type;
            self.observer.finished(&operation);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.report(Some(error_type::CANCELLED.to_owned()));
    }
}

/// Hears of the requests a server answers or a client sends. Called on
/// the request's own task: keep it short (count, queue, hand over).
pub trait Observer: Send + Sync + 'static {
    /// A request starts (for in-flight gauges). Nothing by default.
    fn started(&self, _request: Started<'_>) {}

    /// A request ended: successfully, with an error, or cancelled.
    fn finished(&self, operation: &Operation);

    /// A 2025-11-25 client's session began (HTTP endpoints). Nothing by
    /// default.
    fn session_opened(&self) {}

    /// A 2025-11-25 client's session ended. Nothing by default.
    fn session_closed(&self) {}
}

impl std::fmt::Debug for dyn Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// A session counted open while this lives: told to the observer when
/// made and when dropped, however the session ends.
#[cfg(all(feature = "legacy", feature = "http-server"))]
pub(crate) struct SessionCount(std::sync::Arc<dyn Observer>);

#[cfg(all(feature = "legacy", feature = "http-server"))]
impl SessionCount {
    /// A session counted by `observer`.
    pub(crate) fn new(observer: std::sync::Arc<dyn Observer>) -> Self {
        observer.session_opened();
        SessionCount(observer)
    }
}

#[cfg(all(feature = "legacy", feature = "http-server"))]
impl Drop for SessionCount {
    fn drop(&mut self) {
        self.0.session_closed();
    }
}

/// What a request names, as its span's target: a tool's or prompt's
/// `name`, a resource's `uri`.
pub(crate) fn target_of(method: &str, params: Option<&Map<String, Value>>) -> Option<String> {
    use mcp_bridge_protocol::method::{Method, PromptsGet, ResourcesRead, ToolsCall};
    let key = match method {
        ToolsCall::NAME | PromptsGet::NAME => "name",
        ResourcesRead::NAME => "uri",
        _ => return None,
    };
    params?.get(key)?.as_str().map(str::to_owned)
}

/// The `error.type` of a result: `tool_error` for a tool's `isError`.
pub(crate) fn result_error_type(result: &Value) -> Option<String> {
    (result.get("isError") == Some(&Value::Bool(true))).then(|| error_type::TOOL_ERROR.to_owned())
}

/// A request id as text, for `jsonrpc.request.id`.
pub(crate) fn id_text(id: &mcp_bridge_protocol::RequestId) -> String {
    match id.to_value() {
        Value::String(text) => text,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_child_keeps_the_trace_and_names_its_parent() {
        let parent = TraceContext {
            parent: TraceParent { trace_id: [7; 16], span_id: [9; 8], flags: 0 },
            state: Some("a=b".into()),
        };
        let span = Span::child_of(Some(&parent));
        assert_eq!(span.trace_id, [7; 16]);
        assert_eq!(span.parent_span_id, Some([9; 8]));
        assert_ne!(span.span_id, [9; 8]);
        assert_eq!(span.context().parent.span_id, span.span_id);
        assert_eq!(span.context().state.as_deref(), Some("a=b"));
        let root = Span::child_of(None);
        assert_eq!(root.parent_span_id, None);
        assert_ne!(root.trace_id, Span::child_of(None).trace_id);
        let ids: std::collections::HashSet<[u8; 8]> = (0..10_000).map(|_| random_id::<8>()).collect();
        assert_eq!(ids.len(), 10_000, "no id comes twice");
    }

    #[test]
    fn targets_and_tool_errors_follow_the_conventions() {
        let params = json!({"name": "echo", "uri": "file:///x"});
        let params = params.as_object();
        assert_eq!(target_of("tools/call", params).as_deref(), Some("echo"));
        assert_eq!(target_of("resources/read", params).as_deref(), Some("file:///x"));
        assert_eq!(target_of("tools/list", params), None);
        assert_eq!(result_error_type(&json!({"isError": true})).as_deref(), Some("tool_error"));
        assert_eq!(result_error_type(&json!({"isError": false})), None);
    }
}
