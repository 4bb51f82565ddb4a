//! Argument completion: `completion/complete`.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::ResultType;
use crate::meta::{RequestMeta, ResultMeta};
use crate::tag::{const_tag, from_value};

const_tag!(
    /// `"type": "ref/prompt"`.
    PromptRefTag = "ref/prompt"
);
const_tag!(
    /// `"type": "ref/resource"`.
    ResourceRefTag = "ref/resource"
);

/// A prompt whose argument is completed (`PromptReference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptReference {
    /// Always `ref/prompt`.
    #[serde(rename = "type")]
    pub kind: PromptRefTag,
    /// The prompt's name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource template whose variable is completed (`ResourceTemplateReference`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceTemplateReference {
    /// Always `ref/resource`.
    #[serde(rename = "type")]
    pub kind: ResourceRefTag,
    /// The URI template.
    pub uri: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What is being completed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum CompletionReference {
    /// An argument of a prompt.
    Prompt(PromptReference),
    /// A variable of a resource template.
    ResourceTemplate(ResourceTemplateReference),
    /// A reference of a `type` this crate does not know, kept whole.
    Unknown(Value),
}

impl<'de> Deserialize<'de> for CompletionReference {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.get("type").and_then(Value::as_str) {
            Some(PromptRefTag::VALUE) => CompletionReference::Prompt(from_value(v)?),
            Some(ResourceRefTag::VALUE) => CompletionReference::ResourceTemplate(from_value(v)?),
            _ => CompletionReference::Unknown(v),
        })
    }
}

/// The argument being typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Its name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Values already chosen for the other arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Resolved arguments by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `completion/complete` (`CompleteRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteRequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// What is being completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument being typed.
    pub argument: CompletionArgument,
    /// Other arguments already chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The suggestions of a completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// At most 100 suggestions.
    pub values: Vec<String>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `completion/complete` (`CompleteResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// The suggestions.
    pub completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
