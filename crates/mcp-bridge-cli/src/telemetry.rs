//! What `mcp-bridge --listen` tells of the requests it serves: Prometheus
//! metrics at `/metrics` ([`prometheus`]), spans and the operation metrics
//! over OTLP when the standard `OTEL_*` variables ask for them ([`otlp`]),
//! and with `--listen-access-log` a line per request. The SDK's server and clients report
//! each request to the observers made here ([`Telemetry::front`] for the
//! requests the bridge answers, [`Telemetry::upstream`] for those it sends
//! to each server behind).

mod labels;
mod otlp;
mod prometheus;

use std::sync::Arc;

use mcp_bridge_sdk::server::http::MetricsExposition;
use mcp_bridge_sdk::telemetry::{Observer, Operation, Side, Started};

/// The bridge's telemetry: one per process.
#[derive(Clone)]
pub(crate) struct Telemetry {
    metrics: Arc<prometheus::Metrics>,
    otlp: Option<Arc<otlp::Exporter>>,
    names: Arc<labels::BoundedNames>,
    /// Whether each request answered gets an access line.
    access_log: bool,
}

impl Telemetry {
    /// The metrics, with OTLP export when the environment configures an
    /// endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or its traces and metrics
    /// variants), unless `OTEL_SDK_DISABLED` is `true`. `front_transport`
    /// is the endpoint's `network.transport` (`tcp`, `unix`); with
    /// `access_log`, each request answered gets a line.
    pub(crate) fn from_environment(front_transport: &'static str, access_log: bool) -> Self {
        let otlp = match otlp::Exporter::from_environment(front_transport) {
            Ok(exporter) => exporter.map(Arc::new),
            Err(e) => {
                tracing::warn!("OTLP export is off: {e}");
                None
            }
        };
        let names = Arc::default();
        Telemetry { metrics: Arc::new(prometheus::Metrics::default()), otlp, names, access_log }
    }

    /// The observer of the requests the bridge answers.
    pub(crate) fn front(&self) -> Arc<dyn Observer> {
        Arc::new(Sink { telemetry: self.clone(), server: None })
    }

    /// The observer of the requests the bridge sends to the server `name`.
    pub(crate) fn upstream(&self, name: &str) -> Arc<dyn Observer> {
        Arc::new(Sink { telemetry: self.clone(), server: Some(name.to_owned()) })
    }

    /// `/metrics`' body.
    pub(crate) fn exposition(&self) -> MetricsExposition {
        let metrics = self.metrics.clone();
        MetricsExposition::new(prometheus::CONTENT_TYPE, move || metrics.render())
    }

    /// Sends what OTLP export still holds; waits a few seconds at most.
    pub(crate) fn shutdown(&self) {
        if let Some(otlp) = &self.otlp {
            otlp.shutdown();
        }
    }
}

/// One end's observer: the front (`server` `None`) or a server behind.
struct Sink {
    telemetry: Telemetry,
    server: Option<String>,
}

impl Observer for Sink {
    fn started(&self, request: Started<'_>) {
        if request.side == Side::Server {
            self.telemetry.metrics.in_flight.inc();
        }
    }

    fn finished(&self, operation: &Operation) {
        let server = self.server.as_deref();
        if operation.side == Side::Server {
            self.telemetry.metrics.in_flight.dec();
            if self.telemetry.access_log {
                access_log(operation);
            }
        }
        let labels = self.telemetry.names.labels(operation);
        self.telemetry.metrics.record(operation, &labels, server);
        if let Some(otlp) = &self.telemetry.otlp {
            otlp.record(operation, &labels, server);
        }
    }

    fn session_opened(&self) {
        self.telemetry.metrics.sessions.inc();
    }

    fn session_closed(&self) {
        self.telemetry.metrics.sessions.dec();
    }
}

/// The access log's line of a request the bridge answered (target
/// `mcp_bridge::access`, at info): with `--log-format json` its fields are
/// the JSON object's members.
fn access_log(op: &Operation) {
    if !tracing::enabled!(target: "mcp_bridge::access", tracing::Level::INFO) {
        return;
    }
    let mut trace_id = String::new();
    let _ = mcp_bridge_protocol::trace::write_hex(&mut trace_id, &op.span.trace_id);
    let name = op.target.as_deref().map(without_secrets).unwrap_or_default();
    tracing::info!(
        target: "mcp_bridge::access",
        method = %op.method,
        name = %name,
        outcome = op.error_type.as_deref().unwrap_or("ok"),
        duration_ms = (op.duration.as_secs_f64() * 1_000_000.0).round() / 1000.0,
        principal = op.principal.as_deref().unwrap_or(""),
        client = op.client_name.as_deref().unwrap_or(""),
        trace_id = %trace_id,
        "served",
    );
}

/// A tool's or prompt's name as it is; a resource's URI without what may
/// carry a secret: its user information, query and fragment.
fn without_secrets(target: &str) -> String {
    let end = target.find(['?', '#']).unwrap_or(target.len());
    let uri = &target[..end];
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => uri.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_lose_what_may_carry_a_secret() {
        assert_eq!(without_secrets("https://user:pw@host.example/a/b?token=s#x"), "https://host.example/a/b");
        assert_eq!(without_secrets("file:///notes/today.md"), "file:///notes/today.md");
        assert_eq!(without_secrets("echo"), "echo");
        assert_eq!(without_secrets("x?y"), "x");
    }
}
