//! A [`Server`] as the proto's `Mcp` service: each RPC becomes the
//! JSON-RPC request it carries, served like any other, and its result the
//! RPC's response.
//!
//! The protocol version comes in the `mcp-protocol-version` metadata key
//! (required; `_meta` may repeat it but not differ); `mcp-tool-name` and
//! `mcp-resource-uri`, when sent, must name the call's tool and the read's
//! resource. Handlers see the call's metadata as
//! [`RequestContext::http_headers`](crate::RequestContext::http_headers)
//! (without its credentials: `authorization`, `cookie`, `dpop`). With a
//! [`Protection`], each call's bearer token is checked as on the HTTP endpoint (the tool's,
//! prompt's or resource's scopes too): a refusal is `UNAUTHENTICATED`
//! (401), `PERMISSION_DENIED` (403, a step-up) or `INVALID_ARGUMENT`, with
//! the challenge in the `www-authenticate` metadata, and handlers see the
//! caller. A list's pages are read through before the response: the proto
//! has no cursor.

use std::future::Future;

use crate::server::RequestOrigin;
use mcp_bridge_protocol::method::{Method, PromptsList, ResourcesList, ResourcesTemplatesList, ToolsList};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_bridge_protocol::meta::PROTOCOL_VERSION_KEY;
use mcp_bridge_protocol::{ErrorObject, JsonRpcRequest, Message, RequestId, error_code};
use serde_json::{Map, Value};
use tonic::{Request, Response, Status};

use super::convert::{RpcRequest, RpcResponse};
use super::incoming::incoming;
use super::proto::mcp_server::{Mcp, McpServer};
use super::proto::*;
use super::status::status_of;
use super::{DEFAULT_MAX_MESSAGE_BYTES, PROTOCOL_VERSION_HEADER, RESOURCE_URI_HEADER, TOOL_NAME_HEADER};
use crate::limits::default_max_connections;
use crate::server::Server;
use crate::server::protect::{Caller, Protection, Refusal};

/// The most pages of a list read for one response.
const MAX_PAGES: usize = 1000;

/// A [`Server`] as the proto's `Mcp` service (add it to a tonic router of
/// your own with [`service`], or let [`serve`] run it).
#[derive(Debug, Clone)]
pub struct McpService {
    server: Server,
    next_id: Arc<AtomicU64>,
    protection: Option<Arc<Protection>>,
}

/// `server` as a tonic service, messages up to `max_message_bytes` each
/// way.
pub fn service(server: &Server, max_message_bytes: usize) -> McpServer<McpService> {
    protected_service(server, max_message_bytes, None)
}

/// [`service`], each call's token checked by `protection` when given.
pub fn protected_service(
    server: &Server,
    max_message_bytes: usize,
    protection: Option<Protection>,
) -> McpServer<McpService> {
    let service =
        McpService { server: server.clone(), next_id: Default::default(), protection: protection.map(Arc::new) };
    McpServer::new(service).max_decoding_message_size(max_message_bytes).max_encoding_message_size(max_message_bytes)
}

/// How [`serve`] serves: the message limit, the connection cap, and TLS
/// when given.
#[derive(Clone)]
#[non_exhaustive]
pub struct GrpcServeOptions {
    /// The largest message each way; 0 means [`DEFAULT_MAX_MESSAGE_BYTES`].
    pub max_message_bytes: usize,
    /// Connections open at once. At the cap a newcomer takes the place of
    /// the idlest connection of the client address holding the most (that
    /// connection is closed), or is closed itself when every address holds
    /// about as many; as on the HTTP endpoint
    /// ([`ConnectionLimits::max_connections`](crate::server::http::ConnectionLimits::max_connections)),
    /// whose default, [`default_max_connections`], it shares.
    pub max_connections: usize,
    /// The server's certificate chain and private key (PEM): serve TLS
    /// (`https://` for clients) instead of plain HTTP/2.
    pub tls: Option<(String, String)>,
    /// Check each call's bearer token.
    pub protection: Option<Protection>,
}

impl Default for GrpcServeOptions {
    fn default() -> Self {
        GrpcServeOptions {
            max_message_bytes: 0,
            max_connections: default_max_connections(),
            tls: None,
            protection: None,
        }
    }
}

impl std::fmt::Debug for GrpcServeOptions {
    /// The private key never shows.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcServeOptions")
            .field("max_message_bytes", &self.max_message_bytes)
            .field("max_connections", &self.max_connections)
            .field("tls", &self.tls.is_some())
            .field("protection", &self.protection)
            .finish()
    }
}

crate::setters::with_setters! {
    GrpcServeOptions {
        value with_max_message_bytes => max_message_bytes: usize,
        value with_max_connections => max_connections: usize,
        some with_tls => tls: (String, String),
        some with_protection => protection: Protection,
    }
}

