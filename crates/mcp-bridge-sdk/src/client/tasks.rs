//! The client's side of the Tasks extension (SEP-2663): a `tools/call`
//! that comes back as a task is polled at the server's pace, its input
//! requests answered by the hooks once each, until it ends.

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_bridge_protocol::method::{Method, TasksCancel, TasksGet, TasksStatus, TasksUpdate, ToolsCall};
use mcp_bridge_protocol::rounds::INPUT_RESPONSES;
use mcp_bridge_protocol::types::{CallToolResult, InputResponses, TASKS_EXTENSION, Task, TaskStatus};
use mcp_bridge_protocol::{JsonRpcNotification, error_code};
use serde_json::{Map, Value, json};

use super::{Client, RequestOptions, TaskRecord, input, parse_result, to_json};
use crate::error::{Error, Result};
use crate::limits::MAX_TOTAL_TIMEOUT;

/// The shortest and longest wait between two polls, whatever the server
/// suggests: a poll loop must neither spin nor stall.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// The wait between polls when the server suggests none.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What a `tools/call` gave: its result, or the task that will produce it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The result, at once.
    Complete(CallToolResult),
    /// A task to follow with [`Client::await_task`] (or poll yourself).
    Task(Task),
}

/// A recorded task followed again by [`Client::resume_tasks`].
#[derive(Debug)]
pub struct ResumedTask {
    /// What the client had recorded of it.
    pub record: TaskRecord,
    /// How it ended: the completed task, or why not.
    pub outcome: Result<Task>,
}

/// The task carried by a `notifications/tasks` event of a listen stream.
pub fn task_of_notification(notification: &JsonRpcNotification) -> Option<Task> {
    if notification.method != TasksStatus::NAME {
        return None;
    }
    serde_json::from_value(notification.params.clone()?).ok()
}

/// The tool result of a completed task.
///
/// # Errors
/// [`Error::InvalidResponse`] when the task holds no tool result.
pub fn task_result(task: &Task) -> Result<CallToolResult> {
    let result = task.result.clone().ok_or_else(|| Error::InvalidResponse {
        method: TasksGet::NAME.into(),
        reason: format!("task {} is {:?} and holds no result", task.task_id, task.status),
    })?;
    parse_result(TasksGet::NAME, Value::Object(result))
}

fn task_params(task_id: &str) -> Map<String, Value> {
    Map::from_iter([("taskId".to_owned(), json!(task_id))])
}

