//! Where a server keeps its tasks: in its own memory, or in Redis shared
//! by its replicas ([`super::redis::RedisTaskStore`]). Either way a change
//! is a compare-and-set on the record's revision, and a settled record is
//! never changed again, so two replicas racing on one task cannot undo
//! each other. A store's failure is the -32603 its request gets.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use super::record::TaskState;
use crate::error::HandlerError;

/// A record as loaded.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub(crate) record: TaskState,
    /// What a [`TaskBackend::replace`] of this record must name.
    pub(crate) revision: u64,
    /// Not settled, yet no replica holds its lease: its work is gone.
    pub(crate) orphaned: bool,
}

/// What a [`TaskBackend::replace`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replaced {
    Done,
    /// The record changed since it was loaded, or is settled: load again.
    Conflict,
    /// No such task (never, expired).
    Gone,
}

/// The store of one server's tasks.
#[derive(Debug)]
pub(crate) enum TaskBackend {
    Memory(MemoryTasks),
    #[cfg(feature = "redis")]
    Redis(Box<super::redis::RedisTaskStore>),
}

impl TaskBackend {
    /// Stores a new task, kept for `ttl` from now, held by this replica.
    #[cfg_attr(not(feature = "redis"), allow(unused_variables))]
    pub(crate) async fn create(&self, id: &str, record: &TaskState, ttl: Option<Duration>) -> Result<(), HandlerError> {
        match self {
            TaskBackend::Memory(tasks) => tasks.create(id, record),
            #[cfg(feature = "redis")]
            TaskBackend::Redis(redis) => redis.create(id, record, ttl).await.map_err(unreachable_store),
        }
    }

    /// A task's record, `None` when it is unknown or expired.
    pub(crate) async fn load(&self, id: &str) -> Result<Option<Stored>, HandlerError> {
        match self {
            TaskBackend::Memory(tasks) => Ok(tasks.load(id)),
            #[cfg(feature = "redis")]
            TaskBackend::Redis(redis) => redis.load(id).await.map_err(unreachable_store),
        }
    }

    /// Replaces a record still at `revision` and not settled.
    pub(crate) async fn replace(&self, id: &str, revision: u64, record: &TaskState) -> Result<Replaced, HandlerError> {
        match self {
            TaskBackend::Memory(tasks) => Ok(tasks.replace(id, revision, record)),
            #[cfg(feature = "redis")]
            TaskBackend::Redis(redis) => redis.replace(id, revision, record).await.map_err(unreachable_store),
        }
    }

    /// Renews this replica's lease on a task it runs (shared stores).
    #[cfg_attr(not(feature = "redis"), allow(unused_variables))]
    pub(crate) async fn hold(&self, id: &str) -> Result<(), HandlerError> {
        match self {
            TaskBackend::Memory(_) => Ok(()),
            #[cfg(feature = "redis")]
            TaskBackend::Redis(redis) => redis.hold(id).await.map_err(unreachable_store),
        }
    }

    /// How often a running task's lease is renewed (and its record
    /// checked for changes made on other replicas); `None` when the
    /// store is not shared.
    pub(crate) fn renewal(&self) -> Option<Duration> {
        match self {
            TaskBackend::Memory(_) => None,
            #[cfg(feature = "redis")]
            TaskBackend::Redis(redis) => Some(redis.renewal()),
        }
    }

    /// Whether other processes share this store.
    pub(crate) fn is_shared(&self) -> bool {
        self.renewal().is_some()
    }
}

#[cfg(feature = "redis")]
fn unreachable_store(e: ::redis::RedisError) -> HandlerError {
    HandlerError::internal(format!("the task store (Redis) failed: {e}"))
}

/// Tasks in the server's memory, expired ones dropped as new ones come.
#[derive(Debug)]
pub(crate) struct MemoryTasks {
    tasks: Mutex<HashMap<String, (u64, TaskState)>>,
    ttl: Option<Duration>,
    max_tasks: usize,
}

impl MemoryTasks {
    pub(crate) fn new(ttl: Option<Duration>, max_tasks: usize) -> Self {
        MemoryTasks { tasks: Mutex::default(), ttl, max_tasks }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, TaskState)>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn create(&self, id: &str, record: &TaskState) -> Result<(), HandlerError> {
        let now = super::record::millis(crate::clock::system_now());
        let mut tasks = self.lock();
        tasks.retain(|_, (_, r)| !r.expired(self.ttl, now));
        if tasks.len() >= self.max_tasks {
            return Err(super::too_many_tasks(self.max_tasks));
        }
        tasks.insert(id.to_owned(), (1, record.clone()));
        Ok(())
    }

    fn load(&self, id: &str) -> Option<Stored> {
        let now = super::record::millis(crate::clock::system_now());
        let mut tasks = self.lock();
        match tasks.get(id) {
            Some((_, record)) if record.expired(self.ttl, now) => {
                tasks.remove(id);
                None
            }
            Some((revision, record)) => Some(Stored { record: record.clone(), revision: *revision, orphaned: false }),
            None => None,
        }
    }

    fn replace(&self, id: &str, revision: u64, record: &TaskState) -> Replaced {
        match self.lock().get_mut(id) {
            None => Replaced::Gone,
            Some((current, stored)) if *current != revision || stored.status.is_terminal() => Replaced::Conflict,
            Some((current, stored)) => {
                *current += 1;
                *stored = record.clone();
                Replaced::Done
            }
        }
    }
}
