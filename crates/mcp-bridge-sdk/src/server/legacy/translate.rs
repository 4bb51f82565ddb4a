//! The translation between the client's revision (2025-11-25) and the
//! upstream's (2026-07-28), without I/O: the capability mask, the initialize
//! result, the params of a forwarded request, the result rules, the icon
//! rule, and the error mapping ([`errors`]).

pub mod errors;
pub(crate) mod raw;

use mcp_bridge_protocol::legacy::InitializeResult;
use mcp_bridge_protocol::meta::SERVER_INFO_KEY;
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::types::{
    DiscoverResult, Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use mcp_bridge_protocol::{ErrorObject, ProgressToken, RequestId, error_code};
use serde_json::{Map, Value, json};

pub use errors::{Cause, Hints, error_for, set_hints};

use crate::server::legacy::profile::Profile;

/// Which change notifications the bridge can deliver to the client. Until
/// the bridge has a listen stream, it declares none, so the client never
/// waits for events that cannot come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplyMask {
    /// `listChanged` of tools, prompts and resources may be declared.
    pub list_changed: bool,
    /// `resources.subscribe` may be declared.
    pub subscribe: bool,
}

/// The capabilities a legacy client sees: the upstream's, through the mask.
/// Tools, prompts, resources and completions pass; logging is the bridge's
/// own (it answers `logging/setLevel`); experimental capabilities,
/// extensions and tasks never pass.
pub fn mask_capabilities(upstream: &ServerCapabilities, mask: ReplyMask) -> ServerCapabilities {
    let list = |c: &Option<ListChangedCapability>| {
        c.as_ref().map(|c| ListChangedCapability {
            list_changed: c.list_changed.filter(|on| *on && mask.list_changed),
            extra: Map::new(),
        })
    };
    ServerCapabilities {
        tools: list(&upstream.tools),
        prompts: list(&upstream.prompts),
        resources: upstream.resources.as_ref().map(|r| ResourcesCapability {
            list_changed: r.list_changed.filter(|on| *on && mask.list_changed),
            subscribe: r.subscribe.filter(|on| *on && mask.subscribe),
            extra: Map::new(),
        }),
        completions: upstream.completions.clone(),
        logging: Some(Map::new()),
        ..ServerCapabilities::default()
    }
}

/// The initialize result: the profile's version, the masked capabilities,
/// the server info from the discover `_meta` (or the fallback name and the
/// bridge's version), and the instructions.
pub fn initialize_result(profile: &Profile, discover: &DiscoverResult, mask: ReplyMask) -> InitializeResult {
    let server_info = discover
        .meta
        .as_ref()
        .and_then(|m| m.server_info.clone())
        .unwrap_or_else(|| Implementation::new(profile.fallback_name, env!("CARGO_PKG_VERSION")));
    InitializeResult {
        protocol_version: profile.protocol_version.to_owned(),
        capabilities: mask_capabilities(&discover.capabilities, mask),
        server_info,
        instructions: discover.instructions.clone(),
        meta: None,
        extra: Map::new(),
    }
}

/// A forwarded request's params, ready for the SDK, and the client's
/// progress token (the SDK sets its own; progress goes back to this one).
#[derive(Debug, Clone, PartialEq)]
pub struct ForwardParams {
    /// The params without `_meta` and `task`.
    pub params: Map<String, Value>,
    /// The `_meta` entries passed on (the profile's trace keys).
    pub meta: Map<String, Value>,
    /// The client's progress token, when it asked for progress.
    pub progress_token: Option<ProgressToken>,
}

