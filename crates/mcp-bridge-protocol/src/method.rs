//! Methods as types, and the typed envelopes built from them.
//!
//! Each method is a unit type implementing [`Method`] (its name and params)
//! and, for requests, [`RequestMethod`] (its result). The envelopes
//! [`Request`], [`Notification`] and [`MethodCall`] write the method name from
//! the type and refuse another one when read, so `Request<ToolsCall>` is
//! exactly the schema's `CallToolRequest`.
//!
//! A method whose params may be absent has `Params = Option<_>`.

use std::marker::PhantomData;

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::RequestId;
use crate::jsonrpc::JsonRpcVersion;
use crate::legacy;
use crate::types::*;

/// The request methods with the same name and purpose in 2025-11-25 and
/// 2026-07-28: what a bridge forwards, and most of what a server serves.
pub const SHARED_REQUEST_METHODS: [&str; 8] = [
    ToolsList::NAME,
    ToolsCall::NAME,
    PromptsList::NAME,
    PromptsGet::NAME,
    ResourcesList::NAME,
    ResourcesTemplatesList::NAME,
    ResourcesRead::NAME,
    CompletionComplete::NAME,
];

/// A JSON-RPC method or notification, by name and params type.
pub trait Method {
    /// The method name on the wire.
    const NAME: &'static str;
    /// Its params.
    type Params: Serialize + DeserializeOwned;
}

/// A method that is answered: its result type.
pub trait RequestMethod: Method {
    /// The result of a successful call.
    type Result: Serialize + DeserializeOwned;
}

