//! The wire form of an event between replicas, and the sequence check that
//! finds lost ones. Pure: no I/O.
//!
//! ```text
//! PPPPPPPPPPPPPPPP {"p": publisher id, "n": its sequence number from 1, "e": the ChangeEvent}
//! ```
//!
//! The 16 hex digits in front repeat the publisher id, so a replica drops
//! its own events (every subscriber gets them back) without parsing them.
//!
//! Each publisher numbers its events; a receiver that sees a number skip
//! knows events of that publisher were lost (a publish that failed while
//! the receiver's own connection stayed up), which pub/sub alone would
//! never tell it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::server::ChangeEvent;

/// Publishers remembered before the oldest are forgotten: replicas that
/// restarted leave their ids behind.
const MAX_PUBLISHERS: usize = 4096;

/// One event on the bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Envelope {
    #[serde(rename = "p")]
    pub(crate) publisher: u64,
    #[serde(rename = "n")]
    pub(crate) sequence: u64,
    #[serde(rename = "e")]
    pub(crate) event: ChangeEvent,
}

impl Envelope {
    /// The bytes published.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut bytes = format!("{:016x} ", self.publisher).into_bytes();
        // A ChangeEvent always serializes: its members are JSON already.
        serde_json::to_writer(&mut bytes, self).expect("invariant: an envelope serializes");
        bytes
    }
}

/// What arrived on the bus, read as far as needed.
#[derive(Debug, PartialEq)]
pub(crate) enum Received {
    /// An event of this replica, not parsed.
    Own,
    /// Another replica's event.
    Other(Envelope),
    /// Not an envelope (another program on the channel).
    Foreign,
}

/// Reads a message published on the bus by the replica `own` or another.
pub(crate) fn decode(bytes: &[u8], own: u64) -> Received {
    let Some((prefix, body)) = bytes.split_at_checked(17) else { return Received::Foreign };
    if prefix[16] != b' ' {
        return Received::Foreign;
    }
    let publisher = std::str::from_utf8(&prefix[..16]).ok().and_then(|hex| u64::from_str_radix(hex, 16).ok());
    match publisher {
        Some(publisher) if publisher == own => Received::Own,
        Some(publisher) => match serde_json::from_slice::<Envelope>(body) {
            Ok(envelope) if envelope.publisher == publisher => Received::Other(envelope),
            _ => Received::Foreign,
        },
        None => Received::Foreign,
    }
}

/// What a received envelope means for the streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Continuity {
    /// The next event of its publisher (or the first seen from it).
    InOrder,
    /// Events of its publisher were skipped: some were lost.
    Gap,
    /// An old or repeated number: not delivered again.
    Stale,
}

/// The last sequence number seen from each other publisher.
#[derive(Debug, Default)]
pub(crate) struct SequenceTracker {
    last: HashMap<u64, u64>,
}

impl SequenceTracker {
    /// Forgets every publisher: after a reconnection nothing can be
    /// compared with what came before it.
    pub(crate) fn reset(&mut self) {
        self.last.clear();
    }

    pub(crate) fn observe(&mut self, envelope: &Envelope) -> Continuity {
        if self.last.len() >= MAX_PUBLISHERS && !self.last.contains_key(&envelope.publisher) {
            self.last.clear();
        }
        let previous = self.last.insert(envelope.publisher, envelope.sequence);
        match previous {
            None => Continuity::InOrder,
            Some(last) if envelope.sequence == last + 1 => Continuity::InOrder,
            Some(last) if envelope.sequence > last => Continuity::Gap,
            Some(last) => {
                self.last.insert(envelope.publisher, last);
                Continuity::Stale
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(publisher: u64, sequence: u64) -> Envelope {
        Envelope { publisher, sequence, event: ChangeEvent::ToolsListChanged }
    }

    #[test]
    fn a_skipped_number_is_a_gap_and_each_publisher_counts_alone() {
        let mut tracker = SequenceTracker::default();
        assert_eq!(tracker.observe(&from(2, 7)), Continuity::InOrder, "first sight");
        assert_eq!(tracker.observe(&from(2, 8)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(3, 1)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(2, 10)), Continuity::Gap);
        assert_eq!(tracker.observe(&from(2, 11)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(2, 11)), Continuity::Stale);
        assert_eq!(tracker.observe(&from(2, 12)), Continuity::InOrder, "a stale one moves nothing");
        tracker.reset();
        assert_eq!(tracker.observe(&from(2, 40)), Continuity::InOrder);
    }

    #[test]
    fn envelopes_keep_their_event_on_the_wire_and_own_ones_are_not_parsed() {
        let event = ChangeEvent::ResourceUpdated { uri: "note://a".into() };
        let envelope = Envelope { publisher: 5, sequence: 2, event };
        let wire = envelope.encode();
        assert!(wire.starts_with(b"0000000000000005 {"), "{}", String::from_utf8_lossy(&wire));
        assert_eq!(decode(&wire, 9), Received::Other(envelope.clone()));
        assert_eq!(decode(&wire, 5), Received::Own);
        let mut own_but_broken = b"0000000000000005 ".to_vec();
        own_but_broken.extend_from_slice(b"not json");
        assert_eq!(decode(&own_but_broken, 5), Received::Own, "never parsed");
        for foreign in [
            &b"hello"[..],
            b"000000000000000x {}",
            b"0000000000000001 {\"p\":2,\"n\":1,\"e\":{\"kind\":\"toolsListChanged\"}}",
            b"0000000000000001 {\"p\":1,\"n\":1,\"e\":{\"kind\":\"nonsense\"}}",
        ] {
            assert_eq!(decode(foreign, 9), Received::Foreign, "{}", String::from_utf8_lossy(foreign));
        }
    }
}
