//! The durable record of the tasks a client follows, so they survive a
//! restart: which tasks the client's tool calls created, and the answers
//! to their input requests, saved before they are sent — after a restart
//! [`Client::resume_tasks`](super::Client::resume_tasks) sends a saved
//! answer again instead of asking the user twice.
//!
//! The records are JSON kept under one key of a [`RecordStore`]: with
//! [`TaskStore::files`] that is an encrypted, owner-only file replaced
//! atomically; [`TaskStore::memory`] keeps them in the process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::types::InputResponses;
use serde::{Deserialize, Serialize};

use crate::store::{FileStore, MemoryStore, RecordStore, StoreError};

/// What the client remembers of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The server's id of the task.
    pub task_id: String,
    /// The tool whose call created it.
    pub tool: String,
    /// Answers saved and not yet acknowledged by `tasks/update`, by key.
    #[serde(default)]
    pub pending_input: InputResponses,
    /// Keys of input requests already answered and sent.
    #[serde(default)]
    pub answered: BTreeSet<String>,
}

/// Where a client keeps its task records.
#[derive(Clone)]
pub struct TaskStore {
    records: Arc<dyn RecordStore>,
    key: String,
    /// One change at a time, so two tasks' updates do not undo each other.
    writing: Arc<Mutex<()>>,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore").field("key", &self.key).finish_non_exhaustive()
    }
}

impl TaskStore {
    /// Records under `key` of any store (one key per server a client
    /// follows tasks on).
    pub fn new(records: Arc<dyn RecordStore>, key: impl Into<String>) -> Self {
        TaskStore { records, key: key.into(), writing: Arc::default() }
    }

    /// Records in this process only (they do not survive a restart; for
    /// tests and short-lived clients).
    pub fn memory() -> Self {
        TaskStore::new(Arc::new(MemoryStore::default()), "tasks")
    }

    /// Records in encrypted owner-only files in `dir`, sealed with the key
    /// in `key_file` (kept outside `dir`; made when missing).
    ///
    /// # Errors
    /// The directory or key file cannot be used.
    pub fn files(dir: impl Into<PathBuf>, key_file: &Path) -> Result<Self, StoreError> {
        Ok(TaskStore::new(Arc::new(FileStore::open(dir, key_file)?), "tasks"))
    }

    /// Every task recorded.
    ///
    /// # Errors
    /// Why the store cannot be read, or its record is not valid.
    pub fn tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        match self.records.load(&self.key)? {
            None => Ok(Vec::new()),
            Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Decode(e.to_string())),
        }
    }

    /// Applies a change to the records and saves them.
    pub(crate) fn change(&self, apply: impl FnOnce(&mut Vec<TaskRecord>)) -> Result<(), StoreError> {
        let _one_at_a_time = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let mut tasks = self.tasks()?;
        apply(&mut tasks);
        if tasks.is_empty() {
            return self.records.remove(&self.key);
        }
        let text = serde_json::to_string(&tasks).map_err(|e| StoreError::Encode(e.to_string()))?;
        self.records.save(&self.key, &text)
    }

    /// Changes the record of one task, if there is one.
    pub(crate) fn change_task(&self, task_id: &str, apply: impl FnOnce(&mut TaskRecord)) -> Result<(), StoreError> {
        self.change(|tasks| {
            if let Some(record) = tasks.iter_mut().find(|t| t.task_id == task_id) {
                apply(record);
            }
        })
    }

    /// Forgets a task.
    pub(crate) fn forget(&self, task_id: &str) -> Result<(), StoreError> {
        self.change(|tasks| tasks.retain(|t| t.task_id != task_id))
    }

    /// The record of one task.
    pub(crate) fn task(&self, task_id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.tasks()?.into_iter().find(|t| t.task_id == task_id))
    }
}
