//! `mcp-bridge --listen`'s 2026-07-28 clients: an SDK server that forwards
//! each request to the one upstream the 2025-11-25 sessions share, on
//! behalf of its client (its name, capabilities and log level).
//!
//! - A 2026-07-28 upstream's input rounds pass through, its `requestState`
//!   sealed inside mcp-bridge's (the relay).
//! - A 2025-11-25 upstream's requests during a call (elicitation, sampling,
//!   roots) become the client's input rounds; the SDK's client translates
//!   the rest of that era both ways.
//! - A listen stream is the client's own at the upstream: its
//!   acknowledgment and events come back named as the client's stream.

use std::sync::Arc;

use mcp_bridge_protocol::method::{Method, TasksCancel, TasksGet, TasksUpdate};
use mcp_bridge_protocol::rounds::{INPUT_RESPONSES, REQUEST_STATE};
use mcp_bridge_protocol::types::{Implementation, InputResponses, Outcome, SubscriptionFilter};
use mcp_bridge_sdk::server::legacy::upstream::Upstream;
use mcp_bridge_sdk::server::{Forwarded, ListenStream, Reply, RequestContext};
use mcp_bridge_sdk::{Error, HandlerError, RequestOptions, Server};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::relay::{Failure, Relays, Round, handler_error, options_for};
use crate::task_owners::TaskOwners;

/// The upstream's name in the relay's table: there is one.
const UPSTREAM: &str = "upstream";

/// A 2026-07-28 server that forwards every request to `upstream`.
pub fn server(upstream: Upstream) -> Server {
    let relays = Relays::<Value>::new();
    let owners = Arc::new(TaskOwners::default());
    Server::builder(Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION")))
        .forward(move |request, ctx| {
            let (upstream, relays, owners) = (upstream.clone(), relays.clone(), owners.clone());
            async move { forward(upstream, &relays, &owners, request, &ctx).await }
        })
        .build()
}

async fn forward(
    upstream: Upstream,
    relays: &Relays<Value>,
    owners: &TaskOwners,
    request: Forwarded,
    ctx: &RequestContext,
) -> Result<Reply<Value>, HandlerError> {
    let subject = ctx.caller.as_ref().map(|c| c.principal().to_owned());
    if let Some(stream) = request.stream {
        return listen(&upstream, request.params, stream, owners, ctx).await;
    }
    let Forwarded { method, params, input_responses, state, .. } = request;
    if [TasksGet::NAME, TasksUpdate::NAME, TasksCancel::NAME].contains(&method.as_str()) {
        let task = params.get("taskId").and_then(Value::as_str).unwrap_or_default();
        if !owners.admits(task, subject.as_deref()) {
            // As the SDK's own server answers for a task that does not exist.
            return Err(HandlerError::task_not_found());
        }
    }
    let start = move |responses, state, options: RequestOptions| -> Round<Value> {
        Box::pin(async move { send_round(&upstream, &method, params, responses, state, &options).await })
    };
    let reply =
        relays.round(UPSTREAM, state.as_ref(), input_responses, ctx, start).await.map_err(|failure| match failure {
            Failure::Handler(error) => error,
            Failure::Upstream(error) => handler_error(error),
        })?;
    // A task started for a subject is that subject's.
    if let (Reply::Complete(result), Some(subject)) = (&reply, &subject)
        && result.get("resultType").and_then(Value::as_str) == Some("task")
        && let Some(task) = result.get("taskId").and_then(Value::as_str)
    {
        owners.record(task, subject);
    }
    Ok(reply)
}

/// Sends one round of `method` to the upstream, with the server's own
/// round fields of the round before.
async fn send_round(
    upstream: &Upstream,
    method: &str,
    mut params: Map<String, Value>,
    responses: Option<InputResponses>,
    state: Option<String>,
    options: &RequestOptions,
) -> mcp_bridge_sdk::Result<Outcome<Value>> {
    if let Some(responses) = responses {
        let responses = serde_json::to_value(responses).map_err(|e| Error::InvalidRequest { reason: e.to_string() })?;
        params.insert(INPUT_RESPONSES.into(), responses);
    }
    if let Some(state) = state {
        params.insert(REQUEST_STATE.into(), Value::String(state));
    }
    let result = upstream.request(method, params, options).await.map_err(|failed| failed.error)?;
    serde_json::from_value(result)
        .map_err(|e| Error::InvalidResponse { method: method.to_owned(), reason: e.to_string() })
}

/// The client's listen stream, opened at the upstream with the client's
/// filter; ends when the upstream's does, or the client's is cancelled or
/// falls behind.
async fn listen(
    upstream: &Upstream,
    mut params: Map<String, Value>,
    stream: ListenStream,
    owners: &TaskOwners,
    ctx: &RequestContext,
) -> Result<Reply<Value>, HandlerError> {
    // The params' `_meta` went into `ctx`: the filter is read alone.
    let mut filter: SubscriptionFilter = params
        .remove("notifications")
        .map(serde_json::from_value::<SubscriptionFilter>)
        .transpose()
        .map_err(|e| HandlerError::invalid_params(format!("subscriptions/listen: notifications: {e}")))?
        .ok_or_else(|| HandlerError::invalid_params("subscriptions/listen: missing field `notifications`"))?;
    // Another subject's tasks are as unknown here as elsewhere.
    let subject = ctx.caller.as_ref().map(|c| c.principal());
    if let Some(ids) = &mut filter.task_ids {
        ids.retain(|id| owners.admits(id, subject));
    }
    // Cancelled when the client's stream falls behind, or the client cancels.
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let options = options_for(ctx).with_cancel(cancel.clone()).with_inline_notifications(true).with_on_notification(
        Arc::new(move |event| {
            if let Err(e) = stream.send(event) {
                tracing::debug!("a forwarded listen stream ends: {e}");
                stop.cancel();
            }
        }),
    );
    let listening = upstream.listen(filter, &options);
    tokio::pin!(listening);
    let outcome = tokio::select! {
        outcome = &mut listening => outcome,
        // The upstream's stream is closed (its cancellation sent) before the answer.
        () = ctx.cancelled() => {
            cancel.cancel();
            listening.await
        }
    };
    match outcome {
        Ok(result) => {
            serde_json::to_value(result).map(Reply::Complete).map_err(|e| HandlerError::internal(e.to_string()))
        }
        Err(_) if cancel.is_cancelled() && !ctx.is_cancelled() => {
            Err(HandlerError::internal("the listen stream fell behind: open a new one and list again"))
        }
        Err(failed) => Err(handler_error(failed.error)),
    }
}
