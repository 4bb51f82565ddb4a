//! Spans and the operation metrics sent over OTLP (HTTP, protobuf) by the
//! OpenTelemetry crates when the standard variables name an endpoint. Each
//! span keeps the ids the SDK gave its operation, so the trace a client
//! started in `traceparent` goes on through the bridge to the servers
//! behind it.
//!
//! Built and shut down outside the async runtime: the exporter's blocking
//! HTTP client runs on the batch processor's own thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};

use mcp_bridge_protocol::method::{Method, PromptsGet, ToolsCall};
use mcp_bridge_sdk::telemetry::{Operation, Side};

use super::labels::Labels;

/// The variables that turn export on: an endpoint for both signals or for
/// traces or metrics alone.
const ENDPOINT_VARIABLES: [&str; 3] =
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"];

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ExportError(String);

/// The OTLP pipelines of traces and metrics.
struct Pipelines {
    tracers: SdkTracerProvider,
    tracer: Tracer,
    meters: SdkMeterProvider,
    server_duration: Histogram<f64>,
    client_duration: Histogram<f64>,
    /// `network.transport` of the front: `tcp`, or `unix` on a socket.
    front_transport: &'static str,
}

impl Exporter {
    /// The exporter the environment asks for: `None` unless an endpoint
    /// variable is set, or when `OTEL_SDK_DISABLED=true`. The service is
    /// `OTEL_SERVICE_NAME`, else `mcp-bridge`.
    pub(crate) fn from_environment(front_transport: &'static str) -> Result<Option<Self>, ExportError> {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
        if disabled || !ENDPOINT_VARIABLES.iter().any(|v| set(v)) {
            return Ok(None);
        }
        let mut resource = Resource::builder();
        if !set("OTEL_SERVICE_NAME") {
            resource = resource.with_service_name("mcp-bridge");
        }
        let resource = resource.build();
        let failed = |what: &str, e: &dyn std::fmt::Display| ExportError(format!("the OTLP {what} exporter: {e}"));
        let spans = opentelemetry_otlp::SpanExporter::builder().with_http().build().map_err(|e| failed("span", &e))?;
        let tracers = SdkTracerProvider::builder().with_resource(resource.clone()).with_batch_exporter(spans).build();
        let metrics =
            opentelemetry_otlp::MetricExporter::builder().with_http().build().map_err(|e| failed("metric", &e))?;
        let meters = SdkMeterProvider::builder().with_resource(resource).with_periodic_exporter(metrics).build();
        let meter = meters.meter("mcp-bridge");
        let histogram = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(super::prometheus::BUCKETS.to_vec())
                .build()
        };
        let server_duration = histogram("mcp.server.operation.duration", "MCP requests the bridge answered");
        let client_duration = histogram("mcp.client.operation.duration", "MCP requests sent to a server behind");
        let tracer = tracers.tracer("mcp-bridge");
        let pipelines = Pipelines { tracers, tracer, meters, server_duration, client_duration, front_transport };
        Ok(Some(Exporter::start(pipelines)))
    }
}

impl Pipelines {
    /// Exports `op`'s span and its duration (with the bounded `labels`):
    /// seen at the front (`server` `None`) or sent to `server`.
    fn export(&self, op: &Operation, labels: &Labels, server: Option<&str>) {
        let histogram = if op.side == Side::Server { &self.server_duration } else { &self.client_duration };
        histogram.record(op.duration.as_secs_f64(), &metric_attributes(op, labels, server));
        let attributes = attributes(op, server, self.front_transport);
        let kind = if op.side == Side::Server { SpanKind::Server } else { SpanKind::Client };
        let mut builder = self
            .tracer
            .span_builder(op.span_name())
            .with_kind(kind)
            .with_trace_id(TraceId::from_bytes(op.span.trace_id))
            .with_span_id(SpanId::from_bytes(op.span.span_id))
            .with_start_time(op.started)
            .with_attributes(attributes);
        let parent = match op.span.parent_span_id {
            Some(parent) => {
                let state = op.span.state.as_deref().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
                let flags = TraceFlags::new(op.span.flags);
                let remote = SpanContext::new(
                    TraceId::from_bytes(op.span.trace_id),
                    SpanId::from_bytes(parent),
                    flags,
                    // The front span's parent is the client's; a call's is
                    // the front span, in this process.
                    op.side == Side::Server,
                    state,
                );
                Context::new().with_remote_span_context(remote)
            }
            None => Context::new(),
        };
        if let Some(error) = &op.error_type {
            builder = builder.with_status(Status::error(error.clone()));
        }
        let mut span = builder.start_with_context(&self.tracer, &parent);
        span.end_with_timestamp(op.started + op.duration);
    }

    /// Sends what is queued and stops.
    fn shutdown(&self) {
        if let Err(e) = self.tracers.shutdown_with_timeout(Duration::from_secs(3)) {
            tracing::debug!("OTLP spans at exit: {e}");
        }
        if let Err(e) = self.meters.shutdown_with_timeout(Duration::from_secs(3)) {
            tracing::debug!("OTLP metrics at exit: {e}");
        }
    }
}

