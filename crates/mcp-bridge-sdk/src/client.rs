//! The client: stamps `_meta` on every request, routes responses and
//! notifications, runs multi round-trip requests through the input hooks,
//! and gives owned, typed results.

mod cache;
mod connect;
pub mod era;
mod era_cache;
mod extensions;
pub mod input;
mod legacy_listen;
mod listen;
mod methods;
mod observed;
mod options;
mod reply;
mod router;
mod send;
mod server_requests;
mod stamps;
#[cfg(feature = "tasks")]
mod task_store;
#[cfg(feature = "tasks")]
mod tasks;
mod time_limit;

use std::collections::HashMap;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::method::{Method, ServerDiscover};
use mcp_bridge_protocol::types::{CallToolResult, Icon, Tool};
use mcp_bridge_protocol::{Message, error_code};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use cache::ResultCache;
pub use cache::{CacheMode, CacheOptions};
pub use era::{Era, Spoken};
pub use era_cache::{EraCache, VERDICT_TTL, Verdict};
pub use listen::{GapCause, ListenGap, ListenGapCallback, ListenRecovery};
use methods::{cursor_params, tool_call_params};
pub use options::{
    ClientIdentity, ClientOptions, Diagnostics, Hook, InputHooks, LogCallback, NotificationCallback, ProgressCallback,
    RequestOptions, RetryPolicy, hook,
};
pub(crate) use reply::Reply;
use router::Router;
#[cfg(feature = "tasks")]
pub use task_store::{TaskRecord, TaskStore};
#[cfg(feature = "tasks")]
pub use tasks::{ResumedTask, ToolOutcome, task_of_notification, task_result};

use crate::error::{Error, Result};
#[cfg(feature = "icons")]
use crate::icons::{IconError, IconWanted, Image};
use crate::transport::Transport;
#[cfg(feature = "stdio")]
use crate::transport::stdio::ChildProcess;

pub use crate::limits::CLOSE_GRACE;

/// An MCP client on one transport, of revision 2026-07-28 or, with a server
/// that speaks only that, 2025-11-25 (see [`Era`]). Cheap to clone: clones
/// share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    options: ClientOptions,
    router: Arc<Router>,
    out: mpsc::Sender<Message>,
    next_id: AtomicI64,
    #[cfg(feature = "stdio")]
    process: Option<ChildProcess>,
    /// Time limits do not apply on the in-memory link.
    timed: bool,
    /// Output schemas from `tools/list`, to check `structuredContent`.
    #[cfg(feature = "validation")]
    output_schemas: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    /// Results with a lifetime, when the options enable the cache.
    cache: Option<Arc<ResultCache>>,
    /// The transport's credential, which private cached results belong to.
    credential: crate::transport::Credential,
    /// The endpoint URL of a network transport, the origin of its icons.
    #[cfg(feature = "icons")]
    endpoint: Option<String>,
    /// The transport's tasks and the client's (router, answerer): they
    /// end with the client.
    tasks: crate::task_group::TaskGroup,
    /// The era settled with the server, at the first request.
    spoken: tokio::sync::OnceCell<Spoken>,
    /// The result of the `server/discover` probe, for the caller whose
    /// request was that discover.
    probed: Mutex<Option<Value>>,
    /// The resources the listen streams of a 2025-11-25 session want; held
    /// across the subscribe and unsubscribe requests, so that a stream's
    /// end and another's start do not cross.
    legacy_subscriptions: tokio::sync::Mutex<legacy_listen::SubscriptionCounts>,
    /// Where the server is, as the era cache knows it.
    address: Option<String>,
    /// The era is 2026-07-28 on the cache's word alone: a first answer of
    /// a legacy server proves the verdict wrong.
    modern_from_cache: std::sync::atomic::AtomicBool,
    /// The client's own `_meta` entries, as JSON.
    stamp: stamps::StampCell,
}

impl Drop for ClientInner {
    /// The last clone is gone: nothing will read or send again.
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("info", &self.inner.options.info).finish_non_exhaustive()
    }
}

