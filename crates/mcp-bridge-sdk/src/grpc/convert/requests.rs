//! Each RPC's request and response: a JSON-RPC method's params and result.

use std::time::Duration;

use mcp_bridge_protocol::method::{
    CompletionComplete, Method, PromptsGet, PromptsList, ResourcesList, ResourcesRead, ResourcesTemplatesList,
    ToolsCall, ToolsList,
};
use mcp_bridge_protocol::rounds::{INPUT_RESPONSES, REQUEST_STATE};
use serde_json::{Map, Value};

use super::content::{contents_from_proto, contents_to_proto, prompt_message_from_proto, prompt_message_to_proto};
use super::content::{tool_content_from_proto, tool_content_to_proto};
use super::items::{
    prompt_from_proto, prompt_to_proto, resource_from_proto, resource_to_proto, template_from_proto, template_to_proto,
    tool_from_proto, tool_to_proto,
};
use super::{Members, Object, Unmappable, input, metadata, proto, unpack};
use crate::grpc::json::{from_struct, to_struct};

/// The request of one of the service's RPCs.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum RpcRequest {
    ListResources(proto::ListResourcesRequest),
    ReadResource(proto::ReadResourceRequest),
    ListResourceTemplates(proto::ListResourceTemplatesRequest),
    ListPrompts(proto::ListPromptsRequest),
    GetPrompt(proto::GetPromptRequest),
    ListTools(proto::ListToolsRequest),
    CallTool(proto::CallToolRequest),
    Complete(proto::CompletionRequest),
}

/// The response of one of the service's RPCs.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum RpcResponse {
    ListResources(proto::ListResourcesResponse),
    ReadResource(proto::ReadResourceResponse),
    ListResourceTemplates(proto::ListResourceTemplatesResponse),
    ListPrompts(proto::ListPromptsResponse),
    GetPrompt(proto::GetPromptResponse),
    ListTools(proto::ListToolsResponse),
    CallTool(proto::CallToolResponse),
    Complete(proto::CompletionResponse),
}

/// A request's `_meta`, input responses and request state as `RequestFields`.
fn request_fields_to_proto(p: &mut Members) -> Result<proto::RequestFields, Unmappable> {
    if p.0.contains_key("cursor") {
        return Err(Unmappable("the proto has no cursor: its lists come whole".into()));
    }
    let input_responses = p
        .object(INPUT_RESPONSES)
        .unwrap_or_default()
        .into_iter()
        .map(|(key, response)| input::response_to_proto(response).map(|r| (key, r)))
        .collect::<Result<_, _>>()?;
    let request_state = p.opt_string(REQUEST_STATE);
    let meta = p.object("_meta").unwrap_or_default();
    let rest = std::mem::take(&mut p.0);
    Ok(proto::RequestFields { metadata: metadata(meta, rest), input_responses, request_state, ..Default::default() })
}

fn request_fields_from_proto(fields: Option<proto::RequestFields>) -> Result<Map<String, Value>, Unmappable> {
    let fields = fields.unwrap_or_default();
    let (meta, mut params) = unpack(fields.metadata);
    params.insert("_meta".into(), Value::Object(meta));
    if !fields.input_responses.is_empty() {
        let responses = fields
            .input_responses
            .into_iter()
            .map(|(key, r)| input::response_from_proto(r).map(|r| (key, r)))
            .collect::<Result<Map<_, _>, _>>()?;
        params.insert(INPUT_RESPONSES.into(), Value::Object(responses));
    }
    if let Some(state) = fields.request_state {
        params.insert(REQUEST_STATE.into(), Value::String(state));
    }
    Ok(params)
}

