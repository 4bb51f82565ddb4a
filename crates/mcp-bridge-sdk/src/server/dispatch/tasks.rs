//! `tasks/get`, `tasks/update` and `tasks/cancel` (Tasks extension), for
//! clients that declare the extension.

use mcp_bridge_protocol::method::{Method, TasksCancel, TasksGet, TasksUpdate};
use mcp_bridge_protocol::types::{TaskIdParams, UpdateTaskRequestParams};
use serde_json::{Map, Value, json};

use super::{Outcome, parse, to_value};
use crate::error::{HandlerError, ServerFault};
use crate::server::{RequestContext, Server, tasks};

impl Server {
    pub(super) async fn task_method(&self, method: &str, params: Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let registry = self.inner.tasks.as_ref().ok_or(ServerFault::MethodNotFound { method: method.to_owned() })?;
        if !tasks::declares_tasks(&ctx.client_capabilities) {
            return Err(ServerFault::Handler(HandlerError::missing_capability(tasks::tasks_capability())));
        }
        let subject = ctx.caller.as_ref().map(|c| c.principal());
        match method {
            TasksGet::NAME => to_value(&registry.get(&parse::<TaskIdParams>(params)?.task_id, subject).await?),
            TasksUpdate::NAME => {
                let update: UpdateTaskRequestParams = parse(params)?;
                registry.update(&update.task_id, subject, update.input_responses).await?;
                Ok(json!({ "resultType": "complete" }))
            }
            TasksCancel::NAME => {
                registry.cancel(&parse::<TaskIdParams>(params)?.task_id, subject).await?;
                Ok(json!({ "resultType": "complete" }))
            }
            _ => Err(ServerFault::MethodNotFound { method: method.to_owned() }),
        }
    }
}
