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

mod connection;
mod context;
mod dispatch;
#[cfg(any(feature = "http-server", feature = "websocket"))]
pub mod http;
mod request_state;
#[cfg(feature = "skills")]
mod skills;
mod stdio;
mod subscriptions;
#[cfg(feature = "tasks")]
mod tasks;
#[cfg(feature = "schemars")]
mod typed;
mod uri_template;
#[cfg(feature = "websocket")]
mod websocket;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CacheScope, CallToolResult, CompleteRequestParams, Completion, GetPromptResult, Implementation, InputRequests,
    InputResponses, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use serde_json::{Map, Value};

pub(crate) use connection::Connection;
pub use context::RequestContext;
pub use request_state::DEFAULT_STATE_TTL;
#[cfg(feature = "skills")]
pub use skills::SkillPackage;
pub use subscriptions::ChangeEvent;
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
pub struct CacheHints {
    /// `ttlMs` of discovery, list and read results.
    pub ttl_ms: u64,
    /// `cacheScope` of the same results.
    pub scope: CacheScope,
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
    next_connection: AtomicU64,
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

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolEntry>,
    prompts: Vec<PromptEntry>,
    resources: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    completion: Option<Handler<CompleteRequestParams, Completion>>,
    offers: Offers,
    state_key: Option<[u8; 32]>,
    state_ttl: Duration,
    cache: CacheHints,
    page_size: usize,
    limits: ServerLimits,
    #[cfg(feature = "tasks")]
    tasks: Option<TaskOptions>,
    #[cfg(feature = "skills")]
    skills: Vec<SkillPackage>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("name", &self.info.name).finish_non_exhaustive()
    }
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