/// Operations waiting for the export thread: at most this many (a stalled
/// collector must not grow the bridge's memory); more are dropped.
const MAX_PENDING: usize = 16_384;

/// How often the export thread hands the operations to the pipelines.
const HAND_OVER_EVERY: Duration = Duration::from_millis(200);

/// An operation waiting for export, with its labels and server.
type Pending = (Operation, Labels, Option<String>);

/// The export of operations, off the requests' path: a request only
/// queues its operation; a thread of its own builds the spans and records
/// the durations, a batch at a time (the OpenTelemetry pipelines wake their
/// own threads for each span, which a request should not wait for).
pub(crate) struct Exporter {
    queue: Arc<Queue>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct Queue {
    pending: Mutex<(Vec<Pending>, bool)>,
    wake: Condvar,
    dropped: AtomicUsize,
}

impl Exporter {
    fn start(pipelines: Pipelines) -> Self {
        let queue = Arc::new(Queue::default());
        let drained = queue.clone();
        let thread = std::thread::Builder::new()
            .name("mcp-bridge-otlp".into())
            .spawn(move || hand_over(&drained, &pipelines))
            .map_err(|e| tracing::warn!("OTLP export is off: no thread for it ({e})"))
            .ok();
        Exporter { queue, thread: Mutex::new(thread) }
    }

    /// Queues `op` for export with its `labels`: seen at the front
    /// (`server` `None`) or sent to `server`.
    pub(crate) fn record(&self, op: &Operation, labels: &Labels, server: Option<&str>) {
        let mut pending = self.queue.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.0.len() < MAX_PENDING {
            pending.0.push((op.clone(), labels.clone(), server.map(str::to_owned)));
        } else {
            self.queue.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Exports what is queued and stops; waits a few seconds at most.
    pub(crate) fn shutdown(&self) {
        self.queue.pending.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.queue.wake.notify_all();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        let dropped = self.queue.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!("OTLP: {dropped} operations were not exported: the collector did not keep up");
        }
    }
}

/// The export thread: every [`HAND_OVER_EVERY`], or at the stop, the
/// queued operations go to the pipelines; at the stop the pipelines flush.
fn hand_over(queue: &Queue, pipelines: &Pipelines) {
    loop {
        let (batch, stop) = {
            let pending = queue.pending.lock().unwrap_or_else(|e| e.into_inner());
            let (mut pending, _) = queue
                .wake
                .wait_timeout_while(pending, HAND_OVER_EVERY, |(_, stop)| !*stop)
                .unwrap_or_else(|e| e.into_inner());
            (std::mem::take(&mut pending.0), pending.1)
        };
        for (op, labels, server) in &batch {
            pipelines.export(op, labels, server.as_deref());
        }
        if stop {
            pipelines.shutdown();
            return;
        }
    }
}

/// The attributes of a duration: bounded (see [`Labels`]), as a metric's
/// must be.
fn metric_attributes(op: &Operation, labels: &Labels, server: Option<&str>) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("mcp.method.name", labels.method.clone())];
    if !labels.tool.is_empty() {
        attributes.push(KeyValue::new("gen_ai.tool.name", labels.tool.clone()));
    }
    if !labels.error_type.is_empty() {
        attributes.push(KeyValue::new("error.type", labels.error_type.clone()));
    }
    let known = |v: &&String| mcp_bridge_sdk::limits::SUPPORTED_VERSIONS.contains(&v.as_str());
    if let Some(version) = op.protocol_version.as_ref().filter(known) {
        attributes.push(KeyValue::new("mcp.protocol.version", version.clone()));
    }
    if let Some(server) = server {
        attributes.push(KeyValue::new("server.address", server.to_owned()));
    }
    attributes
}

/// The attributes of a span, by OpenTelemetry's conventions for MCP.
fn attributes(op: &Operation, server: Option<&str>, front_transport: &'static str) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new("mcp.method.name", op.method.clone())];
    if let Some(target) = &op.target {
        let key = match op.method.as_str() {
            ToolsCall::NAME => "gen_ai.tool.name",
            PromptsGet::NAME => "gen_ai.prompt.name",
            _ => "mcp.resource.uri",
        };
        attributes.push(KeyValue::new(key, target.clone()));
        if op.method == ToolsCall::NAME {
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
    }
    if let Some(version) = &op.protocol_version {
        attributes.push(KeyValue::new("mcp.protocol.version", version.clone()));
    }
    if let Some(id) = &op.request_id {
        attributes.push(KeyValue::new("jsonrpc.request.id", id.clone()));
    }
    if let Some(error) = &op.error_type {
        attributes.push(KeyValue::new("error.type", error.clone()));
        if error.starts_with('-') {
            attributes.push(KeyValue::new("rpc.response.status_code", error.clone()));
        }
    }
    if let Some(server) = server {
        attributes.push(KeyValue::new("server.address", server.to_owned()));
    }
    if op.side == Side::Server {
        attributes.push(KeyValue::new("network.transport", front_transport));
    }
    attributes
}
