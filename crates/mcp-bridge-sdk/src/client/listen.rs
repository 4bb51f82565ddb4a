//! `subscriptions/listen`: the change-event stream of 2026-07-28, its
//! 2025-11-25 stand-in (subscriptions and list-changed notifications), and
//! the loop that reopens a lost stream.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_bridge_protocol::RequestId;
use mcp_bridge_protocol::method::{Method, ResourcesSubscribe, ResourcesUnsubscribe, SubscriptionsListen};
use mcp_bridge_protocol::types::{SubscriptionFilter, SubscriptionsListenResult};
use serde_json::{Map, json};
use tokio::sync::oneshot;

use super::options::Callbacks;
use super::router::Pending;
use super::send::route_for;
use super::time_limit::TimeLimit;
use super::{Client, RequestOptions, Spoken, legacy_listen, parse_result, to_json};
use mcp_bridge_protocol::reopen::{Backoff, FIRST_WAIT, MAX_WAIT, Reopen, STABLE, StreamEnd, reopen_after};

use crate::error::{Error, Result};
use crate::limits::MAX_TOTAL_TIMEOUT;

/// How a stream's error ended it, for the protocol crate's policy. A closed
/// connection counts as one that comes back (a URL, a child restarted by
/// its transport); where it does not, the retries run out.
fn stream_end(error: &Error) -> StreamEnd {
    match error {
        error if error.is_events_lost() => StreamEnd::EventsLost,
        Error::Closed => StreamEnd::ConnectionLost { reconnects: true },
        Error::Transport { .. } => StreamEnd::Http { status: None },
        Error::Cancelled { .. } => StreamEnd::Cancelled,
        _ => StreamEnd::Refused,
    }
}

/// How [`Client::listen_with_recovery`] reopens a lost stream.
#[derive(Clone)]
#[non_exhaustive]
pub struct ListenRecovery {
    /// Fresh streams opened after lost connections (or network failures)
    /// in a row before giving up; a stream that lived
    /// [`STABLE`](mcp_bridge_protocol::reopen::STABLE) starts the count again.
    pub max_retries: u32,
    /// The wait before the first new stream; each next one waits twice as
    /// long, up to `max_delay`, and a stream that lived
    /// [`STABLE`](mcp_bridge_protocol::reopen::STABLE) starts again from
    /// this (the protocol crate's [`Backoff`], the bridge's too).
    pub delay: Duration,
    /// The longest wait before a new stream.
    pub max_delay: Duration,
    /// The time for everything, all streams included; none by default.
    pub deadline: Option<Duration>,
    /// Told each time a new stream replaces one whose events may be
    /// missing: the caller lists again what it follows.
    pub on_gap: Option<ListenGapCallback>,
}

/// Receives [`ListenGap`]s.
pub type ListenGapCallback = Arc<dyn Fn(&ListenGap) + Send + Sync>;

/// A stream was replaced, and events may have been missed in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenGap {
    /// Why the stream before it ended.
    pub cause: GapCause,
    /// How many streams were replaced so far, this one included.
    pub count: u32,
}

/// Why a listen stream was replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GapCause {
    /// The connection was lost (a server or replica that died, a dropped
    /// HTTP stream).
    StreamLost,
    /// The server ended the stream because it lost change events (its
    /// event bus between replicas was interrupted).
    EventsLost,
}

impl std::fmt::Debug for ListenRecovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListenRecovery")
            .field("max_retries", &self.max_retries)
            .field("delay", &self.delay)
            .field("max_delay", &self.max_delay)
            .field("deadline", &self.deadline)
            .field("on_gap", &self.on_gap.is_some())
            .finish()
    }
}

crate::setters::with_setters! {
    ListenRecovery {
        value with_max_retries => max_retries: u32,
        value with_delay => delay: Duration,
        value with_max_delay => max_delay: Duration,
        some with_deadline => deadline: Duration,
        some with_on_gap => on_gap: ListenGapCallback,
    }
}

