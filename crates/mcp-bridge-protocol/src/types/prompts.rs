//! Prompts: `prompts/list` and `prompts/get`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CacheScope, ContentBlock, Icon, InputResponses, ResultType, Role};
use crate::meta::{Meta, RequestMeta, ResultMeta};

/// A prompt template (`Prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One argument of a prompt (`PromptArgument`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Prompt {
    /// A prompt called `name` without arguments; the `with_` setters add
    /// the rest.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
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

    /// With what it is for.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With these arguments.
    #[must_use]
    pub fn with_arguments(mut self, arguments: Vec<PromptArgument>) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

impl PromptArgument {
    /// An optional argument called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument { name: name.into(), title: None, description: None, required: None, extra: Map::new() }
    }

    /// With what it means.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Marked as one that must be given.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = Some(true);
        self
    }
}

/// One message of a prompt (`PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl PromptMessage {
    /// A message with this role and content.
    pub fn new(role: Role, content: ContentBlock) -> Self {
        PromptMessage { role, content, extra: Map::new() }
    }

    /// A text message from the user.
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::User, ContentBlock::text(text))
    }

    /// A text message from the assistant.
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::Assistant, ContentBlock::text(text))
    }
}

/// The result of `prompts/list` (`ListPromptsResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// This page of prompts.
    pub prompts: Vec<Prompt>,
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

/// Params of `prompts/get` (`GetPromptRequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptRequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The prompt's name.
    pub name: String,
    /// Argument values.
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

/// The final result of `prompts/get` (`GetPromptResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// What the filled prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GetPromptResult {
    /// A filled prompt of these messages.
    pub fn of(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult { messages, ..GetPromptResult::default() }
    }

    /// With what the filled prompt is for.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}