impl ServerBuilder {
    /// Instructions for the model, sent with the discovery result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Registers a tool. Its arguments are checked against `tool.input_schema`
    /// before the handler runs.
    pub fn tool<F, Fut>(mut self, tool: Tool, handler: F) -> Self
    where
        F: Fn(ToolCall, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<CallToolResult>, HandlerError>> + Send + 'static,
    {
        self.offers.tools = true;
        self.tools.push(ToolEntry::new(tool, boxed(handler)));
        self
    }

    /// Registers a tool whose arguments are `A`: the input schema is
    /// derived from `A` (and the output schema from a [`Json`] result),
    /// arguments that do not fit are answered -32602 naming where, and the
    /// handler returns anything [`IntoToolResult`] takes: text, [`Json`],
    /// a [`CallToolResult`], or a `Result` whose error the model reads.
    ///
    /// ```
    /// use mcp_bridge_sdk::prelude::*;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: f64, b: f64 }
    ///
    /// let server = Server::builder(Implementation::new("calc", "1.0"))
    ///     .typed_tool(Tool::new("add"), |args: Add, _ctx| async move { (args.a + args.b).to_string() })
    ///     .build();
    /// # let _ = server;
    /// ```
    ///
    /// # Panics
    /// When `A` is not a struct or map (tool arguments are a JSON object):
    /// a mistake found at start-up.
    #[cfg(feature = "schemars")]
    pub fn typed_tool<A, F, Fut>(self, tool: Tool, handler: F) -> Self
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoToolResult,
    {
        let tool = typed::describe_tool::<A, Fut::Output>(tool);
        self.tool(tool, move |call: ToolCall, ctx: RequestContext| {
            let running = typed::arguments::<A>(&call.name, call.arguments).map(|args| handler(args, ctx));
            async move { running?.await.into_tool_reply() }
        })
    }

    /// [`ServerBuilder::typed_tool`] with state the handlers share: each
    /// call gets its own `Arc` of it, so the closure clones nothing.
    #[cfg(feature = "schemars")]
    pub fn typed_tool_with<S, A, F, Fut>(self, state: &Arc<S>, tool: Tool, handler: F) -> Self
    where
        S: Send + Sync + 'static,
        A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(Arc<S>, A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoToolResult,
    {
        let state = Arc::clone(state);
        self.typed_tool(tool, move |args: A, ctx| handler(Arc::clone(&state), args, ctx))
    }

    /// Registers a tool whose handler may answer [`Reply::task`]; with
    /// [`TaskSupport::Required`] a client that did not declare the Tasks
    /// extension gets -32021 before the handler runs. Needs
    /// [`ServerBuilder::tasks`].
    #[cfg(feature = "tasks")]
    pub fn task_tool<F, Fut>(mut self, tool: Tool, support: TaskSupport, handler: F) -> Self
    where
        F: Fn(ToolCall, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<CallToolResult>, HandlerError>> + Send + 'static,
    {
        self.offers.tools = true;
        self.tools.push(ToolEntry { task_support: support, ..ToolEntry::new(tool, boxed(handler)) });
        self
    }

    /// Offers the Tasks extension (`io.modelcontextprotocol/tasks`): tool
    /// handlers' [`Reply::task`] work becomes a task for clients that
    /// declare it, kept as `options` says.
    #[cfg(feature = "tasks")]
    pub fn tasks(mut self, options: TaskOptions) -> Self {
        self.tasks = Some(options);
        self
    }

    /// Publishes a skill (the Skills extension): each of its files becomes a
    /// `skill://` resource, and the server answers `skills/list`,
    /// `skills/get` and `resources/directory/read`.
    #[cfg(feature = "skills")]
    pub fn skill(mut self, package: SkillPackage) -> Self {
        self.offers.resources = true;
        for (resource, contents) in package.resources() {
            let handler = move |_request: ResourceRequest, _ctx: RequestContext| {
                let contents = contents.clone();
                async move { Ok(Reply::Complete(vec![contents])) }
            };
            self.resources.push(ResourceEntry { resource, handler: boxed(handler) });
        }
        self.skills.push(package);
        self
    }

    /// Declares tools even when none is registered yet (they can be added
    /// at run time with [`Server::add_tool`]).
    pub fn offer_tools(mut self) -> Self {
        self.offers.tools = true;
        self
    }

    /// Registers a prompt.
    pub fn prompt<F, Fut>(mut self, prompt: Prompt, handler: F) -> Self
    where
        F: Fn(PromptRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<GetPromptResult>, HandlerError>> + Send + 'static,
    {
        self.offers.prompts = true;
        self.prompts.push(PromptEntry { prompt, handler: boxed(handler) });
        self
    }

    /// Registers a prompt whose arguments are `A`: the prompt's argument
    /// list (names, descriptions, which are required) is read off `A`'s
    /// fields, which are strings on the wire. The handler returns anything
    /// [`IntoPromptResult`] takes: a `String` (one user message), messages,
    /// a [`GetPromptResult`], or a `Result` of one.
    ///
    /// # Panics
    /// When `A` is not a struct or map: a mistake found at start-up.
    #[cfg(feature = "schemars")]
    pub fn typed_prompt<A, F, Fut>(self, prompt: Prompt, handler: F) -> Self
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(A, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: IntoPromptResult,
    {
        let prompt = typed::describe_prompt::<A>(prompt);
        self.prompt(prompt, move |request: PromptRequest, ctx: RequestContext| {
            let running = typed::arguments::<A>(&request.name, request.arguments).map(|args| handler(args, ctx));
            async move { running?.await.into_prompt_reply() }
        })
    }

    /// Registers a resource.
    pub fn resource<F, Fut>(mut self, resource: Resource, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<Vec<ResourceContents>>, HandlerError>> + Send + 'static,
    {
        self.offers.resources = true;
        self.resources.push(ResourceEntry { resource, handler: boxed(handler) });
        self
    }

    /// Registers a resource template; reads of matching URIs go to `handler`.
    pub fn resource_template<F, Fut>(mut self, template: ResourceTemplate, handler: F) -> Self
    where
        F: Fn(ResourceRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<Vec<ResourceContents>>, HandlerError>> + Send + 'static,
    {
        self.offers.resources = true;
        self.templates.push(TemplateEntry { template, handler: boxed(handler) });
        self
    }

    /// Registers the handler of `completion/complete`.
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CompleteRequestParams, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, HandlerError>> + Send + 'static,
    {
        self.offers.completions = true;
        self.completion = Some(boxed(handler));
        self
    }

    /// The key that seals `requestState`. Give every instance of a server
    /// behind a load balancer the same key; by default each process makes a
    /// random one.
    pub fn state_key(mut self, key: [u8; 32]) -> Self {
        self.state_key = Some(key);
        self
    }

    /// How long a sealed `requestState` stays valid.
    pub fn state_ttl(mut self, ttl: Duration) -> Self {
        self.state_ttl = ttl;
        self
    }

    /// The cache hints of cacheable results.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.cache = hints;
        self
    }

    /// Items per page of the list results.
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.max(1);
        self
    }

    /// Limits of every connection.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The server.
    pub fn build(self) -> Server {
        let sealer = match self.state_key {
            Some(key) => request_state::StateSealer::new(key, self.state_ttl),
            None => request_state::StateSealer::random(self.state_ttl),
        };
        let hub = Arc::new(subscriptions::Hub::default());
        Server {
            inner: Arc::new(ServerInner {
                info: self.info,
                instructions: self.instructions,
                tools: RwLock::new(self.tools),
                prompts: RwLock::new(self.prompts),
                resources: RwLock::new(self.resources),
                templates: RwLock::new(self.templates),
                completion: self.completion,
                offers: self.offers,
                #[cfg(feature = "tasks")]
                tasks: self.tasks.map(|options| Arc::new(tasks::TaskRegistry::new(options, hub.clone()))),
                #[cfg(feature = "skills")]
                skills: (!self.skills.is_empty()).then(|| skills::SkillCatalog::new(self.skills)),
                hub,
                sealer,
                cache: self.cache,
                page_size: self.page_size,
                limits: self.limits,
                next_connection: AtomicU64::new(1),
            }),
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// Starts a server with its name and version.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            info,
            instructions: None,
            tools: Vec::new(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            completion: None,
            offers: Offers::default(),
            state_key: None,
            state_ttl: DEFAULT_STATE_TTL,
            cache: CacheHints::default(),
            page_size: 100,
            limits: ServerLimits::default(),
            #[cfg(feature = "tasks")]
            tasks: None,
            #[cfg(feature = "skills")]
            skills: Vec::new(),
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

    /// Adds a tool (or replaces the one with the same name) and tells every
    /// stream that listens for tool list changes.
    pub async fn add_tool<F, Fut>(&self, tool: Tool, handler: F)
    where
        F: Fn(ToolCall, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<CallToolResult>, HandlerError>> + Send + 'static,
    {
        let entry = ToolEntry::new(tool, boxed(handler));
        {
            let mut tools = write(&self.inner.tools);
            tools.retain(|t| t.tool.name != entry.tool.name);
            tools.push(entry);
        }
        self.publish(ChangeEvent::ToolsListChanged).await;
    }

    /// Removes a tool; tells the listening streams when there was one.
    pub async fn remove_tool(&self, name: &str) -> bool {
        let removed = {
            let mut tools = write(&self.inner.tools);
            let before = tools.len();
            tools.retain(|t| t.tool.name != name);
            tools.len() != before
        };
        if removed {
            self.publish(ChangeEvent::ToolsListChanged).await;
        }
        removed
    }

    /// The `x-mcp-header` parameters of a tool; empty for an unknown tool.
    pub(crate) fn header_params(&self, tool: &str) -> Vec<mcp_bridge_protocol::headers::HeaderParam> {
        read(&self.inner.tools)
            .iter()
            .find(|t| t.tool.name == tool)
            .map(|t| t.header_params.clone())
            .unwrap_or_default()
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
