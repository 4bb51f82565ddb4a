//! Params of the notifications both sides send: cancellation, progress, log
//! messages, list changes and resource updates.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::LoggingLevel;
use crate::meta::NotificationMeta;
use crate::{ProgressToken, RequestId};

/// Params of a notification with nothing but `_meta`, such as a list change
/// (`NotificationParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationParams {
    /// The subscription id, on a listen stream.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/cancelled` (`CancelledNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledNotificationParams {
    /// The request to cancel. Required in 2026-07-28; optional in 2025-11-25,
    /// so read leniently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<RequestId>,
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/progress` (`ProgressNotificationParams`).
/// Numbers stay as written (`50` is not rewritten as `50.0`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The token from the request's `_meta`.
    pub progress_token: ProgressToken,
    /// Progress so far; increases with each notification.
    pub progress: Number,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Number>,
    /// What is happening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/message` (`LoggingMessageNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageNotificationParams {
    /// Severity.
    pub level: LoggingLevel,
    /// Which logger wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON value.
    pub data: Value,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/resources/updated` (`ResourceUpdatedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedNotificationParams {
    /// The resource that changed.
    pub uri: String,
    /// The subscription id, on a listen stream.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
