//! The bridge's error table: every cause, its JSON-RPC code and its fixed
//! message, in one place. `data.cause` names the cause; `data.detail` carries
//! facts (a limit, a method) but never a secret, the upstream URL or the
//! child's stderr.

use mcp_bridge_protocol::ErrorObject;
use mcp_bridge_protocol::error_code::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use serde_json::{Value, json};

/// Why the bridge answers a request with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// A line that is not valid JSON or not UTF-8.
    ParseError,
    /// Valid JSON that is not a JSON-RPC 2.0 request.
    InvalidRequestShape,
    /// A line over the line limit.
    LineTooLong,
    /// A message nested deeper than the limit.
    TooDeep,
    /// A request before `initialize`.
    NotInitialized,
    /// A second `initialize`.
    AlreadyInitialized,
    /// An unknown method, `server/discover`, a 2026-07-28 request before
    /// `initialize`, a subscription without a listen stream.
    MethodNotFound,
    /// Params the bridge reads itself are not valid.
    InvalidParams,
    /// The SDK cannot send an argument of the request.
    InvalidRequest,
    /// The SDK refuses a `_meta` key.
    InvalidMeta,
    /// The upstream command cannot be started.
    SpawnFailed,
    /// The HTTP client for the URL cannot be made.
    ConnectFailed,
    /// `server/discover` failed or timed out.
    DiscoverFailed,
    /// The upstream process stopped.
    UpstreamExited,
    /// Too many requests in flight.
    TooManyRequests,
    /// The upstream did not answer within the method's time limit.
    Timeout,
    /// An input request of the upstream is not valid.
    InvalidInputRequest,
    /// A round has too many input requests.
    TooManyInputRequests,
    /// The client did not answer the input requests in time.
    InputTimeout,
    /// The client's answer to an input request is not valid.
    InvalidClientAnswer,
    /// The upstream asked for input a client capability does not cover.
    UndeclaredInputRequest,
    /// Answering an input request failed.
    HookFailed,
    /// The upstream asked for input too many rounds.
    TooManyRounds,
    /// The connection to the upstream is closed.
    Closed,
    /// The transport to the upstream failed.
    TransportFailed,
    /// The upstream could not be connected to (its socket or WebSocket
    /// refused the connection).
    NotConnected,
    /// The upstream cancelled the task the request became.
    TaskCancelled,
    /// The upstream's response is not valid for the method.
    InvalidResponse,
    /// An upstream error that came without its JSON-RPC error object.
    Rpc,
    /// The user did not sign in within `--sign-in-timeout`.
    SignInTimeout,
    /// The sign-in was declined.
    SignInDenied,
    /// The code of a device sign-in expired before the user finished.
    SignInCodeExpired,
    /// The OAuth exchange failed (discovery, registration, tokens).
    SignInError,
    /// The server's authorization URL is not acceptable.
    SignInInvalidUrl,
    /// No browser could be started for the sign-in.
    BrowserLaunchFailed,
    /// The redirect port of the sign-in is in use.
    RedirectPortUnavailable,
    /// The sign-in link was opened twice.
    SignInStartReused,
    /// The server refused access although the sign-in went through.
    AccessRefused,
    /// A new sign-in is needed and the client cannot show it.
    ReauthorizationRequired,
    /// The sign-in stopped for another reason than the user's (the
    /// authorization hook failed).
    SignInFailed,
    /// The authorization server offers no way to register the bridge.
    RegistrationUnavailable,
    /// The dynamic registration at the authorization server failed.
    RegistrationFailed,
    /// The authorization server does not know the bridge's registration.
    IssuerNotRegistered,
    /// The authorization server refused the client metadata document.
    InvalidClientMetadataUrl,
}

impl Cause {
    /// Every cause, for the table test.
    pub const ALL: [Cause; 44] = [
        Cause::ParseError,
        Cause::InvalidRequestShape,
        Cause::LineTooLong,
        Cause::TooDeep,
        Cause::NotInitialized,
        Cause::AlreadyInitialized,
        Cause::MethodNotFound,
        Cause::InvalidParams,
        Cause::InvalidRequest,
        Cause::InvalidMeta,
        Cause::SpawnFailed,
        Cause::ConnectFailed,
        Cause::DiscoverFailed,
        Cause::UpstreamExited,
        Cause::TooManyRequests,
        Cause::Timeout,
        Cause::InvalidInputRequest,
        Cause::TooManyInputRequests,
        Cause::InputTimeout,
        Cause::InvalidClientAnswer,
        Cause::UndeclaredInputRequest,
        Cause::HookFailed,
        Cause::TooManyRounds,
        Cause::Closed,
        Cause::TransportFailed,
        Cause::NotConnected,
        Cause::TaskCancelled,
        Cause::InvalidResponse,
        Cause::Rpc,
        Cause::SignInTimeout,
        Cause::SignInDenied,
        Cause::SignInCodeExpired,
        Cause::SignInError,
        Cause::SignInInvalidUrl,
        Cause::BrowserLaunchFailed,
        Cause::RedirectPortUnavailable,
        Cause::SignInStartReused,
        Cause::AccessRefused,
        Cause::ReauthorizationRequired,
        Cause::SignInFailed,
        Cause::RegistrationUnavailable,
        Cause::RegistrationFailed,
        Cause::IssuerNotRegistered,
        Cause::InvalidClientMetadataUrl,
    ];