macro_rules! methods {
    ($($(#[$doc:meta])* $name:ident = $wire:literal, $params:ty $(=> $result:ty)?;)*) => {
    $(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $name;
        impl Method for $name {
            const NAME: &'static str = $wire;
            type Params = $params;
        }
        $(impl RequestMethod for $name {
            type Result = $result;
        })?
    )*
        /// The wire name of every typed method (the method table lists the same).
        pub const TYPED_NAMES: &[&str] = &[$($wire),*];
    };
}

methods! {
    /// `server/discover`.
    ServerDiscover = "server/discover", RequestParams => DiscoverResult;
    /// `tools/list`.
    ToolsList = "tools/list", PaginatedRequestParams => ListToolsResult;
    /// `tools/call`.
    ToolsCall = "tools/call", CallToolRequestParams => Outcome<CallToolResult>;
    /// `prompts/list`.
    PromptsList = "prompts/list", PaginatedRequestParams => ListPromptsResult;
    /// `prompts/get`.
    PromptsGet = "prompts/get", GetPromptRequestParams => Outcome<GetPromptResult>;
    /// `resources/list`.
    ResourcesList = "resources/list", PaginatedRequestParams => ListResourcesResult;
    /// `resources/templates/list`.
    ResourcesTemplatesList = "resources/templates/list", PaginatedRequestParams => ListResourceTemplatesResult;
    /// `resources/read`.
    ResourcesRead = "resources/read", ReadResourceRequestParams => Outcome<ReadResourceResult>;
    /// `completion/complete`.
    CompletionComplete = "completion/complete", CompleteRequestParams => CompleteResult;
    /// `subscriptions/listen`.
    SubscriptionsListen = "subscriptions/listen", SubscriptionsListenRequestParams => SubscriptionsListenResult;
    /// `elicitation/create`: an input request (2026-07-28) or a server request (2025-11-25).
    ElicitationCreate = "elicitation/create", ElicitRequestParams => ElicitResult;
    /// `sampling/createMessage`: an input request or a server request.
    SamplingCreateMessage = "sampling/createMessage", CreateMessageRequestParams => CreateMessageResult;
    /// `roots/list`: an input request or a server request.
    RootsList = "roots/list", Option<MetaParams> => ListRootsResult;
    /// `notifications/cancelled`.
    NotificationsCancelled = "notifications/cancelled", CancelledNotificationParams;
    /// `notifications/progress`.
    NotificationsProgress = "notifications/progress", ProgressNotificationParams;
    /// `notifications/message`: a log message.
    NotificationsMessage = "notifications/message", LoggingMessageNotificationParams;
    /// `notifications/tools/list_changed`.
    ToolsListChanged = "notifications/tools/list_changed", Option<NotificationParams>;
    /// `notifications/prompts/list_changed`.
    PromptsListChanged = "notifications/prompts/list_changed", Option<NotificationParams>;
    /// `notifications/resources/list_changed`.
    ResourcesListChanged = "notifications/resources/list_changed", Option<NotificationParams>;
    /// `notifications/resources/updated`.
    ResourcesUpdated = "notifications/resources/updated", ResourceUpdatedNotificationParams;
    /// `notifications/subscriptions/acknowledged`.
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged", SubscriptionsAcknowledgedNotificationParams;
    /// 2025-11-25 `initialize`.
    Initialize = "initialize", legacy::InitializeRequestParams => legacy::InitializeResult;
    /// 2025-11-25 `notifications/initialized`.
    Initialized = "notifications/initialized", Option<MetaParams>;
    /// 2025-11-25 `ping`.
    Ping = "ping", Option<MetaParams> => MetaParams;
    /// 2025-11-25 `logging/setLevel`.
    LoggingSetLevel = "logging/setLevel", legacy::SetLevelRequestParams => MetaParams;
    /// 2025-11-25 `resources/subscribe`.
    ResourcesSubscribe = "resources/subscribe", legacy::SubscribeRequestParams => MetaParams;
    /// 2025-11-25 `resources/unsubscribe`.
    ResourcesUnsubscribe = "resources/unsubscribe", legacy::SubscribeRequestParams => MetaParams;
    /// 2025-11-25 `notifications/roots/list_changed`.
    RootsListChanged = "notifications/roots/list_changed", Option<MetaParams>;
    /// `notifications/elicitation/complete`: a URL elicitation finished.
    ElicitationComplete = "notifications/elicitation/complete", Map<String, Value>;
    /// Tasks extension: `tasks/get`.
    TasksGet = "tasks/get", TaskIdParams => Task;
    /// Tasks extension: `tasks/update`, the answers to a task's input requests.
    TasksUpdate = "tasks/update", UpdateTaskRequestParams => MetaParams;
    /// Tasks extension: `tasks/cancel`.
    TasksCancel = "tasks/cancel", TaskIdParams => MetaParams;
    /// Tasks extension: `notifications/tasks`, a task's new status.
    TasksStatus = "notifications/tasks", Task;
    /// Skills extension: `skills/list`.
    SkillsList = "skills/list", PaginatedRequestParams => ListSkillsResult;
    /// Skills extension: `skills/get` (params: the skill's `uri`).
    SkillsGet = "skills/get", Map<String, Value> => GetSkillResult;
    /// Skills extension: `resources/directory/read` (params: the directory's `uri`).
    ResourcesDirectoryRead = "resources/directory/read", Map<String, Value> => ReadResourceDirectoryResult;
}

/// A typed request of method `M`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<M: Method> {
    /// The id the response will carry.
    pub id: RequestId,
    /// The params.
    pub params: M::Params,
    /// Envelope members JSON-RPC does not define.
    pub extra: Map<String, Value>,
    method: PhantomData<M>,
}

impl<M: Method> Request<M> {
    /// A request with these params.
    pub fn new(id: RequestId, params: M::Params) -> Self {
        Request { id, params, extra: Map::new(), method: PhantomData }
    }
}

/// A typed notification of method `M`.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification<M: Method> {
    /// The params.
    pub params: M::Params,
    /// Envelope members JSON-RPC does not define.
    pub extra: Map<String, Value>,
    method: PhantomData<M>,
}

impl<M: Method> Notification<M> {
    /// A notification with these params.
    pub fn new(params: M::Params) -> Self {
        Notification { params, extra: Map::new(), method: PhantomData }
    }
}

/// A method and its params without the JSON-RPC envelope: the shape of an
/// input request inside an `InputRequiredResult` (2026-07-28, MRTR).
#[derive(Debug, Clone, PartialEq)]
pub struct MethodCall<M: Method> {
    /// The params.
    pub params: M::Params,
    /// Members not modelled here.
    pub extra: Map<String, Value>,
    method: PhantomData<M>,
}

impl<M: Method> MethodCall<M> {
    /// A call with these params.
    pub fn new(params: M::Params) -> Self {
        MethodCall { params, extra: Map::new(), method: PhantomData }
    }
}

/// A typed successful response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultResponse<R> {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result.
    pub result: R,
    /// Envelope members JSON-RPC does not define.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl<R> ResultResponse<R> {
    /// A response with this result.
    pub fn new(id: RequestId, result: R) -> Self {
        ResultResponse { jsonrpc: JsonRpcVersion, id, result, extra: Map::new() }
    }
}

