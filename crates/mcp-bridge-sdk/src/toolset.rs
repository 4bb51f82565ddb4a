//! Many MCP servers as one [`Toolset`]: their tools (and prompts and
//! resources) in one list, each tool named `<server>__<tool>` ([`names`]),
//! each call routed to its server. Servers start in parallel; a server's
//! list change refreshes its part; a server that fails is left out (its
//! tools vanish, the others go on) and connected again with back-off. The
//! tools come out in the shapes LLM APIs take too ([`Toolset::openai_tools`],
//! [`Toolset::anthropic_tools`]). Input requests of a server are answered
//! by the [`InputHooks`](crate::client::InputHooks) of the client it was
//! given.
//!
//! ```no_run
//! # async fn run() -> mcp_bridge_sdk::Result<()> {
//! use mcp_bridge_sdk::toolset::Toolset;
//! use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
//! use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
//!
//! let toolset = Toolset::builder()
//!     .server("notes", || async {
//!         let transport = spawn(StdioCommand::new("mcp-example-server"))?;
//!         Ok(Client::new(ClientOptions::new("my-agent", "1.0"), transport))
//!     })
//!     .start()
//!     .await;
//! for tool in toolset.tools() {
//!     println!("{}", tool.name); // notes__echo, ...
//! }
//! let _result = toolset.call("notes__echo", serde_json::json!({"text": "hi"}), &RequestOptions::default()).await?;
//! # Ok(()) }
//! ```

pub mod authorize;
mod catalog;
pub mod config;
mod export;
pub mod exposure;
mod member;
pub mod names;
mod reload;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CallToolResult, GetPromptResult, InputResponses, Outcome, Prompt, ReadResourceResult, Resource, Tool,
};
use mcp_bridge_protocol::{ErrorObject, error_code};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::task_group::TaskGroup;
use crate::{BoxFuture, Client, RequestOptions};
pub use catalog::Collision;
use catalog::{Catalog, Lists};
use exposure::Exposure;
use member::{Member, check, run_member};
pub use reload::Reconfigured;

type ConnectFn = dyn Fn() -> BoxFuture<Result<Client>> + Send + Sync;

/// How a toolset treats its servers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolsetOptions {
    /// The wait before the first new attempt at a server that failed; it
    /// doubles with each failed attempt.
    pub first_retry: Duration,
    /// The longest wait between attempts.
    pub max_retry: Duration,
    /// How long [`ToolsetBuilder::start`] waits for the servers' first
    /// attempts; a server slower than that joins when it is ready.
    pub start_timeout: Duration,
}

impl Default for ToolsetOptions {
    /// A second, doubling up to a minute; 30 s for the start.
    fn default() -> Self {
        ToolsetOptions {
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(60),
            start_timeout: Duration::from_secs(30),
        }
    }
}

crate::setters::with_setters! {
    ToolsetOptions {
        value with_first_retry => first_retry: Duration,
        value with_max_retry => max_retry: Duration,
        value with_start_timeout => start_timeout: Duration,
    }
}

/// The servers of a toolset to be, each with the way to connect to it.
#[must_use]
pub struct ToolsetBuilder {
    servers: Vec<(String, Arc<ConnectFn>)>,
    exposures: HashMap<String, Exposure>,
    /// The configuration file's entries among the servers, for
    /// [`Toolset::reconfigure`].
    configured: Vec<config::ServerEntry>,
    options: ToolsetOptions,
}

impl std::fmt::Debug for ToolsetBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.servers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ToolsetBuilder").field("servers", &names).field("options", &self.options).finish()
    }
}

