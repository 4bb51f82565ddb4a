//! One request, from its params to its result: the `_meta` checks, the
//! capability gate, the method's handler, and the multi round-trip rules.

use std::collections::BTreeMap;

use mcp_bridge_protocol::meta::{PROTOCOL_VERSION_KEY, RequestMeta};
use mcp_bridge_protocol::method::{
    CompletionComplete, Method, PromptsGet, PromptsList, ResourcesDirectoryRead, ResourcesList, ResourcesRead,
    ResourcesTemplatesList, ServerDiscover, SkillsGet, SkillsList, SubscriptionsListen, TasksCancel, TasksGet,
    TasksUpdate, ToolsCall, ToolsList,
};
use mcp_bridge_protocol::types::{
    ClientCapabilities, CompleteRequestParams, DiscoverResult, InputRequest, InputResponses, ListChangedCapability,
    ResourcesCapability, ResultType, ServerCapabilities, SubscriptionFilter,
};
use mcp_bridge_protocol::{JsonRpcRequest, Message, RequestId};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::connection::ConnectionHandle;
use super::request_state::{Binding, caller_digest, params_digest};
use super::{
    PromptRequest, Reply, RequestContext, ResourceRequest, Server, ToolCall, ToolEntry, read, subscriptions,
    uri_template,
};
#[cfg(feature = "tasks")]
use super::{TaskContext, TaskSupport, tasks};
use crate::BoxFuture;
use crate::error::{HandlerError, ServerFault};
use crate::limits::SUPPORTED_VERSIONS;
use mcp_bridge_protocol::methods::{self, MethodSpec, Offer};

/// Whether a 2026-07-28 server can serve this method: a client request
/// of that revision in the method table.
fn is_served_method(method: &str) -> bool {
    methods::spec(method).is_some_and(MethodSpec::is_modern_client_request)
}

/// Why a request's envelope (params and `_meta`) cannot be served, checked
/// before any handler runs; `None` for a sound envelope or a method this
/// server does not serve (that answer is -32601, not an envelope fault).
/// On HTTP these answers carry status 400 (2026-07-28, Per-request metadata).
pub(crate) fn envelope_fault(request: &JsonRpcRequest) -> Option<ServerFault> {
    if !is_served_method(&request.method) {
        return None;
    }
    match &request.params {
        Some(Value::Object(params)) => check_meta(params).err(),
        None => check_meta(&Map::new()).err(),
        Some(_) => Some(ServerFault::InvalidParams { reason: "params must be an object".into() }),
    }
}

type Outcome = Result<Value, ServerFault>;

fn to_value<T: Serialize + ?Sized>(value: &T) -> Outcome {
    serde_json::to_value(value).map_err(|e| ServerFault::Handler(HandlerError::internal(e.to_string())))
}

fn parse<T: serde::de::DeserializeOwned>(params: &Map<String, Value>) -> Result<T, ServerFault> {
    serde_json::from_value(Value::Object(params.clone()))
        .map_err(|e| ServerFault::InvalidParams { reason: e.to_string() })
}

/// Checks the request's `_meta`: present, at a supported version, and valid.
fn check_meta(params: &Map<String, Value>) -> Result<RequestMeta, ServerFault> {
    let meta = params.get("_meta").and_then(Value::as_object).ok_or(ServerFault::MissingMeta)?;
    let version = meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str).ok_or(ServerFault::MissingMeta)?;
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(ServerFault::UnsupportedVersion {
            requested: version.to_owned(),
            supported: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
        });
    }
    serde_json::from_value(Value::Object(meta.clone())).map_err(|e| ServerFault::InvalidMeta { reason: e.to_string() })
}

/// The capabilities object an input request needs that the client did
/// not declare, for a -32021 error.
///
/// # Errors
/// A handler built an input request of an unknown kind or with invalid
/// params: an internal error, never sent to the client.
pub(crate) fn missing_capability(
    request: &InputRequest,
    caps: &ClientCapabilities,
) -> Result<Option<Value>, HandlerError> {
    match request {
        InputRequest::Invalid { reason, .. } => {
            Err(HandlerError::internal(format!("handler built an invalid input request: {reason}")))
        }
        InputRequest::Unknown(_) => Err(HandlerError::internal("handler built an input request of unknown kind")),
        _ => Ok(request.missing_capability(caps).map(|missing| missing.declaration())),
    }
}

