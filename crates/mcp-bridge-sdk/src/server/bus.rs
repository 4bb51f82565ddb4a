//! The change-event bus: how an event published on one replica of a server
//! reaches the listen streams held by the others.
//!
//! A [`Server`](super::Server) delivers what it publishes to its own streams
//! at once (so a handler's event still reaches its client before the
//! handler's result), then hands it to its [`ChangeBus`], which carries it to
//! the other replicas. A bus that may have lost events (its connection
//! dropped, a publisher's sequence skipped) says so with
//! [`BusSink::events_lost`]: every stream ends with an error its client reads
//! as "open a new stream and list again" ([`crate::Error::is_events_lost`]),
//! so nothing is lost silently.
//!
//! Two buses ship: [`InProcessBus`], for servers in one process (and tests),
//! and `RedisBus` (feature `redis`), Redis pub/sub between processes.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::subscriptions::{ChangeEvent, Hub};

#[cfg(feature = "redis")]
mod envelope;
#[cfg(feature = "redis")]
pub mod redis;

/// One server's link to a bus shared with the server's other replicas.
pub trait ChangeBus: Send + Sync + std::fmt::Debug + 'static {
    /// Carries an event this server published to the other members, in
    /// the order of the calls. Must not wait on them, nor on the network: a
    /// slow member or a lost connection never blocks a publisher.
    fn publish(&self, event: &ChangeEvent);

    /// Starts delivering the other members' events to `sink`. Called once,
    /// when the server is built.
    fn attach(&self, sink: BusSink);

    /// Whether the members can be other processes. A server on such a bus
    /// needs state keys of its own ([`super::ServerBuilder::state_keys`]):
    /// the replicas must open each other's `requestState`.
    fn crosses_processes(&self) -> bool {
        true
    }
}

/// Where a bus delivers the other members' events: one server's listen
/// streams. Holds the server weakly: a bus never keeps a server alive.
#[derive(Debug, Clone)]
pub struct BusSink {
    hub: Weak<Hub>,
}

impl BusSink {
    pub(crate) fn new(hub: &Arc<Hub>) -> Self {
        BusSink { hub: Arc::downgrade(hub) }
    }

    /// Delivers an event another member published to this server's streams
    /// that asked for it. False once the server is gone (the bus can stop).
    pub fn deliver(&self, event: &ChangeEvent) -> bool {
        self.hub.upgrade().map(|hub| hub.deliver_remote(event)).is_some()
    }

    /// Ends every listen stream of the server with the events-lost error:
    /// the bus may have lost events some of them wanted. False once the
    /// server is gone.
    pub fn events_lost(&self) -> bool {
        self.hub.upgrade().map(|hub| hub.events_lost()).is_some()
    }
}

/// A bus between servers in one process: each [`InProcessBus::member`]
/// goes to one server, and what any of them publishes reaches the others
/// synchronously.
#[derive(Debug, Clone, Default)]
pub struct InProcessBus {
    members: Arc<Mutex<Vec<Weak<InProcessLink>>>>,
}

impl InProcessBus {
    /// An empty bus.
    pub fn new() -> Self {
        InProcessBus::default()
    }

    /// A new member, for one server's [`super::ServerBuilder::change_bus`].
    pub fn member(&self) -> Arc<dyn ChangeBus> {
        let link = Arc::new(InProcessLink { bus: self.clone(), sink: OnceLock::new() });
        self.lock().push(Arc::downgrade(&link));
        link
    }

    /// Tells every member that events were lost, as a real bus does when
    /// its connection drops: each member's streams end with the
    /// events-lost error.
    pub fn interrupt(&self) {
        for link in self.links() {
            if let Some(sink) = link.sink.get() {
                sink.events_lost();
            }
        }
    }

    fn links(&self) -> Vec<Arc<InProcessLink>> {
        let mut members = self.lock();
        members.retain(|m| m.strong_count() > 0);
        members.iter().filter_map(Weak::upgrade).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Weak<InProcessLink>>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One member of an [`InProcessBus`].
#[derive(Debug)]
struct InProcessLink {
    bus: InProcessBus,
    sink: OnceLock<BusSink>,
}

impl ChangeBus for InProcessLink {
    fn publish(&self, event: &ChangeEvent) {
        for link in self.bus.links() {
            if !std::ptr::eq(Arc::as_ptr(&link), self)
                && let Some(sink) = link.sink.get()
            {
                sink.deliver(event);
            }
        }
    }

    fn attach(&self, sink: BusSink) {
        // A second attach (the same member given to two servers) is a
        // mistake; the first server keeps the member.
        if self.sink.set(sink).is_err() {
            tracing::warn!("an in-process bus member was given to a second server; it stays with the first");
        }
    }

    fn crosses_processes(&self) -> bool {
        false
    }
}
