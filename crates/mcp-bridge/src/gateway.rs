//! Many servers behind one bridge (`mcp-bridge --config`): an in-process
//! SDK [`Server`] whose tools, prompts and resources are a [`Toolset`]'s,
//! kept in step with its changes (a server's list change, a server lost or
//! back: the client hears `list_changed`), served to the legacy client by
//! the embedded bridge like any server of this process. Calls go to their
//! server one round at a time (the `relay` module), so the input requests of every
//! server reach the client. Under progressive discovery the list shows
//! the gateway's own tools to search and call the others (`discovery`).

mod discovery;
mod instances;

use discovery::OWN_TOOLS;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Prompt, Resource, Tool};
use mcp_bridge_sdk::server::http::{Readiness, ReadyStatus};
use mcp_bridge_sdk::server::protect::{Caller, ScopeTarget};
use mcp_bridge_sdk::server::{PromptRequest, Reply, RequestContext, ResourceRequest, ToolCall};
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::telemetry::Observer;
use mcp_bridge_sdk::toolset::authorize::ToolScopes;
use mcp_bridge_sdk::toolset::config::{ConfigFile, Discovery, ServerEntry, Sharing};
use mcp_bridge_sdk::toolset::exposure::Globs;
use mcp_bridge_sdk::toolset::{Reconfigured, Toolset};
use mcp_bridge_sdk::{HandlerError, RequestOptions, Server};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::relay::{self, Failure, Relays, Round, handler_error};

