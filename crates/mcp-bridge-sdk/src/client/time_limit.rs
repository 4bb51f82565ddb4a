//! A request's time limit as one deadline: every round, every retry after
//! a lost connection and every re-read a request needs (the `tools/list`
//! after -32020) draw on what is left of it, so a retry never restarts it.

use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;

/// The deadline of one request and the limit it was set from (which the
/// [`Error::Timeout`] reports).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeLimit {
    deadline: Instant,
    total: Duration,
}

impl TimeLimit {
    /// A limit of `total` from now.
    pub(crate) fn starting_now(total: Duration) -> Self {
        // A limit too far to represent is no limit: a far deadline does the same.
        let deadline =
            Instant::now().checked_add(total).unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365));
        TimeLimit { deadline, total }
    }

    /// What is left of the limit (zero once it has passed).
    pub(crate) fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Resolves at the deadline.
    pub(crate) fn expired(&self) -> tokio::time::Sleep {
        tokio::time::sleep_until(self.deadline)
    }

    /// The error of `method` at the deadline.
    pub(crate) fn error(&self, method: &str) -> Error {
        Error::Timeout { method: method.to_owned(), timeout_ms: self.total.as_millis() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn what_is_left_shrinks_as_time_passes_and_never_goes_below_zero() {
        let limit = TimeLimit::starting_now(Duration::from_secs(2));
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(limit.left(), Duration::from_millis(500));
        limit.expired().await;
        assert_eq!(limit.left(), Duration::ZERO);
        assert!(matches!(limit.error("tools/call"), Error::Timeout { timeout_ms: 2000, .. }));
    }

    #[test]
    fn a_limit_too_far_to_represent_is_a_far_deadline() {
        let limit = TimeLimit::starting_now(Duration::MAX);
        assert!(limit.left() > Duration::from_secs(86_400));
    }
}
