//! The Tasks extension on the server (`io.modelcontextprotocol/tasks`,
//! SEP-2663): a tool handler answers [`Reply::task`] with the work to do,
//! and the server either makes a task of it — stored before the
//! `CreateTaskResult` is sent, run on its own, polled with `tasks/get`,
//! fed with `tasks/update`, stopped with `tasks/cancel` — or, for a client
//! that did not declare the extension, runs it before answering.
//!
//! Task ids are 128 random bits: a task is reachable only by whoever was
//! given its id. Tasks live in memory for their TTL.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_bridge_protocol::types::{
    ClientCapabilities, InputRequests, InputResponses, ResultType, TASKS_EXTENSION, Task, TaskStatus,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Reply;
use super::subscriptions::{ChangeEvent, Hub};
use crate::BoxFuture;
use crate::error::{HandlerError, ServerFault};
use crate::task_group::TaskGroup;

/// How a server keeps its tasks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TaskOptions {
    /// How long after its creation a task is kept (`ttlMs`); `None` keeps
    /// it until the server stops.
    pub ttl: Option<Duration>,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// The most tasks kept at once; a new one beyond it is refused (-32603)
    /// so a client cannot make the server hold unbounded state.
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
            registry.change(id, |entry| entry.status_message = Some(message)).await;
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

/// One task's state.
struct Entry {
    status: TaskStatus,
    status_message: Option<String>,
    created: SystemTime,
    updated: SystemTime,
    result: Option<Map<String, Value>>,
    error: Option<mcp_bridge_protocol::ErrorObject>,
    /// Input requests not answered yet.
    outstanding: InputRequests,
    /// Answers to the current round, until it is complete.
    answers: InputResponses,
    /// Every input key the task used (keys are never reused).
    used_keys: BTreeSet<String>,
    /// The capabilities of the client that created it.
    capabilities: ClientCapabilities,
    /// Wakes the work waiting for its input.
    answered: Arc<Notify>,
    /// Stops the work.
    cancel: Option<CancellationToken>,
}

/// Every task of a server.
pub(crate) struct TaskRegistry {
    tasks: Mutex<HashMap<String, Entry>>,
    options: TaskOptions,
    hub: Arc<Hub>,
    /// The work of every task: it ends when cancelled or with the server.
    work: TaskGroup,
}

impl std::fmt::Debug for TaskRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRegistry").field("options", &self.options).finish_non_exhaustive()
    }
}

fn not_found() -> ServerFault {
    ServerFault::Handler(HandlerError::invalid_params("Failed to retrieve task: Task not found"))
}

impl TaskRegistry {
    pub(crate) fn new(options: TaskOptions, hub: Arc<Hub>) -> Self {
        TaskRegistry { tasks: Mutex::default(), options, hub, work: TaskGroup::default() }
    }

    /// Ends the work of every task (the server is gone).
    pub(crate) fn stop_work(&self) {
        self.work.cancel();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self, entry: &Entry, now: SystemTime) -> bool {
        self.options.ttl.is_some_and(|ttl| entry.created + ttl <= now)
    }

    /// The wire form of a task.
    fn snapshot(&self, id: &str, entry: &Entry) -> Task {
        Task {
            result_type: None,
            task_id: id.to_owned(),
            status: entry.status,
            status_message: entry.status_message.clone(),
            created_at: iso8601(entry.created),
            last_updated_at: iso8601(entry.updated),
            ttl_ms: self.options.ttl.map(|t| t.as_millis() as u64),
            poll_interval_ms: Some((self.options.poll_interval.as_millis() as u64).max(1)),
            input_requests: (entry.status == TaskStatus::InputRequired).then(|| entry.outstanding.clone()),
            result: entry.result.clone(),
            error: entry.error.clone(),
            meta: None,
            extra: Map::new(),
        }
    }

