//! The server: registered tools, prompts, resources and completion, served
//! on any number of connections (stdio, the in-memory link).
//!
//! ```text
//!  connection ──request──▶ Connection::admit ──task──▶ Server::dispatch
//!       ▲                   (in-flight bound,            │ _meta checks, params,
//!       │                    cancellation)               │ handler, requestState
//!       └──────── one writer per connection ◀────────────┘
//! ```
//!
//! Transports: [`Server::serve_stream`] (stdio, sockets), [`http`]
//! (Streamable HTTP), and the in-memory link.
//!
//! The server answers `server/discover` itself, checks every request's
//! protocol version and `_meta`, serves only the capabilities it declares,
//! seals the `requestState` of multi round-trip handlers, and runs the
//! `subscriptions/listen` streams.

pub(crate) mod accept;
mod builder;
pub mod bus;
mod connection;
mod context;
mod dispatch;
mod forward;
mod frames;
#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
mod handler_headers;
#[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
pub mod http;
#[cfg(feature = "legacy")]
pub mod legacy;
pub mod protect;
mod request_state;
pub(crate) mod shares;
#[cfg(feature = "skills")]
mod skills;
pub mod state_keys;
mod stdio;
mod subscriptions;
#[cfg(feature = "tasks")]
mod tasks;
#[cfg(feature = "schemars")]
mod typed;
mod uri_template;
#[cfg(feature = "websocket")]
mod websocket;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, RwLock};

use mcp_bridge_protocol::types::{
    CacheScope, CallToolResult, CompleteRequestParams, Completion, GetPromptResult, Implementation, InputRequests,
    InputResponses, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde_json::{Map, Value};

pub use builder::{BuildError, ServerBuilder};
pub use bus::{ChangeBus, InProcessBus};
pub(crate) use connection::Connection;
pub use connection::RequestOrigin;
pub use context::RequestContext;
pub use forward::{Forwarded, ListenStream, StreamFull};
pub use request_state::DEFAULT_STATE_TTL;
#[cfg(feature = "skills")]
pub use skills::SkillPackage;
pub use state_keys::{StateKey, StateKeys};
pub use subscriptions::ChangeEvent;
#[cfg(all(feature = "tasks", feature = "redis"))]
pub use tasks::redis::{RedisTaskStore, RedisTaskStoreError};
#[cfg(feature = "tasks")]
pub use tasks::{TaskContext, TaskOptions, TaskSupport, TaskWork};
#[cfg(feature = "schemars")]
pub use typed::{IntoPromptResult, IntoToolResult, Json, NoArguments, schema_for};

use crate::error::HandlerError;
use crate::limits::ServerLimits;

use crate::BoxFuture;

/// What a handler of a method that may ask for input returns.
#[derive(Debug)]
pub enum Reply<R> {
    /// The final result.
    Complete(R),
    /// The handler needs input first. The server checks that the client
    /// declared each kind, seals `state` into `requestState`, and gives it
    /// back to the handler, verified, when the client retries.
    InputRequired {
        /// What to ask the client for, by key.
        requests: InputRequests,
        /// What the handler wants back on the retry.
        state: Option<Value>,
    },
    /// Work that may run as a task (the Tasks extension; see
    /// [`Reply::task`]). Only `tools/call` makes tasks; elsewhere the work
    /// runs before the answer.
    #[cfg(feature = "tasks")]
    Task(TaskWork<R>),
}

/// A `tools/call` as its handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, already checked against the tool's input schema.
    pub arguments: Map<String, Value>,
    /// Answers to the previous round's input requests, by key.
    pub input_responses: InputResponses,
    /// The state the handler returned with its input requests, verified.
    pub state: Option<Value>,
}

/// A `prompts/get` as its handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PromptRequest {
    /// The prompt's name.
    pub name: String,
    /// The argument values.
    pub arguments: Map<String, Value>,
    /// Answers to the previous round's input requests, by key.
    pub input_responses: InputResponses,
    /// The state the handler returned with its input requests, verified.
    pub state: Option<Value>,
}

/// A `resources/read` as its handler sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI read.
    pub uri: String,
    /// The variables of the matching resource template (empty for a
    /// plain resource).
    pub variables: BTreeMap<String, String>,
    /// Answers to the previous round's input requests, by key.
    pub input_responses: InputResponses,
    /// The state the handler returned with its input requests, verified.
    pub state: Option<Value>,
}