impl Client {
    /// A client on `transport`. Must be called inside a tokio runtime: the
    /// client's reader runs on a task of its own, which ends, with the
    /// transport's, at [`Client::close`] or when the last clone is dropped.
    pub fn new(options: ClientOptions, transport: Transport) -> Self {
        let router = Arc::new(Router::new(options.max_pending));
        let timed = transport.timed;
        let cache = options.cache.enabled.then(|| Arc::new(ResultCache::new(options.cache)));
        let (to_answerer, server_requests) = mpsc::channel(crate::limits::OUTGOING_QUEUE);
        let answerer = server_requests::Answerer {
            capabilities: Arc::new(options.capabilities.clone()),
            hooks: options.hooks.clone(),
        };
        let tasks = transport.tasks;
        tasks.spawn(answerer.run(server_requests, transport.outgoing.clone()));
        tasks.spawn_to_finish(
            CLOSE_GRACE,
            router.clone().run(
                transport.incoming,
                transport.outgoing.clone(),
                options.on_notification.clone(),
                to_answerer,
                tasks.stopping(),
            ),
        );
        Client {
            inner: Arc::new(ClientInner {
                options,
                router,
                out: transport.outgoing,
                next_id: AtomicI64::new(1),
                #[cfg(feature = "stdio")]
                process: transport.process,
                timed,
                #[cfg(feature = "validation")]
                output_schemas: Mutex::default(),
                cache,
                credential: transport.credential,
                #[cfg(feature = "icons")]
                endpoint: transport.endpoint,
                tasks,
                spoken: tokio::sync::OnceCell::new(),
                probed: Mutex::default(),
                legacy_subscriptions: tokio::sync::Mutex::default(),
                address: transport.address,
                modern_from_cache: Default::default(),
                stamp: Default::default(),
            }),
        }
    }

    /// The server process, when the transport is a child process.
    #[cfg(feature = "stdio")]
    pub fn process(&self) -> Option<&ChildProcess> {
        self.inner.process.as_ref()
    }

    /// Closes the connection, on every transport: a child process is
    /// stopped as [`ChildProcess::close`] describes, and its exit status
    /// returned; an HTTP connection ends its requests and a 2025-11-25
    /// session, a WebSocket sends its close frame, a socket is shut (each
    /// at most [`CLOSE_GRACE`] waiting for the server). Requests still
    /// waiting, and any sent later, fail with [`Error::Closed`]. Every task
    /// of the client has ended when it returns.
    pub async fn close(&self) -> Option<std::process::ExitStatus> {
        #[cfg(feature = "stdio")]
        let status = match &self.inner.process {
            Some(process) => process.close().await,
            None => None,
        };
        #[cfg(not(feature = "stdio"))]
        let status = None;
        if !self.inner.tasks.stop(CLOSE_GRACE).await {
            tracing::debug!("a transport task was still ending when the close grace ran out");
        }
        status
    }

