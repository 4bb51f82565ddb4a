//! Probes of an HTTP endpoint for what runs it (a load balancer, an
//! orchestrator): `/healthz` answers while the process serves, `/readyz`
//! says whether what the endpoint stands on is ready, as JSON. Served when
//! [`HttpOptions::readiness`](super::HttpOptions::readiness) is set, after
//! the `Origin` and `Host` checks (a web page of another site reads
//! nothing), without a token.

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::{HttpOptions, refusal_by_origin_or_host};

/// Whether an endpoint's backing is ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadyStatus {
    /// Everything it stands on is ready (200, `"ready"`).
    Ready,
    /// Some of it is not, the rest serves (200, `"degraded"`).
    Degraded,
    /// Nothing it stands on is ready (503, `"not_ready"`).
    NotReady,
}

/// What `/readyz` reports: the status, and details merged into its JSON.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Readiness {
    /// The status.
    pub status: ReadyStatus,
    /// Members added to the answer beside `status` (an object; others are
    /// left out), such as each backing server's state.
    pub details: Value,
}

impl Readiness {
    /// `status` with `details`.
    pub fn new(status: ReadyStatus, details: Value) -> Self {
        Readiness { status, details }
    }
}

/// Asked at each `/readyz`: the endpoint's readiness now.
#[derive(Clone)]
pub struct ReadinessProbe(Arc<dyn Fn() -> Readiness + Send + Sync>);

impl ReadinessProbe {
    /// A probe that asks `probe`.
    pub fn new(probe: impl Fn() -> Readiness + Send + Sync + 'static) -> Self {
        ReadinessProbe(Arc::new(probe))
    }
}

impl std::fmt::Debug for ReadinessProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadinessProbe")
    }
}

/// `router` with `/healthz` and `/readyz` when `options` has a probe.
pub(crate) fn with_probes<S: Clone + Send + Sync + 'static>(router: Router<S>, options: &HttpOptions) -> Router<S> {
    let Some(probe) = options.readiness.clone() else { return router };
    let (live_options, ready_options) = (options.clone(), options.clone());
    let live = move |headers: HeaderMap| {
        let refused = refusal(&headers, &live_options);
        async move { refused.unwrap_or_else(|| json_answer(StatusCode::OK, json!({"status": "live"}))) }
    };
    let ready = move |headers: HeaderMap| {
        let answer = refusal(&headers, &ready_options).unwrap_or_else(|| readiness_answer(&(probe.0)()));
        async move { answer }
    };
    router.route("/healthz", get(live)).route("/readyz", get(ready))
}

fn refusal(headers: &HeaderMap, options: &HttpOptions) -> Option<Response> {
    refusal_by_origin_or_host(headers, options).map(|reason| (StatusCode::FORBIDDEN, reason).into_response())
}

/// The answer of `/readyz` for `readiness`.
fn readiness_answer(readiness: &Readiness) -> Response {
    let (status, name) = match readiness.status {
        ReadyStatus::Ready => (StatusCode::OK, "ready"),
        ReadyStatus::Degraded => (StatusCode::OK, "degraded"),
        ReadyStatus::NotReady => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
    };
    let mut body = json!({"status": name});
    if let Value::Object(details) = &readiness.details {
        for (key, value) in details.iter().filter(|(key, _)| *key != "status") {
            body[key] = value.clone();
        }
    }
    json_answer(status, body)
}

fn json_answer(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_has_its_code_and_the_details_join_the_answer() {
        let details = json!({"servers": [{"name": "a"}], "status": "overridden?"});
        for (status, code) in [
            (ReadyStatus::Ready, StatusCode::OK),
            (ReadyStatus::Degraded, StatusCode::OK),
            (ReadyStatus::NotReady, StatusCode::SERVICE_UNAVAILABLE),
        ] {
            assert_eq!(readiness_answer(&Readiness::new(status, details.clone())).status(), code);
        }
    }
}
