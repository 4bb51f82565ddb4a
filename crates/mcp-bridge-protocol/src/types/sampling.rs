//! Sampling: a server asks the client's model for a completion.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::{Role, SamplingContent, SamplingContentList, Tool};
use crate::meta::Meta;

/// One message of a sampling conversation (`SamplingMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who says it.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContentList,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A model name hint (`ModelHint`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelHint {
    /// A model name or part of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What the server cares about in the choice of model (`ModelPreferences`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model names in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<ModelHint>>,
    /// Weight of cost, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<Number>,
    /// Weight of speed, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<Number>,
    /// Weight of capability, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How the model may use the offered tools (`ToolChoice`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolChoice {
    /// `auto`, `required` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `sampling/createMessage` (`CreateMessageRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// Most tokens to generate.
    pub max_tokens: u64,
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// `none`, `thisServer` or `allServers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Number>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Model choice hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// Tools the model may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The model's answer (`CreateMessageResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Usually `assistant`.
    pub role: Role,
    /// One block or several.
    pub content: SamplingContentList,
    /// The model that answered.
    pub model: String,
    /// Why generation stopped (`endTurn`, `toolUse`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A tool-use rule of sampling messages that a request breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplingRuleError {
    /// A message holds tool results and other content.
    #[error("message {message} mixes tool results with other content")]
    MixedToolResults {
        /// The index of the message.
        message: usize,
    },
    /// Tool results in a message that is not the user's.
    #[error("message {message} has tool results but is not from the user")]
    ToolResultsNotFromUser {
        /// The index of the message.
        message: usize,
    },
    /// A tool result answers no tool use of the assistant message before it.
    #[error("message {message} answers tool use {tool_use_id:?} that the previous assistant message lacks")]
    UnknownToolUse {
        /// The index of the message.
        message: usize,
        /// The id it answers.
        tool_use_id: String,
    },
}

/// The tool-use rules of sampling messages (2026-07-28, Sampling): a
/// message with tool results holds only tool results, from the user, each
/// answering a tool use of the assistant message just before it.
///
/// # Errors
/// The rule the first offending message breaks.
pub fn check_sampling_messages(messages: &[SamplingMessage]) -> Result<(), SamplingRuleError> {
    for (i, message) in messages.iter().enumerate() {
        let blocks = message.content.as_slice();
        let results: Vec<&str> = blocks
            .iter()
            .filter_map(|b| if let SamplingContent::ToolResult(r) = b { Some(r.tool_use_id.as_str()) } else { None })
            .collect();
        if results.is_empty() {
            continue;
        }
        if results.len() != blocks.len() {
            return Err(SamplingRuleError::MixedToolResults { message: i });
        }
        if message.role != Role::User {
            return Err(SamplingRuleError::ToolResultsNotFromUser { message: i });
        }
        let uses: Vec<&str> = i
            .checked_sub(1)
            .and_then(|p| messages.get(p))
            .filter(|prev| prev.role == Role::Assistant)
            .map(|prev| {
                prev.content
                    .as_slice()
                    .iter()
                    .filter_map(|b| if let SamplingContent::ToolUse(u) = b { Some(u.id.as_str()) } else { None })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(orphan) = results.iter().find(|id| !uses.contains(id)) {
            return Err(SamplingRuleError::UnknownToolUse { message: i, tool_use_id: (*orphan).to_owned() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_results_must_answer_the_previous_tool_uses() {
        let msgs = |v: Value| -> Vec<SamplingMessage> { serde_json::from_value(v).unwrap() };
        let good = msgs(json!([
            {"role":"user","content":{"type":"text","text":"weather?"}},
            {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]}]}
        ]));
        assert!(check_sampling_messages(&good).is_ok());
        let orphan = msgs(json!([
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]}]}
        ]));
        assert!(check_sampling_messages(&orphan).is_err());
        let mixed = msgs(json!([
            {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]},{"type":"text","text":"x"}]}
        ]));
        assert!(check_sampling_messages(&mixed).is_err());
    }
}
