//! What one caller of an HTTP endpoint may take of it: a rate of requests
//! (a token bucket: `burst` at once, refilled at `per_second`) and requests
//! under way at once (its 2025-11-25 sessions are capped by the sessions'
//! own table, `LegacyHttpOptions::max_sessions_per_holder`). Callers are
//! told apart by their token's subject; on an endpoint without tokens every
//! request is the one caller's (the holder of the endpoint's secret). One
//! caller over its quota gets 429 and never slows the others.
//!
//! The rules here take the time as an argument; the table is bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Callers remembered at once; beyond, those with nothing under way and a
/// full bucket (nothing to remember) are forgotten first.
const MAX_CALLERS: usize = 10_000;

/// A rate of requests: `burst` at once, then `per_second`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Rate {
    /// Requests per second, on average.
    pub per_second: f64,
    /// Requests at once after a quiet time.
    pub burst: u32,
}

impl Rate {
    /// `per_second` requests a second on average, `burst` at once.
    pub fn new(per_second: f64, burst: u32) -> Self {
        Rate { per_second: per_second.max(f64::MIN_POSITIVE), burst: burst.max(1) }
    }
}

/// The quotas of each caller of an endpoint, and what each has taken.
/// Clones share what was taken (one endpoint's options, cloned).
#[derive(Debug, Clone, Default)]
pub struct Quotas {
    rate: Option<Rate>,
    max_in_flight: Option<usize>,
    taken: Arc<Mutex<HashMap<String, Taken>>>,
}

/// What one caller has taken.
#[derive(Debug)]
struct Taken {
    /// Requests it may still send at once, and when that was counted.
    tokens: f64,
    counted: Instant,
    in_flight: usize,
}

/// Why a caller's request is refused: 429, with the seconds after which a
/// new request may pass when the rate was the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverQuota {
    pub(crate) reason: &'static str,
    pub(crate) retry_after: Option<u64>,
}

impl Quotas {
    /// No quota: callers take what the endpoint's own limits allow.
    pub fn new() -> Self {
        Quotas::default()
    }

    /// Requests of one caller at most at `rate`.
    pub fn with_rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Requests of one caller under way at once, at most `max`.
    pub fn with_max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = Some(max.max(1));
        self
    }

    /// Admits a request of `caller` at `now`: within its rate and its
    /// requests under way (the returned hold counts it until dropped).
    pub(crate) fn admit(&self, caller: &str, now: Instant) -> Result<Option<InFlight>, OverQuota> {
        if self.rate.is_none() && self.max_in_flight.is_none() {
            return Ok(None);
        }
        let mut taken = lock(&self.taken);
        if taken.len() >= MAX_CALLERS && !taken.contains_key(caller) {
            let rate = self.rate;
            taken.retain(|_, t| t.in_flight > 0 || rate.is_some_and(|r| refilled(t, r, now) < f64::from(r.burst)));
        }
        let burst = self.rate.map_or(0.0, |r| f64::from(r.burst));
        let entry =
            taken.entry(caller.to_owned()).or_insert_with(|| Taken { tokens: burst, counted: now, in_flight: 0 });
        if let Some(max) = self.max_in_flight
            && entry.in_flight >= max
        {
            return Err(OverQuota { reason: "too many requests of this caller are under way", retry_after: None });
        }
        if let Some(rate) = self.rate {
            entry.tokens = refilled(entry, rate, now);
            entry.counted = now;
            if entry.tokens < 1.0 {
                let wait = (1.0 - entry.tokens) / rate.per_second;
                let retry_after = Duration::from_secs_f64(wait.min(86_400.0)).as_secs().max(1);
                return Err(OverQuota {
                    reason: "this caller's rate of requests is over its quota",
                    retry_after: Some(retry_after),
                });
            }
            entry.tokens -= 1.0;
        }
        entry.in_flight += 1;
        Ok(Some(InFlight { quotas: self.taken.clone(), caller: caller.to_owned() }))
    }
}

/// The tokens of `taken` at `now`: refilled at the rate, up to the burst.
fn refilled(taken: &Taken, rate: Rate, now: Instant) -> f64 {
    let elapsed = now.saturating_duration_since(taken.counted).as_secs_f64();
    (taken.tokens + elapsed * rate.per_second).min(f64::from(rate.burst))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request of a caller under way: counted until dropped.
#[derive(Debug)]
pub(crate) struct InFlight {
    quotas: Arc<Mutex<HashMap<String, Taken>>>,
    caller: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(taken) = lock(&self.quotas).get_mut(&self.caller) {
            taken.in_flight = taken.in_flight.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_over_its_rate_waits_and_the_others_do_not() {
        let quotas = Quotas::new().with_rate(Rate::new(2.0, 3));
        let start = Instant::now();
        for _ in 0..3 {
            assert!(quotas.admit("alice", start).is_ok(), "the burst");
        }
        let over = quotas.admit("alice", start).unwrap_err();
        assert_eq!(over.retry_after, Some(1), "half a second, rounded up");
        assert!(quotas.admit("bob", start).is_ok(), "another caller has its own bucket");
        assert!(quotas.admit("alice", start + Duration::from_millis(500)).is_ok(), "one token back");
        assert!(quotas.admit("alice", start + Duration::from_millis(500)).is_err());
        assert!(quotas.admit("alice", start + Duration::from_secs(60)).is_ok(), "refilled, up to the burst");
    }

    #[test]
    fn requests_under_way_are_counted_until_their_hold_is_dropped() {
        let quotas = Quotas::new().with_max_in_flight(2);
        let now = Instant::now();
        let first = quotas.admit("alice", now).unwrap();
        let _second = quotas.admit("alice", now).unwrap();
        let over = quotas.admit("alice", now).unwrap_err();
        assert_eq!(over.retry_after, None);
        assert!(quotas.admit("bob", now).is_ok());
        drop(first);
        assert!(quotas.admit("alice", now).is_ok(), "one ended: room again");
    }

    #[test]
    fn no_quota_holds_nothing() {
        assert!(Quotas::new().admit("alice", Instant::now()).unwrap().is_none());
    }
}