type Handler<In, Out> = Arc<dyn Fn(In, RequestContext) -> BoxFuture<Result<Out, HandlerError>> + Send + Sync>;

fn boxed<In, Out, F, Fut>(f: F) -> Handler<In, Out>
where
    F: Fn(In, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, HandlerError>> + Send + 'static,
{
    Arc::new(move |input, ctx| Box::pin(f(input, ctx)))
}

pub(crate) struct ToolEntry {
    tool: Tool,
    /// The compiled input schema; `None` when it does not compile (then
    /// arguments are not checked, and a warning was logged).
    #[cfg(feature = "validation")]
    input_validator: Option<Arc<jsonschema::Validator>>,
    /// The parameters mirrored into `Mcp-Param-*` headers on HTTP.
    header_params: Vec<mcp_bridge_protocol::headers::HeaderParam>,
    handler: Handler<ToolCall, Reply<CallToolResult>>,
    /// Whether the tool can be served without a task.
    #[cfg(feature = "tasks")]
    task_support: TaskSupport,
}

#[cfg(feature = "validation")]
fn compile_schema(tool: &Tool) -> Option<Arc<jsonschema::Validator>> {
    match jsonschema::validator_for(&Value::Object(tool.input_schema.clone())) {
        Ok(v) => Some(Arc::new(v)),
        Err(e) => {
            tracing::warn!(tool = %tool.name, "input schema does not compile, arguments will not be checked: {e}");
            None
        }
    }
}

impl ToolEntry {
    fn new(tool: Tool, handler: Handler<ToolCall, Reply<CallToolResult>>) -> Self {
        let header_params =
            mcp_bridge_protocol::headers::header_params(&Value::Object(tool.input_schema.clone())).unwrap_or_else(|e| {
                tracing::warn!(tool = %tool.name, "x-mcp-header annotations are invalid, headers will not be checked: {e}");
                Vec::new()
            });
        ToolEntry {
            #[cfg(feature = "validation")]
            input_validator: compile_schema(&tool),
            header_params,
            tool,
            handler,
            #[cfg(feature = "tasks")]
            task_support: TaskSupport::Optional,
        }
    }
}

pub(crate) struct PromptEntry {
    prompt: Prompt,
    handler: Handler<PromptRequest, Reply<GetPromptResult>>,
}

pub(crate) struct ResourceEntry {
    resource: Resource,
    handler: Handler<ResourceRequest, Reply<Vec<ResourceContents>>>,
}

pub(crate) struct TemplateEntry {
    template: ResourceTemplate,
    handler: Handler<ResourceRequest, Reply<Vec<ResourceContents>>>,
}

/// Cache hints the server puts on cacheable results (2026-07-28, Caching).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CacheHints {
    /// `ttlMs` of discovery, list and read results.
    pub ttl_ms: u64,
    /// `cacheScope` of the same results.
    pub scope: CacheScope,
}

crate::setters::with_setters! {
    CacheHints {
        value with_ttl_ms => ttl_ms: u64,
        value with_scope => scope: CacheScope,
    }
}

impl Default for CacheHints {
    /// Immediately stale and public: safe for a server whose lists change
    /// at run time; a server with stable lists can raise the TTL.
    fn default() -> Self {
        CacheHints { ttl_ms: 0, scope: CacheScope::Public }
    }
}