/// A result's type, input requests, state, `_meta` and the members left,
/// as `ResponseFields`.
fn response_fields_to_proto(r: &mut Members) -> Result<proto::ResponseFields, Unmappable> {
    let result_type = match r.opt_string("resultType").as_deref() {
        Some("input_required") => proto::ResultType::InputRequired,
        _ => proto::ResultType::Complete,
    };
    let input_requests = r
        .object("inputRequests")
        .unwrap_or_default()
        .into_iter()
        .map(|(key, request)| input::request_to_proto(request).map(|r| (key, r)))
        .collect::<Result<_, _>>()?;
    let request_state = r.opt_string(REQUEST_STATE);
    let meta = r.object("_meta").unwrap_or_default();
    let rest = std::mem::take(&mut r.0);
    Ok(proto::ResponseFields {
        instructions: String::new(),
        metadata: metadata(meta, rest),
        input_requests,
        result_type: result_type as i32,
        request_state,
        ..Default::default()
    })
}

fn response_fields_from_proto(fields: Option<proto::ResponseFields>) -> Result<Object, Unmappable> {
    let fields = fields.unwrap_or_default();
    let mut out = Object::default();
    out.metadata(fields.metadata);
    if fields.result_type == proto::ResultType::InputRequired as i32 {
        let requests = fields
            .input_requests
            .into_iter()
            .map(|(key, r)| input::request_from_proto(r).map(|r| (key, r)))
            .collect::<Result<Map<_, _>, _>>()?;
        out.set("resultType", "input_required")
            .set("inputRequests", requests)
            .some(REQUEST_STATE, fields.request_state);
    } else {
        out.set("resultType", "complete");
    }
    Ok(out)
}

/// `ttlMs` and `cacheScope` as the proto's `ttl` and `cache_scope`.
fn cache_to_proto(r: &mut Members) -> (Option<prost_types::Duration>, i32) {
    let ttl = r
        .take("ttlMs")
        .and_then(|v| v.as_u64())
        .and_then(|ms| prost_types::Duration::try_from(Duration::from_millis(ms)).ok());
    let scope = match r.opt_string("cacheScope").as_deref() {
        Some("public") => proto::CacheScope::Public,
        Some("private") => proto::CacheScope::Private,
        _ => proto::CacheScope::Unspecified,
    };
    (ttl, scope as i32)
}

fn cache_from_proto(out: &mut Object, ttl: Option<prost_types::Duration>, scope: i32) {
    let ttl_ms = ttl.and_then(|d| Duration::try_from(d).ok()).map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let scope = match proto::CacheScope::try_from(scope) {
        Ok(proto::CacheScope::Public) => Some("public"),
        Ok(proto::CacheScope::Private) => Some("private"),
        _ => None,
    };
    out.some("ttlMs", ttl_ms).some("cacheScope", scope);
}

fn all<T>(items: Vec<Value>, each: impl Fn(Value) -> Result<T, Unmappable>) -> Result<Vec<T>, Unmappable> {
    items.into_iter().map(each).collect()
}

impl RpcRequest {
    /// The size of the request's message on the wire.
    pub fn encoded_len(&self) -> usize {
        use prost::Message;
        match self {
            RpcRequest::ListResources(m) => m.encoded_len(),
            RpcRequest::ReadResource(m) => m.encoded_len(),
            RpcRequest::ListResourceTemplates(m) => m.encoded_len(),
            RpcRequest::ListPrompts(m) => m.encoded_len(),
            RpcRequest::GetPrompt(m) => m.encoded_len(),
            RpcRequest::ListTools(m) => m.encoded_len(),
            RpcRequest::CallTool(m) => m.encoded_len(),
            RpcRequest::Complete(m) => m.encoded_len(),
        }
    }

    /// Whether the proto has an RPC for the JSON-RPC `method`.
    pub fn carries(method: &str) -> bool {
        matches!(
            method,
            ResourcesList::NAME
                | ResourcesRead::NAME
                | ResourcesTemplatesList::NAME
                | PromptsList::NAME
                | PromptsGet::NAME
                | ToolsList::NAME
                | ToolsCall::NAME
                | CompletionComplete::NAME
        )
    }

