//! The part of revision 2025-11-25 that a bridge receives from, or sends to,
//! a legacy client: the `initialize` handshake, `ping`, `logging/setLevel`,
//! `resources/subscribe`/`unsubscribe`, and the server requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) that
//! 2026-07-28 turned into input requests.
//!
//! The params and results that did not change shape between the revisions
//! (elicitation, sampling, roots, notifications) are the types of
//! [`crate::types`]; their 2025-11-25-only members (`task`, `_meta`,
//! `elicitationId`) are modelled or kept in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::Meta;
use crate::method::{
    ElicitationCreate, Initialize, Initialized, LoggingSetLevel, Notification, Ping, Request, ResourcesSubscribe,
    ResourcesUnsubscribe, RootsList, SamplingCreateMessage,
};
use crate::types::{ClientCapabilities, Implementation, LoggingLevel, ServerCapabilities};

/// The protocol version of the legacy side.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The versions before 2026-07-28 that had the `initialize` handshake,
/// newest first.
pub const KNOWN_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Whether `version` is one of [`KNOWN_VERSIONS`].
pub fn is_known_version(version: &str) -> bool {
    KNOWN_VERSIONS.contains(&version)
}

/// Params of `initialize` (`InitializeRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// The newest version the client speaks.
    pub protocol_version: String,
    /// What the client can do, for the whole session.
    pub capabilities: ClientCapabilities,
    /// The client's name and version.
    pub client_info: Implementation,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `initialize` (`InitializeResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `logging/setLevel` (`SetLevelRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelRequestParams {
    /// The lowest level to send.
    pub level: LoggingLevel,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `resources/subscribe` and `resources/unsubscribe`
/// (`SubscribeRequestParams`, `UnsubscribeRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscribeRequestParams {
    /// The resource.
    pub uri: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `InitializeRequest`.
pub type InitializeRequest = Request<Initialize>;
/// `InitializedNotification`.
pub type InitializedNotification = Notification<Initialized>;
/// `PingRequest`.
pub type PingRequest = Request<Ping>;
/// `SetLevelRequest`.
pub type SetLevelRequest = Request<LoggingSetLevel>;
/// `SubscribeRequest`.
pub type SubscribeRequest = Request<ResourcesSubscribe>;
/// `UnsubscribeRequest`.
pub type UnsubscribeRequest = Request<ResourcesUnsubscribe>;
/// `ElicitRequest`: a real request to the client, with an id.
pub type ElicitRequest = Request<ElicitationCreate>;
/// `CreateMessageRequest`: a real request to the client, with an id.
pub type CreateMessageRequest = Request<SamplingCreateMessage>;
/// `ListRootsRequest`: a real request to the client, with an id.
pub type ListRootsRequest = Request<RootsList>;