/// Serves `server` over gRPC on `listener` until `shutdown` completes.
///
/// # Errors
/// TLS settings that cannot be used, or the listener failed.
pub async fn serve(
    server: &Server,
    listener: tokio::net::TcpListener,
    options: GrpcServeOptions,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), crate::Error> {
    let failed = |e: tonic::transport::Error| crate::Error::Transport { reason: format!("gRPC server: {e}") };
    let max = if options.max_message_bytes == 0 { DEFAULT_MAX_MESSAGE_BYTES } else { options.max_message_bytes };
    let mut builder = tonic::transport::Server::builder();
    if let Some((cert, key)) = &options.tls {
        let identity = tonic::transport::Identity::from_pem(cert, key);
        builder = builder.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity)).map_err(failed)?;
    }
    let (connections, accepting) = incoming(listener, options.max_connections, shutdown);
    let serving =
        builder.add_service(protected_service(server, max, options.protection)).serve_with_incoming(connections);
    // The server ends once the accept loop stopped and handed over the
    // connections it took (then it finishes the calls in progress).
    let ((), served) = tokio::join!(accepting, serving);
    served.map_err(failed)
}

fn refused(code: i64, message: impl Into<String>) -> Status {
    status_of(&ErrorObject::new(code, message))
}

/// A metadata value as text, when it is one.
fn header<'a>(request: &'a tonic::metadata::MetadataMap, name: &str) -> Option<&'a str> {
    request.get(name).and_then(|v| v.to_str().ok())
}

impl McpService {
    /// Serves one RPC: its request as JSON-RPC, the result as its response
    /// (`pick` takes the response of the RPC's kind).
    async fn answer<T>(
        &self,
        metadata: tonic::metadata::MetadataMap,
        rpc: RpcRequest,
        pick: fn(RpcResponse) -> Option<T>,
    ) -> Result<Response<T>, Status> {
        let version = header(&metadata, PROTOCOL_VERSION_HEADER)
            .ok_or_else(|| refused(error_code::INVALID_REQUEST, "the mcp-protocol-version metadata is missing"))?
            .to_owned();
        check_routing(&metadata, &rpc)?;
        let (method, mut params) = rpc.into_json().map_err(|e| refused(error_code::INVALID_PARAMS, e.0))?;
        stamp_version(&mut params, &version)?;
        let params = Value::Object(params);
        let caller = self.authenticate(&metadata, method, &params).await?;
        let headers = metadata.into_headers();
        let result = self.read_through(method, params, &headers, caller.as_deref()).await?;
        let response = RpcResponse::from_json(method, result).map_err(|e| refused(error_code::INTERNAL_ERROR, e.0))?;
        pick(response)
            .map(Response::new)
            .ok_or_else(|| refused(error_code::INTERNAL_ERROR, "a response of another RPC"))
    }

    /// The caller of a call to a protected service (its token and the
    /// scopes of what it does checked); `None` when unprotected.
    async fn authenticate(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        method: &str,
        params: &Value,
    ) -> Result<Option<std::sync::Arc<Caller>>, Status> {
        let Some(protection) = &self.protection else { return Ok(None) };
        let values: Vec<&str> = metadata.get_all("authorization").iter().filter_map(|v| v.to_str().ok()).collect();
        let refused = |refusal: Refusal| refusal_status(protection, &refusal);
        let caller = protection.authenticate(&values).await.map_err(refused)?;
        let needed = self.server.scopes_needed(method, Some(params));
        protection.admit(&caller, &needed).map_err(refused)?;
        Ok(Some(caller))
    }

    /// The result of `method`, every page of a list joined.
    async fn read_through(
        &self,
        method: &str,
        params: Value,
        headers: &http::HeaderMap,
        caller: Option<&Caller>,
    ) -> Result<Value, Status> {
        let list = match method {
            ToolsList::NAME => "tools",
            PromptsList::NAME => "prompts",
            ResourcesList::NAME => "resources",
            ResourcesTemplatesList::NAME => "resourceTemplates",
            _ => return self.one(method, params, headers, caller).await,
        };
        let mut first = self.one(method, params.clone(), headers, caller).await?;
        let mut cursor = first.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
        let mut pages = 1;
        while let Some(next) = cursor.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(refused(error_code::INTERNAL_ERROR, format!("{method}: more than {MAX_PAGES} pages")));
            }
            let mut params = params.clone();
            params["cursor"] = Value::String(next);
            let mut page = self.one(method, params, headers, caller).await?;
            cursor = page.get("nextCursor").and_then(Value::as_str).map(str::to_owned);
            if let (Some(Value::Array(all)), Some(Value::Array(more))) = (first.get_mut(list), page.get_mut(list)) {
                all.append(more);
            }
        }
        if let Value::Object(first) = &mut first {
            first.remove("nextCursor");
        }
        Ok(first)
    }

    /// One JSON-RPC request's result.
    async fn one(
        &self,
        method: &str,
        params: Value,
        headers: &http::HeaderMap,
        caller: Option<&Caller>,
    ) -> Result<Value, Status> {
        let id = RequestId::Number(i64::try_from(self.next_id.fetch_add(1, Ordering::Relaxed)).unwrap_or(0));
        let request = JsonRpcRequest::new(id, method, Some(params));
        let origin =
            RequestOrigin { http_headers: Some(headers.clone()), caller: caller.cloned(), ..Default::default() };
        match self.server.answer_from(request, origin).await {
            Message::Result(r) => Ok(r.result),
            Message::Error(e) => Err(status_of(&e.error)),
            _ => Err(refused(error_code::INTERNAL_ERROR, "no response")),
        }
    }
}

