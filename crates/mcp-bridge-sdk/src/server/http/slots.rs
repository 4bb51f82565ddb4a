//! The places under an endpoint's connection cap, held by client address.
//! A newcomer at the cap takes the place of a connection still reading its
//! head, or of the idlest connection of the biggest holder (the rules of
//! [`crate::server::shares`]), which is closed at once.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;

use super::activity::Activity;
use crate::server::shares::{self, Caps, Held, Verdict};

/// Every place under one endpoint's cap.
#[derive(Debug)]
pub(crate) struct Slots {
    cap: usize,
    held: Mutex<Places>,
}

#[derive(Debug, Default)]
struct Places {
    next: u64,
    by_id: HashMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    holder: IpAddr,
    activity: Arc<Activity>,
    shed: CancellationToken,
}

/// One connection's place, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    slots: Arc<Slots>,
    /// The client's address.
    pub(crate) client: SocketAddr,
    /// What the connection is doing, which the rules read.
    pub(crate) activity: Arc<Activity>,
    /// Cancelled when the place is given up to a newcomer.
    pub(crate) shed: CancellationToken,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.lock().by_id.remove(&self.id);
    }
}

impl Slots {
    /// Room for `cap` connections.
    pub(crate) fn new(cap: usize) -> Arc<Slots> {
        Arc::new(Slots { cap, held: Mutex::default() })
    }

    fn lock(&self) -> MutexGuard<'_, Places> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a connection of `client`, after closing the one it
    /// replaces; `None` when it is refused (every client holds its share).
    pub(crate) fn take(self: &Arc<Self>, client: SocketAddr) -> Option<Slot> {
        let mut held = self.lock();
        if held.by_id.len() >= self.cap {
            let places: Vec<Held<IpAddr, u64>> = held
                .by_id
                .iter()
                .map(|(id, entry)| Held {
                    id: *id,
                    holder: entry.holder,
                    quiet_since: entry.activity.quiet_since().into_std(),
                    reading_head: entry.activity.reading_head(),
                })
                .collect();
            // No cap of its own: a holder gives way only when others want places.
            let caps = Caps { total: self.cap, per_holder: usize::MAX };
            match shares::admit(&client.ip(), &places, caps) {
                Verdict::Admit => {}
                Verdict::Shed(id) => {
                    if let Some(entry) = held.by_id.remove(&id) {
                        tracing::debug!(holder = %entry.holder, "giving a connection's place to another client");
                        entry.shed.cancel();
                    }
                }
                Verdict::Refuse => return None,
            }
        }
        held.next += 1;
        let (id, activity, shed) = (held.next, Activity::new(), CancellationToken::new());
        held.by_id.insert(id, Entry { holder: client.ip(), activity: activity.clone(), shed: shed.clone() });
        Some(Slot { id, slots: self.clone(), client, activity, shed })
    }
}