    /// The name in `data.cause`.
    pub fn name(self) -> &'static str {
        match self {
            Cause::ParseError => "parse_error",
            Cause::InvalidRequestShape => "invalid_request_shape",
            Cause::LineTooLong => "line_too_long",
            Cause::TooDeep => "too_deep",
            Cause::NotInitialized => "not_initialized",
            Cause::AlreadyInitialized => "already_initialized",
            Cause::MethodNotFound => "method_not_found",
            Cause::InvalidParams => "invalid_params",
            Cause::InvalidRequest => "invalid_request",
            Cause::InvalidMeta => "invalid_meta",
            Cause::SpawnFailed => "spawn_failed",
            Cause::ConnectFailed => "connect_failed",
            Cause::DiscoverFailed => "discover_failed",
            Cause::UpstreamExited => "upstream_exited",
            Cause::TooManyRequests => "too_many_requests",
            Cause::Timeout => "timeout",
            Cause::InvalidInputRequest => "invalid_input_request",
            Cause::TooManyInputRequests => "too_many_input_requests",
            Cause::InputTimeout => "input_timeout",
            Cause::InvalidClientAnswer => "invalid_client_answer",
            Cause::UndeclaredInputRequest => "undeclared_input_request",
            Cause::HookFailed => "hook_failed",
            Cause::TooManyRounds => "too_many_rounds",
            Cause::Closed => "closed",
            Cause::TransportFailed => "transport_failed",
            Cause::NotConnected => "not_connected",
            Cause::TaskCancelled => "task_cancelled",
            Cause::InvalidResponse => "invalid_response",
            Cause::Rpc => "rpc",
            Cause::SignInTimeout => "sign_in_timeout",
            Cause::SignInDenied => "sign_in_denied",
            Cause::SignInCodeExpired => "sign_in_code_expired",
            Cause::SignInError => "sign_in_error",
            Cause::SignInInvalidUrl => "sign_in_invalid_url",
            Cause::BrowserLaunchFailed => "browser_launch_failed",
            Cause::RedirectPortUnavailable => "redirect_port_unavailable",
            Cause::SignInStartReused => "sign_in_start_reused",
            Cause::AccessRefused => "access_refused",
            Cause::ReauthorizationRequired => "reauthorization_required",
            Cause::SignInFailed => "sign_in_failed",
            Cause::RegistrationUnavailable => "registration_unavailable",
            Cause::RegistrationFailed => "registration_failed",
            Cause::IssuerNotRegistered => "issuer_not_registered",
            Cause::InvalidClientMetadataUrl => "invalid_client_metadata_url",
        }
    }

    /// The JSON-RPC code.
    pub fn code(self) -> i64 {
        match self {
            Cause::ParseError => PARSE_ERROR,
            Cause::InvalidRequestShape
            | Cause::LineTooLong
            | Cause::TooDeep
            | Cause::NotInitialized
            | Cause::AlreadyInitialized => INVALID_REQUEST,
            Cause::MethodNotFound => METHOD_NOT_FOUND,
            Cause::InvalidParams | Cause::InvalidRequest | Cause::InvalidMeta => INVALID_PARAMS,
            _ => INTERNAL_ERROR,
        }
    }

    /// The message the client sees: the fixed [`Cause::message`], then the
    /// hint of the program running the bridge ([`set_hints`]), if any.
    pub fn text(self) -> String {
        self.text_with(None)
    }

    /// [`Cause::text`] with a fact of this occurrence in parentheses after
    /// the fixed message and before the hint (the host, a redirect URI).
    pub fn text_with(self, fact: Option<&str>) -> String {
        let hint = HINTS.get().and_then(|hints| hints(self)).unwrap_or_default();
        match fact {
            Some(fact) => format!("{} ({fact}){hint}", self.message()),
            None => format!("{}{hint}", self.message()),
        }
    }

    /// The fixed message, in the library's words: it names no option of
    /// the program running the bridge (that is its hint's job).
    pub fn message(self) -> &'static str {
        match self {
            Cause::ParseError => "Parse error",
            Cause::InvalidRequestShape => "Invalid request: not a JSON-RPC 2.0 request",
            Cause::LineTooLong => "Invalid request: the line is longer than the limit",
            Cause::TooDeep => "Invalid request: the message nests too deep",
            Cause::NotInitialized => "Invalid request: the connection is not initialized; send initialize first",
            Cause::AlreadyInitialized => "Invalid request: initialize was already sent",
            Cause::MethodNotFound => "Method not found",
            Cause::InvalidParams => "Invalid params",
            Cause::InvalidRequest => "Invalid params: the request cannot be sent to the server",
            Cause::InvalidMeta => "Invalid params: a _meta key is not allowed",
            Cause::SpawnFailed => "The MCP server could not be started",
            Cause::ConnectFailed => "The MCP server could not be reached",
            Cause::DiscoverFailed => "The MCP server failed server/discover or did not answer it in time",
            Cause::UpstreamExited => "The MCP server stopped",
            Cause::TooManyRequests => "Too many requests in flight",
            Cause::Timeout => "The MCP server did not answer in time",
            Cause::InvalidInputRequest => "The MCP server sent an input request that is not valid",
            Cause::TooManyInputRequests => "The MCP server sent too many input requests at once",
            Cause::InputTimeout => "No answer to the MCP server's input requests in time",
            Cause::InvalidClientAnswer => "The answer to the MCP server's input request is not valid",
            Cause::UndeclaredInputRequest => "The MCP server asked for input the client does not support",
            Cause::HookFailed => "The MCP server's input request could not be answered",
            Cause::TooManyRounds => "The MCP server asked for input too many times",
            Cause::Closed => "The connection to the MCP server is closed",
            Cause::TransportFailed => "The connection to the MCP server failed",
            Cause::NotConnected => "The MCP server could not be connected to",
            Cause::TaskCancelled => "The MCP server cancelled the task of the request",
            Cause::InvalidResponse => "The MCP server sent a response that is not valid",
            Cause::Rpc => "The MCP server failed the request",
            Cause::SignInTimeout => "The sign-in did not finish in time; try again",
            Cause::SignInDenied => "The sign-in was declined",
            Cause::SignInCodeExpired => "The sign-in code expired before the sign-in was finished; try again",
            Cause::SignInError => "The sign-in with the MCP server's authorization server failed",
            Cause::SignInInvalidUrl => "The MCP server's authorization URL is not acceptable",
            Cause::BrowserLaunchFailed => "No browser could be started; open the sign-in link from the log",
            Cause::RedirectPortUnavailable => "The port for the sign-in redirect is in use",
            Cause::SignInStartReused => {
                "The sign-in link was opened twice, so the sign-in was stopped; open it on the computer that runs mcp-bridge"
            }
            Cause::AccessRefused => "The MCP server refused access after the sign-in",
            Cause::ReauthorizationRequired => {
                "The MCP server needs a new sign-in, which this client cannot show; restart the server in your client to sign in again"
            }
            Cause::SignInFailed => "The sign-in could not be done; try again, or open the link yourself",
            Cause::RegistrationUnavailable => {
                "The authorization server offers no way to register mcp-bridge (no dynamic registration, no client ID metadata documents): use the client id its administrator gave you (a confidential client adds its secret or key), or publish a client metadata document at an https URL"
            }
            Cause::RegistrationFailed => {
                "Registering mcp-bridge at the authorization server failed; use a client id you were given, ask the server's administrator to allow mcp-bridge's redirect URI, or publish a client metadata document"
            }
            Cause::IssuerNotRegistered => {
                "The authorization server refused mcp-bridge's client: check the client id you gave, its secret or key and its authentication method; otherwise forget the registration and sign in again"
            }
            Cause::InvalidClientMetadataUrl => {
                "The authorization server refused mcp-bridge's client metadata document; check that the document is served at its https URL and lists the redirect URI"
            }
        }
    }
}

