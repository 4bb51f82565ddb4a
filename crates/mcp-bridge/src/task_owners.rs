//! Which subject created each task of a forwarded request (`mcp-bridge
//! --listen` in front of one server, behind `--listen-auth-issuer`): the
//! server behind knows no subjects, so the bridge keeps each task to its
//! creator. A subject reaches only the tasks it created through this
//! bridge; a request without a subject (an endpoint without tokens, one
//! user) reaches every task. Bounded: the oldest tasks are forgotten first
//! (their creators then reach them no more).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Tasks remembered at once.
const MAX_TASKS: usize = 100_000;

/// Tasks by id, with their creators.
#[derive(Default)]
pub(crate) struct TaskOwners(Mutex<Owners>);

#[derive(Default)]
struct Owners {
    by_task: HashMap<String, String>,
    /// Task ids, oldest first.
    order: VecDeque<String>,
}

impl TaskOwners {
    /// Records that `subject` created the task `task_id`.
    pub(crate) fn record(&self, task_id: &str, subject: &str) {
        let mut owners = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if owners.by_task.insert(task_id.to_owned(), subject.to_owned()).is_none() {
            owners.order.push_back(task_id.to_owned());
        }
        while owners.order.len() > MAX_TASKS {
            if let Some(oldest) = owners.order.pop_front() {
                owners.by_task.remove(&oldest);
            }
        }
    }

    /// Whether a request of `subject` may reach the task `task_id`.
    pub(crate) fn admits(&self, task_id: &str, subject: Option<&str>) -> bool {
        let Some(subject) = subject else { return true };
        let owners = self.0.lock().unwrap_or_else(|e| e.into_inner());
        owners.by_task.get(task_id).is_some_and(|owner| owner == subject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_reaches_its_own_tasks_only_and_no_subject_reaches_all() {
        let owners = TaskOwners::default();
        owners.record("t1", "alice");
        assert!(owners.admits("t1", Some("alice")));
        assert!(!owners.admits("t1", Some("bob")));
        assert!(!owners.admits("t-elsewhere", Some("alice")), "not created through this bridge");
        assert!(owners.admits("t1", None) && owners.admits("t-elsewhere", None));
    }

    #[test]
    fn the_oldest_tasks_are_forgotten_beyond_the_bound() {
        let owners = TaskOwners::default();
        for n in 0..=MAX_TASKS {
            owners.record(&format!("t{n}"), "alice");
        }
        assert!(!owners.admits("t0", Some("alice")));
        assert!(owners.admits("t1", Some("alice")) && owners.admits(&format!("t{MAX_TASKS}"), Some("alice")));
    }
}