/// The gateway's server, with nothing to offer until [`start`] gives it a
/// toolset's tools, prompts and resources.
pub fn server() -> Server {
    Server::builder(Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION")))
        .offer_tools()
        .offer_prompts()
        .offer_resources()
        // Kong's 3.13.0.1 fix: a list never shows what its caller may not call.
        .list_only_what_callers_may_use()
        .build()
}

/// Starts the servers of `config` as one toolset (in parallel; returns
/// once each answered or failed its first attempt), ending what runs for
/// them with `tasks`; [`Gateway::serve`] then gives a [`server`] what they
/// offer. `observe` makes the observer of each server's requests.
pub async fn start(config: ConfigFile, tasks: &TaskGroup, observe: Option<UpstreamObserver>) -> Gateway {
    let relays = Relays::new();
    let rules = Arc::new(Rules::default());
    rules.set(&config);
    let servers = config.servers;
    let options_for = |name: &str| client_options(&relays, observe.as_ref(), name);
    let toolset = Toolset::builder().configured_each(servers, options_for).start().await;
    let resync = Arc::new(watch::Sender::new(0));
    let host = Arc::new(InstanceHost { relays: relays.clone(), observe: observe.clone() });
    let instances = Arc::new(instances::Instances::new(host));
    let reaped = instances.clone();
    tasks.spawn(async move {
        let mut every = tokio::time::interval(instances::IDLE / 5);
        loop {
            every.tick().await;
            reaped.reap();
        }
    });
    Gateway { toolset, relays, rules, resync, observe, instances }
}

/// Which of the gateway's servers a [`Gateway::serve`]d server shows.
#[derive(Debug, Clone, Default)]
pub enum Shown {
    /// Every one.
    #[default]
    Every,
    /// Those of these names (a daemon's client's choice).
    Only(Arc<BTreeSet<String>>),
}

impl Shown {
    /// Whether what the server `name` offers is shown.
    fn includes(&self, name: &str) -> bool {
        match self {
            Shown::Every => true,
            Shown::Only(names) => names.contains(name),
        }
    }
}

/// Makes the clients of the per-session servers' instances: each with
/// input requests relayed under its own name, observed as its server's.
struct InstanceHost {
    relays: Arc<Relays<CallToolResult>>,
    observe: Option<UpstreamObserver>,
}

impl instances::Host for InstanceHost {
    fn options(&self, server: &str, relay_key: &str) -> mcp_bridge_sdk::ClientOptions {
        let mut options = self.relays.client_options(relay_key);
        options.observer = self.observe.as_ref().map(|observe| observe(server));
        options
    }

    fn ended(&self, relay_key: &str) {
        self.relays.forget(relay_key);
    }
}

/// Makes the observer of the requests sent to the server of a name (see
/// [`mcp_bridge_sdk::telemetry`]).
pub type UpstreamObserver = Arc<dyn Fn(&str) -> Arc<dyn Observer> + Send + Sync>;

/// How the gateway's client of the server `name` speaks, and who hears of
/// its requests.
fn client_options(
    relays: &Relays<CallToolResult>,
    observe: Option<&UpstreamObserver>,
    name: &str,
) -> mcp_bridge_sdk::ClientOptions {
    let mut options = relays.client_options(name);
    options.observer = observe.map(|observe| observe(name));
    options
}

/// The gateway's running servers.
#[derive(Clone)]
pub struct Gateway {
    toolset: Toolset,
    relays: Arc<Relays<CallToolResult>>,
    rules: Arc<Rules>,
    /// Counts the times the served servers' tools must be made the
    /// toolset's again (the rules changed, not the toolset).
    resync: Arc<watch::Sender<u64>>,
    observe: Option<UpstreamObserver>,
    /// The instances of the per-session servers.
    instances: Arc<instances::Instances>,
}

/// What the file says of each server's tools beyond the toolset: who may
/// use them (`authorize`), which are listed (`discovery`, `pinned`).
#[derive(Default)]
struct Rules(std::sync::RwLock<Policy>);

#[derive(Default)]
struct Policy {
    discovery: Discovery,
    /// Each server's `authorize` and `pinned`, by server name.
    servers: HashMap<String, (ToolScopes, Globs)>,
    /// The servers of `"sharing": "per-session"`, by name.
    per_session: HashMap<String, ServerEntry>,
}

impl Rules {
    /// The rules of `config`, in place of any before.
    fn set(&self, config: &ConfigFile) {
        let servers =
            config.servers.iter().map(|e| (e.name.clone(), (e.authorize.clone(), e.pinned.clone()))).collect();
        let per_session = config.servers.iter().filter(|e| e.sharing == Sharing::PerSession);
        let per_session = per_session.map(|e| (e.name.clone(), e.clone())).collect();
        *self.0.write().unwrap_or_else(|e| e.into_inner()) =
            Policy { discovery: config.discovery, servers, per_session };
    }

    fn policy(&self) -> std::sync::RwLockReadGuard<'_, Policy> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the gateway lists its own tools instead of every server's.
    fn progressive(&self) -> bool {
        self.policy().discovery == Discovery::Progressive
    }

    /// Whether `caller` may use the tool `name` of the toolset by the rules
    /// now, wherever the name points now (the scopes registered at the
    /// server's door may lag while servers come and go). Every request may
    /// without a caller (an endpoint without tokens).
    fn grants(&self, toolset: &Toolset, caller: Option<&Caller>, name: &str) -> bool {
        let (needed, _) = self.of(toolset, name);
        caller.is_none_or(|caller| caller.has_scopes(&needed))
    }

    /// The scopes the tool `name` of the toolset needs, and whether it is
    /// listed.
    fn of(&self, toolset: &Toolset, name: &str) -> (Vec<String>, bool) {
        let policy = self.policy();
        let full = policy.discovery == Discovery::Full;
        let Some((server, original)) = toolset.origin_of(name) else { return (Vec::new(), full) };
        match policy.servers.get(&server) {
            Some((authorize, pinned)) => (authorize.of(&original), full || pinned.matches(&original)),
            None => (Vec::new(), full),
        }
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("toolset", &self.toolset).finish_non_exhaustive()
    }
}

impl Gateway {
    /// The server of the tool `name`, when it is `shown` and `caller` may
    /// use it by the rules now.
    fn may_call(&self, shown: &Shown, caller: Option<&Caller>, name: &str) -> Option<String> {
        let server = self.toolset.server_of(name)?;
        (shown.includes(&server) && self.rules.grants(&self.toolset, caller, name)).then_some(server)
    }

    /// Makes the servers those of `config`, a new version of the
    /// configuration file: the servers added, removed or changed start
    /// and stop, the others' sessions go on, and the clients hear
    /// `list_changed` (see [`Toolset::reconfigure`]). What changed.
    pub async fn reload(&self, config: ConfigFile) -> Reconfigured {
        // Before the toolset changes: the tools it lists then take the new rules.
        let before: Vec<String> = self.rules.policy().per_session.keys().cloned().collect();
        self.rules.set(&config);
        // Then a per-session server removed, changed or shared from now on
        // ends its instances; the next call starts one as the file says.
        for name in before {
            let now = self.rules.policy().per_session.get(&name).cloned();
            self.instances.end_stale(&name, now.as_ref());
        }
        let changed = self
            .toolset
            .reconfigure(config.servers, |name| client_options(&self.relays, self.observe.as_ref(), name))
            .await;
        self.resync.send_modify(|n| *n += 1);
        changed
    }

    /// Makes `server` offer the tools, prompts and resources of the
    /// servers `shown`, and keeps it in step on `tasks` until they stop
    /// (a server's list change, a server lost or back, a reload: its
    /// clients hear `list_changed`). Returns once it offers them.
    pub async fn serve(&self, server: &Server, shown: Shown, tasks: &TaskGroup) {
        // Before the first sync: a change during it is seen after it.
        let (mut changes, mut resync) = (self.toolset.changes(), self.resync.subscribe());
        let mut mirror = Mirror { shown, ..Mirror::default() };
        mirror.sync(server, self).await;
        let (server, mirrored) = (server.clone(), self.clone());
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    changed = changes.changed() => if changed.is_err() { break },
                    changed = resync.changed() => if changed.is_err() { break },
                }
                mirror.sync(&server, &mirrored).await;
            }
        });
    }

    /// Each running server's state (a per-session server's: its shared
    /// instance's).
    pub fn servers(&self) -> Vec<mcp_bridge_sdk::toolset::ServerState> {
        self.toolset.servers()
    }

    /// Whether the servers are connected (`/readyz`): ready when every one
    /// is, degraded when some are, not ready when none; each server's name,
    /// whether it is available and how many tools it gives. Why one is not
    /// stays in the log: the probe answers without a token.
    pub fn readiness(&self) -> Readiness {
        let servers = self.toolset.servers();
        let available = servers.iter().filter(|s| s.available).count();
        let status = match available {
            n if n == servers.len() => ReadyStatus::Ready,
            0 => ReadyStatus::NotReady,
            _ => ReadyStatus::Degraded,
        };
        let per_session: Vec<String> = self.rules.policy().per_session.keys().cloned().collect();
        let details: Vec<Value> = servers
            .iter()
            .map(|s| {
                let mut details = json!({"name": s.name, "available": s.available, "tools": s.tools});
                if per_session.contains(&s.name) {
                    details["instances"] = json!(self.instances.count(&s.name));
                }
                details
            })
            .collect();
        Readiness::new(status, json!({"servers": details}))
    }
}