impl Default for ListenRecovery {
    /// Five retries, waiting from half a second to 30 s
    /// ([`FIRST_WAIT`](mcp_bridge_protocol::reopen::FIRST_WAIT),
    /// [`MAX_WAIT`](mcp_bridge_protocol::reopen::MAX_WAIT)), no deadline.
    fn default() -> Self {
        ListenRecovery { max_retries: 5, delay: FIRST_WAIT, max_delay: MAX_WAIT, deadline: None, on_gap: None }
    }
}

impl Client {
    /// Opens a `subscriptions/listen` stream. The acknowledgment and every
    /// event go to `options.on_notification`; the call returns when the
    /// server ends the stream gracefully, and fails with
    /// [`Error::Cancelled`] when `options.cancel` fires. No time limit
    /// applies unless `options.timeout` sets one.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn listen(
        &self,
        filter: SubscriptionFilter,
        options: &RequestOptions,
    ) -> Result<SubscriptionsListenResult> {
        let mut params = Map::new();
        params.insert("notifications".into(), to_json(&filter)?);
        let limit = options
            .timeout
            .map(|t| TimeLimit::starting_now(t.min(options.max_total_timeout.unwrap_or(MAX_TOTAL_TIMEOUT))));
        let mut options = options.clone();
        #[cfg(feature = "tasks")]
        if filter.task_ids.is_some() {
            options = options.using_tasks();
        }
        if let Some(cache) = self.inner.cache.clone() {
            // A change event makes the cached list stale before the caller hears of it.
            let caller = options.on_notification.take();
            options.on_notification = Some(Arc::new(move |event| {
                cache.drop_for_event(event);
                if let Some(caller) = &caller {
                    caller(event);
                }
            }));
        }
        if let Spoken::Legacy(initialized) = self.connect(&options).await? {
            return self.listen_legacy(&filter, &initialized.capabilities, &options, limit).await;
        }
        let value = self.send_once(SubscriptionsListen::NAME, &params, &options, limit, false).await?;
        parse_result(SubscriptionsListen::NAME, value.into_value(SubscriptionsListen::NAME)?)
    }

    /// [`Client::listen`] on a 2025-11-25 session: the part of the filter
    /// the server's capabilities give (see [`legacy_listen`]), its
    /// resources subscribed with `resources/subscribe` (and unsubscribed at
    /// the end), the acknowledgment, then the session's change
    /// notifications it covers, until cancelled or the connection ends.
    async fn listen_legacy(
        &self,
        wanted: &SubscriptionFilter,
        capabilities: &mcp_bridge_protocol::types::ServerCapabilities,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
    ) -> Result<SubscriptionsListenResult> {
        let granted = legacy_listen::grant(wanted, capabilities);
        let uris = granted.resource_subscriptions.clone().unwrap_or_default();
        let plain = RequestOptions { cancel: options.cancel.clone(), ..Default::default() };
        let uri_params = |uri: &str| {
            let mut params = Map::new();
            params.insert("uri".into(), json!(uri));
            params
        };
        {
            let mut counts = self.inner.legacy_subscriptions.lock().await;
            for uri in counts.want(&uris) {
                if let Err(e) = self.request_raw(ResourcesSubscribe::NAME, uri_params(&uri), &plain).await {
                    counts.release(&uris);
                    return Err(e);
                }
            }
        }
        let inner = &self.inner;
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (reply_tx, reply_rx) = oneshot::channel();
        let callbacks = Arc::new(Callbacks::new(options, inner.options.on_notification.as_ref()));
        let (route, events) = route_for(options, &callbacks);
        let pending = Pending {
            reply: reply_tx,
            route,
            method: SubscriptionsListen::NAME.into(),
            diagnostics: None,
            answers: None,
        };
        inner.router.register_legacy_listen(id.clone(), pending, granted.clone())?;
        callbacks.deliver(&legacy_listen::acknowledgment(&granted, &id));
        let outcome = self.await_reply(SubscriptionsListen::NAME, reply_rx, events, &callbacks, options, limit).await;
        inner.router.forget(&id);
        let mut counts = inner.legacy_subscriptions.lock().await;
        let unwanted = counts.release(&uris);
        if !matches!(outcome, Err(Error::Closed)) {
            for uri in unwanted {
                if let Err(e) =
                    self.request_raw(ResourcesUnsubscribe::NAME, uri_params(&uri), &RequestOptions::default()).await
                {
                    tracing::debug!("resources/unsubscribe at the end of a listen stream failed: {e}");
                }
            }
        }
        drop(counts);
        parse_result(SubscriptionsListen::NAME, outcome?.into_value(SubscriptionsListen::NAME)?)
    }

    /// [`Client::listen`] that opens a fresh stream (a new request) when the
    /// connection is lost ([`Error::Closed`]: a restarted child process, a
    /// dropped HTTP stream, a replica behind a load balancer that died; or
    /// [`Error::Transport`]: the network), at most `recovery.max_retries`
    /// times, and whenever the server ends the stream because it lost
    /// events ([`Error::is_events_lost`]), waiting between attempts as the
    /// protocol crate's [`Backoff`] says (from `recovery.delay`, doubling up
    /// to `recovery.max_delay`), within `recovery.deadline`, until
    /// `options.cancel` fires. Each new stream is a [`ListenGap`] for
    /// `recovery.on_gap`: events may be missing in between, so the caller
    /// lists again. Events after a reconnection may repeat ones seen
    /// before it.
    ///
    /// # Errors
    /// The last attempt's error once the retries are spent (or any other
    /// error at once); [`Error::Timeout`] past the deadline;
    /// [`Error::Cancelled`] when cancelled.
    pub async fn listen_with_recovery(
        &self,
        filter: SubscriptionFilter,
        recovery: &ListenRecovery,
        options: &RequestOptions,
    ) -> Result<SubscriptionsListenResult> {
        let method = SubscriptionsListen::NAME;
        let started = tokio::time::Instant::now();
        let deadline = recovery.deadline.map(|d| started + d);
        let cancel = options.cancel.clone().unwrap_or_default();
        // The deadline stops a stream as a cancel does (the server is
        // told), without cancelling the caller's token.
        let stop = cancel.child_token();
        let options = RequestOptions { cancel: Some(stop.clone()), ..options.clone() };
        let timed_out = || Error::Timeout {
            method: method.to_owned(),
            timeout_ms: recovery.deadline.unwrap_or_default().as_millis(),
        };
        let mut retries = 0;
        let mut gaps = 0;
        let mut backoff = Backoff::new(recovery.delay, recovery.max_delay, STABLE);
        loop {
            let opened = tokio::time::Instant::now();
            let attempt = self.listen(filter.clone(), &options);
            tokio::pin!(attempt);
            let outcome = tokio::select! {
                outcome = &mut attempt => outcome,
                _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => {
                    stop.cancel();
                    let _ = attempt.await;
                    return Err(timed_out());
                }
            };
            let error = match outcome {
                Ok(result) => return Ok(result),
                Err(error) => error,
            };
            let end = stream_end(&error);
            let cause = match (end, reopen_after(end)) {
                (StreamEnd::EventsLost, _) => {
                    tracing::debug!("the server lost change events; opening the listen stream again");
                    GapCause::EventsLost
                }
                (_, Reopen::AfterWait) if retries < recovery.max_retries => {
                    retries += 1;
                    tracing::debug!(attempt = retries, "the listen stream was lost; opening it again");
                    GapCause::StreamLost
                }
                _ => return Err(error),
            };
            let lived = opened.elapsed();
            if lived >= STABLE {
                // A stream that worked for a while: its loss starts a fresh count.
                retries = u32::from(cause == GapCause::StreamLost);
            }
            let wake = tokio::time::Instant::now() + backoff.wait_after(Some(lived));
            if deadline.is_some_and(|d| wake >= d) {
                return Err(timed_out());
            }
            tokio::select! {
                _ = cancel.cancelled() => return Err(Error::Cancelled { method: method.to_owned() }),
                _ = tokio::time::sleep_until(wake) => {}
            }
            gaps += 1;
            if let Some(on_gap) = &recovery.on_gap {
                on_gap(&ListenGap { cause, count: gaps });
            }
        }
    }
}