/// A refused token as a status: the HTTP endpoint's challenge in the
/// `www-authenticate` metadata, the code of its HTTP status.
fn refusal_status(protection: &Protection, refusal: &Refusal) -> Status {
    let challenge = protection.challenge(refusal);
    let (code, message) = match refusal {
        Refusal::NoToken => (tonic::Code::Unauthenticated, "a bearer token is needed".to_owned()),
        Refusal::InvalidToken { description } => {
            (tonic::Code::Unauthenticated, format!("the token is refused: {description}"))
        }
        Refusal::InsufficientScope { scopes } => {
            (tonic::Code::PermissionDenied, format!("the token lacks scopes; needed: {}", scopes.join(" ")))
        }
        Refusal::InvalidRequest { description } => (tonic::Code::InvalidArgument, description.to_string()),
    };
    let mut status = Status::new(code, message);
    if let Ok(value) = challenge.www_authenticate.parse() {
        status.metadata_mut().insert("www-authenticate", value);
    }
    status
}

/// The routing keys, when sent, name what the request does.
fn check_routing(metadata: &tonic::metadata::MetadataMap, rpc: &RpcRequest) -> Result<(), Status> {
    let (key, named) = match rpc {
        RpcRequest::CallTool(call) => (TOOL_NAME_HEADER, call.request.as_ref().map(|r| r.name.as_str())),
        RpcRequest::ReadResource(read) => (RESOURCE_URI_HEADER, Some(read.uri.as_str())),
        _ => return Ok(()),
    };
    match header(metadata, key) {
        Some(sent) if Some(sent) != named => Err(refused(
            error_code::HEADER_MISMATCH,
            format!("the {key} metadata ({sent:?}) does not match the request ({:?})", named.unwrap_or_default()),
        )),
        _ => Ok(()),
    }
}

/// Puts the metadata's protocol version in `_meta`, where the server reads it.
fn stamp_version(params: &mut Map<String, Value>, version: &str) -> Result<(), Status> {
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else {
        return Err(refused(error_code::INVALID_PARAMS, "_meta must be an object"));
    };
    match meta.get(PROTOCOL_VERSION_KEY).and_then(Value::as_str) {
        Some(stated) if stated != version => Err(refused(
            error_code::HEADER_MISMATCH,
            format!("the mcp-protocol-version metadata ({version}) does not match _meta ({stated})"),
        )),
        _ => {
            meta.insert(PROTOCOL_VERSION_KEY.into(), Value::String(version.to_owned()));
            Ok(())
        }
    }
}

macro_rules! rpcs {
    ($($method:ident: $request:ty => $response:ty, $variant:ident;)*) => {
        #[tonic::async_trait]
        impl Mcp for McpService {
            $(
                async fn $method(&self, request: Request<$request>) -> Result<Response<$response>, Status> {
                    let (metadata, _, message) = request.into_parts();
                    let pick = |r| match r {
                        RpcResponse::$variant(r) => Some(r),
                        _ => None,
                    };
                    self.answer(metadata, RpcRequest::$variant(message), pick).await
                }
            )*
        }
    };
}

rpcs! {
    list_resources: ListResourcesRequest => ListResourcesResponse, ListResources;
    read_resource: ReadResourceRequest => ReadResourceResponse, ReadResource;
    list_resource_templates: ListResourceTemplatesRequest => ListResourceTemplatesResponse, ListResourceTemplates;
    list_prompts: ListPromptsRequest => ListPromptsResponse, ListPrompts;
    get_prompt: GetPromptRequest => GetPromptResponse, GetPrompt;
    list_tools: ListToolsRequest => ListToolsResponse, ListTools;
    call_tool: CallToolRequest => CallToolResponse, CallTool;
    complete: CompletionRequest => CompletionResponse, Complete;
}