/// Writes `{jsonrpc?, id?, method, params?, ...extra}`; absent params (a
/// `None` of an optional params type) are left out.
fn serialize_envelope<S: Serializer, P: Serialize>(
    s: S,
    with_jsonrpc: bool,
    id: Option<&RequestId>,
    method: &str,
    params: &P,
    extra: &Map<String, Value>,
) -> Result<S::Ok, S::Error> {
    let params = serde_json::to_value(params).map_err(serde::ser::Error::custom)?;
    let mut map = s.serialize_map(None)?;
    if with_jsonrpc {
        map.serialize_entry("jsonrpc", &JsonRpcVersion)?;
    }
    if let Some(id) = id {
        map.serialize_entry("id", id)?;
    }
    map.serialize_entry("method", method)?;
    if !params.is_null() {
        map.serialize_entry("params", &params)?;
    }
    for (k, v) in extra {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

/// The parts of an envelope that was read: id, params and extra members.
struct Envelope<P> {
    id: Option<RequestId>,
    params: P,
    extra: Map<String, Value>,
}

fn deserialize_envelope<'de, D: Deserializer<'de>, M: Method>(
    d: D,
    with_jsonrpc: bool,
) -> Result<Envelope<M::Params>, D::Error> {
    let mut obj = Map::deserialize(d)?;
    if with_jsonrpc {
        JsonRpcVersion::deserialize(obj.remove("jsonrpc").unwrap_or(Value::Null)).map_err(D::Error::custom)?;
    }
    match obj.remove("method") {
        Some(Value::String(m)) if m == M::NAME => {}
        _ => return Err(D::Error::custom(format_args!("method must be \"{}\"", M::NAME))),
    }
    let id = match obj.remove("id") {
        Some(v) if with_jsonrpc => Some(RequestId::deserialize(v).map_err(D::Error::custom)?),
        Some(v) => {
            // An input request has no id; keep a stray one as an extra member.
            obj.insert("id".to_owned(), v);
            None
        }
        None => None,
    };
    let params = obj.remove("params").unwrap_or(Value::Null);
    let params = M::Params::deserialize(params).map_err(D::Error::custom)?;
    Ok(Envelope { id, params, extra: obj })
}

impl<M: Method> Serialize for Request<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_envelope(s, true, Some(&self.id), M::NAME, &self.params, &self.extra)
    }
}

impl<'de, M: Method> Deserialize<'de> for Request<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let e = deserialize_envelope::<D, M>(d, true)?;
        let id = e.id.ok_or_else(|| D::Error::missing_field("id"))?;
        Ok(Request { id, params: e.params, extra: e.extra, method: PhantomData })
    }
}

impl<M: Method> Serialize for Notification<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_envelope(s, true, None, M::NAME, &self.params, &self.extra)
    }
}

impl<'de, M: Method> Deserialize<'de> for Notification<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let e = deserialize_envelope::<D, M>(d, true)?;
        if e.id.is_some() {
            return Err(D::Error::custom("a notification has no id"));
        }
        Ok(Notification { params: e.params, extra: e.extra, method: PhantomData })
    }
}

impl<M: Method> Serialize for MethodCall<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_envelope(s, false, None, M::NAME, &self.params, &self.extra)
    }
}

impl<'de, M: Method> Deserialize<'de> for MethodCall<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let e = deserialize_envelope::<D, M>(d, false)?;
        Ok(MethodCall { params: e.params, extra: e.extra, method: PhantomData })
    }
}

/// Schema names of the 2026-07-28 envelopes, for code that wants them.
pub mod envelopes {
    use super::*;

