//! What one connection of the HTTP or WebSocket endpoint is doing: the
//! phase its timeouts read, and when it last moved a byte, which the cap's
//! fair shares read (`slots.rs`).

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::ConnectionLimits;

/// What a connection is doing, as far as its timeouts care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Waiting for a request to start, since the instant given.
    Idle(Instant),
    /// Reading a request that started (or the first one) at the instant.
    Reading(Instant),
    /// Answering this many requests: no timeout applies.
    Busy(usize),
}

impl Phase {
    /// When the connection is to be closed if nothing changes.
    fn deadline(self, limits: &ConnectionLimits) -> Option<Instant> {
        match self {
            Phase::Idle(since) => Some(since + limits.idle_timeout),
            Phase::Reading(since) => Some(since + limits.request_read_timeout),
            Phase::Busy(_) => None,
        }
    }

    pub(super) fn bytes_read(self, now: Instant) -> Phase {
        match self {
            Phase::Idle(_) => Phase::Reading(now),
            other => other,
        }
    }

    pub(super) fn request_started(self) -> Phase {
        match self {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        }
    }

    pub(super) fn response_ended(self, now: Instant) -> Phase {
        match self {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(now),
        }
    }
}

/// The phase of one connection, shared by its reader, its requests, its
/// watchdog and the cap's fair shares.
#[derive(Debug)]
pub(crate) struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
    /// The last time a byte was read or written.
    progress: Mutex<Instant>,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Activity { phase: Mutex::new(Phase::Reading(now)), changed: Notify::new(), progress: Mutex::new(now) })
    }

    /// Since when no byte was read or written.
    pub(super) fn quiet_since(&self) -> Instant {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn progressed(&self) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// A WebSocket connection's upgrade is done: from now on it waits on
    /// its client's messages, never again on a request head.
    pub(crate) fn upgraded(&self) {
        self.update(|_| Phase::Idle(Instant::now()));
        self.progressed();
    }

    /// Whether the connection is reading a request head (nothing answered
    /// or being answered).
    pub(super) fn reading_head(&self) -> bool {
        matches!(self.current(), Phase::Reading(_))
    }

    pub(super) fn update(&self, change: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let next = change(*phase);
        if next != *phase {
            *phase = next;
            self.changed.notify_one();
        }
    }

    fn current(&self) -> Phase {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes when the connection has waited on its client too long.
    pub(super) async fn expired(&self, limits: &ConnectionLimits) {
        loop {
            let changed = self.changed.notified();
            match self.current().deadline(limits) {
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_connection_waiting_on_its_client_has_a_deadline() {
        let limits = ConnectionLimits::default();
        let t0 = Instant::now();
        let reading = Phase::Reading(t0);
        assert_eq!(reading.deadline(&limits), Some(t0 + limits.request_read_timeout));
        let busy = reading.request_started();
        assert_eq!(busy, Phase::Busy(1));
        assert_eq!(busy.deadline(&limits), None);
        // Bytes of a pipelined request change nothing while busy.
        assert_eq!(busy.bytes_read(t0), busy);
        assert_eq!(busy.request_started().response_ended(t0), Phase::Busy(1));
        let t1 = t0 + Duration::from_secs(3);
        let idle = busy.response_ended(t1);
        assert_eq!(idle.deadline(&limits), Some(t1 + limits.idle_timeout));
        let t2 = t1 + Duration::from_secs(5);
        assert_eq!(idle.bytes_read(t2).deadline(&limits), Some(t2 + limits.request_read_timeout));
    }
}
