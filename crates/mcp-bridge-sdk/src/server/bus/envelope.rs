//! The wire form of an event between replicas, and the sequence check that
//! finds lost ones. Pure: no I/O.
//!
//! ```text
//! {"p": publisher id, "n": its sequence number from 1, "e": the ChangeEvent}
//! ```
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

/// What a received envelope means for the streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Continuity {
    /// The next event of its publisher (or the first seen from it).
    InOrder,
    /// Events of its publisher were skipped: some were lost.
    Gap,
    /// This replica's own event, already delivered.
    Own,
    /// An old or repeated number: not delivered again.
    Stale,
}

/// The last sequence number seen from each publisher.
#[derive(Debug)]
pub(crate) struct SequenceTracker {
    own: u64,
    last: HashMap<u64, u64>,
}

impl SequenceTracker {
    /// A tracker for the replica that publishes as `own`.
    pub(crate) fn new(own: u64) -> Self {
        SequenceTracker { own, last: HashMap::new() }
    }

    /// Forgets every publisher: after a reconnection nothing can be
    /// compared with what came before it.
    pub(crate) fn reset(&mut self) {
        self.last.clear();
    }

    pub(crate) fn observe(&mut self, envelope: &Envelope) -> Continuity {
        if envelope.publisher == self.own {
            return Continuity::Own;
        }
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
        let mut tracker = SequenceTracker::new(1);
        assert_eq!(tracker.observe(&from(2, 7)), Continuity::InOrder, "first sight");
        assert_eq!(tracker.observe(&from(2, 8)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(3, 1)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(2, 10)), Continuity::Gap);
        assert_eq!(tracker.observe(&from(2, 11)), Continuity::InOrder);
        assert_eq!(tracker.observe(&from(2, 11)), Continuity::Stale);
        assert_eq!(tracker.observe(&from(2, 12)), Continuity::InOrder, "a stale one moves nothing");
        assert_eq!(tracker.observe(&from(1, 99)), Continuity::Own);
        tracker.reset();
        assert_eq!(tracker.observe(&from(2, 40)), Continuity::InOrder);
    }

    #[test]
    fn envelopes_keep_their_event_on_the_wire() {
        let task_event = ChangeEvent::ResourceUpdated { uri: "note://a".into() };
        let envelope = Envelope { publisher: 5, sequence: 2, event: task_event };
        let wire = serde_json::to_string(&envelope).unwrap();
        assert_eq!(serde_json::from_str::<Envelope>(&wire).unwrap(), envelope);
        assert!(serde_json::from_str::<Envelope>(r#"{"p":1,"n":1,"e":{"kind":"nonsense"}}"#).is_err());
    }
}
