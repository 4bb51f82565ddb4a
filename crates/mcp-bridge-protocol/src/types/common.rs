//! Building blocks shared by many messages: implementation info, icons,
//! annotations, roles, log levels, result types and cache hints.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::meta::{Meta, ResultMeta};

/// A client's or server's name and version (`Implementation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons to show for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// An implementation with only a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: None,
            website_url: None,
            extra: Map::new(),
        }
    }
}

/// An icon reference (`Icon`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// An `https:` or `data:` URI.
    pub src: String,
    /// MIME type, when the server states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `48x48` or `any`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `light` or `dark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Hints about how content is meant to be used (`Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<serde_json::Number>,
    /// ISO 8601 time of the last change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The sender or receiver of a message in a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

/// Severity of a log message, RFC 5424 order (`LoggingLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug detail.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// Warning.
    Warning,
    /// Error.
    Error,
    /// Critical.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// What kind of result a `result` object is (`resultType`).
///
/// Absent means [`ResultType::Complete`] (2026-07-28, Result: results of
/// earlier revisions have no `resultType`); values this crate does not know
/// are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// The request finished; the result is final.
    #[default]
    Complete,
    /// The server needs input first (an [`crate::types::InputRequiredResult`]).
    InputRequired,
    /// The server made a task of the request (the Tasks extension, a
    /// [`crate::types::CreateTaskResult`]).
    Task,
    /// A value from a later revision.
    Other(String),
}

impl ResultType {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(s) => s,
        }
    }

    fn from_wire(s: &str) -> Self {
        match s {
            "complete" => ResultType::Complete,
            "input_required" => ResultType::InputRequired,
            "task" => ResultType::Task,
            other => ResultType::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ResultType::from_wire(&<std::borrow::Cow<'de, str>>::deserialize(d)?))
    }
}

/// Who may reuse a cached result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Only the same authorization context.
    Private,
    /// Anyone, across authorization contexts.
    Public,
}

/// A result with nothing in it but its type (`EmptyResult`, `Result`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Always `complete` for an empty result.
    #[serde(default)]
    pub result_type: ResultType,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params that carry nothing but a free-form `_meta` (legacy `RequestParams`
/// and `NotificationParams` of 2025-11-25, input-request params).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetaParams {
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
