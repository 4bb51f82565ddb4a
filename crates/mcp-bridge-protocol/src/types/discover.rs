//! `server/discover`: what replaced the `initialize` handshake.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CacheScope, ResultType, ServerCapabilities};
use crate::meta::{RequestMeta, ResultMeta};

/// Params of a request that has nothing but `_meta` (`RequestParams`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestParams {
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `server/discover` (`DiscoverResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Protocol versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Result metadata, with the server's info.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