    /// `DiscoverRequest`.
    pub type DiscoverRequest = Request<ServerDiscover>;
    /// `ListToolsRequest`.
    pub type ListToolsRequest = Request<ToolsList>;
    /// `CallToolRequest`.
    pub type CallToolRequest = Request<ToolsCall>;
    /// `ListPromptsRequest`.
    pub type ListPromptsRequest = Request<PromptsList>;
    /// `GetPromptRequest`.
    pub type GetPromptRequest = Request<PromptsGet>;
    /// `ListResourcesRequest`.
    pub type ListResourcesRequest = Request<ResourcesList>;
    /// `ListResourceTemplatesRequest`.
    pub type ListResourceTemplatesRequest = Request<ResourcesTemplatesList>;
    /// `ReadResourceRequest`.
    pub type ReadResourceRequest = Request<ResourcesRead>;
    /// `CompleteRequest`.
    pub type CompleteRequest = Request<CompletionComplete>;
    /// `SubscriptionsListenRequest`.
    pub type SubscriptionsListenRequest = Request<SubscriptionsListen>;
    /// `ElicitRequest` (an input request, without envelope).
    pub type ElicitRequest = MethodCall<ElicitationCreate>;
    /// `CreateMessageRequest` (an input request, without envelope).
    pub type CreateMessageRequest = MethodCall<SamplingCreateMessage>;
    /// `ListRootsRequest` (an input request, without envelope).
    pub type ListRootsRequest = MethodCall<RootsList>;
    /// `CancelledNotification`.
    pub type CancelledNotification = Notification<NotificationsCancelled>;
    /// `ProgressNotification`.
    pub type ProgressNotification = Notification<NotificationsProgress>;
    /// `LoggingMessageNotification`.
    pub type LoggingMessageNotification = Notification<NotificationsMessage>;
    /// `ToolListChangedNotification`.
    pub type ToolListChangedNotification = Notification<ToolsListChanged>;
    /// `PromptListChangedNotification`.
    pub type PromptListChangedNotification = Notification<PromptsListChanged>;
    /// `ResourceListChangedNotification`.
    pub type ResourceListChangedNotification = Notification<ResourcesListChanged>;
    /// `ResourceUpdatedNotification`.
    pub type ResourceUpdatedNotification = Notification<ResourcesUpdated>;
    /// `SubscriptionsAcknowledgedNotification`.
    pub type SubscriptionsAcknowledgedNotification = Notification<SubscriptionsAcknowledged>;
    /// `DiscoverResultResponse`.
    pub type DiscoverResultResponse = ResultResponse<DiscoverResult>;
    /// `ListToolsResultResponse`.
    pub type ListToolsResultResponse = ResultResponse<ListToolsResult>;
    /// `CallToolResultResponse`.
    pub type CallToolResultResponse = ResultResponse<Outcome<CallToolResult>>;
    /// `ListPromptsResultResponse`.
    pub type ListPromptsResultResponse = ResultResponse<ListPromptsResult>;
    /// `GetPromptResultResponse`.
    pub type GetPromptResultResponse = ResultResponse<Outcome<GetPromptResult>>;
    /// `ListResourcesResultResponse`.
    pub type ListResourcesResultResponse = ResultResponse<ListResourcesResult>;
    /// `ListResourceTemplatesResultResponse`.
    pub type ListResourceTemplatesResultResponse = ResultResponse<ListResourceTemplatesResult>;
    /// `ReadResourceResultResponse`.
    pub type ReadResourceResultResponse = ResultResponse<Outcome<ReadResourceResult>>;
    /// `CompleteResultResponse`.
    pub type CompleteResultResponse = ResultResponse<CompleteResult>;
    /// `SubscriptionsListenResultResponse`.
    pub type SubscriptionsListenResultResponse = ResultResponse<SubscriptionsListenResult>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_refuses_another_method() {
        let v = json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":{}}}});
        assert!(serde_json::from_value::<Request<ToolsList>>(v.clone()).is_ok());
        let err = serde_json::from_value::<Request<PromptsList>>(v).unwrap_err();
        assert!(err.to_string().contains("prompts/list"), "{err}");
    }

    #[test]
    fn optional_params_are_left_out_when_absent() {
        let ping = Request::<Ping>::new(7.into(), None);
        assert_eq!(serde_json::to_value(&ping).unwrap(), json!({"jsonrpc":"2.0","id":7,"method":"ping"}));
        let back: Request<Ping> = serde_json::from_value(json!({"jsonrpc":"2.0","id":7,"method":"ping"})).unwrap();
        assert_eq!(back, ping);
    }

    #[test]
    fn required_params_must_be_present() {
        let v = json!({"jsonrpc":"2.0","id":1,"method":"tools/call"});
        assert!(serde_json::from_value::<Request<ToolsCall>>(v).is_err());
    }

    #[test]
    fn notification_with_an_id_is_refused() {
        let v = json!({"jsonrpc":"2.0","id":1,"method":"notifications/tools/list_changed"});
        assert!(serde_json::from_value::<Notification<ToolsListChanged>>(v).is_err());
    }
}
