//! [`ServerBuilder`]: what a server offers, registered before it starts
//! (tools, prompts, resources, completion, tasks, skills) and its
//! settings (request-state keys and lifetime, the change-event bus of
//! replicas, cache hints, page size, limits).

use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CallToolResult, CompleteRequestParams, Completion, GetPromptResult, Implementation, Prompt, Resource,
    ResourceContents, ResourceTemplate, Tool,
};

use super::bus::{BusSink, ChangeBus};
use super::forward::Forwarded;
use super::state_keys::StateKeys;
use super::{
    CacheHints, DEFAULT_STATE_TTL, Handler, Offers, PromptEntry, PromptRequest, Reply, RequestContext, ResourceEntry,
    ResourceRequest, Server, ServerInner, TemplateEntry, ToolCall, ToolEntry, boxed, request_state, subscriptions,
};
#[cfg(feature = "schemars")]
use super::{IntoPromptResult, IntoToolResult, typed};
#[cfg(feature = "skills")]
use super::{SkillPackage, skills};
#[cfg(feature = "tasks")]
use super::{TaskOptions, TaskSupport, tasks};
use crate::error::HandlerError;
use crate::limits::ServerLimits;
use serde_json::Value;

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolEntry>,
    prompts: Vec<PromptEntry>,
    resources: Vec<ResourceEntry>,
    templates: Vec<TemplateEntry>,
    completion: Option<Handler<CompleteRequestParams, Completion>>,
    forward: Option<Handler<Forwarded, Reply<Value>>>,
    offers: Offers,
    state_keys: Option<StateKeys>,
    state_audience: Option<String>,
    state_ttl: Duration,
    bus: Option<Arc<dyn ChangeBus>>,
    cache: CacheHints,
    page_size: usize,
    limits: ServerLimits,
    scopes: super::protect::RequiredScopes,
    scoped_lists: bool,
    observer: Option<Arc<dyn crate::telemetry::Observer>>,
    #[cfg(feature = "tasks")]
    tasks: Option<TaskOptions>,
    #[cfg(feature = "tasks")]
    task_store: Option<tasks::TaskBackend>,
    #[cfg(feature = "skills")]
    skills: Vec<SkillPackage>,
    #[cfg(feature = "legacy")]
    legacy: Option<super::legacy::embed::EmbedOptions>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder").field("name", &self.info.name).finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Answers every request with `handler` instead of the registrations:
    /// a proxy in front of another server. The server still checks each
    /// request's `_meta`, admits it under its limits and seals the state
    /// of the handler's input rounds as it does a tool's (the handler gets
    /// it back verified, with the answers, in [`Forwarded`]). A
    /// `subscriptions/listen` request goes to the handler too, with the
    /// client's stream to send its acknowledgment and events on; its
    /// result ends the stream. The server's own registrations, lists and
    /// discovery result are not used.
    pub fn forward<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Forwarded, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Reply<Value>, HandlerError>> + Send + 'static,
    {
        self.forward = Some(boxed(handler));
        self
    }

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
    /// derived from `A` (and the output schema from a [`Json`](super::Json) result),
    /// arguments that do not fit are answered -32602 naming where, and the
    /// handler returns anything [`IntoToolResult`] takes: text, [`Json`](super::Json),
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

    /// Keeps the tasks in Redis, shared by this server's replicas, instead
    /// of in memory: `tasks/get`, `tasks/update` and `tasks/cancel` work on
    /// any replica, and a task whose replica died ends as failed once its
    /// lease runs out. Needs [`ServerBuilder::tasks`] and a change bus
    /// between processes ([`ServerBuilder::change_bus`]): the replica
    /// running a task hears there what the others did to it.
    #[cfg(all(feature = "tasks", feature = "redis"))]
    pub fn task_store(mut self, store: super::RedisTaskStore) -> Self {
        self.task_store = Some(tasks::TaskBackend::Redis(Box::new(store)));
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

    /// Declares prompts even when none is registered yet (they can be
    /// added at run time with [`Server::add_prompt`]).
    pub fn offer_prompts(mut self) -> Self {
        self.offers.prompts = true;
        self
    }

    /// Declares resources even when none is registered yet (they can be
    /// added at run time with [`Server::add_resource`]).
    pub fn offer_resources(mut self) -> Self {
        self.offers.resources = true;
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

    /// The keys that seal `requestState` (see [`StateKeys`] for the key
    /// file and its rotation). Give every replica of a server behind a load
    /// balancer the same ring; by default each process makes a random key,
    /// and a round started on one replica fails on another.
    pub fn state_keys(mut self, keys: StateKeys) -> Self {
        self.state_keys = Some(keys);
        self
    }

    /// The server a sealed `requestState` is bound to, so two servers
    /// sharing keys cannot replay each other's states; the server's name by
    /// default.
    pub fn state_audience(mut self, audience: impl Into<String>) -> Self {
        self.state_audience = Some(audience.into());
        self
    }

    /// The bus that carries change events to this server's other replicas
    /// ([`super::bus`]): what one publishes reaches every replica's listen
    /// streams. A bus between processes needs [`ServerBuilder::state_keys`].
    pub fn change_bus(mut self, bus: Arc<dyn ChangeBus>) -> Self {
        self.bus = Some(bus);
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

    /// Lists show each caller only the tools, prompts and resources its
    /// token's scopes let it use (a list is then `private`), as a gateway
    /// that ties visibility to authorization does. By default every caller
    /// sees everything, and a call it lacks the scopes for gets the 403
    /// that makes its client step up.
    pub fn list_only_what_callers_may_use(mut self) -> Self {
        self.scoped_lists = true;
        self
    }

    /// Tells `observer` of every request the server answers: its method,
    /// target, duration and error, in a span of the trace its `_meta`
    /// carries (see [`crate::telemetry`]). Handlers pass the span on with
    /// [`RequestContext::trace_context`](super::RequestContext::trace_context).
    pub fn observer(mut self, observer: Arc<dyn crate::telemetry::Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Scopes a caller's token must grant to use `target` (a tool, a
    /// prompt, a resource) on a protected endpoint, besides the endpoint's
    /// own; a token without them gets 403 `insufficient_scope` naming them
    /// (see [`crate::server::protect`]).
    pub fn require_scopes<I, S>(mut self, target: super::protect::ScopeTarget, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes.insert(target, scopes.into_iter().map(Into::into).collect());
        self
    }

    /// How 2025-11-25 clients (an `initialize` first) are served on this
    /// server's stdio, Unix sockets, HTTP endpoint and WebSocket. By default they are,
    /// with [`EmbedOptions::default`](super::legacy::embed::EmbedOptions);
    /// `None` leaves them to the 2026-07-28 server, which does not know
    /// `initialize`.
    #[cfg(feature = "legacy")]
    pub fn legacy_clients(mut self, options: Option<super::legacy::embed::EmbedOptions>) -> Self {
        self.legacy = options;
        self
    }

    /// Limits of every connection.
    pub fn limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The server.
    ///
    /// # Panics
    /// On a [`BuildError`]: a mistake in the program's set-up. Use
    /// [`ServerBuilder::try_build`] when the settings come from outside.
    pub fn build(self) -> Server {
        match self.try_build() {
            Ok(server) => server,
            Err(e) => panic!("{e}"),
        }
    }

    /// The server, or why these settings cannot make one.
    ///
    /// # Errors
    /// See [`BuildError`].
    pub fn try_build(self) -> Result<Server, BuildError> {
        let shared = self.bus.as_ref().is_some_and(|bus| bus.crosses_processes());
        let keys = match self.state_keys {
            Some(keys) => keys,
            None if shared => return Err(BuildError::ReplicasWithoutStateKeys),
            None => StateKeys::random(),
        };
        let audience = self.state_audience.unwrap_or_else(|| self.info.name.clone());
        let sealer = request_state::StateSealer::new(keys, audience, self.state_ttl);
        let hub = Arc::new(subscriptions::Hub::new(self.bus.clone()));
        #[cfg(feature = "tasks")]
        let tasks = match (self.tasks, self.task_store) {
            (None, None) => None,
            (None, Some(_)) => return Err(BuildError::TaskStoreWithoutTasks),
            (Some(_), Some(store)) if store.is_shared() && !shared => return Err(BuildError::SharedTasksWithoutBus),
            (Some(options), store) => {
                let memory = || tasks::TaskBackend::Memory(tasks::MemoryTasks::new(options.ttl, options.max_tasks));
                let store = store.unwrap_or_else(memory);
                Some(tasks::TaskRegistry::start(options, store, hub.clone()))
            }
        };
        if let Some(bus) = &self.bus {
            bus.attach(BusSink::new(&hub));
        }
        Ok(Server {
            inner: Arc::new(ServerInner {
                info: self.info,
                instructions: self.instructions,
                tools: RwLock::new(self.tools),
                prompts: RwLock::new(self.prompts),
                resources: RwLock::new(self.resources),
                templates: RwLock::new(self.templates),
                completion: self.completion,
                forward: self.forward,
                forwarded_header_params: RwLock::default(),
                offers: self.offers,
                #[cfg(feature = "tasks")]
                tasks,
                #[cfg(feature = "skills")]
                skills: (!self.skills.is_empty()).then(|| skills::SkillCatalog::new(self.skills)),
                hub,
                sealer,
                cache: self.cache,
                page_size: self.page_size,
                limits: self.limits,
                scopes: RwLock::new(self.scopes),
                scoped_lists: self.scoped_lists,
                observer: self.observer.map(std::sync::OnceLock::from).unwrap_or_default(),
                unlisted: RwLock::default(),
                #[cfg(feature = "legacy")]
                legacy: self.legacy,
            }),
        })
    }
}

/// Why [`ServerBuilder::try_build`] refused its settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The server shares a bus with replicas in other processes but has no
    /// state keys of its own: each replica would seal with a random key,
    /// and a round started on one would fail on the others.
    #[error(
        "this server has replicas (its change bus crosses processes) but no state keys: give every replica the same key ring (ServerBuilder::state_keys, a key file)"
    )]
    ReplicasWithoutStateKeys,
    /// A task store was given but the server offers no tasks.
    #[error("a task store was given but the server offers no tasks (ServerBuilder::tasks)")]
    TaskStoreWithoutTasks,
    /// The tasks are shared with other processes but the change bus is
    /// not: the replica running a task would not hear of an answer or a
    /// cancel another replica received.
    #[error(
        "the task store is shared with other replicas but the change bus is not: give the server the replicas' bus too (ServerBuilder::change_bus)"
    )]
    SharedTasksWithoutBus,
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
            forward: None,
            offers: Offers::default(),
            state_keys: None,
            state_audience: None,
            state_ttl: DEFAULT_STATE_TTL,
            bus: None,
            cache: CacheHints::default(),
            page_size: 100,
            limits: ServerLimits::default(),
            scopes: Default::default(),
            scoped_lists: false,
            observer: None,
            #[cfg(feature = "tasks")]
            tasks: None,
            #[cfg(feature = "tasks")]
            task_store: None,
            #[cfg(feature = "skills")]
            skills: Vec::new(),
            #[cfg(feature = "legacy")]
            legacy: Some(Default::default()),
        }
    }
}
