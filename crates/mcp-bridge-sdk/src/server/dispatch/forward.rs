//! A request answered by the server's forwarding handler
//! ([`ServerBuilder::forward`](crate::server::ServerBuilder::forward)):
//! its round fields read off, its state opened and sealed by the input
//! rules as a tool's, a listen stream's messages named as the client's.

use mcp_bridge_protocol::RequestId;
use mcp_bridge_protocol::headers::header_params;
use mcp_bridge_protocol::method::{Method, ServerDiscover, SubscriptionsListen, ToolsList};
use mcp_bridge_protocol::methods;
use mcp_bridge_protocol::rounds::{INPUT_RESPONSES, REQUEST_STATE};
use mcp_bridge_protocol::types::{InputResponses, SubscriptionFilter};
use serde_json::{Map, Value, json};

use super::Outcome;
use super::input::Retry;
use crate::error::{HandlerError, ServerFault};
use crate::limits::SUPPORTED_VERSIONS;
use crate::server::connection::ConnectionHandle;
use crate::server::forward::{Forwarded, ListenStream};
use crate::server::request_state::params_digest;
use crate::server::{Handler, Reply, RequestContext, Server, subscriptions};

impl Server {
    pub(super) async fn forward(
        &self,
        handler: Handler<Forwarded, Reply<Value>>,
        id: &RequestId,
        method: &str,
        mut params: Map<String, Value>,
        ctx: &RequestContext,
        conn: &ConnectionHandle,
    ) -> Outcome {
        let digest = params_digest(&params);
        params.remove("_meta");
        let input_responses = match params.remove(INPUT_RESPONSES) {
            None => None,
            Some(value) => Some(
                serde_json::from_value::<InputResponses>(value)
                    .map_err(|e| ServerFault::InvalidParams { reason: format!("{INPUT_RESPONSES}: {e}") })?,
            ),
        };
        let request_state = match params.remove(REQUEST_STATE) {
            None => None,
            Some(Value::String(state)) => Some(state),
            Some(_) => return Err(ServerFault::InvalidParams { reason: format!("{REQUEST_STATE} must be a string") }),
        };
        let first_page = !params.contains_key("cursor");
        let forwarded = |input_responses, state, stream| Forwarded {
            method: method.to_owned(),
            params,
            input_responses,
            state,
            stream,
        };
        if method == SubscriptionsListen::NAME {
            let stream = ListenStream::new(id.clone(), conn.out.clone());
            let request = forwarded(InputResponses::new(), None, Some(stream.clone()));
            // Held in the hub with no events of its own, so that the
            // server's shutdown ends it as it ends its own streams.
            let end = self.inner.hub.open(conn.id, id.clone(), SubscriptionFilter::default(), conn.out.clone());
            let _registered = subscriptions::Registration { hub: &self.inner.hub, connection: conn.id, id };
            return tokio::select! {
                answer = handler(request, ctx.clone()) => match answer.map_err(ServerFault::Handler)? {
                    Reply::Complete(result) => Ok(stream.name_result(result)),
                    _ => Err(ServerFault::Handler(HandlerError::internal("a listen stream cannot ask for input"))),
                },
                () = end.graceful.cancelled() => Ok(subscriptions::completion(id)),
                () = end.events_lost.cancelled() => Err(ServerFault::EventsLost),
            };
        }
        let retry = Retry { digest, input_responses, request_state };
        let request = move |responses, state| forwarded(responses, state, None);
        let result = self
            .with_input(method, retry, ctx, move |responses, state, ctx| handler(request(responses, state), ctx))
            .await;
        let result = result.map(|answer| self.as_modern_result(method, answer));
        if method == ToolsList::NAME
            && let Ok(listed) = &result
        {
            self.learn_header_params(listed, first_page);
        }
        result
    }

    /// A forwarded result with what a 2026-07-28 result of `method` must
    /// carry and a 2025-11-25 server's (translated by the SDK's client)
    /// lacks: `resultType`, and on a cacheable method this server's
    /// `ttlMs` with a private `cacheScope`; a discovery result names this
    /// server's versions. What else
    /// the server behind sent is kept.
    fn as_modern_result(&self, method: &str, mut answer: Value) -> Value {
        let Some(object) = answer.as_object_mut() else { return answer };
        object.entry("resultType").or_insert_with(|| json!("complete"));
        if method == ServerDiscover::NAME {
            // The client speaks to this server: the versions are its own,
            // whatever the server behind speaks.
            object.insert("supportedVersions".into(), json!(SUPPORTED_VERSIONS));
        }
        if object.get("resultType") == Some(&json!("complete"))
            && methods::spec(method).is_some_and(|spec| spec.cacheable)
        {
            object.entry("ttlMs").or_insert_with(|| json!(self.inner.cache.ttl_ms));
            // Nothing says the result is the same for every caller (a
            // read behind a sign-in): private is the safe reading.
            object.entry("cacheScope").or_insert_with(|| json!("private"));
        }
        answer
    }

    /// Keeps the `x-mcp-header` parameters of the tools a `tools/list`
    /// result names, for the HTTP endpoint's checks of later calls; a first
    /// page starts over. A tool whose annotations are invalid gets none,
    /// as a registered one does.
    fn learn_header_params(&self, listed: &Value, first_page: bool) {
        let Some(tools) = listed.get("tools").and_then(Value::as_array) else { return };
        let learned = tools.iter().filter_map(|tool| {
            let name = tool.get("name")?.as_str()?;
            let params = tool.get("inputSchema").map(header_params).and_then(Result::ok).unwrap_or_default();
            Some((name.to_owned(), params))
        });
        let mut known = self.inner.forwarded_header_params.write().unwrap_or_else(|e| e.into_inner());
        if first_page {
            known.clear();
        }
        known.extend(learned);
    }
}
