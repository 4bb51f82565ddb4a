//! The metrics `/metrics` serves, in OpenMetrics text (which Prometheus
//! reads): the operation durations by OpenTelemetry's conventions for MCP
//! (`mcp_server_operation_duration_seconds` for requests the bridge
//! answered, `mcp_client_operation_duration_seconds` for those it sent to
//! a server behind), each tool's calls and errors per server, the open
//! 2025-11-25 sessions and the requests under way.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::labels::Labels;
use mcp_bridge_sdk::telemetry::Operation;

/// The content type of the body [`Metrics::render`] writes.
pub(super) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The buckets OpenTelemetry's conventions advise for the MCP operation
/// durations, in seconds.
pub(super) const BUCKETS: [f64; 14] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The labels of a request the bridge answered.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    mcp_method_name: String,
    gen_ai_tool_name: String,
    error_type: String,
}

/// The labels of a request the bridge sent to a server behind it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    /// The server (the gateway's name for it, `upstream` for the one
    /// server of `-- CMD` or a URL).
    server: String,
    #[prometheus(flatten)]
    operation: OperationLabels,
}

/// A tool's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    server: String,
    tool: String,
}

/// A tool's failure's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolErrorLabels {
    server: String,
    tool: String,
    error_type: String,
}

#[derive(Clone)]
struct Buckets;

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(BUCKETS)
    }
}

/// The registry and its metrics.
pub(super) struct Metrics {
    registry: Registry,
    server_operations: Family<OperationLabels, Histogram, Buckets>,
    client_operations: Family<UpstreamLabels, Histogram, Buckets>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_errors: Family<ToolErrorLabels, Counter>,
    /// Open 2025-11-25 sessions.
    pub(super) sessions: Gauge,
    /// Requests the bridge is answering.
    pub(super) in_flight: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let server_operations = Family::new_with_constructor(Buckets);
        let client_operations = Family::new_with_constructor(Buckets);
        let (tool_calls, tool_errors) = (Family::default(), Family::default());
        let (sessions, in_flight) = (Gauge::default(), Gauge::default());
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "MCP requests the bridge answered, from receipt to answer",
            Unit::Seconds,
            server_operations.clone(),
        );
        registry.register_with_unit(
            "mcp_client_operation_duration",
            "MCP requests the bridge sent to a server behind it, from sending to answer",
            Unit::Seconds,
            client_operations.clone(),
        );
        registry.register("mcp_bridge_tool_calls", "Tool calls sent to each server", tool_calls.clone());
        registry.register("mcp_bridge_tool_call_errors", "Tool calls that failed, by error.type", tool_errors.clone());
        registry.register("mcp_bridge_sessions", "Open 2025-11-25 client sessions", sessions.clone());
        registry.register("mcp_bridge_requests_in_flight", "Requests the bridge is answering", in_flight.clone());
        Metrics { registry, server_operations, client_operations, tool_calls, tool_errors, sessions, in_flight }
    }
}

impl Metrics {
    /// Counts `op` with its `labels`, seen at the front (`server` `None`)
    /// or sent to `server`.
    pub(super) fn record(&self, op: &Operation, labels: &Labels, server: Option<&str>) {
        let operation = OperationLabels {
            mcp_method_name: labels.method.clone(),
            gen_ai_tool_name: labels.tool.clone(),
            error_type: labels.error_type.clone(),
        };
        let seconds = op.duration.as_secs_f64();
        let Some(server) = server.map(str::to_owned) else {
            self.server_operations.get_or_create(&operation).observe(seconds);
            return;
        };
        self.client_operations.get_or_create(&UpstreamLabels { server: server.clone(), operation }).observe(seconds);
        if labels.tool.is_empty() {
            return;
        }
        let tool = labels.tool.clone();
        self.tool_calls.get_or_create(&ToolLabels { server: server.clone(), tool: tool.clone() }).inc();
        if !labels.error_type.is_empty() {
            self.tool_errors
                .get_or_create(&ToolErrorLabels { server, tool, error_type: labels.error_type.clone() })
                .inc();
        }
    }

    /// The metrics now, in OpenMetrics text.
    pub(super) fn render(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!("the metrics could not be written: {e}");
        }
        text
    }
}