impl Server {
    /// Serves one request. `None` means no response (a cancelled stream).
    pub(crate) async fn dispatch(
        &self,
        request: JsonRpcRequest,
        conn: &ConnectionHandle,
        cancel: CancellationToken,
    ) -> Option<Outcome> {
        let method = request.method.as_str();
        if !is_served_method(method) {
            return Some(Err(ServerFault::MethodNotFound { method: method.to_owned() }));
        }
        let params = match request.params {
            Some(Value::Object(map)) => map,
            None => Map::new(),
            Some(_) => return Some(Err(ServerFault::InvalidParams { reason: "params must be an object".into() })),
        };
        let meta = match check_meta(&params) {
            Ok(meta) => meta,
            Err(fault) => return Some(Err(fault)),
        };
        if !self.serves(method) {
            return Some(Err(ServerFault::MethodNotFound { method: method.to_owned() }));
        }
        let ctx = RequestContext {
            client_capabilities: meta.client_capabilities,
            client_info: meta.client_info,
            log_level: meta.log_level,
            caller: conn.caller.clone(),
            #[cfg(any(feature = "http-server", feature = "websocket", feature = "grpc"))]
            http_headers: conn.http_headers.clone(),
            peer_certificates: conn.peer_certificates.clone(),
            progress_token: meta.progress_token,
            cancel: cancel.clone(),
            out: conn.out.clone(),
            server: self.clone(),
            input_responses: InputResponses::new(),
            state: None,
        };
        Some(match method {
            ServerDiscover::NAME => to_value(&self.discover_result()),
            ToolsList::NAME => {
                self.list_page(&params, "tools", |s| read(&s.inner.tools).iter().map(|t| t.tool.clone()).collect())
            }
            PromptsList::NAME => self
                .list_page(&params, "prompts", |s| read(&s.inner.prompts).iter().map(|p| p.prompt.clone()).collect()),
            ResourcesList::NAME => self.list_page(&params, "resources", |s| {
                read(&s.inner.resources).iter().map(|r| r.resource.clone()).collect()
            }),
            ResourcesTemplatesList::NAME => self.list_page(&params, "resourceTemplates", |s| {
                read(&s.inner.templates).iter().map(|t| t.template.clone()).collect()
            }),
            ToolsCall::NAME => self.call_tool(params, ctx).await,
            PromptsGet::NAME => self.get_prompt(params, ctx).await,
            ResourcesRead::NAME => self.read_resource(params, ctx).await,
            CompletionComplete::NAME => self.complete(params, ctx).await,
            SubscriptionsListen::NAME => {
                return self.listen(request.id, &params, &ctx.client_capabilities, conn, cancel).await;
            }
            #[cfg(feature = "tasks")]
            TasksGet::NAME | TasksUpdate::NAME | TasksCancel::NAME => self.task_method(method, &params, &ctx).await,
            #[cfg(feature = "skills")]
            SkillsList::NAME | SkillsGet::NAME | ResourcesDirectoryRead::NAME => self.skill_method(method, &params),
            _ => Err(ServerFault::MethodNotFound { method: method.to_owned() }),
        })
    }

    /// Whether the server offers the Tasks extension.
    fn offers_tasks(&self) -> bool {
        #[cfg(feature = "tasks")]
        return self.inner.tasks.is_some();
        #[cfg(not(feature = "tasks"))]
        false
    }

    /// Whether the server offers the Skills extension.
    fn offers_skills(&self) -> bool {
        #[cfg(feature = "skills")]
        return self.inner.skills.is_some();
        #[cfg(not(feature = "skills"))]
        false
    }

    fn serves(&self, method: &str) -> bool {
        let offers = self.inner.offers;
        match methods::spec(method).and_then(|m| m.offer) {
            Some(Offer::Tools) => offers.tools,
            Some(Offer::Prompts) => offers.prompts,
            Some(Offer::Resources) => offers.resources,
            Some(Offer::Completions) => offers.completions,
            Some(Offer::Tasks) => self.offers_tasks(),
            Some(Offer::Skills) => self.offers_skills(),
            None => true,
        }
    }

