//! [`TaskRegistry`]: the rules of a server's tasks over its store. The
//! replica that created a task runs its work; any replica answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` from the store, and the
//! running replica learns of changes made elsewhere from the change bus
//! (a task event for a task it runs makes it read the record again) and,
//! in case the bus lost that event, at each renewal of its lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use mcp_bridge_protocol::types::{ClientCapabilities, InputRequests, InputResponses, ResultType, Task, TaskStatus};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::record::{TaskState, millis};
use super::store::{Replaced, TaskBackend};
use super::{TaskContext, TaskOptions, TaskWork, new_task_id};
use crate::error::{HandlerError, ServerFault};
use crate::server::subscriptions::{ChangeEvent, Hub};
use crate::task_group::TaskGroup;

/// What this replica keeps of a task whose work it runs.
struct Running {
    /// Wakes the work waiting for its input.
    answered: Arc<Notify>,
    /// Stops the work.
    cancel: CancellationToken,
}

/// Every task of a server.
pub(crate) struct TaskRegistry {
    store: TaskBackend,
    /// The tasks whose work runs here.
    running: Mutex<HashMap<String, Running>>,
    options: TaskOptions,
    hub: Arc<Hub>,
    /// The work of every task: it ends when cancelled or with the server.
    work: TaskGroup,
}

impl std::fmt::Debug for TaskRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskRegistry").field("options", &self.options).field("store", &self.store).finish()
    }
}

fn not_found() -> ServerFault {
    ServerFault::Handler(HandlerError::task_not_found())
}

fn gone() -> HandlerError {
    HandlerError::internal("the task is gone")
}

fn now_ms() -> u64 {
    millis(crate::clock::system_now())
}

/// Forgets a running task however its work ends (dropped when cancelled).
struct RunningGuard {
    registry: Weak<TaskRegistry>,
    id: String,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.lock().remove(&self.id);
        }
    }
}

impl TaskRegistry {
    /// The registry of a server; with a shared store it follows the task
    /// events the other replicas publish on the hub's bus.
    pub(crate) fn start(options: TaskOptions, store: TaskBackend, hub: Arc<Hub>) -> Arc<Self> {
        let registry =
            Arc::new(TaskRegistry { store, running: Mutex::default(), options, hub, work: TaskGroup::default() });
        if registry.store.is_shared() {
            let watcher = Arc::downgrade(&registry);
            registry.hub.watch_remote_tasks(Box::new(move |id| {
                if let Some(registry) = watcher.upgrade() {
                    registry.recheck_later(id);
                }
            }));
        }
        registry
    }

    /// Ends the work of every task (the server is gone).
    pub(crate) fn stop_work(&self) {
        self.work.cancel();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores a new task and starts its work; returns the
    /// `CreateTaskResult` once `tasks/get` can find it.
    pub(crate) async fn create<R: Serialize + Send + 'static>(
        self: &Arc<Self>,
        work: TaskWork<R>,
        capabilities: ClientCapabilities,
        owner: Option<String>,
    ) -> Result<Task, ServerFault> {
        if self.lock().len() >= self.options.max_tasks {
            return Err(ServerFault::Handler(super::too_many_tasks(self.options.max_tasks)));
        }
        let id = new_task_id();
        let record = TaskState { owner, ..TaskState::new(capabilities, now_ms()) };
        self.store.create(&id, &record, self.options.ttl).await.map_err(ServerFault::Handler)?;
        // Known before the work starts, so a cancel right after creation stops it.
        let cancel = self.work.child_token();
        let running = Running { answered: Arc::new(Notify::new()), cancel: cancel.clone() };
        self.lock().insert(id.clone(), running);
        let guard = RunningGuard { registry: Arc::downgrade(self), id: id.clone() };
        let ctx = TaskContext { task: Some((id.clone(), self.clone())) };
        // Tests behind a load balancer read this line to find a task's replica.
        tracing::debug!(task = %id, "a task started");
        let (registry, task_id) = (self.clone(), id.clone());
        // Cancelled (tasks/cancel, which settles the status, or the server
        // gone), the work is dropped and nothing is settled here.
        self.work.spawn_until(cancel, async move {
            let _running = guard;
            let outcome = registry.run(&task_id, work, ctx).await;
            registry.finish(&task_id, outcome).await;
        });
        Ok(Task { result_type: Some(ResultType::Task), ..record.snapshot(&id, &self.options) })
    }