/// What the program running the bridge adds to a cause's message: how to
/// change the outcome with an option of its own (`--max-line-bytes`), which
/// the library cannot name. Appended as it is: a hint starts with its own
/// joining words (`"; raise the limit with --max-line-bytes"`).
pub type Hints = fn(Cause) -> Option<&'static str>;

static HINTS: std::sync::OnceLock<Hints> = std::sync::OnceLock::new();

/// Sets the program's hints, once, before the bridge runs; `false` when
/// they were set before (the first stay).
pub fn set_hints(hints: Hints) -> bool {
    HINTS.set(hints).is_ok()
}

/// The error object for a cause, with `data.cause` and, when given,
/// `data.detail`.
pub fn error_for(cause: Cause, detail: Option<Value>) -> ErrorObject {
    let mut data = json!({ "cause": cause.name() });
    if let Some(detail) = detail {
        data["detail"] = detail;
    }
    ErrorObject::new(cause.code(), cause.text()).with_data(data)
}

/// The cause of a message the reader could not decode.
pub fn cause_of_decode_error(error: &mcp_bridge_protocol::DecodeError) -> (Cause, Option<Value>) {
    use mcp_bridge_protocol::DecodeError;
    match error {
        DecodeError::TooDeep { limit } => (Cause::TooDeep, Some(json!(limit))),
        DecodeError::InvalidShape { rule, .. } => (Cause::InvalidRequestShape, Some(json!(rule.to_string()))),
        _ => (Cause::ParseError, Some(json!(error.to_string()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_has_a_code_a_fixed_message_and_its_name_in_data() {
        let mut names = std::collections::HashSet::new();
        for cause in Cause::ALL {
            let e = error_for(cause, Some(json!(5)));
            assert_eq!(e.code, cause.code());
            assert!(!e.message.is_empty());
            let data = e.data.unwrap();
            assert_eq!(data["cause"], cause.name());
            assert_eq!(data["detail"], 5);
            assert!(names.insert(cause.name()), "{} twice", cause.name());
            assert!(!cause.message().contains("--"), "the library names no option of a program: {cause:?}");
        }
    }

    #[test]
    fn a_cancelled_task_and_a_refused_connection_have_causes_of_their_own() {
        let cancelled = crate::Error::TaskCancelled { task_id: "t-7".into() };
        let error = error_of_sdk(&cancelled, "tools/call").unwrap();
        assert_eq!(error.data.unwrap(), json!({"cause": "task_cancelled", "detail": {"task_id": "t-7"}}));
        let refused = crate::Error::Connect { source: std::io::ErrorKind::ConnectionRefused.into() };
        assert_eq!(error_of_sdk(&refused, "tools/list").unwrap().data.unwrap()["cause"], "not_connected");
        let upgrade = crate::Error::Upgrade { status: Some(404), reason: "no endpoint".into() };
        assert_eq!(error_of_sdk(&upgrade, "tools/list").unwrap().data.unwrap()["cause"], "not_connected");
    }

    #[test]
    fn codes_follow_the_seed_table() {
        let table = [
            (Cause::ParseError, -32700),
            (Cause::InvalidRequestShape, -32600),
            (Cause::LineTooLong, -32600),
            (Cause::TooDeep, -32600),
            (Cause::NotInitialized, -32600),
            (Cause::AlreadyInitialized, -32600),
            (Cause::MethodNotFound, -32601),
            (Cause::InvalidParams, -32602),
            (Cause::InvalidRequest, -32602),
            (Cause::InvalidMeta, -32602),
            (Cause::SpawnFailed, -32603),
            (Cause::DiscoverFailed, -32603),
            (Cause::UpstreamExited, -32603),
            (Cause::TooManyRequests, -32603),
            (Cause::Timeout, -32603),
            (Cause::UndeclaredInputRequest, -32603),
            (Cause::Rpc, -32603),
            (Cause::ConnectFailed, -32603),
            (Cause::SignInFailed, -32603),
            (Cause::RegistrationUnavailable, -32603),
            (Cause::RegistrationFailed, -32603),
            (Cause::IssuerNotRegistered, -32603),
            (Cause::InvalidClientMetadataUrl, -32603),
            (Cause::NotConnected, -32603),
            (Cause::TaskCancelled, -32603),
        ];
        for (cause, code) in table {
            assert_eq!(cause.code(), code, "{}", cause.name());
        }
    }
}

/// What the client is told when a forwarded request fails in the SDK;
/// `None` when it gets no response (it cancelled the request).
pub fn error_of_sdk(error: &crate::Error, method: &str) -> Option<ErrorObject> {
    use crate::Error;
    let (cause, detail) = match error {
        Error::Rpc { error } => return Some(super::upstream_error(error)),
        Error::Cancelled { .. } => return None,
        Error::Timeout { timeout_ms, .. } => (Cause::Timeout, json!({ "method": method, "timeout_ms": timeout_ms })),
        Error::Closed => (Cause::UpstreamExited, json!({ "method": method })),
        Error::InvalidResponse { reason, .. } => (Cause::InvalidResponse, json!(reason)),
        Error::InvalidMeta { key, .. } => (Cause::InvalidMeta, json!({ "key": key })),
        Error::InvalidRequest { reason } => (Cause::InvalidRequest, json!(reason)),
        Error::TooManyRounds { limit, .. } => (Cause::TooManyRounds, json!(limit)),
        Error::UndeclaredInputRequest { key, capability } => {
            (Cause::UndeclaredInputRequest, json!({ "key": key, "capability": capability }))
        }
        Error::InvalidInputRequest { key, reason } => {
            (Cause::InvalidInputRequest, json!({ "key": key, "reason": reason }))
        }
        Error::HookFailed { key, .. } => (Cause::HookFailed, json!({ "key": key })),
        Error::Busy { limit } => (Cause::TooManyRequests, json!(limit)),
        Error::Spawn { .. } => (Cause::SpawnFailed, Value::Null),
        Error::Transport { reason } => (Cause::TransportFailed, json!(reason)),
        Error::Connect { .. } | Error::Upgrade { .. } => (Cause::NotConnected, Value::Null),
        Error::TaskCancelled { task_id } => (Cause::TaskCancelled, json!({ "task_id": task_id })),
        Error::TaskPollBudget { task_id, polls } => {
            (Cause::Timeout, json!({ "method": method, "task_id": task_id, "polls": polls }))
        }
        _ => (Cause::TransportFailed, Value::Null),
    };
    Some(error_for(cause, (!detail.is_null()).then_some(detail)))
}

/// What the client is told when a forwarded request failed upstream: the
/// sign-in's cause after a refusal, `access_refused` for a refusal after a
/// good sign-in, else the SDK error's cause; over HTTP `data.detail` has
/// the status.
pub fn error_of_failed(failed: &crate::server::legacy::upstream::Failed, method: &str) -> Option<ErrorObject> {
    let status = failed.http_status;
    let refused = matches!(status, Some(401 | 403)) && !matches!(failed.error, crate::Error::Rpc { .. });
    let mut error = match (&failed.sign_in, refused) {
        (Some(error), _) => error.clone(),
        (None, true) => error_for(Cause::AccessRefused, None),
        (None, false) if failed.remote && matches!(failed.error, crate::Error::Closed) => {
            error_for(Cause::Closed, Some(json!({ "method": method })))
        }
        (None, false) => error_of_sdk(&failed.error, method)?,
    };
    if let Some(status) = status.filter(|s| *s != 200) {
        let data = error.data.get_or_insert_with(|| json!({}));
        let previous = data.get("detail").cloned();
        data["detail"] = match previous {
            Some(Value::Object(mut map)) => {
                map.insert("http_status".into(), json!(status));
                Value::Object(map)
            }
            Some(other) => json!({ "http_status": status, "reason": other }),
            None => json!({ "http_status": status }),
        };
    }
    Some(error)
}

#[cfg(test)]
mod sdk_tests {
    use super::*;

    #[test]
    fn a_closed_connection_is_closed_at_a_url_and_upstream_exited_for_a_process() {
        let failed = |remote| crate::server::legacy::upstream::Failed {
            error: crate::Error::Closed,
            http_status: None,
            sign_in: None,
            remote,
        };
        let cause = |remote| error_of_failed(&failed(remote), "tools/call").unwrap().data.unwrap()["cause"].clone();
        assert_eq!(cause(true), json!("closed"));
        assert_eq!(cause(false), json!("upstream_exited"));
    }

    #[test]
    fn sdk_errors_map_to_their_causes() {
        use crate::Error;
        let cause = |e: Error| error_of_sdk(&e, "tools/call").map(|o| o.data.unwrap()["cause"].clone());
        assert_eq!(cause(Error::Cancelled { method: "m".into() }), None);
        assert_eq!(cause(Error::Closed), Some(json!("upstream_exited")));
        assert_eq!(cause(Error::Timeout { method: "m".into(), timeout_ms: 5 }), Some(json!("timeout")));
        assert_eq!(cause(Error::TooManyRounds { method: "m".into(), limit: 10 }), Some(json!("too_many_rounds")));
        assert_eq!(
            cause(Error::UndeclaredInputRequest { key: "k".into(), capability: "roots" }),
            Some(json!("undeclared_input_request"))
        );
        let rpc = error_of_sdk(&Error::Rpc { error: ErrorObject::new(-32602, "bad") }, "m").unwrap();
        assert_eq!((rpc.code, rpc.message.as_str(), rpc.data), (-32602, "bad", None));
    }
}
