//! One request, from its params to its result: the envelope checks (the
//! method, `_meta`, the capability gate), then the method's own file, each
//! reading its typed params: lists, tools, prompts, resources, listen
//! streams, tasks and skills, with the multi round-trip rules in `input`.

mod forward;
mod input;
mod listen;
mod lists;
mod observed;
mod prompts;
mod resources;
#[cfg(feature = "skills")]
mod skills;
#[cfg(feature = "tasks")]
mod tasks;
mod tools;

use mcp_bridge_protocol::meta::{PROTOCOL_VERSION_KEY, RequestMeta};
use mcp_bridge_protocol::method::{
    CompletionComplete, Method, PromptsGet, PromptsList, ResourcesList, ResourcesRead, ResourcesTemplatesList,
    ServerDiscover, SubscriptionsListen, ToolsCall, ToolsList,
};
#[cfg(feature = "skills")]
use mcp_bridge_protocol::method::{ResourcesDirectoryRead, SkillsGet, SkillsList};
#[cfg(feature = "tasks")]
use mcp_bridge_protocol::method::{TasksCancel, TasksGet, TasksUpdate};
use mcp_bridge_protocol::methods::{self, MethodSpec, Offer};
use mcp_bridge_protocol::trace::TraceContext;
use mcp_bridge_protocol::types::{
    CompleteRequestParams, DiscoverResult, InputResponses, ListChangedCapability, ResourcesCapability, ResultType,
    ServerCapabilities,
};
use mcp_bridge_protocol::{JsonRpcRequest, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub(crate) use input::{RoundFault, check_handler_round};

use super::connection::ConnectionHandle;
use super::{RequestContext, Server};
use crate::error::{HandlerError, ServerFault};
use crate::limits::SUPPORTED_VERSIONS;

/// Whether a 2026-07-28 server can serve this method: a client request
/// of that revision in the method table.
fn is_served_method(method: &str) -> bool {
    methods::spec(method).is_some_and(MethodSpec::is_modern_client_request)
}

/// A request's envelope (params and `_meta`) checked before any handler
/// runs: its `_meta` read (`None` for a method this server does not serve,
/// whose answer is -32601, not an envelope fault), or why it cannot be
/// served. On HTTP the fault is answered with status 400 (2026-07-28,
/// Per-request metadata), and the `_meta` read goes on to
/// [`Server::dispatch`], which does not read it again.
pub(crate) fn check_envelope(request: &JsonRpcRequest) -> Result<Option<RequestMeta>, ServerFault> {
    if !is_served_method(&request.method) {
        return Ok(None);
    }
    match &request.params {
        Some(Value::Object(params)) => check_meta(params).map(Some),
        None => check_meta(&Map::new()).map(Some),
        Some(_) => Err(ServerFault::InvalidParams { reason: "params must be an object".into() }),
    }
}

type Outcome = Result<Value, ServerFault>;

fn to_value<T: Serialize + ?Sized>(value: &T) -> Outcome {
    serde_json::to_value(value).map_err(|e| ServerFault::Handler(HandlerError::internal(e.to_string())))
}

/// The method's typed params (`CallToolRequestParams`, ...), read once.
fn parse<T: serde::de::DeserializeOwned>(params: Map<String, Value>) -> Result<T, ServerFault> {
    serde_json::from_value(Value::Object(params)).map_err(|e| ServerFault::InvalidParams { reason: e.to_string() })
}

/// Checks the request's `_meta`: present, at a supported version, and valid.
fn check_meta(params: &Map<String, Value>) -> Result<RequestMeta, ServerFault> {
    let meta = params.get("_meta").filter(|m| m.is_object()).ok_or(ServerFault::MissingMeta)?;
    let version = meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str).ok_or(ServerFault::MissingMeta)?;
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(ServerFault::UnsupportedVersion {
            requested: version.to_owned(),
            supported: SUPPORTED_VERSIONS.iter().map(|v| (*v).to_owned()).collect(),
        });
    }
    // Read in place: the typed params read the same `_meta` again, so
    // this one must not copy it.
    RequestMeta::deserialize(meta).map_err(|e| ServerFault::InvalidMeta { reason: e.to_string() })
}

/// A request whose envelope passed: what its method's handling reads.
/// Made before the request's future, so that the `RequestMeta` read from
/// its `_meta` is not held across that future's awaits.
struct CheckedRequest {
    id: RequestId,
    method: String,
    params: Map<String, Value>,
    ctx: RequestContext,
}