    /// Runs a task's work, renewing its lease meanwhile when the store is
    /// shared.
    async fn run<R: Serialize>(&self, id: &str, work: TaskWork<R>, ctx: TaskContext) -> Result<Value, HandlerError> {
        let running = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe((work.0)(ctx)));
        let outcome = match self.store.renewal() {
            None => running.await,
            Some(every) => {
                tokio::pin!(running);
                loop {
                    tokio::select! {
                        outcome = &mut running => break outcome,
                        () = tokio::time::sleep(every) => self.keep_alive(id).await,
                    }
                }
            }
        };
        match outcome {
            Ok(Ok(result)) => serde_json::to_value(&result).map_err(|e| HandlerError::internal(e.to_string())),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(HandlerError::internal("the task's work panicked")),
        }
    }

    /// Renews the lease of a task running here and catches up with what
    /// other replicas did to it.
    async fn keep_alive(&self, id: &str) {
        match self.store.hold(id).await {
            Ok(()) => tracing::trace!(task = %id, "renewed a running task's lease"),
            Err(e) => tracing::warn!(task = %id, "the lease of a running task could not be renewed: {e}"),
        }
        self.recheck(id).await;
    }

    /// [`TaskRegistry::recheck`] on its own task (called from the bus).
    fn recheck_later(self: &Arc<Self>, id: &str) {
        if !self.lock().contains_key(id) {
            return;
        }
        let (registry, id) = (self.clone(), id.to_owned());
        self.work.spawn(async move { registry.recheck(&id).await });
    }

    /// Reads the record of a task running here: stops the work when the
    /// task was settled elsewhere (cancelled, or failed as orphaned), and
    /// wakes it when its round was answered.
    async fn recheck(&self, id: &str) {
        let stored = match self.store.load(id).await {
            Ok(stored) => stored,
            Err(e) => return tracing::debug!(task = %id, "a running task's record could not be read: {e}"),
        };
        let lock = self.lock();
        let Some(running) = lock.get(id) else { return };
        match stored {
            Some(s) if !s.record.status.is_terminal() => {
                if s.record.round_answered() {
                    running.answered.notify_one();
                }
            }
            _ => {
                tracing::debug!(task = %id, "the task was settled elsewhere; stopping its work");
                running.cancel.cancel();
            }
        }
    }

    /// Applies a change to a task not settled yet, retrying when another
    /// replica changed it meanwhile, and tells the listen streams. Returns
    /// the record as it is after; `None` when there is no such task.
    async fn modify(&self, id: &str, mut apply: impl FnMut(&mut TaskState)) -> Result<Option<TaskState>, HandlerError> {
        loop {
            let Some(stored) = self.store.load(id).await? else { return Ok(None) };
            if stored.record.status.is_terminal() {
                return Ok(Some(stored.record));
            }
            let mut record = stored.record;
            apply(&mut record);
            record.updated_ms = now_ms();
            match self.store.replace(id, stored.revision, &record).await? {
                Replaced::Done => {
                    self.hub.publish(&ChangeEvent::Task(Box::new(record.snapshot(id, &self.options))));
                    return Ok(Some(record));
                }
                Replaced::Conflict => continue,
                Replaced::Gone => return Ok(None),
            }
        }
    }

    /// Settles a task with its work's outcome, unless it ended already.
    async fn finish(&self, id: &str, outcome: Result<Value, HandlerError>) {
        if let Err(e) = self.modify(id, |record| record.settle(&outcome)).await {
            // Its lease runs out and a `tasks/get` settles it as failed.
            tracing::warn!(task = %id, "a task's outcome could not be stored: {e}");
        }
    }

    /// Sets a running task's `statusMessage`.
    pub(crate) async fn set_status_message(&self, id: &str, message: &str) {
        let set = self.modify(id, |record| record.status_message = Some(message.to_owned())).await;
        if let Err(e) = set {
            tracing::debug!(task = %id, "a task's status message could not be stored: {e}");
        }
    }

    /// `tasks/get` by a request of `subject` (its token's): another
    /// subject's task is as unknown as one that does not exist. A task
    /// whose replica stopped is settled as failed here.
    pub(crate) async fn get(&self, id: &str, subject: Option<&str>) -> Result<Task, ServerFault> {
        let stored = self.store.load(id).await.map_err(ServerFault::Handler)?;
        let stored = stored.filter(|s| s.record.belongs_to(subject)).ok_or_else(not_found)?;
        let record = if stored.orphaned {
            tracing::info!(task = %id, "a task's replica stopped renewing its lease; the task failed");
            self.modify(id, TaskState::orphan).await.map_err(ServerFault::Handler)?.ok_or_else(not_found)?
        } else {
            stored.record
        };
        Ok(Task { result_type: Some(ResultType::Complete), ..record.snapshot(id, &self.options) })
    }

    /// Whether a live task of `subject` (see [`TaskState::belongs_to`])
    /// has this id.
    pub(crate) async fn exists(&self, id: &str, subject: Option<&str>) -> bool {
        matches!(self.store.load(id).await, Ok(Some(stored)) if stored.record.belongs_to(subject))
    }

    /// `tasks/update`: answers to outstanding requests are taken, others
    /// ignored; the work resumes once every request of its round is answered.
    pub(crate) async fn update(
        &self,
        id: &str,
        subject: Option<&str>,
        responses: InputResponses,
    ) -> Result<(), ServerFault> {
        self.get(id, subject).await?;
        let updated = self.modify(id, |record| record.answer(&responses)).await.map_err(ServerFault::Handler)?;
        if updated.is_some_and(|record| record.round_answered()) {
            // The work runs here, or on the replica that hears this on the bus.
            if let Some(running) = self.lock().get(id) {
                running.answered.notify_one();
            }
        }
        Ok(())
    }

    /// `tasks/cancel`: settles a live task as cancelled and stops its work
    /// (here, or on its replica through the bus); a task that ended is
    /// left as it is (the ack is the same).
    pub(crate) async fn cancel(&self, id: &str, subject: Option<&str>) -> Result<(), ServerFault> {
        self.get(id, subject).await?;
        self.modify(id, TaskState::cancel).await.map_err(ServerFault::Handler)?;
        if let Some(running) = self.lock().get(id) {
            tracing::debug!(task = %id, "the task was cancelled here; stopping its work");
            running.cancel.cancel();
        }
        Ok(())
    }

    /// Parks the task in `input_required` until every request is answered.
    pub(crate) async fn ask(&self, id: &str, requests: InputRequests) -> Result<InputResponses, HandlerError> {
        let answered = self.lock().get(id).map(|r| r.answered.clone()).ok_or_else(gone)?;
        let stored = self.store.load(id).await?.ok_or_else(gone)?;
        stored.record.check_round(&requests)?;
        if requests.is_empty() {
            return Ok(InputResponses::new());
        }
        self.modify(id, |record| record.ask(&requests)).await?;
        loop {
            answered.notified().await;
            let record = self.store.load(id).await?.ok_or_else(gone)?.record;
            match record.status {
                TaskStatus::InputRequired => continue,
                status if status.is_terminal() => return Err(gone()),
                _ => {}
            }
            let answers = record.answers;
            self.modify(id, |record| record.answers.clear()).await?;
            return Ok(answers);
        }
    }
}
