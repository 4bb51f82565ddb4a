//! The client transport over gRPC: each request of the client becomes its
//! RPC (one unary call each), with the protocol version in the
//! `mcp-protocol-version` metadata key, the call's tool in `mcp-tool-name`,
//! the read's resource in `mcp-resource-uri`, the tool's annotated
//! parameters in `mcp-param-*` (learned from `tools/list`, as the HTTP
//! transport mirrors them), and the credentials in `authorization`.
//!
//! The proto has no `server/discover`: the transport answers it itself, for
//! revision 2026-07-28 with every list and completion offered (an RPC the
//! server lacks answers `UNIMPLEMENTED`). What the proto has no RPC for
//! (`subscriptions/listen`, the tasks, pings) fails at once with -32601
//! naming it; notifications other than a cancellation (which ends the call)
//! have nowhere to go and are dropped.

use std::sync::Arc;

use mcp_bridge_protocol::headers::name_member;
use mcp_bridge_protocol::meta::PROTOCOL_VERSION_KEY;
use mcp_bridge_protocol::method::{
    Method, NotificationsCancelled, ResourcesRead, ServerDiscover, ToolsCall, ToolsList,
};
use mcp_bridge_protocol::{
    ErrorObject, JsonRpcErrorResponse, JsonRpcRequest, JsonRpcResultResponse, Message, RequestId, error_code,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use super::convert::{RpcRequest, RpcResponse};
use super::proto::mcp_client::McpClient;
use super::status::{error_of, http_status};
use super::{DEFAULT_MAX_MESSAGE_BYTES, PROTOCOL_VERSION_HEADER, RESOURCE_URI_HEADER, TOOL_NAME_HEADER};
use crate::error::Error;
use crate::limits::{CLOSE_GRACE, OUTGOING_QUEUE};
use crate::task_group::TaskGroup;
use crate::transport::in_flight::InFlight;
use crate::transport::tool_headers::ToolHeaders;
use crate::transport::{Credential, Incoming, Transport};

/// Where an MCP server's gRPC service is, and how to call it.
#[derive(Clone)]
#[non_exhaustive]
pub struct GrpcConfig {
    /// `http://HOST:PORT` (HTTP/2 without TLS) or `https://HOST:PORT`.
    pub url: String,
    /// Metadata for every call (`authorization`, say).
    pub headers: Vec<(String, String)>,
    /// A bearer token, sent as `authorization: Bearer …` on every call.
    pub bearer_token: Option<String>,
    /// A CA certificate (PEM) trusted besides the system's, for `https`.
    pub ca_certificate_pem: Option<String>,
    /// The largest message sent or received.
    pub max_message_bytes: usize,
}

impl std::fmt::Debug for GrpcConfig {
    /// Header values and the token may be secrets: only the header names.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("GrpcConfig")
            .field("url", &self.url)
            .field("headers", &names)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "***"))
            .field("max_message_bytes", &self.max_message_bytes)
            .finish_non_exhaustive()
    }
}

