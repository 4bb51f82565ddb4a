//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! server may answer a `tools/call` with a task the client polls with
//! `tasks/get`, feeds input with `tasks/update` and stops with
//! `tasks/cancel`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{InputRequests, InputResponses, ResultType};
use crate::ErrorObject;
use crate::meta::RequestMeta;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server waits for the answers to `inputRequests`.
    InputRequired,
    /// Finished; `result` holds what the request returns.
    Completed,
    /// A JSON-RPC error ended it; `error` holds it.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}

/// A task with the payload of its status (`DetailedTask`): the result of
/// `tasks/get` (with `resultType: complete`), of a task-creating request
/// (with `resultType: task`, a `CreateTaskResult`), and the params of
/// `notifications/tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// `task` when a request created it, `complete` from `tasks/get`;
    /// absent in a notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// The server's identifier of the task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// What the status means now, for a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long after creation the server keeps it; `null` for ever.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// How often to poll it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// The requests' answers the server waits for (`input_required`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// What the request returns (`completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    /// The JSON-RPC error that ended it (`failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer to a request the server made a task of.
pub type CreateTaskResult = Task;

/// Params of `tasks/get` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Params of `tasks/update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers to its outstanding input requests, by key.
    pub input_responses: InputResponses,
    /// The request's version, capabilities and client info.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<RequestMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_reads_and_writes_the_wire_shape() {
        let wire = json!({
            "resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": 60000, "pollIntervalMs": 5000
        });
        let task: Task = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!((task.status, task.result_type.clone()), (TaskStatus::Working, Some(ResultType::Task)));
        assert_eq!(serde_json::to_value(&task).unwrap(), wire);
        // An unlimited TTL is written as null, never left out.
        let forever = Task { ttl_ms: None, ..task };
        assert_eq!(serde_json::to_value(&forever).unwrap()["ttlMs"], Value::Null);
        let failed: Task = serde_json::from_value(json!({
            "taskId": "t2", "status": "failed", "createdAt": "x", "lastUpdatedAt": "x", "ttlMs": null,
            "error": {"code": -32603, "message": "boom"}
        }))
        .unwrap();
        assert!(failed.status.is_terminal() && failed.error.unwrap().code == -32603);
    }
}