    /// The capabilities this server declares.
    pub fn capabilities(&self) -> ServerCapabilities {
        let offers = self.inner.offers;
        let list_changed = || ListChangedCapability { list_changed: Some(true), extra: Map::new() };
        ServerCapabilities {
            tools: offers.tools.then(list_changed),
            prompts: offers.prompts.then(list_changed),
            resources: offers.resources.then(|| ResourcesCapability {
                list_changed: Some(true),
                subscribe: Some(true),
                extra: Map::new(),
            }),
            completions: offers.completions.then(Map::new),
            logging: Some(Map::new()),
            extensions: self.extensions(),
            ..ServerCapabilities::default()
        }
    }

    /// The extensions the server offers, with their settings.
    fn extensions(&self) -> Option<Map<String, Value>> {
        let mut extensions = Map::new();
        if self.offers_tasks() {
            extensions.insert(mcp_bridge_protocol::types::TASKS_EXTENSION.to_owned(), json!({}));
        }
        if self.offers_skills() {
            extensions
                .insert(mcp_bridge_protocol::types::SKILLS_EXTENSION.to_owned(), json!({ "directoryRead": true }));
        }
        (!extensions.is_empty()).then_some(extensions)
    }

    /// What the server answers to `server/discover`.
    pub fn discover_result(&self) -> DiscoverResult {
        DiscoverResult {
            result_type: ResultType::Complete,
            supported_versions: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
            capabilities: self.capabilities(),
            instructions: self.inner.instructions.clone(),
            ttl_ms: Some(self.inner.cache.ttl_ms),
            cache_scope: Some(self.inner.cache.scope),
            meta: Some(mcp_bridge_protocol::meta::ResultMeta {
                server_info: Some(self.inner.info.clone()),
                extra: Map::new(),
            }),
            extra: Map::new(),
        }
    }