/// The params of a forwarded request: missing params become `{}`; `task`
/// and `_meta` are removed, keeping the profile's `_meta` keys and the
/// client's progress token aside.
pub fn forward_params(profile: &Profile, params: Option<Value>) -> ForwardParams {
    let mut params = match params {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    params.remove("task");
    let client_meta = params.remove("_meta").and_then(|m| if let Value::Object(m) = m { Some(m) } else { None });
    let mut meta = Map::new();
    let mut progress_token = None;
    for (key, value) in client_meta.into_iter().flatten() {
        if key == mcp_bridge_protocol::meta::PROGRESS_TOKEN_KEY {
            progress_token = RequestId::try_from_value(&value).ok();
        } else if profile.forwarded_meta_keys.contains(&key.as_str()) {
            meta.insert(key, value);
        }
    }
    ForwardParams { params, meta, progress_token }
}

/// Whether an upstream is remote (HTTP), which turns on the icon rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A child process or the same process.
    Local,
    /// A URL: its icons could make the client fetch from anywhere.
    Remote,
}

/// Changes a complete upstream result for a 2025-11-25 client:
/// - `resultType`, `ttlMs`, `cacheScope` and the server info in `_meta` go
///   (and `_meta` when nothing is left in it);
/// - a `nextCursor` that is not a string goes (VS Code asks for another
///   page while it has any value, `null` included);
/// - a `tools/call` result always has a `content` array, with a text block
///   of the serialized `structuredContent` when it has structure and no text;
/// - for a remote upstream, only `data:` icons stay.
pub fn shape_result(method: &str, mut result: Value, origin: Origin) -> Value {
    let Some(obj) = result.as_object_mut() else { return result };
    for key in DROPPED_RESULT_KEYS {
        obj.remove(key);
    }
    if let Some(Value::Object(meta)) = obj.get_mut("_meta") {
        meta.remove(SERVER_INFO_KEY);
        if meta.is_empty() {
            obj.remove("_meta");
        }
    }
    if obj.get("nextCursor").is_some_and(|c| !c.is_string()) {
        obj.remove("nextCursor");
    }
    if method == ToolsCall::NAME {
        if !obj.get("content").is_some_and(Value::is_array) {
            obj.insert("content".into(), json!([]));
        }
        let has_text = obj["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "text"));
        if let Some(structured) = obj.get("structuredContent").filter(|_| !has_text) {
            let text = structured.to_string();
            if let Some(content) = obj.get_mut("content").and_then(Value::as_array_mut) {
                content.push(json!({ "type": "text", "text": text }));
            }
        }
    }
    if origin == Origin::Remote {
        filter_icons(&mut result);
    }
    result
}

/// The members of a 2026-07-28 result that a 2025-11-25 client is not sent.
pub(crate) const DROPPED_RESULT_KEYS: [&str; 3] = ["resultType", "ttlMs", "cacheScope"];

/// Keeps only `data:` icons anywhere in a result: an `https:` icon of a
/// remote server would make the client fetch from the server's choice of
/// host, outside the bridge's sign-in and proxy settings.
pub fn filter_icons(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            if let Some(Value::Array(icons)) = obj.get_mut("icons") {
                icons.retain(|icon| icon["src"].as_str().is_some_and(|src| src.starts_with("data:")));
            }
            for (_, v) in obj.iter_mut() {
                filter_icons(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(filter_icons),
        _ => {}
    }
}

/// What the client is told for a failed upstream request: the upstream's
/// JSON-RPC error as it came, except -32042 (URL elicitation required),
/// which becomes -32603 without data because clients open every URL in it.
pub fn upstream_error(error: &ErrorObject) -> ErrorObject {
    if error.code == error_code::URL_ELICITATION_REQUIRED {
        return ErrorObject::new(error_code::INTERNAL_ERROR, "The MCP server needs the user to open a URL first");
    }
    error.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::legacy::profile::VSCODE;

    fn discover(v: Value) -> DiscoverResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn capabilities_pass_through_the_mask_and_never_carry_tasks() {
        let d = discover(json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true},
            "prompts": {}, "completions": {}, "extensions": {"io.modelcontextprotocol/tasks": {}},
            "experimental": {"x": {}}, "tasks": {"list": {}}}}));
        let none = serde_json::to_value(mask_capabilities(&d.capabilities, ReplyMask::default())).unwrap();
        assert_eq!(none, json!({"tools": {}, "resources": {}, "prompts": {}, "completions": {}, "logging": {}}));
        let all = ReplyMask { list_changed: true, subscribe: true };
        let full = serde_json::to_value(mask_capabilities(&d.capabilities, all)).unwrap();
        assert_eq!(full["tools"], json!({"listChanged": true}));
        assert_eq!(full["resources"], json!({"listChanged": true, "subscribe": true}));
    }

    #[test]
    fn initialize_result_takes_the_server_info_or_the_fallback() {
        let with = discover(json!({"resultType": "complete", "supportedVersions": [], "capabilities": {},
            "instructions": "hi", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up", "version": "9"}}}));
        let r = initialize_result(&VSCODE, &with, ReplyMask::default());
        assert_eq!((r.protocol_version.as_str(), r.server_info.name.as_str()), ("2025-11-25", "up"));
        assert_eq!(r.instructions.as_deref(), Some("hi"));
        let without = discover(json!({"resultType": "complete", "supportedVersions": [], "capabilities": {}}));
        let r = initialize_result(&VSCODE, &without, ReplyMask::default());
        assert_eq!(
            (r.server_info.name.as_str(), r.server_info.version.as_str()),
            ("mcp-bridge", env!("CARGO_PKG_VERSION"))
        );
    }

    #[test]
    fn forwarded_params_lose_task_and_meta_but_keep_trace_and_progress_token() {
        let p = forward_params(
            &VSCODE,
            Some(json!({"name": "t", "task": {"ttl": 5}, "_meta": {"progressToken": "p1", "traceparent": "00-x",
                "io.modelcontextprotocol/protocolVersion": "2026-07-28", "com.example/x": 1}})),
        );
        assert_eq!(Value::Object(p.params), json!({"name": "t"}));
        assert_eq!(Value::Object(p.meta), json!({"traceparent": "00-x"}));
        assert_eq!(p.progress_token, Some("p1".into()));
        let empty = forward_params(&VSCODE, None);
        assert!(empty.params.is_empty() && empty.progress_token.is_none());
    }

    #[test]
    fn results_lose_the_2026_fields() {
        let r = shape_result(
            "tools/list",
            json!({"resultType": "complete", "tools": [], "ttlMs": 5, "cacheScope": "public",
            "nextCursor": null, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
            Origin::Local,
        );
        assert_eq!(r, json!({"tools": []}));
        let r =
            shape_result("prompts/list", json!({"prompts": [], "nextCursor": "2", "_meta": {"k": 1}}), Origin::Local);
        assert_eq!(r, json!({"prompts": [], "nextCursor": "2", "_meta": {"k": 1}}));
    }

    #[test]
    fn tool_results_always_have_content_and_text_for_structure() {
        let r = shape_result(
            "tools/call",
            json!({"resultType": "complete", "structuredContent": {"sum": 5}}),
            Origin::Local,
        );
        assert_eq!(r, json!({"content": [{"type": "text", "text": "{\"sum\":5}"}], "structuredContent": {"sum": 5}}));
        let with_text = json!({"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}});
        assert_eq!(shape_result("tools/call", with_text.clone(), Origin::Local), with_text);
        let r = shape_result("tools/call", json!({"content": "oops"}), Origin::Local);
        assert_eq!(r, json!({"content": []}));
    }

    #[test]
    fn remote_results_keep_only_data_icons() {
        let v = json!({"tools": [{"name": "t", "icons": [{"src": "https://evil.example/x.png"}, {"src": "data:image/png;base64,AA"}]}]});
        assert_eq!(shape_result("tools/list", v.clone(), Origin::Local), v);
        let r = shape_result("tools/list", v, Origin::Remote);
        assert_eq!(r["tools"][0]["icons"], json!([{"src": "data:image/png;base64,AA"}]));
    }

    #[test]
    fn url_elicitation_required_loses_its_data() {
        let e = ErrorObject::new(-32042, "open this").with_data(json!({"elicitations": [{"url": "https://x"}]}));
        let out = upstream_error(&e);
        assert_eq!((out.code, out.data.is_none()), (-32603, true));
        let other = ErrorObject::new(-32602, "bad").with_data(json!(1));
        assert_eq!(upstream_error(&other), other);
    }
}
