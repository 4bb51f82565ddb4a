//! The SDK's one error type, and the mapping of server-side failures to
//! JSON-RPC error objects.

use mcp_bridge_protocol::{ErrorObject, RequestId, error_code};
use serde_json::{Value, json};

/// The member of an error's `data` that says a listen stream ended because
/// change events were lost: the client opens a new stream and lists again.
pub(crate) const EVENTS_LOST_KEY: &str = "eventsLost";

/// What can go wrong with a request made through [`crate::Client`], or with
/// setting up a transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", error.code, error.message)]
    Rpc {
        /// The error object as the server sent it.
        error: ErrorObject,
    },
    /// No answer within the request's time limit; the request was cancelled.
    #[error("{method} timed out after {timeout_ms} ms")]
    Timeout {
        /// The method that timed out.
        method: String,
        /// The limit in milliseconds.
        timeout_ms: u128,
    },
    /// The caller cancelled the request.
    #[error("{method} was cancelled")]
    Cancelled {
        /// The method that was cancelled.
        method: String,
    },
    /// The connection is closed, or closed while the request waited.
    #[error("connection closed")]
    Closed,
    /// The response is not a valid result for the method, or could not be read.
    #[error("invalid response to {method}: {reason}")]
    InvalidResponse {
        /// The method whose response was bad.
        method: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A caller-supplied `_meta` key is refused before anything is sent.
    #[error("invalid _meta key {key:?}: {reason}")]
    InvalidMeta {
        /// The refused key.
        key: String,
        /// Why it is refused.
        reason: String,
    },
    /// The request's arguments could not be sent.
    #[error("invalid request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// The server asked for input more times than the limit allows.
    #[error("{method} asked for input more than {limit} rounds")]
    TooManyRounds {
        /// The method.
        method: String,
        /// The round limit.
        limit: usize,
    },
    /// The server asked for input of a kind the client did not declare.
    #[error("input request {key:?} needs the undeclared client capability {capability}")]
    UndeclaredInputRequest {
        /// The key of the input request.
        key: String,
        /// The capability it needs.
        capability: &'static str,
    },
    /// A round holds more input requests than a client passes on
    /// ([`MAX_INPUT_REQUESTS_PER_ROUND`](mcp_bridge_protocol::rounds::MAX_INPUT_REQUESTS_PER_ROUND)):
    /// none was asked.
    #[error("{count} input requests in one round, over the limit of {limit}")]
    TooManyInputRequests {
        /// How many the round held.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An input request is malformed or of an unknown kind.
    #[error("input request {key:?} is not valid: {reason}")]
    InvalidInputRequest {
        /// The key of the input request.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// An input hook failed or gave an answer that breaks the rules.
    #[error("input hook for {key:?} failed: {reason}")]
    HookFailed {
        /// The key of the input request.
        key: String,
        /// What went wrong.
        reason: String,
    },
    /// A transport asked the user of a request sent for no user of its
    /// own (no [`crate::RequestOptions::hooks`]): see
    /// [`crate::transport::http::AskUser`].
    #[error("the request was sent for no user of its own to ask")]
    NoUserToAsk,
    /// Too many requests in flight on this connection.
    #[error("too many requests in flight (limit {limit})")]
    Busy {
        /// The limit.
        limit: usize,
    },
    /// The request could not reach the server, or its answer was cut off by
    /// the network (an HTTP connection refused, reset or timed out; a proxy
    /// that refused the tunnel).
    #[error("the transport failed: {reason}")]
    Transport {
        /// What failed, without URLs or credentials.
        reason: String,
    },
    /// The server's socket could not be connected to.
    #[error("cannot connect to the server")]
    Connect {
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The server did not accept the WebSocket upgrade; `status` is its HTTP
    /// status when it answered with one (404 for a wrong path, 401 for
    /// missing credentials).
    #[error("the WebSocket upgrade failed: {reason}")]
    Upgrade {
        /// The HTTP status of the refusal.
        status: Option<u16>,
        /// What went wrong.
        reason: String,
    },
    /// A task was polled as often as the client's budget allows and had
    /// still not ended (Tasks extension); it was cancelled on the server.
    #[error("task {task_id} had not ended after {polls} polls")]
    TaskPollBudget {
        /// The task.
        task_id: String,
        /// The budget: `ClientOptions::max_task_polls`.
        polls: usize,
    },
    /// The server cancelled the task the request became (Tasks extension).
    #[error("task {task_id} was cancelled")]
    TaskCancelled {
        /// The task.
        task_id: String,
    },
    /// A skill's file failed a check against the skill's entry (Skills
    /// extension); its bytes are not used.
    #[error("the skill file is refused")]
    #[cfg(feature = "skills")]
    Skill(#[from] crate::skills::SkillError),
    /// The durable task store cannot be read or written.
    #[error("the task store failed: {0}")]
    #[cfg(feature = "tasks")]
    TaskStore(crate::store::StoreError),
    /// The server process could not be started.
    #[error("cannot start the server process")]
    Spawn {
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// An error with its sources, each after a colon (`cannot start the
/// server process: No such file or directory (os error 2)`): what a log
/// line or a person should see. An error's own `Display` leaves its
/// source out, as the sources are reachable through
/// [`std::error::Error::source`].
pub fn report(error: &(dyn std::error::Error + 'static)) -> String {
    report_as(&error.to_string(), error)
}

/// [`report`] with `head` in place of the error's own text, for an error
/// whose text must not be shown (reqwest's quotes the URL, which may
/// carry a secret).
pub fn report_as(head: &str, error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = head.to_owned();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl From<mcp_bridge_protocol::rounds::RoundRefusal> for Error {
    fn from(refusal: mcp_bridge_protocol::rounds::RoundRefusal) -> Self {
        use mcp_bridge_protocol::rounds::RoundRefusal;
        match refusal {
            RoundRefusal::TooManyRequests { count, limit } => Error::TooManyInputRequests { count, limit },
            RoundRefusal::Undeclared { key, capability } => {
                Error::UndeclaredInputRequest { key, capability: capability.path() }
            }
            RoundRefusal::Invalid { key, reason } => Error::InvalidInputRequest { key, reason },
            // A new rule refuses as an invalid request until it has a variant.
            other => Error::InvalidInputRequest {
                key: other.key().unwrap_or_default().to_owned(),
                reason: other.to_string(),
            },
        }
    }
}

impl Error {
    /// The JSON-RPC error object, when the server sent one.
    pub fn rpc_error(&self) -> Option<&ErrorObject> {
        match self {
            Error::Rpc { error } => Some(error),
            _ => None,
        }
    }
}

/// The result type of the SDK.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error a server handler returns; it becomes the JSON-RPC error of the
/// response. Tool failures meant for the model belong in a `CallToolResult`
/// with `isError: true` instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct HandlerError {
    /// The JSON-RPC code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Structured detail.
    pub data: Option<Value>,
}

impl HandlerError {
    /// -32602: the params are not valid.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError { code: error_code::INVALID_PARAMS, message: message.into(), data: None }
    }

    /// -32602 for a task that does not exist, or is not the caller's: the
    /// answer of `tasks/get`, `tasks/update` and `tasks/cancel` (the same
    /// for both, so an id alone tells nothing).
    pub fn task_not_found() -> Self {
        HandlerError::invalid_params("Failed to retrieve task: Task not found")
    }

    /// -32603: the handler failed.
    pub fn internal(message: impl Into<String>) -> Self {
        HandlerError { code: error_code::INTERNAL_ERROR, message: message.into(), data: None }
    }

    /// -32602 with the URI in `data`: no resource has this URI
    /// (2026-07-28, Resources: error handling).
    pub fn resource_not_found(uri: &str) -> Self {
        HandlerError {
            code: error_code::INVALID_PARAMS,
            message: format!("Resource not found: {uri}"),
            data: Some(json!({ "uri": uri })),
        }
    }

    /// -32021: answering needs a capability the client did not declare;
    /// `required` is a `ClientCapabilities` object naming it, such as
    /// `{"sampling": {}}`.
    pub fn missing_capability(required: Value) -> Self {
        HandlerError {
            code: error_code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            message: "The client must declare a capability this request needs".into(),
            data: Some(json!({ "requiredCapabilities": required })),
        }
    }

    /// The error object sent on the wire.
    pub fn to_error_object(&self) -> ErrorObject {
        let e = ErrorObject::new(self.code, self.message.clone());
        match &self.data {
            Some(d) => e.with_data(d.clone()),
            None => e,
        }
    }
}

/// The server-side failures that are not a handler's own, each with its
/// JSON-RPC code; [`ServerFault::to_error_object`] is the one place that maps
/// them to the wire.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ServerFault {
    MethodNotFound { method: String },
    MissingMeta,
    InvalidMeta { reason: String },
    UnsupportedVersion { requested: String, supported: Vec<String> },
    InvalidParams { reason: String },
    MissingClientCapability { key: String, required: Value },
    InvalidRequestState { reason: String },
    DuplicateId { id: RequestId },
    TooManyRequests { limit: usize },
    EventsLost,
    Handler(HandlerError),
}

impl Error {
    /// Whether a listen stream ended with this error because the server
    /// lost change events it should have carried (its event bus was
    /// interrupted): the events since the last list may be missing.
    pub fn is_events_lost(&self) -> bool {
        matches!(self, Error::Rpc { error } if error.data.as_ref().is_some_and(|d| d[EVENTS_LOST_KEY] == true))
    }
}

impl ServerFault {
    pub(crate) fn to_error_object(&self) -> ErrorObject {
        use error_code::*;
        match self {
            ServerFault::MethodNotFound { method } => {
                ErrorObject::new(METHOD_NOT_FOUND, "Method not found").with_data(json!({ "method": method }))
            }
            ServerFault::MissingMeta => ErrorObject::new(
                INVALID_PARAMS,
                "Invalid params: a 2026-07-28 request needs _meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities",
            ),
            ServerFault::InvalidMeta { reason } => {
                ErrorObject::new(INVALID_PARAMS, format!("Invalid params: invalid _meta: {reason}"))
            }
            ServerFault::UnsupportedVersion { requested, supported } => {
                ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
                    .with_data(json!({ "supported": supported, "requested": requested }))
            }
            ServerFault::InvalidParams { reason } => {
                ErrorObject::new(INVALID_PARAMS, format!("Invalid params: {reason}"))
            }
            ServerFault::MissingClientCapability { key, required } => ErrorObject::new(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("The client must declare a capability to answer input request {key:?}"),
            )
            .with_data(json!({ "requiredCapabilities": required })),
            ServerFault::InvalidRequestState { reason } => ErrorObject::new(
                INVALID_PARAMS,
                format!("Invalid params: requestState is not valid for this request: {reason}"),
            ),
            ServerFault::EventsLost => ErrorObject::new(
                INTERNAL_ERROR,
                "Change events for this stream were lost (the server's event bus was interrupted): open a new stream and list again",
            )
            .with_data(json!({ EVENTS_LOST_KEY: true })),
            ServerFault::DuplicateId { id } => {
                ErrorObject::new(INVALID_REQUEST, format!("Invalid request: id {id} is already in flight"))
            }
            ServerFault::TooManyRequests { limit } => {
                ErrorObject::new(INTERNAL_ERROR, format!("Too many requests in flight (limit {limit})"))
            }
            ServerFault::Handler(e) => e.to_error_object(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_names_its_source_once() {
        let error = Error::Spawn { source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such program") };
        assert_eq!(error.to_string(), "cannot start the server process");
        assert_eq!(report(&error), "cannot start the server process: no such program");
        let closed = Error::Closed;
        assert_eq!(report(&closed), "connection closed");
    }

    #[test]
    fn every_server_fault_maps_to_its_code() {
        let table = [
            (ServerFault::MethodNotFound { method: "x".into() }, -32601),
            (ServerFault::MissingMeta, -32602),
            (ServerFault::InvalidMeta { reason: "r".into() }, -32602),
            (ServerFault::UnsupportedVersion { requested: "1".into(), supported: vec!["2".into()] }, -32022),
            (ServerFault::InvalidParams { reason: "r".into() }, -32602),
            (ServerFault::MissingClientCapability { key: "k".into(), required: json!({}) }, -32021),
            (ServerFault::InvalidRequestState { reason: "r".into() }, -32602),
            (ServerFault::DuplicateId { id: 1.into() }, -32600),
            (ServerFault::TooManyRequests { limit: 1 }, -32603),
            (ServerFault::EventsLost, -32603),
            (ServerFault::Handler(HandlerError::internal("boom")), -32603),
        ];
        for (fault, code) in table {
            assert_eq!(fault.to_error_object().code, code, "{fault:?}");
        }
    }

    #[test]
    fn unsupported_version_lists_the_supported_ones() {
        let e =
            ServerFault::UnsupportedVersion { requested: "1900-01-01".into(), supported: vec!["2026-07-28".into()] }
                .to_error_object();
        assert_eq!(e.data.unwrap(), json!({"supported":["2026-07-28"],"requested":"1900-01-01"}));
    }
}