    /// The JSON-RPC method this RPC carries.
    pub fn method(&self) -> &'static str {
        match self {
            RpcRequest::ListResources(_) => ResourcesList::NAME,
            RpcRequest::ReadResource(_) => ResourcesRead::NAME,
            RpcRequest::ListResourceTemplates(_) => ResourcesTemplatesList::NAME,
            RpcRequest::ListPrompts(_) => PromptsList::NAME,
            RpcRequest::GetPrompt(_) => PromptsGet::NAME,
            RpcRequest::ListTools(_) => ToolsList::NAME,
            RpcRequest::CallTool(_) => ToolsCall::NAME,
            RpcRequest::Complete(_) => CompletionComplete::NAME,
        }
    }

    /// A JSON-RPC request (`method`, `params`) as its RPC's request.
    ///
    /// # Errors
    /// A method without an RPC, or params the proto cannot carry.
    pub fn from_json(method: &str, params: Map<String, Value>) -> Result<Self, Unmappable> {
        let mut p = Members(params);
        Ok(match method {
            ResourcesList::NAME => RpcRequest::ListResources(proto::ListResourcesRequest {
                common: Some(request_fields_to_proto(&mut p)?),
            }),
            ResourcesTemplatesList::NAME => RpcRequest::ListResourceTemplates(proto::ListResourceTemplatesRequest {
                common: Some(request_fields_to_proto(&mut p)?),
            }),
            PromptsList::NAME => {
                RpcRequest::ListPrompts(proto::ListPromptsRequest { common: Some(request_fields_to_proto(&mut p)?) })
            }
            ToolsList::NAME => {
                RpcRequest::ListTools(proto::ListToolsRequest { common: Some(request_fields_to_proto(&mut p)?) })
            }
            ResourcesRead::NAME => {
                let uri = p.string("uri");
                RpcRequest::ReadResource(proto::ReadResourceRequest {
                    common: Some(request_fields_to_proto(&mut p)?),
                    uri,
                })
            }
            PromptsGet::NAME => {
                let name = p.string("name");
                let arguments = p
                    .object("arguments")
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
                    .collect();
                RpcRequest::GetPrompt(proto::GetPromptRequest {
                    common: Some(request_fields_to_proto(&mut p)?),
                    name,
                    arguments,
                })
            }
            ToolsCall::NAME => {
                let request = proto::call_tool_request::Request {
                    name: p.string("name"),
                    arguments: p.object("arguments").map(|a| to_struct(&a)),
                };
                RpcRequest::CallTool(proto::CallToolRequest {
                    common: Some(request_fields_to_proto(&mut p)?),
                    request: Some(request),
                })
            }
            CompletionComplete::NAME => {
                let mut reference = Members::of(p.take("ref").unwrap_or(Value::Null));
                let (resource_reference, prompt_reference) = match reference.string("type").as_str() {
                    "ref/resource" => (Some(proto::ResourceReference { uri: reference.string("uri") }), None),
                    "ref/prompt" => (
                        None,
                        Some(proto::PromptReference {
                            name: reference.string("name"),
                            title: reference.string("title"),
                        }),
                    ),
                    other => return Err(Unmappable(format!("a completion reference {other:?} has no proto message"))),
                };
                let mut argument = Members::of(p.take("argument").unwrap_or(Value::Null));
                let argument = proto::completion_request::Argument {
                    name: argument.string("name"),
                    value: argument.string("value"),
                };
                let context = p.object("context").map(|c| {
                    let arguments = Members::of(Value::Object(c)).object("arguments").unwrap_or_default();
                    let arguments =
                        arguments.into_iter().filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned()))).collect();
                    proto::completion_request::Context { arguments }
                });
                RpcRequest::Complete(proto::CompletionRequest {
                    common: Some(request_fields_to_proto(&mut p)?),
                    resource_reference,
                    prompt_reference,
                    argument: Some(argument),
                    context,
                })
            }
            other => return Err(Unmappable(format!("{other} has no RPC in the proto"))),
        })
    }

    /// The JSON-RPC method and params of this RPC's request.
    ///
    /// # Errors
    /// Input responses of no kind the proto knows.
    pub fn into_json(self) -> Result<(&'static str, Map<String, Value>), Unmappable> {
        let method = self.method();
        let params = match self {
            RpcRequest::ListResources(r) => request_fields_from_proto(r.common)?,
            RpcRequest::ListResourceTemplates(r) => request_fields_from_proto(r.common)?,
            RpcRequest::ListPrompts(r) => request_fields_from_proto(r.common)?,
            RpcRequest::ListTools(r) => request_fields_from_proto(r.common)?,
            RpcRequest::ReadResource(r) => {
                let mut params = request_fields_from_proto(r.common)?;
                params.insert("uri".into(), r.uri.into());
                params
            }
            RpcRequest::GetPrompt(r) => {
                let mut params = request_fields_from_proto(r.common)?;
                params.insert("name".into(), r.name.into());
                let arguments: Map<String, Value> =
                    r.arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                params.insert("arguments".into(), Value::Object(arguments));
                params
            }
            RpcRequest::CallTool(r) => {
                let mut params = request_fields_from_proto(r.common)?;
                let request = r.request.unwrap_or_default();
                params.insert("name".into(), request.name.into());
                params
                    .insert("arguments".into(), Value::Object(request.arguments.map(from_struct).unwrap_or_default()));
                params
            }
            RpcRequest::Complete(r) => {
                let mut params = request_fields_from_proto(r.common)?;
                let reference = match (r.resource_reference, r.prompt_reference) {
                    (Some(resource), _) => {
                        Object::default().set("type", "ref/resource").set("uri", resource.uri).build()
                    }
                    (None, Some(prompt)) => Object::default()
                        .set("type", "ref/prompt")
                        .set("name", prompt.name)
                        .text("title", prompt.title)
                        .build(),
                    (None, None) => return Err(Unmappable("a completion without a reference".into())),
                };
                let argument = r.argument.unwrap_or_default();
                params.insert("ref".into(), reference);
                params.insert("argument".into(), serde_json::json!({"name": argument.name, "value": argument.value}));
                if let Some(context) = r.context {
                    let arguments: Map<String, Value> =
                        context.arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
                    params.insert("context".into(), serde_json::json!({ "arguments": arguments }));
                }
                params
            }
        };
        Ok((method, params))
    }
}

