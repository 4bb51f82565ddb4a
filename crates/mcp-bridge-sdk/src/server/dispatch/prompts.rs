//! `prompts/get`: the prompt found by name, its required arguments
//! checked, its handler run with the input rules.

use mcp_bridge_protocol::method::{Method, PromptsGet};
use mcp_bridge_protocol::types::GetPromptRequestParams;
use serde_json::{Map, Value};

use super::input::{Retry, with_result_type};
use super::{Outcome, parse};
use crate::error::ServerFault;
use crate::server::request_state::params_digest;
use crate::server::{PromptRequest, RequestContext, Server, read};

impl Server {
    pub(super) async fn get_prompt(&self, params: Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let digest = params_digest(&params);
        let GetPromptRequestParams { name, arguments, input_responses, request_state, .. } = parse(params)?;
        let arguments = arguments.unwrap_or_default();
        let handler = {
            let prompts = read(&self.inner.prompts);
            let entry = prompts
                .iter()
                .find(|p| p.prompt.name == name)
                .ok_or_else(|| ServerFault::InvalidParams { reason: format!("unknown prompt: {name}") })?;
            for arg in entry.prompt.arguments.iter().flatten() {
                if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
                    return Err(ServerFault::InvalidParams {
                        reason: format!("missing required argument: {}", arg.name),
                    });
                }
            }
            entry.handler.clone()
        };
        let retry = Retry { digest, input_responses, request_state };
        self.with_input(PromptsGet::NAME, retry, ctx, move |input_responses, state, handler_ctx| {
            handler(PromptRequest { name, arguments, input_responses, state }, handler_ctx)
        })
        .await
        .map(with_result_type)
    }
}
