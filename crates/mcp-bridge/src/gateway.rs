//! Many servers behind one bridge (`mcp-bridge --config`): an in-process
//! SDK [`Server`] whose tools are a [`Toolset`]'s, kept in step with its
//! changes (a server's list change, a server lost or back: the client
//! hears `list_changed`), served to the legacy client by the embedded
//! bridge like any server of this process. A call goes to its server one
//! round at a time: a server's `InputRequiredResult` becomes this
//! server's, its `requestState` sealed inside this server's own state, so
//! the client's answers reach the server that asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Outcome, Tool};
use mcp_bridge_sdk::server::{Reply, RequestContext, ToolCall};
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::toolset::Toolset;
use mcp_bridge_sdk::{HandlerError, RequestOptions, Server};
use serde_json::{Value, json};

/// The key of the upstream's `requestState` in this server's state.
const UPSTREAM_STATE: &str = "upstream";

/// The gateway's server, without tools until [`follow`] gives it a
/// toolset's.
pub fn server() -> Server {
    Server::builder(Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION"))).offer_tools().build()
}

/// Gives `server` the tools of `toolset` now, and keeps them in step on
/// `tasks` until they stop.
pub async fn follow(server: &Server, toolset: Toolset, tasks: &TaskGroup) {
    let served: Arc<Mutex<HashMap<String, Tool>>> = Arc::default();
    sync(server, &toolset, &served).await;
    let (follower, mut changes) = (server.clone(), toolset.changes());
    tasks.spawn(async move {
        while changes.changed().await.is_ok() {
            sync(&follower, &toolset, &served).await;
        }
    });
}

/// Makes the server's tools the toolset's: the ones gone removed, the new
/// or changed ones added (each add and remove tells the listening client).
async fn sync(server: &Server, toolset: &Toolset, served: &Mutex<HashMap<String, Tool>>) {
    let wanted: HashMap<String, Tool> = toolset.tools().into_iter().map(|t| (t.name.clone(), t)).collect();
    let (gone, new): (Vec<String>, Vec<Tool>) = {
        let mut served = served.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<String> = served.keys().filter(|name| !wanted.contains_key(*name)).cloned().collect();
        let new: Vec<Tool> = wanted.values().filter(|t| served.get(&t.name) != Some(*t)).cloned().collect();
        served.clone_from(&wanted);
        (gone, new)
    };
    for name in gone {
        server.remove_tool(&name).await;
    }
    for tool in new {
        let (toolset, name) = (toolset.clone(), tool.name.clone());
        server
            .add_tool(tool, move |call: ToolCall, ctx: RequestContext| {
                let (toolset, name) = (toolset.clone(), name.clone());
                async move { relay(&toolset, &name, call, &ctx).await }
            })
            .await;
    }
}

/// One round of a call at the tool's server.
async fn relay(
    toolset: &Toolset,
    name: &str,
    call: ToolCall,
    ctx: &RequestContext,
) -> Result<Reply<CallToolResult>, HandlerError> {
    let upstream_state = call.state.as_ref().and_then(|s| s.get(UPSTREAM_STATE)).and_then(Value::as_str);
    let responses = (!call.input_responses.is_empty()).then_some(call.input_responses);
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions::default().with_cancel(cancel.clone());
    let round = toolset.call_round(name, call.arguments, responses, upstream_state.map(str::to_owned), &options);
    let outcome = tokio::select! {
        outcome = round => outcome,
        () = ctx.cancelled() => {
            cancel.cancel();
            return Err(HandlerError::internal("the call was cancelled"));
        }
    };
    match outcome {
        Ok(Outcome::Complete(result)) => Ok(Reply::Complete(result)),
        Ok(Outcome::InputRequired(asked)) => Ok(Reply::InputRequired {
            requests: asked.input_requests.unwrap_or_default(),
            state: Some(json!({ UPSTREAM_STATE: asked.request_state })),
        }),
        Err(mcp_bridge_sdk::Error::Rpc { error }) => {
            Err(HandlerError { code: error.code, message: error.message, data: error.data })
        }
        // A server lost or failing: the model reads why, the session goes on.
        Err(error) => Ok(Reply::Complete(CallToolResult::error(format!("{name}: {error}")))),
    }
}