impl RpcResponse {
    /// The result of the JSON-RPC `method` as its RPC's response.
    ///
    /// # Errors
    /// A method without an RPC, or a result the proto cannot carry.
    pub fn from_json(method: &str, result: Value) -> Result<Self, Unmappable> {
        let mut r = Members::of(result);
        // A list's next page has nowhere to go: the service asks for every page first.
        r.take("nextCursor");
        Ok(match method {
            ResourcesList::NAME => {
                let resources = r.array("resources").into_iter().map(|v| resource_to_proto(Members::of(v))).collect();
                let (ttl, cache_scope) = cache_to_proto(&mut r);
                RpcResponse::ListResources(proto::ListResourcesResponse {
                    resources,
                    ttl,
                    cache_scope,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            ResourcesRead::NAME => {
                let resource = all(r.array("contents"), contents_to_proto)?;
                let (ttl, cache_scope) = cache_to_proto(&mut r);
                RpcResponse::ReadResource(proto::ReadResourceResponse {
                    resource,
                    ttl,
                    cache_scope,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            ResourcesTemplatesList::NAME => {
                let resource_templates = r.array("resourceTemplates").into_iter().map(template_to_proto).collect();
                let (ttl, cache_scope) = cache_to_proto(&mut r);
                RpcResponse::ListResourceTemplates(proto::ListResourceTemplatesResponse {
                    resource_templates,
                    ttl,
                    cache_scope,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            PromptsList::NAME => {
                let prompts = r.array("prompts").into_iter().map(prompt_to_proto).collect();
                let (ttl, cache_scope) = cache_to_proto(&mut r);
                RpcResponse::ListPrompts(proto::ListPromptsResponse {
                    prompts,
                    ttl,
                    cache_scope,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            PromptsGet::NAME => {
                let description = r.string("description");
                let messages = all(r.array("messages"), prompt_message_to_proto)?;
                RpcResponse::GetPrompt(proto::GetPromptResponse {
                    description,
                    messages,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            ToolsList::NAME => {
                let tools = r.array("tools").into_iter().map(tool_to_proto).collect();
                let (ttl, cache_scope) = cache_to_proto(&mut r);
                RpcResponse::ListTools(proto::ListToolsResponse {
                    tools,
                    ttl,
                    cache_scope,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            ToolsCall::NAME => {
                let content = all(r.array("content"), tool_content_to_proto)?;
                let structured_content = r.object("structuredContent").map(|s| to_struct(&s));
                let is_error = r.bool("isError").unwrap_or(false);
                RpcResponse::CallTool(proto::CallToolResponse {
                    content,
                    structured_content,
                    is_error,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            CompletionComplete::NAME => {
                let mut completion = Members::of(r.take("completion").unwrap_or(Value::Null));
                let values = completion.strings("values");
                let total_matches = completion.take("total").and_then(|v| v.as_i64());
                let has_more = completion.bool("hasMore").unwrap_or(false);
                RpcResponse::Complete(proto::CompletionResponse {
                    values,
                    total_matches,
                    has_more,
                    common: Some(response_fields_to_proto(&mut r)?),
                })
            }
            other => return Err(Unmappable(format!("{other} has no RPC in the proto"))),
        })
    }

    /// The JSON-RPC result of this RPC's response.
    ///
    /// # Errors
    /// Content or input requests the proto message holds none of.
    pub fn into_json(self) -> Result<Value, Unmappable> {
        Ok(match self {
            RpcResponse::ListResources(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                out.set("resources", r.resources.into_iter().map(resource_from_proto).collect::<Vec<_>>());
                cache_from_proto(&mut out, r.ttl, r.cache_scope);
                out.build()
            }
            RpcResponse::ReadResource(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                out.set("contents", r.resource.into_iter().map(contents_from_proto).collect::<Vec<_>>());
                cache_from_proto(&mut out, r.ttl, r.cache_scope);
                out.build()
            }
            RpcResponse::ListResourceTemplates(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                out.set(
                    "resourceTemplates",
                    r.resource_templates.into_iter().map(template_from_proto).collect::<Vec<_>>(),
                );
                cache_from_proto(&mut out, r.ttl, r.cache_scope);
                out.build()
            }
            RpcResponse::ListPrompts(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                out.set("prompts", r.prompts.into_iter().map(prompt_from_proto).collect::<Vec<_>>());
                cache_from_proto(&mut out, r.ttl, r.cache_scope);
                out.build()
            }
            RpcResponse::GetPrompt(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                let messages = r.messages.into_iter().map(prompt_message_from_proto).collect::<Result<Vec<_>, _>>()?;
                out.text("description", r.description).set("messages", messages);
                out.build()
            }
            RpcResponse::ListTools(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                out.set("tools", r.tools.into_iter().map(tool_from_proto).collect::<Vec<_>>());
                cache_from_proto(&mut out, r.ttl, r.cache_scope);
                out.build()
            }
            RpcResponse::CallTool(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                let input_required = r.content.is_empty() && r.structured_content.is_none() && !r.is_error;
                let content = r.content.into_iter().map(tool_content_from_proto).collect::<Result<Vec<_>, _>>()?;
                let mut built = out.build();
                if let Value::Object(map) = &mut built
                    && !(input_required && map.get("resultType") == Some(&Value::from("input_required")))
                {
                    map.insert("content".into(), Value::Array(content));
                    if let Some(structured) = r.structured_content {
                        map.insert("structuredContent".into(), Value::Object(from_struct(structured)));
                    }
                    if r.is_error {
                        map.insert("isError".into(), Value::Bool(true));
                    }
                }
                built
            }
            RpcResponse::Complete(r) => {
                let mut out = response_fields_from_proto(r.common)?;
                let completion = Object::default()
                    .set("values", r.values)
                    .some("total", r.total_matches)
                    .some("hasMore", r.has_more.then_some(true))
                    .build();
                out.set("completion", completion);
                out.build()
            }
        })
    }
}