impl Client {
    /// `tools/call` that gives a task as it is, when the server makes one:
    /// the request declares the Tasks extension whatever the client's
    /// capabilities say.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn call_tool_or_task(
        &self,
        name: &str,
        arguments: Value,
        options: &RequestOptions,
    ) -> Result<ToolOutcome> {
        self.tool_outcome(name, arguments, &options.using_tasks()).await
    }

    /// `tools/call` declaring what `options` and the client declare; a task
    /// for a request that did not declare the extension is an
    /// [`Error::InvalidResponse`].
    async fn tool_outcome(&self, name: &str, arguments: Value, options: &RequestOptions) -> Result<ToolOutcome> {
        let value = self.request_raw(ToolsCall::NAME, super::tool_call_params(name, arguments), options).await?;
        if value.get("resultType").and_then(Value::as_str) == Some("task") {
            if !options.uses_tasks && !self.declares_tasks() {
                return Err(Error::InvalidResponse {
                    method: ToolsCall::NAME.into(),
                    reason: "a task, but this client did not declare the Tasks extension".into(),
                });
            }
            let task: Task = parse_result(ToolsCall::NAME, value)?;
            self.record_new_task(&task, name).await?;
            return Ok(ToolOutcome::Task(task));
        }
        let result: CallToolResult = parse_result(ToolsCall::NAME, value)?;
        self.check_structured_content(name, &result, options);
        Ok(ToolOutcome::Complete(result))
    }

    /// Whether this client declares the Tasks extension in its options.
    fn declares_tasks(&self) -> bool {
        self.inner.options.capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(TASKS_EXTENSION))
    }

    /// Records a task a tool call created; when that fails, the task is
    /// cancelled on the server (nobody could resume it) and the call fails.
    async fn record_new_task(&self, task: &Task, tool: &str) -> Result<()> {
        let Some(store) = &self.inner.options.task_store else { return Ok(()) };
        let record = TaskRecord {
            task_id: task.task_id.clone(),
            tool: tool.to_owned(),
            pending_input: InputResponses::new(),
            answered: BTreeSet::new(),
        };
        if let Err(reason) = store.change(|tasks| tasks.push(record)) {
            if let Err(e) = self.cancel_task(&task.task_id, &RequestOptions::default()).await {
                tracing::debug!(task_id = %task.task_id, "the unrecorded task could not be cancelled: {e}");
            }
            return Err(Error::TaskStore(reason));
        }
        Ok(())
    }

    /// Resumes every recorded task after a restart: answers saved before
    /// the restart are sent again (nobody is asked twice), then each task
    /// is followed as [`Client::await_task`] does, all at once.
    ///
    /// # Errors
    /// [`Error::TaskStore`] when the records cannot be read; each task's
    /// own outcome is in its [`ResumedTask`].
    pub async fn resume_tasks(&self, options: &RequestOptions) -> Result<Vec<ResumedTask>> {
        let Some(store) = &self.inner.options.task_store else { return Ok(Vec::new()) };
        let records = store.tasks().map_err(Error::TaskStore)?;
        let follow = records.into_iter().map(|record| async move {
            let outcome = self.await_task(&record.task_id, options).await;
            ResumedTask { record, outcome }
        });
        Ok(futures_util::future::join_all(follow).await)
    }

    /// `tasks/get`: the task as it is now.
    ///
    /// # Errors
    /// See [`Error`]; an unknown or expired task is an [`Error::Rpc`] -32602.
    pub async fn get_task(&self, task_id: &str, options: &RequestOptions) -> Result<Task> {
        let value = self.request_raw(TasksGet::NAME, task_params(task_id), &options.using_tasks()).await?;
        parse_result(TasksGet::NAME, value)
    }

    /// `tasks/update`: answers to the task's input requests, by key.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn update_task(&self, task_id: &str, responses: InputResponses, options: &RequestOptions) -> Result<()> {
        let mut params = task_params(task_id);
        params.insert(INPUT_RESPONSES.into(), to_json(&responses)?);
        self.request_raw(TasksUpdate::NAME, params, &options.using_tasks()).await.map(|_| ())
    }

    /// `tasks/cancel`: asks the server to stop the task (it may still end
    /// otherwise).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn cancel_task(&self, task_id: &str, options: &RequestOptions) -> Result<()> {
        self.request_raw(TasksCancel::NAME, task_params(task_id), &options.using_tasks()).await.map(|_| ())
    }

    /// Follows a task to its end: polls at the server's suggested interval,
    /// answers each new input request once with the hooks, and returns the
    /// completed task (see [`task_result`]). The time limit is
    /// `options.timeout` (600 s when unset) and the poll budget
    /// [`ClientOptions::max_task_polls`](crate::ClientOptions::max_task_polls);
    /// when either runs out, or `options.cancel` fires, the task is
    /// cancelled on the server too.
    ///
    /// # Errors
    /// [`Error::Rpc`] with the task's error (also in the diagnostics) when
    /// it failed, [`Error::TaskCancelled`] when it was cancelled,
    /// [`Error::Timeout`], [`Error::TaskPollBudget`] or [`Error::Cancelled`]
    /// as above.
    pub async fn await_task(&self, task_id: &str, options: &RequestOptions) -> Result<Task> {
        let limit =
            options.timeout.unwrap_or(MAX_TOTAL_TIMEOUT).min(options.max_total_timeout.unwrap_or(MAX_TOTAL_TIMEOUT));
        let deadline = tokio::time::Instant::now() + limit;
        let poll = RequestOptions { timeout: None, cancel: None, ..options.clone() };
        let store = self.inner.options.task_store.as_ref();
        let record = store.map(|s| s.task(task_id)).transpose().map_err(Error::TaskStore)?;
        let mut answered = BTreeSet::new();
        if let Some(record) = record.flatten() {
            answered = record.answered;
            // Answers saved before a restart go out again instead of asking twice.
            if !record.pending_input.is_empty() {
                self.send_answers(task_id, record.pending_input, &mut answered, &poll).await?;
            }
        }
        let outcome = self.follow_task(task_id, options, &poll, limit, deadline, &mut answered).await;
        // A task that ended, is unknown, or was cancelled by us is no longer
        // followed; one whose connection broke is kept to resume later.
        let over = matches!(
            &outcome,
            Ok(_)
                | Err(Error::Rpc { .. }
                    | Error::TaskCancelled { .. }
                    | Error::Timeout { .. }
                    | Error::TaskPollBudget { .. }
                    | Error::Cancelled { .. })
        );
        if let (Some(store), true) = (store, over)
            && let Err(reason) = store.forget(task_id)
        {
            tracing::warn!(task_id, "the ended task stays in the task store: {reason}");
        }
        outcome
    }

    /// Saves the answers to a task's input requests, then sends them; once
    /// acknowledged they count as answered.
    async fn send_answers(
        &self,
        task_id: &str,
        responses: InputResponses,
        answered: &mut BTreeSet<String>,
        options: &RequestOptions,
    ) -> Result<()> {
        let keys: Vec<String> = responses.keys().cloned().collect();
        if let Some(store) = &self.inner.options.task_store {
            let saved = responses.clone();
            if let Err(reason) = store.change_task(task_id, |r| r.pending_input.extend(saved)) {
                // Sent anyway: the user's answer is worth more than the record.
                tracing::warn!(task_id, "the answers could not be saved before they were sent: {reason}");
            }
        }
        self.update_task(task_id, responses, options).await?;
        answered.extend(keys.iter().cloned());
        if let Some(store) = &self.inner.options.task_store {
            let done = keys.clone();
            let moved = store.change_task(task_id, |r| {
                for key in done {
                    r.pending_input.remove(&key);
                    r.answered.insert(key);
                }
            });
            if let Err(reason) = moved {
                tracing::warn!(task_id, "the task store still lists sent answers as pending: {reason}");
            }
        }
        Ok(())
    }

    /// The polling loop of [`Client::await_task`].
    async fn follow_task(
        &self,
        task_id: &str,
        options: &RequestOptions,
        poll: &RequestOptions,
        limit: Duration,
        deadline: tokio::time::Instant,
        answered: &mut BTreeSet<String>,
    ) -> Result<Task> {
        let cancel = options.cancel.clone().unwrap_or_default();
        let budget = self.inner.options.max_task_polls;
        let mut polls = 0;
        let stopped = loop {
            if polls == budget {
                break Error::TaskPollBudget { task_id: task_id.to_owned(), polls };
            }
            polls += 1;
            let task = tokio::select! {
                biased;
                _ = cancel.cancelled() => break Error::Cancelled { method: TasksGet::NAME.into() },
                _ = tokio::time::sleep_until(deadline) => {
                    break Error::Timeout { method: TasksGet::NAME.into(), timeout_ms: limit.as_millis() };
                }
                task = self.get_task(task_id, poll) => task?,
            };
            match task.status {
                TaskStatus::Completed => return Ok(task),
                TaskStatus::Failed => {
                    let error = task.error.unwrap_or_else(|| {
                        mcp_bridge_protocol::ErrorObject::new(
                            error_code::INTERNAL_ERROR,
                            "the task failed without an error",
                        )
                    });
                    options.diagnose(|d| d.rpc_error = Some(error.clone()));
                    return Err(Error::Rpc { error });
                }
                TaskStatus::Cancelled => return Err(Error::TaskCancelled { task_id: task_id.to_owned() }),
                TaskStatus::InputRequired => {
                    let new: mcp_bridge_protocol::types::InputRequests = task
                        .input_requests
                        .clone()
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|(key, _)| !answered.contains(key))
                        .collect();
                    if !new.is_empty() {
                        let options = &self.inner.options;
                        // A round the rules refuse ends the task (told to the server).
                        let responses = match input::answer_round(new, &options.capabilities, &options.hooks).await {
                            Ok(responses) => responses,
                            Err(refused) => break refused,
                        };
                        self.send_answers(task_id, responses, answered, poll).await?;
                        continue;
                    }
                }
                TaskStatus::Working => {}
            }
            let interval = task
                .poll_interval_ms
                .map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
                .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL);
            tokio::select! {
                _ = cancel.cancelled() => break Error::Cancelled { method: TasksGet::NAME.into() },
                _ = tokio::time::sleep_until(deadline) => {
                    break Error::Timeout { method: TasksGet::NAME.into(), timeout_ms: limit.as_millis() };
                }
                _ = tokio::time::sleep(interval) => {}
            }
        };
        // Cooperative: the server is told, whatever it makes of it.
        if let Err(e) = self.cancel_task(task_id, &RequestOptions::default()).await {
            tracing::debug!(task_id, "the task could not be cancelled: {e}");
        }
        Err(stopped)
    }

    /// `tools/call` to the end, declaring the Tasks extension only when the
    /// client does: a task the server makes of it is followed with
    /// [`Client::await_task`].
    pub(crate) async fn call_tool_to_the_end(
        &self,
        name: &str,
        arguments: Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult> {
        match self.tool_outcome(name, arguments, options).await? {
            ToolOutcome::Complete(result) => Ok(result),
            ToolOutcome::Task(task) => {
                let done = self.await_task(&task.task_id, options).await?;
                let result = task_result(&done)?;
                self.check_structured_content(name, &result, options);
                Ok(result)
            }
        }
    }
}