    /// Stores a new task and starts its work; returns the
    /// `CreateTaskResult` once `tasks/get` can find it.
    pub(crate) fn create<R: Serialize + Send + 'static>(
        self: &Arc<Self>,
        work: TaskWork<R>,
        capabilities: ClientCapabilities,
    ) -> Result<Task, ServerFault> {
        let id = new_task_id();
        let now = crate::clock::system_now();
        let created = {
            let mut tasks = self.lock();
            tasks.retain(|_, e| !self.expired(e, now));
            if tasks.len() >= self.options.max_tasks {
                return Err(ServerFault::Handler(HandlerError::internal(format!(
                    "Too many tasks (limit {})",
                    self.options.max_tasks
                ))));
            }
            let entry = Entry {
                status: TaskStatus::Working,
                status_message: None,
                created: now,
                updated: now,
                result: None,
                error: None,
                outstanding: InputRequests::new(),
                answers: InputResponses::new(),
                used_keys: BTreeSet::new(),
                capabilities,
                answered: Arc::new(Notify::new()),
                cancel: None,
            };
            let created = self.snapshot(&id, &entry);
            tasks.insert(id.clone(), entry);
            created
        };
        let ctx = TaskContext { task: Some((id.clone(), self.clone())) };
        // Known before the work starts, so a cancel right after creation stops it.
        let cancel = self.work.child_token();
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.cancel = Some(cancel.clone());
        }
        let registry = self.clone();
        // Cancelled (tasks/cancel, which settles the status, or the server
        // gone), the work is dropped and nothing is settled here.
        self.work.spawn_until(cancel, async move {
            let running = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe((work.0)(ctx)));
            let outcome = match running.await {
                Ok(Ok(result)) => serde_json::to_value(&result).map_err(|e| HandlerError::internal(e.to_string())),
                Ok(Err(error)) => Err(error),
                Err(_) => Err(HandlerError::internal("the task's work panicked")),
            };
            registry.finish(&id, outcome).await;
        });
        Ok(Task { result_type: Some(ResultType::Task), ..created })
    }

    /// Settles a task with its work's outcome, unless it ended already.
    async fn finish(&self, id: &str, outcome: Result<Value, HandlerError>) {
        self.change(id, |entry| match outcome {
            Ok(Value::Object(mut result)) => {
                result.entry("resultType").or_insert_with(|| json!("complete"));
                entry.status = TaskStatus::Completed;
                entry.result = Some(result);
            }
            Ok(_) => {
                entry.status = TaskStatus::Failed;
                entry.error = Some(HandlerError::internal("the task's result is not an object").to_error_object());
            }
            Err(error) => {
                entry.status = TaskStatus::Failed;
                entry.status_message = Some(error.message.clone());
                entry.error = Some(error.to_error_object());
            }
        })
        .await;
    }

    /// Applies a change to a live task and tells the listen streams.
    async fn change(&self, id: &str, apply: impl FnOnce(&mut Entry)) {
        let snapshot = {
            let mut tasks = self.lock();
            let Some(entry) = tasks.get_mut(id) else { return };
            if entry.status.is_terminal() {
                return;
            }
            apply(entry);
            entry.updated = crate::clock::system_now();
            self.snapshot(id, entry)
        };
        self.hub.publish(&ChangeEvent::Task(Box::new(snapshot)));
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, id: &str) -> Result<Task, ServerFault> {
        let mut tasks = self.lock();
        let now = crate::clock::system_now();
        match tasks.get(id) {
            Some(entry) if !self.expired(entry, now) => {
                Ok(Task { result_type: Some(ResultType::Complete), ..self.snapshot(id, entry) })
            }
            Some(_) => {
                tasks.remove(id);
                Err(not_found())
            }
            None => Err(not_found()),
        }
    }

    /// Whether a live task has this id.
    pub(crate) fn exists(&self, id: &str) -> bool {
        self.get(id).is_ok()
    }

    /// `tasks/update`: answers to outstanding requests are taken, others
    /// ignored; the work resumes once every request of its round is answered.
    pub(crate) async fn update(&self, id: &str, responses: InputResponses) -> Result<(), ServerFault> {
        self.get(id)?;
        let mut complete = None;
        self.change(id, |entry| {
            for (key, response) in responses {
                if entry.outstanding.remove(&key).is_some() {
                    entry.answers.insert(key, response);
                }
            }
            if entry.outstanding.is_empty() && entry.status == TaskStatus::InputRequired {
                entry.status = TaskStatus::Working;
                complete = Some(entry.answered.clone());
            }
        })
        .await;
        if let Some(answered) = complete {
            answered.notify_one();
        }
        Ok(())
    }

    /// `tasks/cancel`: stops the work of a live task; a task that ended is
    /// left as it is (the ack is the same).
    pub(crate) async fn cancel(&self, id: &str) -> Result<(), ServerFault> {
        self.get(id)?;
        self.change(id, |entry| {
            if let Some(cancel) = entry.cancel.take() {
                cancel.cancel();
            }
            entry.status = TaskStatus::Cancelled;
            entry.status_message = Some("Cancelled by the client".into());
            entry.outstanding.clear();
        })
        .await;
        Ok(())
    }

    /// Parks the task in `input_required` until every request is answered.
    async fn ask(&self, id: &str, requests: InputRequests) -> Result<InputResponses, HandlerError> {
        let answered = {
            let tasks = self.lock();
            let entry = tasks.get(id).ok_or_else(|| HandlerError::internal("the task is gone"))?;
            for (key, request) in &requests {
                if entry.used_keys.contains(key) {
                    return Err(HandlerError::internal(format!("input key {key:?} was used before by this task")));
                }
                if let Some(required) = super::dispatch::missing_capability(request, &entry.capabilities)? {
                    return Err(HandlerError::missing_capability(required));
                }
            }
            entry.answered.clone()
        };
        if requests.is_empty() {
            return Ok(InputResponses::new());
        }
        let keys: Vec<String> = requests.keys().cloned().collect();
        self.change(id, |entry| {
            entry.used_keys.extend(keys.iter().cloned());
            entry.outstanding = requests;
            entry.answers.clear();
            entry.status = TaskStatus::InputRequired;
        })
        .await;
        answered.notified().await;
        let mut tasks = self.lock();
        let entry = tasks.get_mut(id).ok_or_else(|| HandlerError::internal("the task is gone"))?;
        Ok(std::mem::take(&mut entry.answers))
    }
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
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
