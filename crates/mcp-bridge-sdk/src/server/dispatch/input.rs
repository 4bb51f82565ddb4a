//! The multi round-trip rules of a server: a handler's request for input
//! becomes an `InputRequiredResult` with a sealed `requestState`, and the
//! client's retry has its state opened and its answers passed on.

#[cfg(feature = "tasks")]
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::rounds::{REQUEST_STATE, RoundRefusal, check_round};
use mcp_bridge_protocol::types::{ClientCapabilities, InputRequests, InputResponses};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Outcome, to_value};
use crate::BoxFuture;
use crate::error::{HandlerError, ServerFault};
use crate::server::request_state::{Binding, caller_digest};
use crate::server::{Reply, RequestContext, Server};
#[cfg(feature = "tasks")]
use crate::server::{TaskContext, tasks};

/// What a request that may ask for input brings back from the last round.
pub(super) struct Retry {
    /// The digest of the request's params ([`params_digest`](crate::server::request_state::params_digest)):
    /// its state is bound to it.
    pub(super) digest: String,
    /// The answers to the last round's input requests.
    pub(super) input_responses: Option<InputResponses>,
    /// The state sealed in the last round.
    pub(super) request_state: Option<String>,
}

/// Why a handler's round cannot go out.
#[derive(Debug)]
pub(crate) enum RoundFault {
    /// An input request needs a capability the client did not declare: the
    /// client's -32021, with the declaration it lacks.
    Missing { key: String, required: Value },
    /// The handler built a round the protocol's rules refuse (an unknown
    /// kind, invalid params, a URL that is no web page, too many requests):
    /// an internal error, never sent to the client as is.
    Broken(HandlerError),
}

impl RoundFault {
    /// The error of a handler that runs in a task.
    pub(crate) fn into_handler_error(self) -> HandlerError {
        match self {
            RoundFault::Missing { required, .. } => HandlerError::missing_capability(required),
            RoundFault::Broken(error) => error,
        }
    }
}

/// Checks a handler's round by the rules its client applies
/// ([`mcp_bridge_protocol::rounds::check_round`]), before it goes out.
///
/// # Errors
/// The [`RoundFault`] of the first input request at fault.
pub(crate) fn check_handler_round(requests: &InputRequests, caps: &ClientCapabilities) -> Result<(), RoundFault> {
    match check_round(requests, caps) {
        Ok(()) => Ok(()),
        Err(RoundRefusal::Undeclared { key, capability }) => {
            Err(RoundFault::Missing { key, required: capability.declaration() })
        }
        Err(other) => {
            Err(RoundFault::Broken(HandlerError::internal(format!("the handler's round is refused: {other}"))))
        }
    }
}

impl Server {
    /// Runs a handler of a method that may ask for input: opens the
    /// `requestState`, passes the answers, and turns an input request into
    /// an `InputRequiredResult` with a freshly sealed state.
    pub(super) async fn with_input<R: Serialize + Send + 'static>(
        &self,
        method: &str,
        retry: Retry,
        ctx: &RequestContext,
        run: impl FnOnce(InputResponses, Option<Value>, RequestContext) -> BoxFuture<Result<Reply<R>, HandlerError>>,
    ) -> Outcome {
        // Only a round's state is bound to its caller: the digest is made then.
        let caller = || caller_digest(ctx.caller.as_deref());
        let state = match retry.request_state {
            None => None,
            Some(token) => {
                let binding = Binding { method, digest: &retry.digest, caller: &caller() };
                Some(self.inner.sealer.open(&token, binding, crate::clock::system_now()).map_err(|e| {
                    tracing::debug!(method, "requestState refused: {e}");
                    ServerFault::InvalidRequestState { reason: e.to_string() }
                })?)
            }
        };
        let responses = retry.input_responses.unwrap_or_default();
        let handler_ctx = RequestContext { input_responses: responses.clone(), state: state.clone(), ..ctx.clone() };
        // Bound first: the `?`'s temporaries would otherwise live across the awaits below.
        let reply = run(responses, state, handler_ctx).await.map_err(ServerFault::Handler)?;
        match reply {
            Reply::Complete(result) => to_value(&result),
            #[cfg(feature = "tasks")]
            Reply::Task(work) => match &self.inner.tasks {
                Some(registry) if method == ToolsCall::NAME && tasks::declares_tasks(&ctx.client_capabilities) => {
                    let owner = ctx.caller.as_ref().map(|c| c.principal().to_owned());
                    // Boxed: inline, this rare path would size every request's future.
                    to_value(&Box::pin(registry.create(work, ctx.client_capabilities.clone(), owner)).await?)
                }
                // No task for this client: the work runs before the answer.
                _ => to_value(&(work.0)(TaskContext::inline()).await.map_err(ServerFault::Handler)?),
            },
            Reply::InputRequired { requests, state } => {
                check_handler_round(&requests, &ctx.client_capabilities).map_err(|fault| match fault {
                    RoundFault::Missing { key, required } => ServerFault::MissingClientCapability { key, required },
                    RoundFault::Broken(error) => ServerFault::Handler(error),
                })?;
                if requests.is_empty() && state.is_none() {
                    return Err(ServerFault::Handler(HandlerError::internal(
                        "handler asked for input without input requests or state",
                    )));
                }
                let mut result = json!({ "resultType": "input_required" });
                if !requests.is_empty() {
                    result["inputRequests"] = to_value(&requests)?;
                }
                // Always seal, so the retry is bound to this request even
                // when the handler keeps no state of its own.
                let binding = Binding { method, digest: &retry.digest, caller: &caller() };
                let sealed = self.inner.sealer.seal(binding, &state.unwrap_or(Value::Null), crate::clock::system_now());
                result[REQUEST_STATE] = json!(sealed);
                Ok(result)
            }
        }
    }
}

/// Puts `resultType: complete` on a final result whose handler left it out.
pub(super) fn with_result_type(mut result: Value) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.entry("resultType").or_insert_with(|| json!("complete"));
    }
    result
}
