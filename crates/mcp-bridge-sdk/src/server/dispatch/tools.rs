//! `tools/call`: the tool found by name, its call admitted (task support,
//! input schema), its handler run with the input rules.

use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::types::{CallToolRequestParams, ClientCapabilities};
use serde_json::{Map, Value};

use super::input::{Retry, with_result_type};
use super::{Outcome, parse};
#[cfg(feature = "tasks")]
use crate::error::HandlerError;
use crate::error::ServerFault;
use crate::server::request_state::params_digest;
use crate::server::{RequestContext, Server, ToolCall, ToolEntry, read};
#[cfg(feature = "tasks")]
use crate::server::{TaskSupport, tasks};

impl Server {
    pub(super) async fn call_tool(&self, params: Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let digest = params_digest(&params);
        // Taken apart here: what is left of the params is not held across the call.
        let CallToolRequestParams { name, arguments, input_responses, request_state, .. } = parse(params)?;
        let arguments = arguments.unwrap_or_default();
        let (handler, arguments) = {
            let tools = read(&self.inner.tools);
            let entry = tools
                .iter()
                .find(|t| t.tool.name == name)
                .ok_or_else(|| ServerFault::InvalidParams { reason: format!("unknown tool: {name}") })?;
            (entry.handler.clone(), entry.admit(arguments, &ctx.client_capabilities)?)
        };
        let retry = Retry { digest, input_responses, request_state };
        self.with_input(ToolsCall::NAME, retry, ctx, move |input_responses, state, handler_ctx| {
            handler(ToolCall { name, arguments, input_responses, state }, handler_ctx)
        })
        .await
        .map(with_result_type)
    }
}

impl ToolEntry {
    /// Refuses a call before its handler runs: a tool that needs a task,
    /// for a client without the Tasks extension (-32021), or arguments
    /// that break the tool's input schema (-32602).
    /// Hands the arguments back when they pass.
    #[cfg_attr(not(all(feature = "validation", feature = "tasks")), allow(unused_variables))]
    fn admit(
        &self,
        arguments: Map<String, Value>,
        client: &ClientCapabilities,
    ) -> Result<Map<String, Value>, ServerFault> {
        #[cfg(feature = "tasks")]
        if self.task_support == TaskSupport::Required && !tasks::declares_tasks(client) {
            return Err(ServerFault::Handler(HandlerError::missing_capability(tasks::tasks_capability())));
        }
        #[cfg(feature = "validation")]
        if let Some(validator) = &self.input_validator {
            // The schema reads a value: the arguments go in and come back out, uncopied.
            let instance = Value::Object(arguments);
            if let Some(error) = validator.iter_errors(&instance).next() {
                let at = error.instance_path().to_string();
                let at = if at.is_empty() { String::new() } else { format!(" at {at}") };
                return Err(ServerFault::InvalidParams {
                    reason: format!("arguments of {} do not match its input schema{at}: {error}", self.tool.name),
                });
            }
            let Value::Object(arguments) = instance else { unreachable!("made an object above") };
            return Ok(arguments);
        }
        Ok(arguments)
    }
}