/// What a server offers, and how it behaves.
pub(crate) struct ServerInner {
    info: Implementation,
    instructions: Option<String>,
    tools: RwLock<Vec<ToolEntry>>,
    prompts: RwLock<Vec<PromptEntry>>,
    resources: RwLock<Vec<ResourceEntry>>,
    templates: RwLock<Vec<TemplateEntry>>,
    completion: Option<Handler<CompleteRequestParams, Completion>>,
    /// Answers every request instead of the registrations (a proxy).
    forward: Option<Handler<forward::Forwarded, Reply<Value>>>,
    /// The `x-mcp-header` parameters of the tools a forwarding server's
    /// `tools/list` results named, by tool: what its HTTP endpoint checks
    /// a call's `Mcp-Param-*` headers against.
    forwarded_header_params: RwLock<HashMap<String, Vec<mcp_bridge_protocol::headers::HeaderParam>>>,
    /// Which lists the server declares; fixed at build time so the
    /// capabilities never change under a client.
    offers: Offers,
    hub: Arc<subscriptions::Hub>,
    /// The tasks, when the server offers the Tasks extension.
    #[cfg(feature = "tasks")]
    tasks: Option<Arc<tasks::TaskRegistry>>,
    /// The skills, when the server offers the Skills extension.
    #[cfg(feature = "skills")]
    skills: Option<skills::SkillCatalog>,
    sealer: request_state::StateSealer,
    cache: CacheHints,
    page_size: usize,
    limits: ServerLimits,
    /// Scopes declared for tools, prompts and resources.
    scopes: RwLock<protect::RequiredScopes>,
    /// Whether lists show each caller only what it may use.
    scoped_lists: bool,
    /// Hears of every request answered (metrics, traces, access logs).
    observer: std::sync::OnceLock<Arc<dyn crate::telemetry::Observer>>,
    /// Tools callable by name but left out of `tools/list`.
    unlisted: RwLock<std::collections::HashSet<String>>,
    /// How 2025-11-25 clients are served; `None`: they are not.
    #[cfg(feature = "legacy")]
    legacy: Option<legacy::embed::EmbedOptions>,
}

