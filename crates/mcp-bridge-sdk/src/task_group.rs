//! Tasks that end with their owner. A client, a transport or a server
//! keeps one [`TaskGroup`] for everything it spawns, so closing it ends
//! every task (within a grace) and none outlives it; the bridge's parts do
//! the same.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The tasks of one owner: tracked, and told to stop together.
#[derive(Debug, Clone, Default)]
pub struct TaskGroup {
    tracker: TaskTracker,
    stop: CancellationToken,
}

impl TaskGroup {
    /// Runs `task` until it ends or the group stops, whichever is first.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.spawn_until(self.stop.clone(), task)
    }

    /// Runs `task` until it ends or `cancel` fires; a token the group
    /// made ([`TaskGroup::child_token`]) fires when the group stops too.
    pub fn spawn_until<F>(&self, cancel: CancellationToken, task: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tracker.spawn(async move {
            tokio::select! {
                () = task => {}
                () = cancel.cancelled() => {}
            }
        })
    }

    /// Runs `task`, which watches [`TaskGroup::stopping`] itself to end
    /// its own way (end a session, send a close frame, reap a child), for
    /// at most `grace` once the group stops: a stuck peer cannot keep it.
    pub fn spawn_to_finish<F>(&self, grace: Duration, task: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = self.stop.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                () = task => {}
                () = async {
                    stop.cancelled().await;
                    tokio::time::sleep(grace).await;
                } => tracing::debug!("a task was ended {grace:?} after its owner stopped"),
            }
        })
    }

    /// Fires when the group stops.
    pub fn stopping(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// A token of its own for one task, which also fires when the group stops.
    pub fn child_token(&self) -> CancellationToken {
        self.stop.child_token()
    }

    /// Tells every task to stop without waiting (an owner being dropped).
    pub fn cancel(&self) {
        self.stop.cancel();
    }

    /// Tells every task to stop and waits for them, at most `grace`.
    /// Whether they all ended in time.
    pub async fn stop(&self, grace: Duration) -> bool {
        self.stop.cancel();
        self.tracker.close();
        tokio::time::timeout(grace, self.tracker.wait()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn stopping_ends_the_tasks_that_stop_and_waits_for_those_that_finish() {
        let group = TaskGroup::default();
        let (tx, rx) = tokio::sync::oneshot::channel();
        group.spawn(std::future::pending());
        let stopping = group.stopping();
        group.spawn_to_finish(Duration::from_secs(5), async move {
            stopping.cancelled().await;
            // The way out takes a while (a session ended), and is waited for.
            tokio::time::sleep(Duration::from_secs(1)).await;
            let _ = tx.send(());
        });
        assert!(group.stop(Duration::from_secs(2)).await);
        assert!(rx.await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_will_not_end_is_ended_its_grace_after_the_stop() {
        let group = TaskGroup::default();
        group.spawn_to_finish(Duration::from_secs(3), std::future::pending());
        assert!(!group.stop(Duration::from_secs(1)).await, "still within its grace");
        let started = tokio::time::Instant::now();
        assert!(group.stop(Duration::from_secs(10)).await);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_child_token_ends_its_task_alone() {
        let group = TaskGroup::default();
        let (one, other) = (group.child_token(), group.child_token());
        let first = group.spawn_until(one.clone(), std::future::pending());
        let second = group.spawn_until(other, std::future::pending());
        one.cancel();
        assert!(first.await.is_ok());
        assert!(!second.is_finished());
        group.cancel();
        assert!(second.await.is_ok());
    }
}
