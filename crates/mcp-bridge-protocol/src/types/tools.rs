//! Tools: `tools/list` and `tools/call`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CacheScope, ContentBlock, Icon, InputResponses, ResultType};
use crate::meta::{Meta, RequestMeta, ResultMeta};

/// A tool a server offers (`Tool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Programmatic name, unique on the server.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    pub input_schema: Map<String, Value>,
    /// JSON Schema of `structuredContent`, when the tool returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here (2025-11-25 `execution`, for one).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Tool {
    /// A tool called `name` that takes no arguments (its input schema is an
    /// object with no properties); the `with_` setters add the rest.
    pub fn new(name: impl Into<String>) -> Self {
        let mut input_schema = Map::new();
        input_schema.insert("type".into(), Value::String("object".into()));
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema,
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
            extra: Map::new(),
        }
    }

    /// With a display name.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With what it does, for the model.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With the JSON Schema of its arguments (an object schema).
    #[must_use]
    pub fn with_input_schema(mut self, schema: Map<String, Value>) -> Self {
        self.input_schema = schema;
        self
    }

    /// With the JSON Schema of its `structuredContent`.
    #[must_use]
    pub fn with_output_schema(mut self, schema: Map<String, Value>) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// With behaviour hints.
    #[must_use]
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// With metadata (`_meta`), such as an MCP Apps view.
    #[must_use]
    pub fn with_meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Hints about a tool's behaviour (`ToolAnnotations`); untrusted unless the
/// server is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments does nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of a list request: `tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list` (`PaginatedRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedRequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `tools/list` (`ListToolsResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// This page of tools.
    pub tools: Vec<Tool>,
    /// Cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `tools/call` (`CallToolRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to the previous round's input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<InputResponses>,
    /// The server's state from the previous round, unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The final result of `tools/call` (`CallToolResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result, checked against the tool's output schema; `null`
    /// is kept apart from absent.
    #[serde(default, deserialize_with = "crate::serde_util::present", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult::of(vec![crate::types::ContentBlock::text(text)])
    }

    /// A result of these content blocks.
    pub fn of(content: Vec<crate::types::ContentBlock>) -> Self {
        CallToolResult { content, ..CallToolResult::default() }
    }

    /// A structured result: `value` in `structuredContent`, and its JSON
    /// text as the one content block (for clients that read only content,
    /// as the specification advises).
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        CallToolResult { structured_content: Some(value), ..CallToolResult::text(text) }
    }

    /// A failed call (`isError`) whose text the model reads: an error of
    /// the tool's work, not of the protocol.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult { is_error: Some(true), ..CallToolResult::text(message) }
    }
}