impl ToolsetBuilder {
    /// Adds the server `name`, reached through the clients `connect` makes:
    /// one at the start, a new one after the server failed (a child process
    /// started again, a new HTTP connection).
    pub fn server<F, Fut>(mut self, name: impl Into<String>, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Client>> + Send + 'static,
    {
        self.servers.push((name.into(), Arc::new(move || Box::pin(connect()))));
        self
    }

    /// Adds the server `name` behind `client`, used for as long as it
    /// lives (a failed one is asked again, not replaced).
    pub fn client(self, name: impl Into<String>, client: Client) -> Self {
        self.server(name, move || {
            let client = client.clone();
            async move { Ok(client) }
        })
    }

    /// What the toolset shows of the server `name` (all of it, prefixed,
    /// by default): filters, renames, the prefix mode.
    pub fn exposure(mut self, name: impl Into<String>, exposure: Exposure) -> Self {
        self.exposures.insert(name.into(), exposure);
        self
    }

    /// Other options than [`ToolsetOptions::default`].
    pub fn options(mut self, options: ToolsetOptions) -> Self {
        self.options = options;
        self
    }

    /// Connects to every server in parallel and returns once each has
    /// answered or failed (or after [`ToolsetOptions::start_timeout`]); the
    /// servers that failed are tried again in the background.
    pub async fn start(self) -> Toolset {
        let toolset = Toolset {
            shared: Arc::new(Shared {
                view: RwLock::new(View::default()),
                configured: tokio::sync::Mutex::new(self.configured),
                changed: tokio::sync::watch::channel(0).0,
                options: self.options,
            }),
            owner: Arc::new(Owner { tasks: TaskGroup::default() }),
        };
        let mut exposures = self.exposures;
        let members = self
            .servers
            .into_iter()
            .map(|(name, connect)| {
                let exposure = exposures.remove(&name).unwrap_or_default();
                Member::new(name, exposure, connect)
            })
            .collect();
        toolset.start_members(members).await;
        toolset
    }
}

/// Several MCP servers as one set of tools, prompts and resources. Cheap
/// to clone: clones share the servers; when the last is dropped (or at
/// [`Toolset::close`]) its background work ends.
#[derive(Clone)]
pub struct Toolset {
    shared: Arc<Shared>,
    owner: Arc<Owner>,
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolset").field("servers", &self.servers()).finish()
    }
}

/// Ends the background work when the last [`Toolset`] handle goes.
struct Owner {
    tasks: TaskGroup,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

/// The state of one server of a toolset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerState {
    /// Its name in the toolset.
    pub name: String,
    /// Whether its tools are in the toolset now.
    pub available: bool,
    /// How many tools it gives.
    pub tools: usize,
    /// Why it is not available, when it is not.
    pub problem: Option<String>,
    /// The process id of its program, while it runs one (a stdio server).
    pub process_id: Option<u32>,
}

struct Shared {
    view: RwLock<View>,
    /// The configuration's entries the servers were made of; held across a
    /// [`Toolset::reconfigure`], so that two run one after the other.
    configured: tokio::sync::Mutex<Vec<config::ServerEntry>>,
    /// Counts the changes of the merged lists.
    changed: tokio::sync::watch::Sender<u64>,
    options: ToolsetOptions,
}

/// The servers now, in the order they were added, and their merged lists
/// (whose routes are indices into `members`).
#[derive(Default)]
struct View {
    members: Vec<Arc<Member>>,
    catalog: Catalog,
}