    /// The icon to show among `icons` (of a tool, a prompt, a resource or
    /// the server), as [`crate::icons::select`] ranks them under the
    /// client's policy, for this transport's endpoint.
    #[cfg(feature = "icons")]
    pub fn select_icon<'a>(&self, icons: &'a [Icon], wanted: &IconWanted) -> Option<&'a Icon> {
        crate::icons::select(icons, wanted, self.inner.endpoint.as_deref(), &self.inner.options.icons)
    }

    /// Fetches and checks an icon under the client's policy: https icons of
    /// the endpoint's origin (or a trusted one) and data: icons.
    ///
    /// # Errors
    /// The [`IconError`] of the rule the icon breaks.
    #[cfg(feature = "icons")]
    pub async fn fetch_icon(&self, icon: &Icon) -> std::result::Result<Image, IconError> {
        crate::icons::fetch(icon, self.inner.endpoint.as_deref(), &self.inner.options.icons).await
    }

    /// Drops every cached result (see [`CacheOptions`]).
    pub fn invalidate_cache(&self) {
        if let Some(cache) = &self.inner.cache {
            cache.clear();
        }
    }

    /// Sends any request by name and returns its raw result, after the
    /// input rounds (or the `InputRequiredResult` itself with
    /// `allow_input_required`): what a bridge forwards, or a method this
    /// SDK has no type for ([`Client::request`] for those it has).
    /// Discovery, list and read results come from the cache when it is on
    /// and holds a fresh one (see [`CacheOptions`] and [`CacheMode`]).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn request_raw(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value> {
        match self.inner.options.observer.clone() {
            Some(observer) => self.request_observed(method, params, options, observer).await,
            None => self.request_unobserved(method, params, options).await,
        }
    }

    /// A request whose result its caller passes on: the result as it came
    /// when nothing here needs it as a tree (the caller runs the input
    /// rounds, no observer, no cache, not `server/discover`, a 2026-07-28
    /// server), else [`Client::request_raw`]'s. Borrowed params are copied
    /// only for the tree.
    ///
    /// # Errors
    /// See [`Error`].
    pub(crate) async fn relay(
        &self,
        method: &str,
        params: std::borrow::Cow<'_, Map<String, Value>>,
        options: &RequestOptions,
    ) -> Result<Reply> {
        let cached = self
            .inner
            .cache
            .as_ref()
            .is_some_and(|_| options.cache_mode != CacheMode::Bypass && cache::cacheable(method, &params));
        let as_tree = cached
            || self.inner.options.observer.is_some()
            || !options.allow_input_required
            || method == ServerDiscover::NAME
            || self.connect(options).await?.is_legacy();
        if as_tree {
            return self.request_raw(method, params.into_owned(), options).await.map(Reply::Tree);
        }
        // As in `request_unobserved`: the probe's result answers no other request.
        self.inner.probed.lock().unwrap_or_else(|e| e.into_inner()).take();
        let reply = self.send_once(method, &params, options, self.time_limit(options), false).await?;
        // As in `request_rounds`: the caller runs the rounds.
        options.diagnose(|d| d.rounds = 0);
        Ok(reply)
    }

    /// [`Client::request_raw`] without the observer.
    async fn request_unobserved(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value> {
        let spoken = self.connect(options).await?;
        // The probe's discover result answers the discover that caused it, no other request.
        let probed = self.inner.probed.lock().unwrap_or_else(|e| e.into_inner()).take();
        if method == ServerDiscover::NAME {
            if let Spoken::Legacy(initialized) = spoken {
                return to_json(&era::discover_of_initialize(initialized));
            }
            if let Some(probed) = probed {
                return Ok(probed);
            }
        }
        let cache = self
            .inner
            .cache
            .as_ref()
            .filter(|_| options.cache_mode != CacheMode::Bypass && cache::cacheable(method, &params));
        let Some(cache) = cache else { return self.request_rounds(method, params, options).await.map(|(v, _)| v) };
        let credential = self.inner.credential.digest().await;
        cache.saw_credential(credential);
        if options.cache_mode == CacheMode::Default
            && let Some(value) = cache.get(method, &params, credential)
        {
            options.diagnose(|d| d.from_cache = true);
            return Ok(value);
        }
        match self.request_rounds(method, params.clone(), options).await {
            Ok((value, rounds)) => {
                // A result reached through input rounds answered this caller's input.
                if rounds == 0 {
                    cache.put(method, &params, &value, credential);
                }
                Ok(value)
            }
            Err(Error::Rpc { error }) if error.code == error_code::INVALID_PARAMS && params.contains_key("cursor") => {
                // The cursor is stale: so may the pages around it be.
                cache.drop_method(method);
                Err(Error::Rpc { error })
            }
            Err(e) => Err(e),
        }
    }

    #[cfg(feature = "validation")]
    fn remember_output_schemas(&self, tools: &[Tool]) {
        let mut schemas = self.inner.output_schemas.lock().unwrap_or_else(|e| e.into_inner());
        for tool in tools {
            match tool.output_schema.as_ref().map(|s| jsonschema::validator_for(&Value::Object(s.clone()))) {
                Some(Ok(v)) => {
                    schemas.insert(tool.name.clone(), Arc::new(v));
                }
                Some(Err(e)) => tracing::warn!(tool = %tool.name, "output schema does not compile: {e}"),
                None => {
                    schemas.remove(&tool.name);
                }
            }
        }
    }

    #[cfg(feature = "validation")]
    fn check_structured_content(&self, name: &str, result: &CallToolResult, options: &RequestOptions) {
        let validator = self.inner.output_schemas.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned();
        let (Some(validator), false) = (validator, result.is_error == Some(true)) else { return };
        let content = result.structured_content.clone().unwrap_or(Value::Null);
        if let Some(error) = validator.iter_errors(&content).next() {
            tracing::warn!(tool = name, "structuredContent does not match the output schema: {error}");
            options.diagnose(|d| d.structured_content_invalid = true);
        }
    }

    /// Without the `validation` feature no output schema is checked.
    #[cfg(not(feature = "validation"))]
    fn remember_output_schemas(&self, _tools: &[Tool]) {}

    #[cfg(not(feature = "validation"))]
    fn check_structured_content(&self, _name: &str, _result: &CallToolResult, _options: &RequestOptions) {}
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::InvalidRequest { reason: e.to_string() })
}

fn parse_result<T: DeserializeOwned>(method: &str, value: Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| Error::InvalidResponse { method: method.to_owned(), reason: e.to_string() })
}
