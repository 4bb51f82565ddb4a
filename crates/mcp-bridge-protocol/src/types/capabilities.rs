//! What a client or a server can do (`ClientCapabilities`,
//! `ServerCapabilities`). In 2026-07-28 the client's travel in every request's
//! `_meta`; the server's come from `server/discover`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A capability object with nothing modelled inside, only its presence.
pub type JsonObject = Map<String, Value>;

/// The capabilities of a client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// The client answers `elicitation/create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// The client answers `roots/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<RootsCapability>,
    /// The client answers `sampling/createMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Extensions by identifier, each with its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Members not modelled here (2025-11-25 `tasks`, for one).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Which elicitation modes a client supports. An empty object means form
/// mode only (2025-11-25 compatibility).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode: a message and a flat schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<JsonObject>,
    /// URL mode: the user opens a URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<JsonObject>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitationCapability {
    /// Whether form mode is supported (declared, or implied by an empty object).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// Roots support. 2025-11-25 adds `listChanged`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootsCapability {
    /// 2025-11-25: the client sends `notifications/roots/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Sampling support and its options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// The client honours `includeContext`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonObject>,
    /// The client supports `tools` and `toolChoice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<JsonObject>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The capabilities of a server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// The server offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// The server offers prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// The server offers resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// The server answers `completion/complete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<JsonObject>,
    /// The server sends log messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<JsonObject>,
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Extensions by identifier, each with its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Members not modelled here (2025-11-25 `tasks`, for one).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A list the server may announce changes of (`tools`, `prompts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// The server announces changes of the list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Resource support and its options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server announces changes of the resource list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// The server announces updates of single resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
impl ClientCapabilities {
    /// A builder with nothing declared: each of its methods declares one
    /// thing the client can do.
    pub fn builder() -> ClientCapabilitiesBuilder {
        ClientCapabilitiesBuilder::default()
    }
}

/// Builds [`ClientCapabilities`] without hand-written JSON; declare only
/// what the client's hooks can answer.
#[derive(Debug, Clone, Default)]
pub struct ClientCapabilitiesBuilder {
    capabilities: ClientCapabilities,
}

impl ClientCapabilitiesBuilder {
    fn elicitation(&mut self) -> &mut ElicitationCapability {
        self.capabilities.elicitation.get_or_insert_with(ElicitationCapability::default)
    }

    fn sampling_capability(&mut self) -> &mut SamplingCapability {
        self.capabilities.sampling.get_or_insert_with(SamplingCapability::default)
    }

    /// Form elicitation.
    pub fn form_elicitation(mut self) -> Self {
        self.elicitation().form = Some(Map::new());
        self
    }

    /// URL elicitation.
    pub fn url_elicitation(mut self) -> Self {
        self.elicitation().url = Some(Map::new());
        self
    }

    /// Sampling.
    pub fn sampling(mut self) -> Self {
        self.sampling_capability();
        self
    }

    /// Sampling that may include context from the client's other servers.
    pub fn sampling_with_context(mut self) -> Self {
        self.sampling_capability().context = Some(Map::new());
        self
    }

    /// Sampling with tools in the request.
    pub fn sampling_with_tools(mut self) -> Self {
        self.sampling_capability().tools = Some(Map::new());
        self
    }

    /// Roots.
    pub fn roots(mut self) -> Self {
        self.capabilities.roots.get_or_insert_with(RootsCapability::default);
        self
    }

    /// An extension, by identifier, with its settings.
    pub fn extension(mut self, id: impl Into<String>, settings: Value) -> Self {
        self.capabilities.extensions.get_or_insert_with(Map::new).insert(id.into(), settings);
        self
    }

    /// The Tasks extension: tool calls may become tasks.
    pub fn tasks(self) -> Self {
        self.extension(super::TASKS_EXTENSION, Value::Object(Map::new()))
    }

    /// MCP Apps, for HTML views.
    pub fn apps(self) -> Self {
        self.extension(super::UI_EXTENSION, super::ui_extension_settings())
    }

    /// The capabilities.
    pub fn build(self) -> ClientCapabilities {
        self.capabilities
    }
}

#[cfg(test)]
mod builder_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_builder_writes_the_wire_shape() {
        let caps = ClientCapabilities::builder()
            .form_elicitation()
            .url_elicitation()
            .sampling_with_tools()
            .sampling_with_context()
            .roots()
            .tasks()
            .apps()
            .extension("com.example/thing", json!({"level": 2}))
            .build();
        assert_eq!(
            serde_json::to_value(&caps).unwrap(),
            json!({
                "elicitation": {"form": {}, "url": {}},
                "sampling": {"tools": {}, "context": {}},
                "roots": {},
                "extensions": {
                    "io.modelcontextprotocol/tasks": {},
                    "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
                    "com.example/thing": {"level": 2}
                }
            })
        );
        let sampling = ClientCapabilities::builder().sampling().build();
        assert_eq!(serde_json::to_value(sampling).unwrap(), json!({"sampling": {}}));
        assert_eq!(serde_json::to_value(ClientCapabilities::builder().build()).unwrap(), json!({}));
    }
}