/// The process id of `client`'s program, when it runs one.
fn process_id(client: &Client) -> Option<u32> {
    #[cfg(feature = "stdio")]
    return client.process().map(|p| p.id());
    #[cfg(not(feature = "stdio"))]
    {
        let _ = client;
        None
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Toolset {
    /// A toolset to be: add its servers, then start it.
    pub fn builder() -> ToolsetBuilder {
        ToolsetBuilder {
            servers: Vec::new(),
            exposures: HashMap::new(),
            configured: Vec::new(),
            options: ToolsetOptions::default(),
        }
    }

    /// The tools of every available server, named `<server>__<tool>`.
    pub fn tools(&self) -> Vec<Tool> {
        self.shared.view().catalog.tools.clone()
    }

    /// The tools as OpenAI function tools (Chat Completions `tools`).
    pub fn openai_tools(&self) -> Vec<Value> {
        self.tools().iter().map(export::openai).collect()
    }

    /// The tools as Anthropic tools (Messages `tools`).
    pub fn anthropic_tools(&self) -> Vec<Value> {
        self.tools().iter().map(export::anthropic).collect()
    }

    /// The prompts of every available server, named `<server>__<prompt>`.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.shared.view().catalog.prompts.clone()
    }

    /// The resources of every available server, with their own URIs, and
    /// the server each belongs to.
    pub fn resources(&self) -> Vec<(String, Resource)> {
        let view = self.shared.view();
        let owner = |r: &Resource| {
            let index = *view.catalog.resource_owners.get(&r.uri)?;
            view.members.get(index).map(|m| m.name.clone())
        };
        view.catalog.resources.iter().map(|r| (owner(r).unwrap_or_default(), r.clone())).collect()
    }

    /// The name of the server that gives the tool `name` (as
    /// [`Toolset::tools`] names it), while it is available.
    pub fn server_of(&self, name: &str) -> Option<String> {
        self.origin_of(name).map(|(server, _)| server)
    }

    /// The server that gives the tool `name` (as [`Toolset::tools`] names
    /// it) and the tool's own name there, while it is available.
    pub fn origin_of(&self, name: &str) -> Option<(String, String)> {
        let view = self.shared.view();
        let (index, original) = view.catalog.tool_routes.get(name)?;
        Some((view.members.get(*index)?.name.clone(), original.clone()))
    }

    /// The server that gives the prompt `name` (as [`Toolset::prompts`]
    /// names it) and the prompt's own name there, while it is available.
    pub fn prompt_origin(&self, name: &str) -> Option<(String, String)> {
        let view = self.shared.view();
        let (index, original) = view.catalog.prompt_routes.get(name)?;
        Some((view.members.get(*index)?.name.clone(), original.clone()))
    }

    /// The tool and prompt names two servers show without a prefix now
    /// (see [`Prefix::Never`](exposure::Prefix::Never)): the second's entry
    /// is left out until one of them changes.
    pub fn collisions(&self) -> Vec<Collision> {
        self.shared.view().catalog.collisions.clone()
    }

    /// Each server's state, in the order they were added.
    pub fn servers(&self) -> Vec<ServerState> {
        self.shared
            .view()
            .members
            .iter()
            .map(|member| {
                let slot = lock(&member.slot);
                ServerState {
                    name: member.name.clone(),
                    available: slot.client.is_some(),
                    tools: slot.lists.tools.len(),
                    problem: slot.problem.clone(),
                    process_id: slot.client.as_ref().and_then(process_id),
                }
            })
            .collect()
    }

    /// Changes each time the merged lists change (a server's list change,
    /// a server lost or back).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Calls the tool `name` (as [`Toolset::tools`] names it) on its server.
    ///
    /// # Errors
    /// [`Error::Rpc`] with -32602 for a tool the toolset does not have (now);
    /// the server's errors as [`Client::call_tool`] gives them. A server
    /// found gone is left out until it is back.
    pub async fn call(&self, name: &str, arguments: Value, options: &RequestOptions) -> Result<CallToolResult> {
        let (member, original, client) = self.shared.route("tool", name, |c| c.tool_routes.get(name).cloned())?;
        let outcome = client.call_tool(&original, arguments, options).await;
        check(&member, outcome)
    }

    /// [`Toolset::call`] one round at a time, for a gateway that relays the
    /// server's input requests itself: `input_responses` and `request_state`
    /// are the previous round's answers and the server's state; an
    /// `InputRequiredResult` comes back as it is.
    ///
    /// # Errors
    /// As [`Toolset::call`].
    pub async fn call_round(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        input_responses: Option<InputResponses>,
        request_state: Option<String>,
        options: &RequestOptions,
    ) -> Result<Outcome<CallToolResult>> {
        let (member, original, client) = self.shared.route("tool", name, |c| c.tool_routes.get(name).cloned())?;
        let outcome = client.call_tool_round(&original, arguments, input_responses, request_state, options).await;
        check(&member, outcome)
    }

    /// Gets the prompt `name` (as [`Toolset::prompts`] names it) from its server.
    ///
    /// # Errors
    /// As [`Toolset::call`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult> {
        let (member, original, client) = self.shared.route("prompt", name, |c| c.prompt_routes.get(name).cloned())?;
        let outcome = client.get_prompt(&original, arguments, options).await;
        check(&member, outcome)
    }

    /// Reads the resource `uri` from the server that lists it.
    ///
    /// # Errors
    /// As [`Toolset::call`].
    pub async fn read_resource(&self, uri: &str, options: &RequestOptions) -> Result<ReadResourceResult> {
        let owner = |c: &Catalog| c.resource_owners.get(uri).map(|&i| (i, uri.to_owned()));
        let (member, _, client) = self.shared.route("resource", uri, owner)?;
        let outcome = client.read_resource(uri, options).await;
        check(&member, outcome)
    }

    /// Adds the server `name` (see [`ToolsetBuilder::server`]) to the
    /// running toolset, in place of a server of that name if there is one;
    /// returns once it answered or failed its first attempt (or after
    /// [`ToolsetOptions::start_timeout`]).
    pub async fn add_server<F, Fut>(&self, name: impl Into<String>, exposure: Exposure, connect: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Client>> + Send + 'static,
    {
        let connect: Arc<ConnectFn> = Arc::new(move || Box::pin(connect()));
        self.start_members(vec![Member::new(name.into(), exposure, connect)]).await;
    }

    /// Takes the server `name` out of the toolset and closes its client;
    /// whether there was one.
    pub async fn remove_server(&self, name: &str) -> bool {
        let removed = self.shared.change_members(|members| {
            let position = members.iter().position(|m| m.name == name);
            position.map(|i| members.remove(i))
        });
        let Some(member) = removed else { return false };
        member.retire().await;
        true
    }

    /// Changes what the toolset shows of the server `name` (its filters,
    /// renames, prefix mode) without connecting to it again; whether there
    /// is such a server.
    pub fn set_exposure(&self, name: &str, exposure: Exposure) -> bool {
        let Some(member) = self.shared.member(name) else { return false };
        *lock(&member.exposure) = exposure;
        self.shared.rebuild();
        true
    }

    /// Puts `members` in (each in place of the server of its name, which
    /// is retired), starts their lives in parallel and waits for each's
    /// first attempt, at most [`ToolsetOptions::start_timeout`].
    async fn start_members(&self, members: Vec<Arc<Member>>) {
        let replaced = self.shared.change_members(|current| {
            let mut replaced = Vec::new();
            for member in &members {
                match current.iter_mut().find(|m| m.name == member.name) {
                    Some(old) => replaced.push(std::mem::replace(old, member.clone())),
                    None => current.push(member.clone()),
                }
            }
            replaced
        });
        for old in replaced {
            old.retire().await;
        }
        let (settled_tx, mut settled) = tokio::sync::mpsc::channel(members.len().max(1));
        for member in &members {
            self.owner.tasks.spawn(run_member(self.shared.clone(), member.clone(), settled_tx.clone()));
        }
        drop(settled_tx);
        let all = async {
            for _ in 0..members.len() {
                settled.recv().await;
            }
        };
        if tokio::time::timeout(self.shared.options.start_timeout, all).await.is_err() {
            tracing::warn!(target: "mcp_toolset", "some servers did not answer within the start time; they join when ready");
        }
    }

    /// Ends the background work and closes every server's client.
    pub async fn close(&self) {
        self.owner.tasks.stop(crate::limits::CLOSE_GRACE).await;
        let members = self.shared.view().members.clone();
        for member in members {
            member.retire().await;
        }
    }
}

fn unknown(what: &str, name: &str) -> Error {
    Error::Rpc { error: ErrorObject::new(error_code::INVALID_PARAMS, format!("Unknown {what}: {name}")) }
}

impl Shared {
    /// The servers and their merged lists now.
    fn view(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_view(&self) -> std::sync::RwLockWriteGuard<'_, View> {
        self.view.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The server `name`, while it is in the toolset.
    fn member(&self, name: &str) -> Option<Arc<Member>> {
        self.view().members.iter().find(|m| m.name == name).cloned()
    }

    /// Where the `what` called `name` goes (`find` reads the catalog): its
    /// server, its own name there, and the server's client.
    fn route(
        &self,
        what: &str,
        name: &str,
        find: impl FnOnce(&Catalog) -> Option<(usize, String)>,
    ) -> Result<(Arc<Member>, String, Client)> {
        let found = {
            let view = self.view();
            find(&view.catalog).and_then(|(index, original)| Some((view.members.get(index)?.clone(), original)))
        };
        let (member, original) = found.ok_or_else(|| unknown(what, name))?;
        let client = lock(&member.slot).client.clone().ok_or_else(|| unknown(what, name))?;
        Ok((member, original, client))
    }

    /// Puts a server's lists in (its client `Some`) or takes it out; a
    /// server no longer in the toolset changes nothing.
    fn install(&self, member: &Member, client: Option<Client>, lists: Lists, problem: Option<String>) {
        {
            let mut slot = lock(&member.slot);
            if member.removed.is_cancelled() {
                return;
            }
            slot.client = client;
            slot.lists = lists;
            slot.problem = problem;
        }
        self.rebuild();
    }

    /// Merges the lists of the available servers again; a new collision
    /// of names is logged.
    fn rebuild(&self) {
        self.change_members(|_| ());
    }

    /// Changes the servers with `change`, and merges their lists again
    /// under the same lock: no route ever points by an index of the
    /// servers before.
    fn change_members<R>(&self, change: impl FnOnce(&mut Vec<Arc<Member>>) -> R) -> R {
        let mut view = self.write_view();
        let changed = change(&mut view.members);
        let available: Vec<(usize, Lists)> = view
            .members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let slot = lock(&m.slot);
                slot.client.as_ref().map(|_| (i, slot.lists.clone()))
            })
            .collect();
        let exposures: Vec<Exposure> = view.members.iter().map(|m| lock(&m.exposure).clone()).collect();
        let servers: Vec<_> = view.members.iter().zip(&exposures).map(|(m, e)| (m.name.as_str(), e)).collect();
        let catalog = Catalog::of(&servers, &available);
        for collision in catalog.collisions.iter().filter(|c| !view.catalog.collisions.contains(c)) {
            tracing::error!(target: "mcp_toolset", "{collision}");
        }
        view.catalog = catalog;
        drop(view);
        self.changed.send_modify(|n| *n += 1);
        changed
    }
}