/// What the gateway's server offers now, by name (tools, prompts) or URI
/// (resources).
#[derive(Default)]
struct Mirror {
    /// Each tool with the scopes it needs and whether it is listed.
    tools: HashMap<String, (Tool, Vec<String>, bool)>,
    prompts: HashMap<String, Prompt>,
    resources: HashMap<String, Resource>,
    /// Whether the gateway's own tools (progressive discovery) are offered.
    own_tools: bool,
    /// Whose entries are offered.
    shown: Shown,
}

impl Mirror {
    /// Makes the server offer what the toolset has: the entries gone
    /// removed, the new or changed ones added (each add and remove tells
    /// the listening client).
    async fn sync(&mut self, server: &Server, gateway: &Gateway) {
        // The gateway's own tools and a server's of the same name never
        // both go: the ones leaving are removed before the others come.
        if gateway.rules.progressive() {
            self.sync_tools(server, gateway).await;
            self.sync_own_tools(server, gateway).await;
        } else {
            self.sync_own_tools(server, gateway).await;
            self.sync_tools(server, gateway).await;
        }
        let toolset = &gateway.toolset;
        let shown = |origin: Option<(String, String)>| origin.is_some_and(|(server, _)| self.shown.includes(&server));
        let prompts = toolset.prompts().into_iter().filter(|p| shown(toolset.prompt_origin(&p.name))).collect();
        let (gone, new) = diff(&mut self.prompts, prompts, |p| &p.name);
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

        let resources = toolset.resources().into_iter().filter(|(server, _)| self.shown.includes(server));
        let resources = resources.map(|(_, resource)| resource).collect();
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

impl Mirror {
    /// Makes the server's tools the toolset's, each with the scopes the
    /// rules give it and listed or not as discovery says; under progressive
    /// discovery a server's tool named as one of the gateway's own is left
    /// out.
    async fn sync_tools(&mut self, server: &Server, gateway: &Gateway) {
        let (toolset, rules) = (&gateway.toolset, &gateway.rules);
        let progressive = rules.progressive();
        let tools = toolset.tools().into_iter().filter_map(|tool| {
            if !toolset.server_of(&tool.name).is_some_and(|server| self.shown.includes(&server)) {
                return None;
            }
            if progressive && OWN_TOOLS.contains(&tool.name.as_str()) {
                tracing::warn!("the tool {:?} is left out: the gateway's own has its name", tool.name);
                return None;
            }
            let (scopes, listed) = rules.of(toolset, &tool.name);
            Some((tool, scopes, listed))
        });
        let (gone, new) = diff(&mut self.tools, tools.collect(), |(t, _, _)| &t.name);
        for name in gone {
            server.remove_tool(&name).await;
            server.set_required_scopes(ScopeTarget::tool(&name), Vec::<String>::new());
            server.set_tool_listed(&name, true).await;
        }
        for (tool, scopes, listed) in new {
            // Before the tool is added: nobody sees it without them.
            server.set_required_scopes(ScopeTarget::tool(&tool.name), scopes);
            server.set_tool_listed(&tool.name, listed).await;
            let (called, name, shown) = (gateway.clone(), tool.name.clone(), self.shown.clone());
            let handler = move |call: ToolCall, ctx: RequestContext| {
                let (gateway, name, shown) = (called.clone(), name.clone(), shown.clone());
                async move { call_tool(&gateway, &shown, name, call, &ctx).await }
            };
            server.add_tool(tool, handler).await;
        }
    }

    /// Offers the gateway's own tools while discovery is progressive, and
    /// only then.
    async fn sync_own_tools(&mut self, server: &Server, gateway: &Gateway) {
        let wanted = gateway.rules.progressive();
        if wanted == self.own_tools {
            return;
        }
        self.own_tools = wanted;
        let [search, call] = discovery::own_tools();
        if !wanted {
            server.remove_tool(&search.name).await;
            server.remove_tool(&call.name).await;
            return;
        }
        let (searched, shown) = (gateway.clone(), self.shown.clone());
        let search_handler = move |call: ToolCall, ctx: RequestContext| {
            let found = search_tools(&searched, &shown, &call, &ctx);
            async move { found }
        };
        server.add_tool(search, search_handler).await;
        let (called, shown) = (gateway.clone(), self.shown.clone());
        let call_handler = move |call: ToolCall, ctx: RequestContext| {
            let (gateway, shown) = (called.clone(), shown.clone());
            async move { call_by_name(&gateway, &shown, call, &ctx).await }
        };
        server.add_tool(call, call_handler).await;
    }
}

/// `search_tools`: the tools shown that the caller of `ctx` may use that
/// match the query best.
fn search_tools(
    gateway: &Gateway,
    shown: &Shown,
    call: &ToolCall,
    ctx: &RequestContext,
) -> Result<Reply<CallToolResult>, HandlerError> {
    let query = call.arguments.get("query").and_then(Value::as_str);
    let query = query.ok_or_else(|| HandlerError::invalid_params("search_tools needs a \"query\" (words)"))?;
    let limit = call.arguments.get("limit").and_then(Value::as_u64);
    let (toolset, caller) = (&gateway.toolset, ctx.caller.as_deref());
    let usable: Vec<Tool> = toolset
        .tools()
        .into_iter()
        .filter(|t| !OWN_TOOLS.contains(&t.name.as_str()) && gateway.may_call(shown, caller, &t.name).is_some())
        .collect();
    let found: Vec<Value> = discovery::search(&usable, query, limit).into_iter().map(discovery::found).collect();
    Ok(Reply::Complete(CallToolResult::structured(json!({"tools": found}))))
}

/// `call_tool`: the call of the tool it names, as if called by its name;
/// a tool the caller may not use is as unknown as one that does not exist.
async fn call_by_name(
    gateway: &Gateway,
    shown: &Shown,
    mut call: ToolCall,
    ctx: &RequestContext,
) -> Result<Reply<CallToolResult>, HandlerError> {
    let name = call.arguments.get("name").and_then(Value::as_str).map(str::to_owned);
    let name = name.ok_or_else(|| HandlerError::invalid_params("call_tool needs the \"name\" of a tool"))?;
    call.arguments = match call.arguments.remove("arguments") {
        Some(Value::Object(arguments)) => arguments,
        None | Some(Value::Null) => Map::new(),
        Some(_) => return Err(HandlerError::invalid_params("call_tool's \"arguments\" must be an object")),
    };
    call.name = name.clone();
    call_tool(gateway, shown, name, call, ctx).await
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
    gateway: &Gateway,
    shown: &Shown,
    name: String,
    call: ToolCall,
    ctx: &RequestContext,
) -> Result<Reply<CallToolResult>, HandlerError> {
    let (toolset, relays) = (gateway.toolset.clone(), &gateway.relays);
    // A tool the caller may not use is as unknown as one that does not exist.
    let server = gateway
        .may_call(shown, ctx.caller.as_deref(), &name)
        .ok_or_else(|| HandlerError::invalid_params(format!("Unknown tool: {name}")))?;
    // A per-session server's call goes to the caller's instance, whose
    // input requests the relays know under a name of its own.
    let per_session = gateway.rules.policy().per_session.get(&server).cloned();
    let holder = instances::Holder::of(ctx);
    let relay_key = if per_session.is_some() { holder.relay_key(&server) } else { server.clone() };
    let (instances, tool) = (gateway.instances.clone(), name.clone());
    let start = move |responses, state, options: RequestOptions| -> Round<CallToolResult> {
        Box::pin(async move {
            let Some(entry) = per_session else {
                return toolset.call_round(&tool, call.arguments, responses, state, &options).await;
            };
            let original = toolset.origin_of(&tool).map(|(_, original)| original).unwrap_or(tool);
            // Held until the round ends: an instance in use is never ended.
            let lease = instances.lease(&entry, &holder)?;
            lease.client.call_tool_round(&original, call.arguments, responses, state, &options).await
        })
    };
    match relays.round(&relay_key, call.state.as_ref(), call.input_responses, ctx, start).await {
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
