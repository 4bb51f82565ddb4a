//! `subscriptions/listen`: the long-lived stream of change events that
//! replaced session-wide `list_changed` and `resources/subscribe`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Implementation, ResultType};
use crate::RequestId;
use crate::meta::{Meta, NotificationMeta, RequestMeta};

/// Which events a stream carries (`SubscriptionFilter`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these tasks (the Tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `subscriptions/listen` (`SubscriptionsListenRequestParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenRequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// The events wanted.
    pub notifications: SubscriptionFilter,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `_meta` of a listen result: the subscription that ended
/// (`SubscriptionsListenResultMetaObject`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsListenResultMeta {
    /// The subscription that ended.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: RequestId,
    /// The server's name and version.
    #[serde(rename = "io.modelcontextprotocol/serverInfo", default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: Meta,
}

/// The result that ends a listen stream gracefully (`SubscriptionsListenResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionsListenResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// The subscription that ended.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionsListenResultMeta,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `notifications/subscriptions/acknowledged`: the events the
/// server agreed to send (`SubscriptionsAcknowledgedNotificationParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionsAcknowledgedNotificationParams {
    /// The events the stream will carry.
    pub notifications: SubscriptionFilter,
    /// The subscription id.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<NotificationMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
