//! `/metrics`: the endpoint's metrics in the Prometheus text format, for
//! a scraper. Served when [`HttpOptions::metrics`](super::HttpOptions::metrics)
//! is set, after the `Origin` and `Host` checks and with the endpoint's own
//! credentials (its access token, or on a protected endpoint a valid
//! token): tool names and call counts are nobody else's business.

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::HttpOptions;

/// Asked at each scrape: the metrics now, in a format a scraper reads
/// (the Prometheus text format or OpenMetrics), with its content type.
#[derive(Clone)]
pub struct MetricsExposition {
    content_type: &'static str,
    render: Arc<dyn Fn() -> String + Send + Sync>,
}

impl MetricsExposition {
    /// An exposition that asks `render` for a body of `content_type`
    /// (`application/openmetrics-text; version=1.0.0; charset=utf-8`, or
    /// `text/plain; version=0.0.4` for the Prometheus text format).
    pub fn new(content_type: &'static str, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        MetricsExposition { content_type, render: Arc::new(render) }
    }
}

impl std::fmt::Debug for MetricsExposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MetricsExposition")
    }
}

/// `router` with `/metrics` when `options` has an exposition.
pub(crate) fn with_metrics<S: Clone + Send + Sync + 'static>(router: Router<S>, options: &HttpOptions) -> Router<S> {
    let Some(exposition) = options.metrics.clone() else { return router };
    let options = options.clone();
    let scrape = move |headers: HeaderMap| {
        let (options, exposition) = (options.clone(), exposition.clone());
        async move {
            if let Err(refused) = super::admit_request(&headers, &options).await {
                return super::gate::refused_response(&refused);
            }
            ([(header::CONTENT_TYPE, exposition.content_type)], (exposition.render)()).into_response()
        }
    };
    router.route("/metrics", get(scrape))
}
