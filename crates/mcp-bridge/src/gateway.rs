//! Many servers behind one bridge (`mcp-bridge --config`): an in-process
//! SDK [`Server`] whose tools, prompts and resources are a [`Toolset`]'s,
//! kept in step with its changes (a server's list change, a server lost or
//! back: the client hears `list_changed`), served to the legacy client by
//! the embedded bridge like any server of this process. Calls go to their
//! server one round at a time (the `relay` module), so the input requests of every
//! server reach the client.

use std::collections::HashMap;
use std::sync::Arc;

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Prompt, Resource, Tool};
use mcp_bridge_sdk::server::protect::ScopeTarget;
use mcp_bridge_sdk::server::{PromptRequest, Reply, RequestContext, ResourceRequest, ToolCall};
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::toolset::authorize::ToolScopes;
use mcp_bridge_sdk::toolset::config::ServerEntry;
use mcp_bridge_sdk::toolset::{Reconfigured, Toolset};
use mcp_bridge_sdk::{HandlerError, RequestOptions, Server};

use crate::relay::{self, Failure, Relays, Round, handler_error};

/// The gateway's server, with nothing to offer until [`start`] gives it a
/// toolset's tools, prompts and resources.
pub fn server() -> Server {
    Server::builder(Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION")))
        .offer_tools()
        .offer_prompts()
        .offer_resources()
        .build()
}

/// Starts the servers of `entries` as one toolset (in parallel; returns
/// once each answered or failed its first attempt), gives `server` what
/// they offer, and keeps it in step on `tasks` until they stop.
pub async fn start(server: &Server, entries: Vec<ServerEntry>, tasks: &TaskGroup) -> Gateway {
    let relays = Relays::new();
    let rules = Arc::new(Rules::default());
    rules.set(&entries);
    let toolset = Toolset::builder().configured_each(entries, |name| relays.client_options(name)).start().await;
    let mut mirror = Mirror::default();
    mirror.sync(server, &toolset, &relays, &rules).await;
    let gateway = Gateway { toolset: toolset.clone(), relays: relays.clone(), rules: rules.clone() };
    let (server, mut changes) = (server.clone(), toolset.changes());
    tasks.spawn(async move {
        while changes.changed().await.is_ok() {
            mirror.sync(&server, &toolset, &relays, &rules).await;
        }
    });
    gateway
}

/// The gateway's running servers.
#[derive(Clone)]
pub struct Gateway {
    toolset: Toolset,
    relays: Arc<Relays<CallToolResult>>,
    rules: Arc<Rules>,
}

/// Each server's `authorize` rules, by server name.
#[derive(Default)]
struct Rules(std::sync::RwLock<HashMap<String, ToolScopes>>);

impl Rules {
    /// The rules of `entries`, in place of any before.
    fn set(&self, entries: &[ServerEntry]) {
        let rules = entries.iter().map(|e| (e.name.clone(), e.authorize.clone())).collect();
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = rules;
    }

    /// The scopes the tool `name` of the toolset needs.
    fn of(&self, toolset: &Toolset, name: &str) -> Vec<String> {
        let Some((server, original)) = toolset.origin_of(name) else { return Vec::new() };
        let rules = self.0.read().unwrap_or_else(|e| e.into_inner());
        rules.get(&server).map(|r| r.of(&original)).unwrap_or_default()
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("toolset", &self.toolset).finish_non_exhaustive()
    }
}

impl Gateway {
    /// Makes the servers those of `entries`, a new version of the
    /// configuration file: the servers added, removed or changed start
    /// and stop, the others' sessions go on, and the clients hear
    /// `list_changed` (see [`Toolset::reconfigure`]). What changed.
    pub async fn reload(&self, entries: Vec<ServerEntry>) -> Reconfigured {
        // Before the toolset changes: the tools it lists then take the new rules.
        self.rules.set(&entries);
        self.toolset.reconfigure(entries, |name| self.relays.client_options(name)).await
    }
}

/// What the gateway's server offers now, by name (tools, prompts) or URI
/// (resources).
#[derive(Default)]
struct Mirror {
    /// Each tool with the scopes it needs.
    tools: HashMap<String, (Tool, Vec<String>)>,
    prompts: HashMap<String, Prompt>,
    resources: HashMap<String, Resource>,
}

impl Mirror {
    /// Makes the server offer what the toolset has: the entries gone
    /// removed, the new or changed ones added (each add and remove tells
    /// the listening client).
    async fn sync(&mut self, server: &Server, toolset: &Toolset, relays: &Arc<Relays<CallToolResult>>, rules: &Rules) {
        let tools = toolset.tools().into_iter().map(|tool| {
            let scopes = rules.of(toolset, &tool.name);
            (tool, scopes)
        });
        let (gone, new) = diff(&mut self.tools, tools.collect(), |(t, _)| &t.name);
        for name in gone {
            server.remove_tool(&name).await;
            server.set_required_scopes(ScopeTarget::tool(&name), Vec::<String>::new());
        }
        for (tool, scopes) in new {
            // Before the tool is listed: nobody sees it without them.
            server.set_required_scopes(ScopeTarget::tool(&tool.name), scopes);
            let (toolset, relays, name) = (toolset.clone(), relays.clone(), tool.name.clone());
            let handler = move |call: ToolCall, ctx: RequestContext| {
                let (toolset, relays, name) = (toolset.clone(), relays.clone(), name.clone());
                async move { call_tool(&relays, toolset, name, call, &ctx).await }
            };
            server.add_tool(tool, handler).await;
        }

        let (gone, new) = diff(&mut self.prompts, toolset.prompts(), |p| &p.name);
        for name in gone {
            server.remove_prompt(&name).await;
        }
        for prompt in new {
            let (toolset, name) = (toolset.clone(), prompt.name.clone());
            let handler = move |request: PromptRequest, ctx: RequestContext| {
                let (toolset, name) = (toolset.clone(), name.clone());
                async move {
                    let options = relay::options_for(&ctx);
                    let result = toolset.get_prompt(&name, request.arguments, &options).await;
                    result.map(Reply::Complete).map_err(handler_error)
                }
            };
            server.add_prompt(prompt, handler).await;
        }

        let resources = toolset.resources().into_iter().map(|(_, resource)| resource).collect();
        let (gone, new) = diff(&mut self.resources, resources, |r| &r.uri);
        for uri in gone {
            server.remove_resource(&uri).await;
        }
        for resource in new {
            let toolset = toolset.clone();
            let handler = move |request: ResourceRequest, ctx: RequestContext| {
                let toolset = toolset.clone();
                async move {
                    let result = toolset.read_resource(&request.uri, &relay::options_for(&ctx)).await;
                    result.map(|read| Reply::Complete(read.contents)).map_err(handler_error)
                }
            };
            server.add_resource(resource, handler).await;
        }
    }
}

/// Makes `served` the `wanted` entries (`key` names each); the keys gone
/// and the entries new or changed.
fn diff<T: Clone + PartialEq>(
    served: &mut HashMap<String, T>,
    wanted: Vec<T>,
    key: fn(&T) -> &String,
) -> (Vec<String>, Vec<T>) {
    let wanted: HashMap<String, T> = wanted.into_iter().map(|t| (key(&t).clone(), t)).collect();
    let gone = served.keys().filter(|k| !wanted.contains_key(*k)).cloned().collect();
    let new = wanted.values().filter(|t| served.get(key(t)) != Some(*t)).cloned().collect();
    *served = wanted;
    (gone, new)
}

/// One round of a call of the tool `name` for the client of `ctx`, at
/// the tool's server.
async fn call_tool(
    relays: &Relays<CallToolResult>,
    toolset: Toolset,
    name: String,
    call: ToolCall,
    ctx: &RequestContext,
) -> Result<Reply<CallToolResult>, HandlerError> {
    let server =
        toolset.server_of(&name).ok_or_else(|| HandlerError::invalid_params(format!("Unknown tool: {name}")))?;
    let tool = name.clone();
    let start = move |responses, state, options: RequestOptions| -> Round<CallToolResult> {
        Box::pin(async move { toolset.call_round(&tool, call.arguments, responses, state, &options).await })
    };
    match relays.round(&server, call.state.as_ref(), call.input_responses, ctx, start).await {
        Ok(reply) => Ok(reply),
        Err(Failure::Handler(error)) => Err(error),
        Err(Failure::Upstream(error @ mcp_bridge_sdk::Error::Rpc { .. })) => Err(handler_error(error)),
        // A server lost or failing: the model reads why, the session goes on.
        Err(Failure::Upstream(error)) => Ok(Reply::Complete(CallToolResult::error(format!("{name}: {error}")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> Tool {
        let mut tool = Tool::new(name);
        tool.description = Some(description.into());
        tool
    }

    #[test]
    fn a_sync_adds_what_is_new_or_changed_and_removes_what_is_gone() {
        let mut served = HashMap::new();
        let (gone, new) = diff(&mut served, vec![tool("a", "1"), tool("b", "1")], |t| &t.name);
        assert!(gone.is_empty());
        assert_eq!(new.len(), 2);

        let (gone, new) = diff(&mut served, vec![tool("a", "1"), tool("b", "2"), tool("c", "1")], |t| &t.name);
        assert!(gone.is_empty());
        let mut added: Vec<_> = new.iter().map(|t| t.name.as_str()).collect();
        added.sort_unstable();
        assert_eq!(added, ["b", "c"], "b changed, c is new, a is as it was");

        let (gone, new) = diff(&mut served, vec![tool("c", "1")], |t| &t.name);
        let mut gone = gone;
        gone.sort_unstable();
        assert_eq!(gone, ["a", "b"]);
        assert!(new.is_empty());
        assert_eq!(served.len(), 1);
    }
}
