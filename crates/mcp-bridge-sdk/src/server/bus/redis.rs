//! [`RedisBus`]: change events between replicas over Redis pub/sub.
//!
//! Every replica publishes on one channel and subscribes to it. Publishing
//! goes through a bounded queue to one task that sends in order, so
//! [`ChangeBus::publish`] never waits on Redis. When the subscription's
//! connection drops (Redis restarted, the network cut), the replica's
//! streams end with the events-lost error, it reconnects with back-off, and
//! ends the streams opened meanwhile once more when it is back: whatever
//! was published in between may be missing, and every listener is told.
//! A publisher's skipped sequence number (an event that never left its
//! replica) is told the same way.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::envelope::{Continuity, Envelope, Received, SequenceTracker, decode};
use super::{BusSink, ChangeBus};
use crate::server::ChangeEvent;
use crate::task_group::TaskGroup;

/// Events waiting to be sent before new ones are dropped (and counted as a
/// gap by the other replicas).
const OUTBOX: usize = 1024;
/// The first wait before a reconnection; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
/// The longest wait between reconnections: short, since listeners stay
/// without events until the bus is back.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Why a Redis bus could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisBusError {
    /// The URL is not a Redis URL.
    #[error("not a Redis URL (redis://[user:password@]host[:port][/db]): {0}")]
    BadUrl(#[source] ::redis::RedisError),
    /// Redis could not be reached or refused the subscription.
    #[error("cannot reach Redis for the change-event bus: {0}")]
    Connect(#[source] ::redis::RedisError),
}

/// One server's link to a Redis pub/sub channel shared by its replicas.
pub struct RedisBus {
    channel: String,
    publisher: u64,
    sequence: AtomicU64,
    outbox: mpsc::Sender<Vec<u8>>,
    /// What [`ChangeBus::attach`] starts its tasks with.
    start: Mutex<Option<Start>>,
    runtime: tokio::runtime::Handle,
    tasks: TaskGroup,
}

/// The connections made by [`RedisBus::connect`], handed to the tasks.
struct Start {
    client: ::redis::Client,
    messages: ::redis::aio::PubSubStream,
    connection: ::redis::aio::MultiplexedConnection,
    outbox: mpsc::Receiver<Vec<u8>>,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the URL: it may hold a password.
        f.debug_struct("RedisBus").field("channel", &self.channel).field("publisher", &self.publisher).finish()
    }
}

impl RedisBus {
    /// Connects to Redis at `url` and subscribes to `channel` (give every
    /// replica of one server the same channel, and other servers other
    /// ones). Fails when Redis cannot be reached, so a replica that could
    /// not share its events does not start.
    ///
    /// # Errors
    /// See [`RedisBusError`].
    pub async fn connect(url: &str, channel: impl Into<String>) -> Result<Self, RedisBusError> {
        let channel = channel.into();
        let client = ::redis::Client::open(url).map_err(RedisBusError::BadUrl)?;
        let messages = subscribe(&client, &channel).await.map_err(RedisBusError::Connect)?;
        let connection = client.get_multiplexed_async_connection().await.map_err(RedisBusError::Connect)?;
        let (outbox, outbox_rx) = mpsc::channel(OUTBOX);
        let mut publisher = [0u8; 8];
        getrandom::fill(&mut publisher).expect("invariant: the OS random source is available");
        Ok(RedisBus {
            channel,
            publisher: u64::from_le_bytes(publisher),
            sequence: AtomicU64::new(0),
            outbox,
            start: Mutex::new(Some(Start { client, messages, connection, outbox: outbox_rx })),
            runtime: tokio::runtime::Handle::current(),
            tasks: TaskGroup::default(),
        })
    }
}

impl Drop for RedisBus {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

impl ChangeBus for RedisBus {
    fn publish(&self, event: &ChangeEvent) {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let bytes = Envelope { publisher: self.publisher, sequence, event: event.clone() }.encode();
        if let Err(mpsc::error::TrySendError::Full(_)) = self.outbox.try_send(bytes) {
            tracing::warn!("the Redis bus is behind; an event was dropped (the other replicas' listeners are told)");
        }
    }

    fn attach(&self, sink: BusSink) {
        let Some(start) = self.start.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return tracing::warn!("a Redis bus was given to a second server; it stays with the first");
        };
        let _runtime = self.runtime.enter();
        let client = start.client.clone();
        self.tasks.spawn(send_in_order(start.client, self.channel.clone(), start.connection, start.outbox));
        self.tasks.spawn(receive(client, self.channel.clone(), start.messages, self.publisher, sink));
    }
}

async fn subscribe(client: &::redis::Client, channel: &str) -> ::redis::RedisResult<::redis::aio::PubSubStream> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(channel).await?;
    Ok(pubsub.into_on_message())
}

/// Tries `connect` until it succeeds, waiting longer each time.
async fn with_backoff<T, F, Fut>(what: &str, mut connect: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ::redis::RedisResult<T>>,
{
    let mut backoff = mcp_bridge_protocol::reopen::Backoff::new(FIRST_BACKOFF, MAX_BACKOFF, Duration::MAX);
    loop {
        match connect().await {
            Ok(connected) => return connected,
            Err(e) => tracing::debug!("reconnecting the Redis bus's {what} failed: {e}"),
        }
        tokio::time::sleep(backoff.wait_after(None)).await;
    }
}

/// Sends the queued events one after the other. When a send fails the
/// connection is made again and the event sent once more (a Redis restart
/// breaks the connection, and its first use says so); one that fails twice
/// is dropped, and the receivers see its number skipped.
async fn send_in_order(
    client: ::redis::Client,
    channel: String,
    mut connection: ::redis::aio::MultiplexedConnection,
    mut outbox: mpsc::Receiver<Vec<u8>>,
) {
    while let Some(bytes) = outbox.recv().await {
        for attempt in 1..=2 {
            let sent: ::redis::RedisResult<i64> =
                ::redis::cmd("PUBLISH").arg(&channel).arg(&bytes).query_async(&mut connection).await;
            let Err(e) = sent else { break };
            tracing::warn!("publishing on the Redis bus failed ({e}); reconnecting");
            connection = with_backoff("publisher", || client.get_multiplexed_async_connection()).await;
            if attempt == 2 {
                tracing::warn!("an event could not be published on the Redis bus; dropped");
            }
        }
    }
}

/// Delivers the other replicas' events to the server's streams, and ends
/// the streams whenever events may have been lost.
async fn receive(
    client: ::redis::Client,
    channel: String,
    mut messages: ::redis::aio::PubSubStream,
    own: u64,
    sink: BusSink,
) {
    let mut tracker = SequenceTracker::default();
    loop {
        while let Some(message) = messages.next().await {
            let envelope = match decode(message.get_payload_bytes(), own) {
                Received::Own => continue,
                Received::Other(envelope) => envelope,
                Received::Foreign => {
                    tracing::debug!("a message on the Redis bus channel is not a change event; ignored");
                    continue;
                }
            };
            let alive = match tracker.observe(&envelope) {
                Continuity::Stale => true,
                Continuity::InOrder => sink.deliver(&envelope.event),
                Continuity::Gap => sink.events_lost() && sink.deliver(&envelope.event),
            };
            if !alive {
                return;
            }
        }
        tracing::warn!("the Redis bus connection was lost; ending the listen streams and reconnecting");
        if !sink.events_lost() {
            return;
        }
        tracker.reset();
        messages = with_backoff("subscription", || subscribe(&client, &channel)).await;
        tracing::info!("the Redis bus is back");
        // Streams opened while it was away may have missed events too.
        if !sink.events_lost() {
            return;
        }
    }
}
