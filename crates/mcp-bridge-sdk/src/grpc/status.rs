//! JSON-RPC errors as gRPC statuses and back. A status carries the error
//! whole in its details (a `google.rpc.Status` whose one detail is a
//! `google.protobuf.Struct` of `{code, message, data}`), so nothing is lost
//! between two MCP peers; a status without one (a proxy's, a transport's)
//! gets an error made from its code. No I/O here.
//!
//! | JSON-RPC error | gRPC code | HTTP status |
//! |---|---|---|
//! | -32700 parse error, -32600 invalid request, -32602 invalid params, -32020 header mismatch | `INVALID_ARGUMENT` | 400 |
//! | -32601 method not found | `UNIMPLEMENTED` | 501 |
//! | -32002 resource not found | `NOT_FOUND` | 404 |
//! | -32021 missing client capability, -32022 unsupported protocol version, -32042 URL elicitation required | `FAILED_PRECONDITION` | 400 |
//! | -32603 internal error | `INTERNAL` | 500 |
//! | any other | `UNKNOWN` | 500 |

use mcp_bridge_protocol::{ErrorObject, error_code};
use prost::Message;
use serde_json::{Map, Value, json};
use tonic::Code;

use super::json::{from_struct, to_struct};

/// MCP's "resource not found".
const RESOURCE_NOT_FOUND: i64 = -32002;

/// The type URL of the detail that holds the JSON-RPC error.
const STRUCT_TYPE_URL: &str = "type.googleapis.com/google.protobuf.Struct";

/// `google.rpc.Status`, the message of a status's binary details.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

/// The gRPC code of a JSON-RPC error code.
pub fn code_of(error_code: i64) -> Code {
    match error_code {
        error_code::PARSE_ERROR
        | error_code::INVALID_REQUEST
        | error_code::INVALID_PARAMS
        | error_code::HEADER_MISMATCH => Code::InvalidArgument,
        error_code::METHOD_NOT_FOUND => Code::Unimplemented,
        RESOURCE_NOT_FOUND => Code::NotFound,
        error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | error_code::UNSUPPORTED_PROTOCOL_VERSION
        | error_code::URL_ELICITATION_REQUIRED => Code::FailedPrecondition,
        error_code::INTERNAL_ERROR => Code::Internal,
        _ => Code::Unknown,
    }
}

/// The status of a JSON-RPC error, the error whole in its details.
pub fn status_of(error: &ErrorObject) -> tonic::Status {
    let code = code_of(error.code);
    let mut object = Map::new();
    object.insert("code".into(), json!(error.code));
    object.insert("message".into(), json!(error.message));
    if let Some(data) = &error.data {
        object.insert("data".into(), data.clone());
    }
    let detail = prost_types::Any { type_url: STRUCT_TYPE_URL.into(), value: to_struct(&object).encode_to_vec() };
    let details = RpcStatus { code: code as i32, message: error.message.clone(), details: vec![detail] };
    tonic::Status::with_details(code, error.message.clone(), details.encode_to_vec().into())
}

/// The JSON-RPC error of a status: the one in its details when it holds
/// one, else one made from its code and message.
pub fn error_of(status: &tonic::Status) -> ErrorObject {
    if let Some(error) = carried_error(status.details()) {
        return error;
    }
    let code = match status.code() {
        Code::InvalidArgument | Code::OutOfRange => error_code::INVALID_PARAMS,
        Code::Unimplemented => error_code::METHOD_NOT_FOUND,
        Code::NotFound => RESOURCE_NOT_FOUND,
        Code::FailedPrecondition => error_code::INVALID_REQUEST,
        _ => error_code::INTERNAL_ERROR,
    };
    ErrorObject::new(code, format!("gRPC status {:?}: {}", status.code(), status.message()))
}

/// The JSON-RPC error in a status's details, when they hold one.
fn carried_error(details: &[u8]) -> Option<ErrorObject> {
    let status = RpcStatus::decode(details).ok()?;
    let detail = status.details.into_iter().find(|d| d.type_url == STRUCT_TYPE_URL)?;
    let object = from_struct(prost_types::Struct::decode(detail.value.as_slice()).ok()?);
    let code = object.get("code")?.as_i64()?;
    let message = object.get("message").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut error = ErrorObject::new(code, message);
    error.data = object.get("data").cloned();
    Some(error)
}

/// The HTTP status a gRPC code stands for, as gRPC's own table has it
/// (for [`Diagnostics::http_status`](crate::client::Diagnostics)).
pub fn http_status(code: Code) -> u16 {
    match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
        Code::DeadlineExceeded => 504,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::PermissionDenied => 403,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
        Code::Unauthenticated => 401,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_survives_a_status_whole() {
        let mut error = ErrorObject::new(error_code::MISSING_REQUIRED_CLIENT_CAPABILITY, "no elicitation");
        error.data = Some(json!({"requiredCapabilities": {"elicitation": {}}}));
        let status = status_of(&error);
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(error_of(&status), error);
    }

    #[test]
    fn a_status_without_details_gets_an_error_of_its_code() {
        let status = tonic::Status::new(Code::Unimplemented, "unknown service");
        let error = error_of(&status);
        assert_eq!(error.code, error_code::METHOD_NOT_FOUND);
        assert!(error.message.contains("unknown service"), "{}", error.message);
        let garbage = tonic::Status::with_details(Code::Internal, "x", vec![1, 2, 3].into());
        assert_eq!(error_of(&garbage).code, error_code::INTERNAL_ERROR);
    }

    #[test]
    fn every_code_has_an_http_status() {
        for (code, http) in [(Code::InvalidArgument, 400), (Code::Unauthenticated, 401), (Code::Unimplemented, 501)] {
            assert_eq!(http_status(code), http);
        }
        assert_eq!(http_status(code_of(-32002)), 404);
    }
}
