//! A task's state as a store keeps it, and the rules that change it. Pure:
//! the times come in as arguments, the storing is the store's job.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use mcp_bridge_protocol::ErrorObject;
use mcp_bridge_protocol::types::{ClientCapabilities, InputRequests, InputResponses, Task, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{TaskOptions, iso8601};
use crate::error::HandlerError;

/// What a task's `statusMessage` says when its replica stopped renewing
/// its lease before the work ended.
pub(crate) const ORPHANED: &str = "the replica running this task stopped before the task finished";

/// One task, as stored (JSON in a shared store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskState {
    pub(crate) status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub(crate) created_ms: u64,
    pub(crate) updated_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<ErrorObject>,
    /// Input requests not answered yet.
    #[serde(default)]
    pub(crate) outstanding: InputRequests,
    /// Answers to the current round, until the work takes them.
    #[serde(default)]
    pub(crate) answers: InputResponses,
    /// Every input key the task used (keys are never reused).
    #[serde(default)]
    pub(crate) used_keys: BTreeSet<String>,
    /// The capabilities of the client that created it.
    pub(crate) capabilities: ClientCapabilities,
    /// The principal of the token that created it (see
    /// [`Caller::principal`](crate::server::protect::Caller::principal)), on
    /// a protected endpoint: only requests of that principal reach the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis() as u64
}