    fn list_page<T: Serialize>(
        &self,
        params: &Map<String, Value>,
        key: &str,
        items: impl FnOnce(&Server) -> Vec<T>,
    ) -> Outcome {
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(c)) => {
                c.parse::<usize>().map_err(|_| ServerFault::InvalidParams { reason: "invalid cursor".into() })?
            }
            Some(_) => return Err(ServerFault::InvalidParams { reason: "invalid cursor".into() }),
        };
        let all = items(self);
        if start > all.len() {
            return Err(ServerFault::InvalidParams { reason: "invalid cursor".into() });
        }
        let end = (start + self.inner.page_size).min(all.len());
        let mut result = json!({
            "resultType": "complete",
            key: to_value(&all[start..end])?,
            "ttlMs": self.inner.cache.ttl_ms,
            "cacheScope": self.inner.cache.scope,
        });
        if end < all.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }

    /// Runs a handler of a method that may ask for input: opens the
    /// `requestState`, passes the answers, and turns an input request into
    /// an `InputRequiredResult` with a freshly sealed state.
    async fn with_input<R: Serialize + Send + 'static>(
        &self,
        method: &str,
        params: &Map<String, Value>,
        ctx: &RequestContext,
        run: impl FnOnce(InputResponses, Option<Value>, RequestContext) -> BoxFuture<Result<Reply<R>, HandlerError>>,
    ) -> Outcome {
        let digest = params_digest(params);
        let caller = caller_digest(ctx.caller.as_deref());
        let binding = Binding { method, digest: &digest, caller: &caller };
        let now = crate::clock::system_now();
        let state = match params.get("requestState") {
            None => None,
            Some(Value::String(token)) => Some(self.inner.sealer.open(token, binding, now).map_err(|e| {
                tracing::debug!(method, "requestState refused: {e}");
                ServerFault::InvalidRequestState { reason: e.to_string() }
            })?),
            Some(_) => return Err(ServerFault::InvalidRequestState { reason: "it is not a string".into() }),
        };
        let responses: InputResponses = match params.get("inputResponses") {
            None => InputResponses::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| ServerFault::InvalidParams { reason: format!("inputResponses: {e}") })?,
        };
        let handler_ctx = RequestContext { input_responses: responses.clone(), state: state.clone(), ..ctx.clone() };
        match run(responses, state, handler_ctx).await.map_err(ServerFault::Handler)? {
            Reply::Complete(result) => to_value(&result),
            #[cfg(feature = "tasks")]
            Reply::Task(work) => match &self.inner.tasks {
                Some(registry) if method == ToolsCall::NAME && tasks::declares_tasks(&ctx.client_capabilities) => {
                    to_value(&registry.create(work, ctx.client_capabilities.clone()).await?)
                }
                // No task for this client: the work runs before the answer.
                _ => to_value(&(work.0)(TaskContext::inline()).await.map_err(ServerFault::Handler)?),
            },
            Reply::InputRequired { requests, state } => {
                for (key, request) in &requests {
                    let missing =
                        missing_capability(request, &ctx.client_capabilities).map_err(ServerFault::Handler)?;
                    if let Some(required) = missing {
                        return Err(ServerFault::MissingClientCapability { key: key.clone(), required });
                    }
                }
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
                let sealed = self.inner.sealer.seal(binding, &state.unwrap_or(Value::Null), now);
                result["requestState"] = json!(sealed);
                Ok(result)
            }
        }
    }

    async fn call_tool(&self, params: Map<String, Value>, ctx: RequestContext) -> Outcome {
        let name = required_str(&params, "name")?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => return Err(ServerFault::InvalidParams { reason: "arguments must be an object".into() }),
        };
        let handler = {
            let tools = read(&self.inner.tools);
            let entry = tools
                .iter()
                .find(|t| t.tool.name == name)
                .ok_or_else(|| ServerFault::InvalidParams { reason: format!("unknown tool: {name}") })?;
            entry.admit(&arguments, &ctx.client_capabilities)?;
            entry.handler.clone()
        };
        self.with_input(ToolsCall::NAME, &params, &ctx, move |input_responses, state, handler_ctx| {
            handler(ToolCall { name, arguments, input_responses, state }, handler_ctx)
        })
        .await
        .map(with_result_type)
    }

    async fn get_prompt(&self, params: Map<String, Value>, ctx: RequestContext) -> Outcome {
        let name = required_str(&params, "name")?;
        let arguments = params.get("arguments").and_then(Value::as_object).cloned().unwrap_or_default();
        let handler = {
            let prompts = read(&self.inner.prompts);
            let entry = prompts
                .iter()
                .find(|p| p.prompt.name == name)
                .ok_or_else(|| ServerFault::InvalidParams { reason: format!("unknown prompt: {name}") })?;
            for arg in entry.prompt.arguments.iter().flatten() {
                if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
                    return Err(ServerFault::InvalidParams {
                        reason: format!("missing required argument: {}", arg.name),
                    });
                }
            }
            entry.handler.clone()
        };
        self.with_input(PromptsGet::NAME, &params, &ctx, move |input_responses, state, handler_ctx| {
            handler(PromptRequest { name, arguments, input_responses, state }, handler_ctx)
        })
        .await
        .map(with_result_type)
    }

    async fn read_resource(&self, params: Map<String, Value>, ctx: RequestContext) -> Outcome {
        let uri = required_str(&params, "uri")?;
        let found = {
            let resources = read(&self.inner.resources);
            match resources.iter().find(|r| r.resource.uri == uri) {
                Some(entry) => Some((entry.handler.clone(), BTreeMap::new())),
                None => read(&self.inner.templates).iter().find_map(|t| {
                    uri_template::match_template(&t.template.uri_template, &uri).map(|vars| (t.handler.clone(), vars))
                }),
            }
        };
        let (handler, variables) = found.ok_or_else(|| ServerFault::Handler(HandlerError::resource_not_found(&uri)))?;
        let cache = self.inner.cache;
        let result = self
            .with_input(ResourcesRead::NAME, &params, &ctx, move |input_responses, state, handler_ctx| {
                handler(ResourceRequest { uri, variables, input_responses, state }, handler_ctx)
            })
            .await?;
        // A handler's final answer is its contents; wrap them in the result.
        Ok(if result.is_array() {
            json!({ "resultType": "complete", "contents": result, "ttlMs": cache.ttl_ms, "cacheScope": cache.scope })
        } else {
            result
        })
    }

    async fn complete(&self, params: Map<String, Value>, ctx: RequestContext) -> Outcome {
        let request: CompleteRequestParams = parse(&params)?;
        let handler = self
            .inner
            .completion
            .clone()
            .ok_or(ServerFault::MethodNotFound { method: CompletionComplete::NAME.into() })?;
        let mut completion = handler(request, ctx).await.map_err(ServerFault::Handler)?;
        // The specification caps a completion at 100 values.
        if completion.values.len() > 100 {
            completion.total.get_or_insert(completion.values.len() as u64);
            completion.values.truncate(100);
            completion.has_more = Some(true);
        }
        Ok(json!({ "resultType": "complete", "completion": completion }))
    }

    /// Narrows a filter to what this server can send: the lists it
    /// offers, and the tasks it knows.
    async fn agreed_filter(&self, wanted: SubscriptionFilter) -> SubscriptionFilter {
        let offers = self.inner.offers;
        let keep = |on: bool, v: Option<bool>| if on { v.filter(|b| *b) } else { None };
        #[cfg(feature = "tasks")]
        let task_ids = match (&self.inner.tasks, wanted.task_ids) {
            (Some(registry), Some(ids)) => {
                let mut known = Vec::with_capacity(ids.len());
                for id in ids {
                    if registry.exists(&id).await {
                        known.push(id);
                    }
                }
                Some(known)
            }
            _ => None,
        };
        #[cfg(not(feature = "tasks"))]
        let task_ids = None;
        SubscriptionFilter {
            tools_list_changed: keep(offers.tools, wanted.tools_list_changed),
            prompts_list_changed: keep(offers.prompts, wanted.prompts_list_changed),
            resources_list_changed: keep(offers.resources, wanted.resources_list_changed),
            resource_subscriptions: if offers.resources { wanted.resource_subscriptions } else { None },
            task_ids,
            extra: Map::new(),
        }
    }

    /// `skills/list`, `skills/get` and `resources/directory/read`.
    #[cfg(feature = "skills")]
    fn skill_method(&self, method: &str, params: &Map<String, Value>) -> Outcome {
        let catalog = self.inner.skills.as_ref().ok_or(ServerFault::MethodNotFound { method: method.to_owned() })?;
        match method {
            SkillsList::NAME => self.list_page(params, "skills", |_| catalog.entries()),
            SkillsGet::NAME => {
                let skill = catalog.get(&required_str(params, "uri")?)?;
                let cache = self.inner.cache;
                Ok(
                    json!({ "resultType": "complete", "skill": skill, "ttlMs": cache.ttl_ms, "cacheScope": cache.scope }),
                )
            }
            _ => {
                let children = catalog.directory(&required_str(params, "uri")?)?;
                self.list_page(params, "resources", |_| children)
            }
        }
    }

    /// `tasks/get`, `tasks/update` and `tasks/cancel`, for clients that
    /// declare the extension.
    #[cfg(feature = "tasks")]
    async fn task_method(&self, method: &str, params: &Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let registry = self.inner.tasks.as_ref().ok_or(ServerFault::MethodNotFound { method: method.to_owned() })?;
        if !tasks::declares_tasks(&ctx.client_capabilities) {
            return Err(ServerFault::Handler(HandlerError::missing_capability(tasks::tasks_capability())));
        }
        let task_id = required_str(params, "taskId")?;
        match method {
            TasksGet::NAME => to_value(&registry.get(&task_id).await?),
            TasksUpdate::NAME => {
                let responses: InputResponses = match params.get("inputResponses") {
                    Some(v @ Value::Object(_)) => serde_json::from_value(v.clone())
                        .map_err(|e| ServerFault::InvalidParams { reason: format!("inputResponses: {e}") })?,
                    _ => return Err(ServerFault::InvalidParams { reason: "inputResponses must be an object".into() }),
                };
                registry.update(&task_id, responses).await?;
                Ok(json!({ "resultType": "complete" }))
            }
            _ => {
                registry.cancel(&task_id).await?;
                Ok(json!({ "resultType": "complete" }))
            }
        }
    }

    async fn listen(
        &self,
        id: RequestId,
        params: &Map<String, Value>,
        #[cfg_attr(not(feature = "tasks"), allow(unused_variables))] capabilities: &ClientCapabilities,
        conn: &ConnectionHandle,
        cancel: CancellationToken,
    ) -> Option<Outcome> {
        let filter = match params.get("notifications").map(|f| serde_json::from_value::<SubscriptionFilter>(f.clone()))
        {
            Some(Ok(filter)) => filter,
            Some(Err(e)) => return Some(Err(ServerFault::InvalidParams { reason: format!("notifications: {e}") })),
            None => return Some(Err(ServerFault::InvalidParams { reason: "notifications is required".into() })),
        };
        #[cfg(feature = "tasks")]
        if filter.task_ids.as_ref().is_some_and(|ids| !ids.is_empty()) && !tasks::declares_tasks(capabilities) {
            let required = tasks::tasks_capability();
            return Some(Err(ServerFault::Handler(HandlerError::missing_capability(required))));
        }
        let agreed = self.agreed_filter(filter).await;
        // The acknowledgment is queued before the stream can receive events.
        let ack = subscriptions::acknowledgment(&id, &agreed);
        if conn.out.send(Message::Notification(ack)).await.is_err() {
            return None;
        }
        let end = self.inner.hub.open(conn.id, id.clone(), agreed, conn.out.clone());
        // Closes the stream however this future ends, dropped included.
        let _registered = subscriptions::Registration { hub: &self.inner.hub, connection: conn.id, id: &id };
        tokio::select! {
            _ = cancel.cancelled() => None,
            _ = end.graceful.cancelled() => Some(Ok(subscriptions::completion(&id))),
            _ = end.events_lost.cancelled() => Some(Err(ServerFault::EventsLost)),
        }
    }
}

