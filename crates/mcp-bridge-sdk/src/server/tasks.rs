//! The Tasks extension on the server (`io.modelcontextprotocol/tasks`,
//! SEP-2663): a tool handler answers [`Reply::task`] with the work to do,
//! and the server either makes a task of it — stored before the
//! `CreateTaskResult` is sent, run on its own, polled with `tasks/get`,
//! fed with `tasks/update`, stopped with `tasks/cancel` — or, for a client
//! that did not declare the extension, runs it before answering.
//!
//! Task ids are 128 random bits: a task is reachable only by whoever was
//! given its id. Tasks live for their TTL in the server's memory or, for a
//! server with replicas, in Redis ([`redis::RedisTaskStore`]), where any
//! replica answers for them and a task whose replica died ends as failed.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_bridge_protocol::types::{ClientCapabilities, InputRequests, InputResponses, TASKS_EXTENSION};
use serde_json::{Value, json};

use super::Reply;
use crate::BoxFuture;
use crate::error::HandlerError;

mod record;
#[cfg(feature = "redis")]
pub(crate) mod redis;
mod registry;
mod store;

pub(crate) use registry::TaskRegistry;
pub(crate) use store::{MemoryTasks, TaskBackend};

/// How a server keeps its tasks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskOptions {
    /// How long after its creation a task is kept (`ttlMs`); `None` keeps
    /// it until the server stops.
    pub ttl: Option<Duration>,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// The most tasks kept at once (with a shared store: running on this
    /// replica); a new one beyond it is refused (-32603) so a client cannot
    /// make the server hold unbounded state.
    pub max_tasks: usize,
}

crate::setters::with_setters! {
    TaskOptions {
        some with_ttl => ttl: Duration,
        value with_poll_interval => poll_interval: Duration,
        value with_max_tasks => max_tasks: usize,
    }
}

impl Default for TaskOptions {
    fn default() -> Self {
        TaskOptions { ttl: Some(Duration::from_secs(3600)), poll_interval: Duration::from_secs(1), max_tasks: 10_000 }
    }
}

/// Whether a tool can be served without a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// A task for a client that declared the extension; the work runs
    /// before the answer for the others.
    #[default]
    Optional,
    /// Only as a task: a client without the extension gets -32021 before
    /// the handler runs.
    Required,
}

type Work<R> = Box<dyn FnOnce(TaskContext) -> BoxFuture<Result<R, HandlerError>> + Send>;

/// The work of a task, as a handler hands it over.
pub struct TaskWork<R>(pub(crate) Work<R>);

impl<R> std::fmt::Debug for TaskWork<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskWork")
    }
}

impl<R> Reply<R> {
    /// Work that may run as a task: the server decides (see
    /// [`TaskSupport`]). The work asks for input with
    /// [`TaskContext::input`].
    pub fn task<F, Fut>(work: F) -> Reply<R>
    where
        F: FnOnce(TaskContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    {
        Reply::Task(TaskWork(Box::new(move |ctx| Box::pin(work(ctx)))))
    }
}

/// What the work of a task can do besides returning its result.
#[derive(Debug, Clone)]
pub struct TaskContext {
    task: Option<(String, Arc<TaskRegistry>)>,
}

impl TaskContext {
    /// For work run before the answer, without a task.
    pub(crate) fn inline() -> Self {
        TaskContext { task: None }
    }

    /// The task's id; `None` when the work runs without a task.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_ref().map(|(id, _)| id.as_str())
    }

    /// Asks the client for input: the task shows `input_required` with
    /// these requests until `tasks/update` has answered every one. Keys
    /// must be new for the task.
    ///
    /// # Errors
    /// -32021 when the work runs without a task (the client did not declare
    /// the extension) or the client lacks a capability a request needs;
    /// -32603 for a key used before.
    pub async fn input(&self, requests: InputRequests) -> Result<InputResponses, HandlerError> {
        match &self.task {
            Some((id, registry)) => registry.ask(id, requests).await,
            None => Err(HandlerError::missing_capability(tasks_capability())),
        }
    }

    /// Sets the task's `statusMessage` (a progress note for people).
    pub async fn set_status_message(&self, message: impl Into<String>) {
        if let Some((id, registry)) = &self.task {
            let message = message.into();
            registry.set_status_message(id, &message).await;
        }
    }
}

/// The `requiredCapabilities` of a -32021 for the extension.
pub(crate) fn tasks_capability() -> Value {
    json!({ "extensions": { TASKS_EXTENSION: {} } })
}

/// Whether a request's client declared the extension.
pub(crate) fn declares_tasks(capabilities: &ClientCapabilities) -> bool {
    capabilities.extensions.as_ref().is_some_and(|e| e.contains_key(TASKS_EXTENSION))
}

/// The refusal of a task beyond `limit` (`TaskOptions::max_tasks`).
fn too_many_tasks(limit: usize) -> HandlerError {
    HandlerError::internal(format!("Too many tasks (limit {limit})"))
}

/// 128 random bits in hex.
fn new_task_id() -> String {
    let mut bytes = [0u8; 16];
    // The OS random source does not fail on the systems we run on; if it
    // did, a time-derived id still differs per task.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        bytes = nanos.to_le_bytes();
    }
    hex::encode(bytes)
}

/// A time as ISO 8601 in UTC with milliseconds, `2026-07-28T10:30:00.000Z`.
pub(crate) fn iso8601(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_in_iso8601() {
        assert_eq!(iso8601(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_785_234_600_123);
        assert_eq!(iso8601(t), "2026-07-28T10:30:00.123Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let (a, b) = (new_task_id(), new_task_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
