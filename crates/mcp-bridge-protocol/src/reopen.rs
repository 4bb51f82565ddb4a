//! When a lost `subscriptions/listen` stream is opened again, without I/O:
//! whether a stream's end calls for a new one ([`reopen_after`]), and how
//! long to wait first ([`Backoff`]: doubling from half a second to 30 s, back
//! to the start after a stream that lived). The SDK's client
//! (`listen_with_recovery`) and the bridge's listener both follow it, so a
//! server that keeps dropping streams is never hammered by either.

use std::time::Duration;

/// The first wait before a new stream: a redeployed server or a proxy's
/// idle cut is usually back within it.
pub const FIRST_WAIT: Duration = Duration::from_millis(500);

/// The longest wait: a server down for minutes is tried twice a minute.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// A stream that lived this long was a working one: the next loss starts
/// the waits again from [`FIRST_WAIT`].
pub const STABLE: Duration = Duration::from_secs(10);

/// The waits between new streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    stable: Duration,
    next: Duration,
}

impl Default for Backoff {
    /// From [`FIRST_WAIT`] to [`MAX_WAIT`], reset after [`STABLE`].
    fn default() -> Self {
        Backoff::new(FIRST_WAIT, MAX_WAIT, STABLE)
    }
}

impl Backoff {
    /// Waits from `first`, doubling up to `max`; a stream that lived
    /// `stable` starts them again.
    pub fn new(first: Duration, max: Duration, stable: Duration) -> Self {
        Backoff { first, max: max.max(first), stable, next: first }
    }

    /// The wait before a new stream, after one that lived `lived` (from its
    /// acknowledgment when the caller sees it, else from its start; `None`
    /// when it never started).
    pub fn wait_after(&mut self, lived: Option<Duration>) -> Duration {
        if lived.is_some_and(|lived| lived >= self.stable) {
            self.next = self.first;
        }
        let wait = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        wait
    }
}

/// How a listen stream ended, as the policy tells ends apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamEnd {
    /// The server ended it gracefully, or never acknowledged it.
    Ended,
    /// The server ended it because it lost change events (its bus between
    /// replicas was interrupted).
    EventsLost,
    /// The connection was lost. `reconnects`: the transport connects again
    /// by itself (a URL, a restarted child), unlike a child that exited.
    ConnectionLost {
        /// Whether a new stream can reach the server.
        reconnects: bool,
    },
    /// The server answered the listen request with a JSON-RPC error.
    Refused,
    /// The caller cancelled it.
    Cancelled,
    /// The HTTP request failed: with this status, or (`None`) on the
    /// network.
    Http {
        /// The response's status, when there was a response.
        status: Option<u16>,
    },
}

/// What follows the end of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopen {
    /// A new stream after the [`Backoff`]'s wait.
    AfterWait,
    /// A new stream after the next sign-in (the server refused the
    /// credentials: waiting on a timer would not help).
    AfterSignIn,
    /// No new stream.
    Never,
}

/// What follows `end`: a passing failure (a lost connection that comes
/// back, lost events, 408, 429, a 5xx but 501, a network failure) waits and
/// opens a new stream; 401 and 403 wait for a sign-in; a refusal, a
/// cancel, a gone child or another 4xx is final.
pub fn reopen_after(end: StreamEnd) -> Reopen {
    match end {
        StreamEnd::Ended | StreamEnd::EventsLost | StreamEnd::ConnectionLost { reconnects: true } => Reopen::AfterWait,
        StreamEnd::ConnectionLost { reconnects: false } | StreamEnd::Refused | StreamEnd::Cancelled => Reopen::Never,
        StreamEnd::Http { status: Some(401 | 403) } => Reopen::AfterSignIn,
        StreamEnd::Http { status: Some(408 | 429) } => Reopen::AfterWait,
        StreamEnd::Http { status: Some(status) } if (500..600).contains(&status) && status != 501 => Reopen::AfterWait,
        StreamEnd::Http { status: Some(status) } if status >= 400 => Reopen::Never,
        StreamEnd::Http { .. } => Reopen::AfterWait,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn passing_failures_reopen_and_final_ones_do_not() {
        let http = |status| reopen_after(StreamEnd::Http { status: Some(status) });
        assert_eq!(reopen_after(StreamEnd::ConnectionLost { reconnects: true }), Reopen::AfterWait);
        assert_eq!(reopen_after(StreamEnd::ConnectionLost { reconnects: false }), Reopen::Never);
        assert_eq!(reopen_after(StreamEnd::EventsLost), Reopen::AfterWait);
        assert_eq!(reopen_after(StreamEnd::Refused), Reopen::Never);
        assert_eq!(reopen_after(StreamEnd::Cancelled), Reopen::Never);
        assert_eq!(reopen_after(StreamEnd::Http { status: None }), Reopen::AfterWait);
        assert_eq!((http(401), http(403)), (Reopen::AfterSignIn, Reopen::AfterSignIn));
        assert_eq!((http(408), http(429), http(503)), (Reopen::AfterWait, Reopen::AfterWait, Reopen::AfterWait));
        assert_eq!((http(501), http(404)), (Reopen::Never, Reopen::Never));
    }

    #[test]
    fn waits_double_to_the_cap_and_start_again_after_a_stable_stream() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..8).map(|_| backoff.wait_after(Some(Duration::ZERO)).as_millis() as u64).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
        assert_eq!(backoff.wait_after(Some(STABLE)), FIRST_WAIT);
        assert_eq!(backoff.wait_after(None), FIRST_WAIT * 2);
    }

    proptest! {
        /// Whatever the streams' lives, every wait is within the bounds and
        /// is the first one right after a stable stream.
        #[test]
        fn waits_stay_within_their_bounds(lives in proptest::collection::vec(proptest::option::of(0u64..20_000), 0..40)) {
            let mut backoff = Backoff::default();
            let mut previous: Option<Duration> = None;
            for lived in lives {
                let lived = lived.map(Duration::from_millis);
                let wait = backoff.wait_after(lived);
                prop_assert!(wait >= FIRST_WAIT && wait <= MAX_WAIT);
                if lived.is_some_and(|l| l >= STABLE) {
                    prop_assert_eq!(wait, FIRST_WAIT);
                } else if let Some(previous) = previous {
                    prop_assert_eq!(wait, (previous * 2).min(MAX_WAIT));
                }
                previous = Some(wait);
            }
        }
    }
}