/// A string member the params must have.
fn required_str(params: &Map<String, Value>, key: &str) -> Result<String, ServerFault> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ServerFault::InvalidParams { reason: format!("{key} is required") })
}

/// Puts `resultType: complete` on a final result whose handler left it out.
fn with_result_type(mut result: Value) -> Value {
    if let Some(obj) = result.as_object_mut() {
        obj.entry("resultType").or_insert_with(|| json!("complete"));
    }
    result
}

impl ToolEntry {
    /// Refuses a call before its handler runs: a tool that needs a task,
    /// for a client without the Tasks extension (-32021), or arguments
    /// that break the tool's input schema (-32602).
    #[cfg_attr(not(all(feature = "validation", feature = "tasks")), allow(unused_variables))]
    fn admit(&self, arguments: &Map<String, Value>, client: &ClientCapabilities) -> Result<(), ServerFault> {
        #[cfg(feature = "tasks")]
        if self.task_support == TaskSupport::Required && !tasks::declares_tasks(client) {
            return Err(ServerFault::Handler(HandlerError::missing_capability(tasks::tasks_capability())));
        }
        #[cfg(feature = "validation")]
        if let Some(validator) = &self.input_validator {
            let instance = Value::Object(arguments.clone());
            if let Some(error) = validator.iter_errors(&instance).next() {
                let at = error.instance_path().to_string();
                let at = if at.is_empty() { String::new() } else { format!(" at {at}") };
                return Err(ServerFault::InvalidParams {
                    reason: format!("arguments of {} do not match its input schema{at}: {error}", self.tool.name),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_checks_name_what_is_missing_or_wrong() {
        let p = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(check_meta(&p(json!({}))), Err(ServerFault::MissingMeta));
        assert_eq!(check_meta(&p(json!({"_meta": {}}))), Err(ServerFault::MissingMeta));
        assert!(matches!(
            check_meta(&p(json!({"_meta": {PROTOCOL_VERSION_KEY: "1900-01-01"}}))),
            Err(ServerFault::UnsupportedVersion { .. })
        ));
        assert!(matches!(
            check_meta(&p(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}))),
            Err(ServerFault::InvalidMeta { .. })
        ));
        assert!(
            check_meta(&p(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}})))
            .is_ok()
        );
    }
}