fn time_of(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

impl TaskState {
    /// A task just created, working.
    pub(crate) fn new(capabilities: ClientCapabilities, now_ms: u64) -> Self {
        TaskState {
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now_ms,
            updated_ms: now_ms,
            result: None,
            error: None,
            outstanding: InputRequests::new(),
            answers: InputResponses::new(),
            used_keys: BTreeSet::new(),
            capabilities,
            owner: None,
        }
    }

    /// Whether a request of `subject` (its token's, on a protected
    /// endpoint) reaches this task: any request when no subject created
    /// it, else only the creator's.
    pub(crate) fn belongs_to(&self, subject: Option<&str>) -> bool {
        self.owner.as_deref().is_none_or(|owner| Some(owner) == subject)
    }

    /// Whether the task's TTL has passed at `now_ms`.
    pub(crate) fn expired(&self, ttl: Option<Duration>, now_ms: u64) -> bool {
        ttl.is_some_and(|ttl| self.created_ms.saturating_add(ttl.as_millis() as u64) <= now_ms)
    }

    /// The wire form of the task.
    pub(crate) fn snapshot(&self, id: &str, options: &TaskOptions) -> Task {
        Task {
            result_type: None,
            task_id: id.to_owned(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: iso8601(time_of(self.created_ms)),
            last_updated_at: iso8601(time_of(self.updated_ms)),
            ttl_ms: options.ttl.map(|t| t.as_millis() as u64),
            poll_interval_ms: Some((options.poll_interval.as_millis() as u64).max(1)),
            input_requests: (self.status == TaskStatus::InputRequired).then(|| self.outstanding.clone()),
            result: self.result.clone(),
            error: self.error.clone(),
            meta: None,
            extra: Map::new(),
        }
    }

    /// Settles the task with its work's outcome.
    pub(crate) fn settle(&mut self, outcome: &Result<Value, HandlerError>) {
        match outcome {
            Ok(Value::Object(result)) => {
                let mut result = result.clone();
                result.entry("resultType").or_insert_with(|| json!("complete"));
                self.status = TaskStatus::Completed;
                self.result = Some(result);
            }
            Ok(_) => {
                self.status = TaskStatus::Failed;
                self.error = Some(HandlerError::internal("the task's result is not an object").to_error_object());
            }
            Err(error) => self.fail(error),
        }
        self.outstanding.clear();
    }

    fn fail(&mut self, error: &HandlerError) {
        self.status = TaskStatus::Failed;
        self.status_message = Some(error.message.clone());
        self.error = Some(error.to_error_object());
    }

    /// Fails the task whose replica stopped (its lease ran out).
    pub(crate) fn orphan(&mut self) {
        self.fail(&HandlerError::internal(ORPHANED));
        self.outstanding.clear();
    }

    /// Refuses a round whose keys were used before by this task, or that
    /// breaks the protocol's rules for the task's client (a capability it
    /// lacks, an invalid request, too many).
    pub(crate) fn check_round(&self, requests: &InputRequests) -> Result<(), HandlerError> {
        if let Some(key) = requests.keys().find(|key| self.used_keys.contains(*key)) {
            return Err(HandlerError::internal(format!("input key {key:?} was used before by this task")));
        }
        crate::server::dispatch::check_handler_round(requests, &self.capabilities)
            .map_err(crate::server::dispatch::RoundFault::into_handler_error)
    }

    /// Parks the task in `input_required` with a new round.
    pub(crate) fn ask(&mut self, requests: &InputRequests) {
        self.used_keys.extend(requests.keys().cloned());
        self.outstanding = requests.clone();
        self.answers.clear();
        self.status = TaskStatus::InputRequired;
    }

    /// Takes the answers to outstanding requests (others are ignored); the
    /// task works again once its round is answered.
    pub(crate) fn answer(&mut self, responses: &InputResponses) {
        for (key, response) in responses {
            if self.outstanding.remove(key).is_some() {
                self.answers.insert(key.clone(), response.clone());
            }
        }
        if self.outstanding.is_empty() && self.status == TaskStatus::InputRequired {
            self.status = TaskStatus::Working;
        }
    }

    /// Whether the round is answered and its answers wait for the work.
    pub(crate) fn round_answered(&self) -> bool {
        self.status == TaskStatus::Working && !self.answers.is_empty()
    }

    /// Cancels the task (by the client).
    pub(crate) fn cancel(&mut self) {
        self.status = TaskStatus::Cancelled;
        self.status_message = Some("Cancelled by the client".into());
        self.outstanding.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_bridge_protocol::types::{InputRequest, InputResponse};

    fn round(keys: &[&str]) -> InputRequests {
        keys.iter()
            .map(|k| {
                let request: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
                ((*k).to_owned(), request)
            })
            .collect()
    }

    fn answers(keys: &[&str]) -> InputResponses {
        keys.iter()
            .map(|k| {
                let response: InputResponse = serde_json::from_value(json!({"roots": []})).unwrap();
                ((*k).to_owned(), response)
            })
            .collect()
    }

    fn with_roots() -> ClientCapabilities {
        serde_json::from_value(json!({"roots": {}})).unwrap()
    }

    #[test]
    fn a_round_works_again_only_once_every_request_is_answered() {
        let mut task = TaskState::new(with_roots(), 0);
        task.ask(&round(&["a", "b"]));
        task.answer(&answers(&["a", "unknown"]));
        assert_eq!(task.status, TaskStatus::InputRequired);
        assert!(!task.round_answered());
        assert_eq!(task.answers.len(), 1);
        task.answer(&answers(&["b"]));
        assert!(task.round_answered());
        assert_eq!(task.answers.len(), 2);
    }

    #[test]
    fn keys_are_never_reused_and_capabilities_are_checked() {
        let mut task = TaskState::new(with_roots(), 0);
        task.ask(&round(&["a"]));
        let reused = task.check_round(&round(&["a"])).unwrap_err();
        assert!(reused.message.contains("used before"), "{}", reused.message);
        let without_roots = TaskState::new(ClientCapabilities::default(), 0);
        assert_eq!(without_roots.check_round(&round(&["x"])).unwrap_err().code, -32021);
    }

    #[test]
    fn a_record_survives_its_json_form() {
        let mut task = TaskState::new(with_roots(), 1_785_234_600_123);
        task.ask(&round(&["a"]));
        let json = serde_json::to_string(&task).unwrap();
        assert_eq!(serde_json::from_str::<TaskState>(&json).unwrap(), task);
    }

    #[test]
    fn an_orphan_fails_with_the_reason_and_a_settled_task_keeps_no_requests() {
        let mut task = TaskState::new(with_roots(), 0);
        task.ask(&round(&["a"]));
        task.orphan();
        assert_eq!(task.status, TaskStatus::Failed);
        assert_eq!(task.status_message.as_deref(), Some(ORPHANED));
        assert!(task.outstanding.is_empty());
        let mut done = TaskState::new(with_roots(), 0);
        done.settle(&Ok(json!({"content": []})));
        assert_eq!(done.result.unwrap()["resultType"], "complete");
    }

    #[test]
    fn expiry_counts_from_creation() {
        let mut owned = TaskState::new(with_roots(), 0);
        assert!(owned.belongs_to(None) && owned.belongs_to(Some("anyone")), "no creator: everyone's");
        owned.owner = Some("alice".into());
        assert!(owned.belongs_to(Some("alice")));
        assert!(!owned.belongs_to(Some("bob")) && !owned.belongs_to(None), "another subject, or none");
        let task = TaskState::new(with_roots(), 1_000);
        assert!(!task.expired(Some(Duration::from_secs(1)), 1_999));
        assert!(task.expired(Some(Duration::from_secs(1)), 2_000));
        assert!(!task.expired(None, u64::MAX));
    }
}