impl Server {
    /// Serves one request, its `_meta` read here unless `checked` has it
    /// (see [`check_envelope`]). `None` means no response (a cancelled
    /// stream). The server's observer hears of it (listen streams aside:
    /// they are streams, not operations).
    ///
    /// The envelope is checked before the future is made: what its awaits
    /// hold is the request's context, once (each future of a request is
    /// copied whole when it is spawned and when it ends).
    pub(crate) fn dispatch<'a>(
        &'a self,
        request: JsonRpcRequest,
        checked: Option<RequestMeta>,
        conn: &'a ConnectionHandle,
        cancel: CancellationToken,
    ) -> impl Future<Output = Option<Outcome>> + Send + 'a {
        let observer = self.inner.observer.get().filter(|_| request.method != SubscriptionsListen::NAME);
        // Started here, before the future; moved into it and dropped with
        // it when the request is cancelled: then reported as cancelled.
        let in_flight = observer.map(|observer| observed::start(&request, conn, observer.clone()));
        let span = in_flight.as_ref().and_then(|in_flight| in_flight.span().cloned());
        // Borrowed by `serve` in the future, not moved: see its doc.
        let mut request = self.check_request(request, checked, conn, &cancel, span);
        async move {
            let outcome = match request.as_mut() {
                Ok(request) => self.serve(request, conn).await,
                Err(_) => request.err().map(Err),
            };
            if let Some(in_flight) = in_flight {
                // A handler that saw its cancellation and failed was cancelled.
                let error_type = match cancel.is_cancelled() {
                    true => Some(crate::telemetry::error_type::CANCELLED.to_owned()),
                    false => observed::error_type(outcome.as_ref()),
                };
                in_flight.finish(error_type);
            }
            outcome
        }
    }

    /// The envelope's checks (the method, the params, `_meta`), and the
    /// handler's context made from them.
    fn check_request(
        &self,
        request: JsonRpcRequest,
        checked: Option<RequestMeta>,
        conn: &ConnectionHandle,
        cancel: &CancellationToken,
        span: Option<crate::telemetry::Span>,
    ) -> Result<CheckedRequest, ServerFault> {
        let JsonRpcRequest { id, method, params, .. } = request;
        if !is_served_method(&method) {
            return Err(ServerFault::MethodNotFound { method });
        }
        let params = match params {
            Some(Value::Object(map)) => map,
            None => Map::new(),
            Some(_) => return Err(ServerFault::InvalidParams { reason: "params must be an object".into() }),
        };
        let meta = checked.map_or_else(|| check_meta(&params), Ok)?;
        let trace = span.map(|span| span.context()).or_else(|| TraceContext::from_meta(&meta.extra));
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
            trace,
            connection: conn.lasting.then_some(conn.id),
        };
        Ok(CheckedRequest { id, method, params, ctx })
    }

    /// Runs a checked request's method. The request is borrowed, not
    /// moved: an `async fn` keeps a moved argument twice.
    async fn serve(&self, request: &mut CheckedRequest, conn: &ConnectionHandle) -> Option<Outcome> {
        let params = std::mem::take(&mut request.params);
        let (method, ctx) = (request.method.as_str(), &request.ctx);
        if let Some(handler) = self.inner.forward.clone() {
            return Some(self.forward(handler, &request.id, method, params, ctx, conn).await);
        }
        if !self.serves(method) {
            return Some(Err(ServerFault::MethodNotFound { method: method.to_owned() }));
        }
        Some(match method {
            ServerDiscover::NAME => to_value(&self.discover_result()),
            ToolsList::NAME => self.list_page(params, "tools", self.tools_for(ctx.caller.as_deref())),
            PromptsList::NAME => self.list_page(params, "prompts", self.prompts_for(ctx.caller.as_deref())),
            ResourcesList::NAME => self.list_page(params, "resources", self.resources_for(ctx.caller.as_deref())),
            ResourcesTemplatesList::NAME => self.list_page(params, "resourceTemplates", self.templates()),
            ToolsCall::NAME => self.call_tool(params, ctx).await,
            PromptsGet::NAME => self.get_prompt(params, ctx).await,
            ResourcesRead::NAME => self.read_resource(params, ctx).await,
            CompletionComplete::NAME => self.complete(params, ctx).await,
            SubscriptionsListen::NAME => {
                let subject = ctx.caller.as_ref().map(|c| c.principal());
                let (id, cancel) = (request.id.clone(), ctx.cancel.clone());
                return self.listen(id, params, &ctx.client_capabilities, subject, conn, cancel).await;
            }
            #[cfg(feature = "tasks")]
            TasksGet::NAME | TasksUpdate::NAME | TasksCancel::NAME => {
                // Boxed: inline, the tasks methods' future would size every request's.
                Box::pin(self.task_method(method, params, ctx)).await
            }
            #[cfg(feature = "skills")]
            SkillsList::NAME | SkillsGet::NAME | ResourcesDirectoryRead::NAME => self.skill_method(method, params),
            _ => Err(ServerFault::MethodNotFound { method: method.to_owned() }),
        })
    }

    /// Sets the observer of a server built without one (see
    /// [`ServerBuilder::observer`](super::ServerBuilder::observer)), for a
    /// server made before its telemetry. Once: `false` when it had one.
    pub fn set_observer(&self, observer: std::sync::Arc<dyn crate::telemetry::Observer>) -> bool {
        self.inner.observer.set(observer).is_ok()
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

    async fn complete(&self, params: Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let request: CompleteRequestParams = parse(params)?;
        let handler = self
            .inner
            .completion
            .clone()
            .ok_or(ServerFault::MethodNotFound { method: CompletionComplete::NAME.into() })?;
        let mut completion = handler(request, ctx.clone()).await.map_err(ServerFault::Handler)?;
        // The specification caps a completion at 100 values.
        if completion.values.len() > 100 {
            completion.total.get_or_insert(completion.values.len() as u64);
            completion.values.truncate(100);
            completion.has_more = Some(true);
        }
        Ok(json!({ "resultType": "complete", "completion": completion }))
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
