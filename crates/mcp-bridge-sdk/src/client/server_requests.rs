//! The requests a 2025-11-25 server sends its client (`ping`,
//! `elicitation/create`, `sampling/createMessage`, `roots/list`): each is
//! answered by the same [`InputHooks`] that answer the input requests of
//! 2026-07-28, with the same checks, on a task of its own so a slow hook
//! never holds the reader. A request the server cancels stops its hook;
//! an id already in flight, or more than
//! [`MAX_SERVER_REQUESTS`](crate::limits::MAX_SERVER_REQUESTS) at once, is
//! refused.

use std::sync::Arc;

use mcp_bridge_protocol::method::{Method, Ping};
use mcp_bridge_protocol::slots::{Kind, SlotRefusal, Slots};
use mcp_bridge_protocol::types::{ClientCapabilities, InputRequest};
use mcp_bridge_protocol::{
    ErrorObject, JsonRpcErrorResponse, JsonRpcRequest, JsonRpcResultResponse, Message, RequestId, error_code,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::input::answer_one;
use super::options::InputHooks;
use crate::error::Error;
use crate::limits::MAX_SERVER_REQUESTS;

/// The key a transport's question goes by in errors (it is not one of a
/// round's).
#[cfg(any(feature = "http-client", feature = "websocket"))]
const ASK_KEY: &str = "ask";

/// What the client's reader hands over: a server request, or the
/// server's cancellation of one.
#[derive(Debug)]
pub(crate) enum FromServer {
    /// A request to answer, by the asker of the request whose stream it
    /// came on when that is not the client.
    Request(JsonRpcRequest, Option<Asker>),
    /// `notifications/cancelled` for the request with this id.
    Cancelled(RequestId),
    /// The transport asks the user (a sign-in's consent) of a request
    /// sent for someone, through that request's asker.
    #[cfg(any(feature = "http-client", feature = "websocket"))]
    Ask {
        request: Box<InputRequest>,
        asker: Asker,
        answer: tokio::sync::oneshot::Sender<Result<mcp_bridge_protocol::types::InputResponse, Error>>,
    },
}

/// How the answers are made: the capabilities the client declared and its
/// hooks.
#[derive(Debug, Clone)]
pub(crate) struct Answerer {
    pub(crate) capabilities: Arc<ClientCapabilities>,
    pub(crate) hooks: InputHooks,
}

/// Who answers for a request sent on another's behalf
/// ([`crate::RequestOptions::hooks`]): its hooks and, when the request
/// names one, that client's capabilities.
pub(crate) type Asker = Arc<Answerer>;

impl Answerer {
    /// Answers every request received until the reader stops handing them
    /// over; the answers still running then are dropped with it.
    pub(crate) async fn run(self, mut requests: mpsc::Receiver<FromServer>, out: mpsc::Sender<Message>) {
        let mut running = JoinSet::new();
        // The protocol crate's table, as a server's: an id in flight or one
        // request too many is refused, and a cancelled one is not answered.
        let mut slots: Slots<CancellationToken> = Slots::new(MAX_SERVER_REQUESTS);
        loop {
            tokio::select! {
                received = requests.recv() => match received {
                    Some(FromServer::Request(request, asker)) => {
                        let token = CancellationToken::new();
                        if let Err(refusal) = slots.admit(request.id.clone(), Kind::Request, token.clone()) {
                            let _ = out.send(refused(request.id, &refusal)).await;
                            continue;
                        }
                        let answerer = asker.map_or_else(|| self.clone(), |a| Answerer::clone(&a));
                        let out = out.clone();
                        running.spawn(async move {
                            let id = request.id.clone();
                            tokio::select! {
                                answer = answerer.answer(request) => {
                                    if !token.is_cancelled() {
                                        let _ = out.send(answer).await;
                                    }
                                }
                                () = token.cancelled() => {}
                            }
                            Some(id)
                        });
                    }
                    #[cfg(any(feature = "http-client", feature = "websocket"))]
                    Some(FromServer::Ask { request, asker: answerer, answer }) => {
                        // Not a server request: no slot, and its own task so
                        // a user taking their time holds nothing else.
                        running.spawn(async move {
                            let answered = answer_one(ASK_KEY, *request, &answerer.capabilities, &answerer.hooks);
                            let _ = answer.send(answered.await);
                            None
                        });
                    }
                    Some(FromServer::Cancelled(id)) => {
                        if let Some(token) = slots.cancel(&id) {
                            token.cancel();
                        }
                    }
                    None => break,
                },
                Some(done) = running.join_next(), if !running.is_empty() => {
                    if let Ok(Some(id)) = done {
                        slots.finish(&id);
                    }
                }
            }
        }
    }

    /// The response to one server request.
    async fn answer(&self, request: JsonRpcRequest) -> Message {
        let id = request.id.clone();
        let outcome = match request.method.as_str() {
            Ping::NAME => Ok(json!({})),
            _ => self.answer_input(request).await,
        };
        match outcome {
            Ok(result) => Message::Result(JsonRpcResultResponse::new(id, result)),
            Err(error) => Message::Error(JsonRpcErrorResponse::new(Some(id), error)),
        }
    }

    async fn answer_input(&self, request: JsonRpcRequest) -> Result<Value, ErrorObject> {
        let key = request.id.to_string();
        let raw = json!({ "method": request.method, "params": request.params.unwrap_or_else(|| json!({})) });
        let input: InputRequest = serde_json::from_value(raw)
            .map_err(|e| ErrorObject::new(error_code::INVALID_PARAMS, format!("unreadable request: {e}")))?;
        if let InputRequest::Unknown(_) = input {
            return Err(ErrorObject::new(error_code::METHOD_NOT_FOUND, format!("{} is not offered", request.method)));
        }
        let response = answer_one(&key, input, &self.capabilities, &self.hooks).await.map_err(error_of)?;
        serde_json::to_value(response).map_err(|e| ErrorObject::new(error_code::INTERNAL_ERROR, e.to_string()))
    }
}

/// The answer to a request the table refused.
fn refused(id: RequestId, refusal: &SlotRefusal) -> Message {
    let error = match refusal {
        SlotRefusal::DuplicateId { .. } => {
            ErrorObject::new(error_code::INVALID_REQUEST, format!("Invalid request: id {id} is already in flight"))
        }
        SlotRefusal::TooMany { limit } => {
            ErrorObject::new(error_code::INTERNAL_ERROR, format!("Too many requests in flight (limit {limit})"))
        }
    };
    Message::Error(JsonRpcErrorResponse::new(Some(id), error))
}

/// The JSON-RPC error for a request the hooks could not answer: a
/// capability the client never declared is a method it does not offer.
fn error_of(error: Error) -> ErrorObject {
    match error {
        Error::UndeclaredInputRequest { capability, .. } => {
            ErrorObject::new(error_code::METHOD_NOT_FOUND, format!("the client did not declare {capability}"))
        }
        Error::InvalidInputRequest { reason, .. } => ErrorObject::new(error_code::INVALID_PARAMS, reason),
        other => ErrorObject::new(error_code::INTERNAL_ERROR, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use mcp_bridge_protocol::types::{ElicitAction, ElicitResult, Root};

    use super::*;
    use crate::client::options::Hook;

    fn request(id: i64, method: &str, params: Value) -> JsonRpcRequest {
        JsonRpcRequest::new(RequestId::Number(id), method, Some(params))
    }

    fn answerer(capabilities: Value, hooks: InputHooks) -> Answerer {
        Answerer { capabilities: Arc::new(serde_json::from_value(capabilities).unwrap()), hooks }
    }

    fn result_of(message: Message) -> Value {
        match message {
            Message::Result(r) => r.result,
            other => panic!("expected a result, got {other:?}"),
        }
    }

    fn error_code_of(message: Message) -> i64 {
        match message {
            Message::Error(e) => e.error.code,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn ping_is_answered_empty() {
        let a = answerer(json!({}), InputHooks::default());
        assert_eq!(result_of(a.answer(request(1, "ping", json!({}))).await), json!({}));
    }

    #[tokio::test]
    async fn a_form_elicitation_goes_to_its_hook_and_is_checked() {
        let mut hooks = InputHooks::default();
        let hook: Hook<_, _> = Arc::new(|_params| {
            Box::pin(async {
                Ok(ElicitResult {
                    action: ElicitAction::Accept,
                    content: Some(serde_json::from_value(json!({"name": "Ada"})).unwrap()),
                    meta: None,
                    extra: Default::default(),
                })
            })
        });
        hooks.elicit_form = Some(hook);
        let a = answerer(json!({"elicitation": {"form": {}}}), hooks);
        let params = json!({"mode": "form", "message": "Name?", "requestedSchema":
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}});
        let answer = result_of(a.answer(request(2, "elicitation/create", params)).await);
        assert_eq!(answer["action"], "accept");
        assert_eq!(answer["content"]["name"], "Ada");
    }

    #[tokio::test]
    async fn an_undeclared_capability_an_unknown_method_and_bad_params_are_refused() {
        let mut hooks = InputHooks::default();
        let roots: Hook<(), Vec<Root>> = Arc::new(|()| Box::pin(async { Ok(Vec::new()) }));
        hooks.list_roots = Some(roots);
        let a = answerer(json!({}), hooks);
        assert_eq!(error_code_of(a.answer(request(3, "roots/list", json!({}))).await), error_code::METHOD_NOT_FOUND);
        assert_eq!(error_code_of(a.answer(request(4, "tools/call", json!({}))).await), error_code::METHOD_NOT_FOUND);
        let a = answerer(json!({"sampling": {}}), InputHooks::default());
        let bad = json!({"messages": "not a list", "maxTokens": 5});
        assert_eq!(
            error_code_of(a.answer(request(5, "sampling/createMessage", bad)).await),
            error_code::INVALID_PARAMS
        );
    }

    #[tokio::test]
    async fn a_relay_gets_each_request_whole_and_its_answer_must_be_of_its_kind() {
        let hooks = InputHooks::relay(|request: InputRequest| async move {
            match request {
                InputRequest::Elicit(_) => Ok(mcp_bridge_protocol::types::InputResponse::ListRoots(
                    serde_json::from_value(json!({"roots": []})).unwrap(),
                )),
                InputRequest::ListRoots(_) => Ok(mcp_bridge_protocol::types::InputResponse::ListRoots(
                    serde_json::from_value(json!({"roots": [{"uri": "file:///work"}]})).unwrap(),
                )),
                other => Err(format!("not relayed: {:?}", other.method())),
            }
        });
        let a = answerer(json!({"roots": {}, "elicitation": {}, "sampling": {}}), hooks);
        let roots = result_of(a.answer(request(6, "roots/list", json!({}))).await);
        assert_eq!(roots["roots"][0]["uri"], "file:///work");
        let form = json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}});
        let wrong_kind = a.answer(request(7, "elicitation/create", form)).await;
        assert_eq!(error_code_of(wrong_kind), error_code::INTERNAL_ERROR);
        let sampling =
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
        let refused = a.answer(request(8, "sampling/createMessage", sampling)).await;
        match refused {
            Message::Error(e) => assert!(e.error.message.contains("not relayed"), "{}", e.error.message),
            other => panic!("expected an error, got {other:?}"),
        }
    }
}