impl GrpcConfig {
    /// The service at `url`, without credentials.
    pub fn new(url: impl Into<String>) -> Self {
        GrpcConfig {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
            ca_certificate_pem: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

crate::setters::with_setters! {
    GrpcConfig {
        some with_bearer_token => bearer_token: String,
        some with_ca_certificate_pem => ca_certificate_pem: String,
        value with_max_message_bytes => max_message_bytes: usize,
        value with_headers => headers: Vec<(String, String)>,
    }
}

/// The `authorization` value of a configuration, when it has one.
fn authorization(config: &GrpcConfig) -> Option<String> {
    config.bearer_token.as_ref().map(|t| format!("Bearer {t}")).or_else(|| {
        config.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("authorization")).map(|(_, v)| v.clone())
    })
}

/// Connects a client transport to the gRPC service at `config.url` (the
/// connection itself is made at the first call).
///
/// # Errors
/// [`Error::InvalidRequest`] for a URL that is not one, or TLS settings
/// that cannot be used.
pub fn connect(config: GrpcConfig) -> Result<Transport, Error> {
    let invalid = |what: &str, e: &dyn std::fmt::Display| Error::InvalidRequest { reason: format!("{what}: {e}") };
    let mut endpoint =
        Endpoint::from_shared(config.url.clone()).map_err(|e| invalid("the gRPC URL is not valid", &e))?;
    if config.url.starts_with("https://") {
        let mut tls = ClientTlsConfig::new().with_native_roots();
        if let Some(pem) = &config.ca_certificate_pem {
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        endpoint = endpoint.tls_config(tls).map_err(|e| invalid("the TLS settings cannot be used", &e))?;
    }
    let client = McpClient::new(endpoint.connect_lazy())
        .max_decoding_message_size(config.max_message_bytes)
        .max_encoding_message_size(config.max_message_bytes);
    let credential = authorization(&config).map_or(Credential::None, Credential::Fixed);
    let (outgoing, out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let tasks = TaskGroup::default();
    let address = Some(config.url.clone());
    let closed = tasks.stopping();
    tasks.spawn_to_finish(CLOSE_GRACE, pump(client, Arc::new(config), out_rx, to_client, closed));
    Ok(Transport { credential, endpoint: address.clone(), address, ..Transport::remote(outgoing, incoming, tasks) })
}

/// Sends each request of the client as its RPC, on a task of its own, until
/// the client goes or closes the transport (`closed`); a cancellation ends
/// its call.
async fn pump(
    client: McpClient<Channel>,
    config: Arc<GrpcConfig>,
    mut out: mpsc::Receiver<Message>,
    to_client: mpsc::Sender<Incoming>,
    closed: tokio_util::sync::CancellationToken,
) {
    let mut calls = JoinSet::new();
    let in_flight = InFlight::default();
    let tool_headers = ToolHeaders::default();
    loop {
        tokio::select! {
            () = closed.cancelled() => break,
            message = out.recv() => match message {
                None => break,
                Some(Message::Request(request)) if request.method == ServerDiscover::NAME => {
                    let _ = to_client.send(Incoming::Message(discovered(request.id))).await;
                }
                Some(Message::Request(request)) => {
                    let ends = closed.child_token();
                    in_flight.started(request.id.clone(), ends.clone());
                    let (client, config, to_client) = (client.clone(), config.clone(), to_client.clone());
                    let (tool_headers, in_flight) = (tool_headers.clone(), in_flight.clone());
                    calls.spawn(async move {
                        let id = request.id.clone();
                        let answering = async {
                            for incoming in call(client, &config, &tool_headers, request).await {
                                let _ = to_client.send(incoming).await;
                            }
                        };
                        tokio::select! {
                            () = answering => {}
                            () = ends.cancelled() => {}
                        }
                        in_flight.finished(&id);
                    });
                }
                Some(Message::Notification(n)) if n.method == NotificationsCancelled::NAME => in_flight.cancel(&n),
                Some(other) => tracing::debug!(target: "mcp_grpc", "dropped: the proto has no place for {other:?}"),
            },
            // Finished calls leave the set.
            Some(_) = calls.join_next(), if !calls.is_empty() => {}
        }
    }
}

/// The transport's own answer to `server/discover`.
fn discovered(id: RequestId) -> Message {
    let result = json!({
        "resultType": "complete",
        "supportedVersions": [mcp_bridge_protocol::PROTOCOL_VERSION],
        "capabilities": {"tools": {}, "prompts": {}, "resources": {}, "completions": {}}
    });
    Message::Result(JsonRpcResultResponse::new(id, result))
}

/// One request's RPC; what the client hears of it. A `tools/call` carries
/// the parameters `tool_headers` says to mirror; a `tools/list` result
/// teaches them.
async fn call(
    mut client: McpClient<Channel>,
    config: &GrpcConfig,
    tool_headers: &ToolHeaders,
    request: JsonRpcRequest,
) -> Vec<Incoming> {
    let id = request.id.clone();
    let fail = |error: ErrorObject| {
        vec![Incoming::Message(Message::Error(JsonRpcErrorResponse::new(Some(id.clone()), error)))]
    };
    let params = match request.params {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let mirrored = if request.method == ToolsCall::NAME {
        match tool_headers.of_call(Some(&Value::Object(params.clone()))) {
            Ok(mirrored) => mirrored,
            Err(e) => return vec![Incoming::Failed { id, error: Error::InvalidRequest { reason: e.to_string() } }],
        }
    } else {
        Vec::new()
    };
    let metadata = match call_metadata(config, &request.method, &params, &mirrored) {
        Ok(metadata) => metadata,
        Err(error) => return vec![Incoming::Failed { id, error }],
    };
    if !RpcRequest::carries(&request.method) {
        return fail(ErrorObject::new(
            error_code::METHOD_NOT_FOUND,
            format!("{} is not carried by the gRPC transport: the proto has no RPC for it", request.method),
        ));
    }
    let rpc = match RpcRequest::from_json(&request.method, params) {
        Ok(rpc) => rpc,
        Err(e) => return vec![Incoming::Failed { id, error: Error::InvalidRequest { reason: e.0 } }],
    };
    let method = rpc.method();
    let size = rpc.encoded_len();
    if size > config.max_message_bytes {
        let reason =
            format!("the {method} request is {size} bytes, over the limit of {} bytes", config.max_message_bytes);
        return vec![Incoming::Failed { id, error: Error::InvalidRequest { reason } }];
    }
    match send(&mut client, metadata, rpc).await {
        Ok(response) => {
            let status = Incoming::HttpStatus { id: id.clone(), status: 200 };
            match response.into_json() {
                Ok(mut result) => {
                    if method == ToolsList::NAME {
                        tool_headers.learn(&mut result, None);
                    }
                    vec![status, Incoming::Message(Message::Result(JsonRpcResultResponse::new(id, result)))]
                }
                Err(e) => vec![
                    status,
                    Incoming::Failed { id, error: Error::InvalidResponse { method: method.into(), reason: e.0 } },
                ],
            }
        }
        Err(status) => {
            let http = Incoming::HttpStatus { id: id.clone(), status: http_status(status.code()) };
            // A status made here from an error of the connection (it has a
            // source; one from the server never does).
            let local = std::error::Error::source(&status).is_some() && status.code() != tonic::Code::OutOfRange;
            if status.code() == tonic::Code::Unavailable || local {
                let reason = format!("the gRPC connection failed: {}", status.message());
                return vec![http, Incoming::Failed { id, error: Error::Transport { reason } }];
            }
            let error = error_of(&status);
            vec![http, Incoming::Message(Message::Error(JsonRpcErrorResponse::new(Some(id), error)))]
        }
    }
}

/// The metadata of one call: the protocol version, the routing keys, the
/// mirrored parameters, the credentials and the configured headers.
fn call_metadata(
    config: &GrpcConfig,
    method: &str,
    params: &Map<String, Value>,
    mirrored: &[(String, String)],
) -> Result<tonic::metadata::MetadataMap, Error> {
    let mut headers = http::HeaderMap::new();
    let invalid = |name: &str| Error::InvalidRequest { reason: format!("the {name} metadata value is not valid") };
    let mut put = |name: &str, value: &str| -> Result<(), Error> {
        let name = http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| invalid(name))?;
        let value = http::HeaderValue::from_str(value).map_err(|_| invalid(name.as_str()))?;
        headers.insert(name, value);
        Ok(())
    };
    for (name, value) in config.headers.iter().chain(mirrored) {
        put(name, value)?;
    }
    if let Some(value) = authorization(config) {
        put("authorization", &value)?;
    }
    let version = params
        .get("_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str)
        .unwrap_or(mcp_bridge_protocol::PROTOCOL_VERSION);
    put(PROTOCOL_VERSION_HEADER, version)?;
    // The member that names the request is the method table's; the
    // metadata key that carries it is gRPC's own.
    let routing_key = match method {
        ToolsCall::NAME => Some(TOOL_NAME_HEADER),
        ResourcesRead::NAME => Some(RESOURCE_URI_HEADER),
        _ => None,
    };
    if let Some((key, member)) = routing_key.zip(name_member(method))
        && let Some(value) = params.get(member).and_then(Value::as_str)
        && http::HeaderValue::from_str(value).is_ok()
    {
        // A name that is not a valid header value goes without its routing key.
        put(key, value)?;
    }
    Ok(tonic::metadata::MetadataMap::from_headers(headers))
}

macro_rules! send_rpcs {
    ($($variant:ident => $method:ident,)*) => {
        /// Makes the RPC of `rpc` with `metadata`.
        async fn send(
            client: &mut McpClient<Channel>,
            metadata: tonic::metadata::MetadataMap,
            rpc: RpcRequest,
        ) -> Result<RpcResponse, tonic::Status> {
            match rpc {
                $(
                    RpcRequest::$variant(message) => {
                        let request = tonic::Request::from_parts(metadata, Default::default(), message);
                        client.$method(request).await.map(|r| RpcResponse::$variant(r.into_inner()))
                    }
                )*
            }
        }
    };
}

send_rpcs! {
    ListResources => list_resources,
    ReadResource => read_resource,
    ListResourceTemplates => list_resource_templates,
    ListPrompts => list_prompts,
    GetPrompt => get_prompt,
    ListTools => list_tools,
    CallTool => call_tool,
    Complete => complete,
}