impl Drop for ServerInner {
    /// The last clone is gone: no client can reach its tasks, whose work ends.
    fn drop(&mut self) {
        #[cfg(feature = "tasks")]
        if let Some(tasks) = &self.tasks {
            tasks.stop_work();
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Offers {
    tools: bool,
    prompts: bool,
    resources: bool,
    completions: bool,
}

/// An MCP server of revision 2026-07-28. Cheap to clone: clones share the
/// registrations, the open streams and the state key.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("name", &self.inner.info.name).finish_non_exhaustive()
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

/// Puts `entry` at the end of `list`, in place of the one with its key.
fn put<T>(list: &RwLock<Vec<T>>, entry: T, key: fn(&T) -> &String) {
    let mut list = write(list);
    list.retain(|t| key(t) != key(&entry));
    list.push(entry);
}

/// Takes the entry with key `name` out of `list`; whether there was one.
fn take<T>(list: &RwLock<Vec<T>>, name: &str, key: fn(&T) -> &String) -> bool {
    let mut list = write(list);
    let before = list.len();
    list.retain(|t| key(t) != name);
    list.len() != before
}

impl Server {
    /// The scopes a request needs besides its endpoint's, as registered
    /// with [`ServerBuilder::require_scopes`]: those of the tool it calls,
    /// the prompt it gets or the resource it reads.
    pub fn scopes_needed(&self, method: &str, params: Option<&serde_json::Value>) -> Vec<String> {
        read(&self.inner.scopes).of_request(method, params)
    }

    /// Makes `scopes` the ones a caller's token must grant to use `target`
    /// on a protected endpoint, besides the endpoint's own (none: only
    /// those), from now on; as [`ServerBuilder::require_scopes`], for
    /// tools added while the server runs. A caller without them does not
    /// see the target in its lists either when the server
    /// [lists only what callers may use](ServerBuilder::list_only_what_callers_may_use).
    pub fn set_required_scopes<I, S>(&self, target: protect::ScopeTarget, scopes: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        write(&self.inner.scopes).set(target, scopes.into_iter().map(Into::into).collect());
    }

    /// Leaves the tool `name` out of `tools/list` (`listed` false) while it
    /// stays callable by name, or lists it again; tells every stream that
    /// listens for tool list changes when that changes the list.
    pub async fn set_tool_listed(&self, name: &str, listed: bool) {
        let changed = {
            let mut unlisted = write(&self.inner.unlisted);
            if listed { unlisted.remove(name) } else { unlisted.insert(name.to_owned()) }
        };
        if changed && read(&self.inner.tools).iter().any(|t| t.tool.name == name) {
            self.publish(ChangeEvent::ToolsListChanged).await;
        }
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The limits of its connections.
    pub fn limits(&self) -> &ServerLimits {
        &self.inner.limits
    }

    /// How 2025-11-25 clients are served; `None`: they are not.
    #[cfg(feature = "legacy")]
    pub(crate) fn legacy_options(&self) -> Option<legacy::embed::EmbedOptions> {
        self.inner.legacy
    }

    /// Adds a tool (or replaces the one with the same name) and tells every
    /// stream that listens for tool list changes.
    pub async fn add_tool<F, Fut>(&self, tool: Tool, handler: F)
    where
        F: Fn(ToolCall, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<CallToolResult>, HandlerError>> + Send + 'static,
    {
        let entry = ToolEntry::new(tool, boxed(handler));
        put(&self.inner.tools, entry, |t| &t.tool.name);
        self.publish(ChangeEvent::ToolsListChanged).await;
    }

    /// Removes a tool; tells the listening streams when there was one.
    pub async fn remove_tool(&self, name: &str) -> bool {
        let removed = take(&self.inner.tools, name, |t| &t.tool.name);
        if removed {
            self.publish(ChangeEvent::ToolsListChanged).await;
        }
        removed
    }

    /// Adds a prompt (or replaces the one with the same name) and tells
    /// every stream that listens for prompt list changes. The server must
    /// offer prompts ([`ServerBuilder::offer_prompts`]) for clients to see it.
    pub async fn add_prompt<F, Fut>(&self, prompt: Prompt, handler: F)
    where
        F: Fn(PromptRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<GetPromptResult>, HandlerError>> + Send + 'static,
    {
        put(&self.inner.prompts, PromptEntry { prompt, handler: boxed(handler) }, |p| &p.prompt.name);
        self.publish(ChangeEvent::PromptsListChanged).await;
    }

    /// Removes a prompt; tells the listening streams when there was one.
    pub async fn remove_prompt(&self, name: &str) -> bool {
        let removed = take(&self.inner.prompts, name, |p| &p.prompt.name);
        if removed {
            self.publish(ChangeEvent::PromptsListChanged).await;
        }
        removed
    }

    /// Adds a resource (or replaces the one with the same URI) and tells
    /// every stream that listens for resource list changes. The server must
    /// offer resources ([`ServerBuilder::offer_resources`]) for clients to
    /// see it.
    pub async fn add_resource<F, Fut>(&self, resource: Resource, handler: F)
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<Vec<ResourceContents>>, HandlerError>> + Send + 'static,
    {
        put(&self.inner.resources, ResourceEntry { resource, handler: boxed(handler) }, |r| &r.resource.uri);
        self.publish(ChangeEvent::ResourcesListChanged).await;
    }

    /// Removes the resource at `uri`; tells the listening streams when
    /// there was one.
    pub async fn remove_resource(&self, uri: &str) -> bool {
        let removed = take(&self.inner.resources, uri, |r| &r.resource.uri);
        if removed {
            self.publish(ChangeEvent::ResourcesListChanged).await;
        }
        removed
    }

    /// The `x-mcp-header` parameters of a tool; empty for an unknown tool.
    pub(crate) fn header_params(&self, tool: &str) -> Vec<mcp_bridge_protocol::headers::HeaderParam> {
        let registered = read(&self.inner.tools).iter().find(|t| t.tool.name == tool).map(|t| t.header_params.clone());
        registered.or_else(|| read(&self.inner.forwarded_header_params).get(tool).cloned()).unwrap_or_default()
    }

    /// The names of the registered tools, in order.
    pub fn tool_names(&self) -> Vec<String> {
        read(&self.inner.tools).iter().map(|t| t.tool.name.clone()).collect()
    }

    /// Sends a change to every stream that asked for it. Returns once the
    /// events are queued on their connections, so an event published by a
    /// handler reaches its client before that handler's result. Never waits
    /// on a client: a stream whose connection's writer is full (its client
    /// reads too slowly, or not at all) is ended with its completion result
    /// instead, and its client opens a new one and re-lists.
    pub async fn publish(&self, event: ChangeEvent) {
        self.inner.hub.publish(&event);
    }

    /// Ends every open `subscriptions/listen` stream with a completion
    /// result, as at shutdown.
    pub fn shutdown_subscriptions(&self) {
        self.inner.hub.end_all(None);
    }

    /// The number of open listen streams, across connections.
    pub fn open_subscriptions(&self) -> usize {
        self.inner.hub.count()
    }
}
