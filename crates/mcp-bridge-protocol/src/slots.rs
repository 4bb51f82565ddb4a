//! The requests in flight on one connection, without I/O: the table a
//! server (the SDK's) and a bridge (its 2025-11-25 sessions) admit requests
//! to, cancel them in and finish them from, with the same rules:
//!
//! - an id already in flight is refused before any limit is counted (the
//!   client gets the error that says what it did wrong);
//! - listen streams last as long as the client wants, so they are bounded on
//!   their own and leave the in-flight bound to the requests that end;
//! - a request is answered or cancelled, never both: [`Slots::cancel`] marks
//!   it, and [`Slots::finish`] gives its handle back only when it was not
//!   marked. Called under one lock, the two exclude each other.
//!
//! The caller keeps a handle per slot (a cancellation token) and does the
//! I/O: it fires the handle [`Slots::cancel`] returns, and answers only
//! what [`Slots::finish`] returns.

use std::collections::HashMap;

use crate::RequestId;

/// The requests in flight, by id, each with the caller's handle `T`.
#[derive(Debug)]
pub struct Slots<T> {
    by_id: HashMap<RequestId, Slot<T>>,
    limit: usize,
    listens: usize,
}

#[derive(Debug)]
struct Slot<T> {
    handle: T,
    kind: Kind,
    cancelled: bool,
}

/// What holds a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A request that ends with its answer.
    Request,
    /// A `subscriptions/listen` stream, open until the client ends it.
    Listen,
}

/// A slot freed by [`Slots::drain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drained<T> {
    /// The request's id.
    pub id: RequestId,
    /// The caller's handle.
    pub handle: T,
    /// Whether the request may still be answered: `false` once cancelled.
    pub answerable: bool,
}

/// Why a request gets no slot (the table's only two rules).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotRefusal {
    /// A request with this id is already in flight.
    #[error("request id {id} is already in flight")]
    DuplicateId {
        /// The id.
        id: RequestId,
    },
    /// As many requests of its kind as the limit allows are in flight.
    #[error("too many requests in flight (limit {limit})")]
    TooMany {
        /// The limit.
        limit: usize,
    },
}

impl<T> Default for Slots<T> {
    /// A table without a limit; [`Slots::new`] sets one.
    fn default() -> Self {
        Slots::new(usize::MAX)
    }
}

impl<T> Slots<T> {
    /// Room for `limit` requests that end and `limit` listen streams.
    pub fn new(limit: usize) -> Self {
        Slots { by_id: HashMap::new(), limit, listens: 0 }
    }

    /// Takes a slot for request `id` of `kind`, keeping `handle` with it.
    ///
    /// # Errors
    /// [`SlotRefusal::DuplicateId`] when the id is in flight (checked first),
    /// [`SlotRefusal::TooMany`] when its kind is at the limit.
    pub fn admit(&mut self, id: RequestId, kind: Kind, handle: T) -> Result<(), SlotRefusal> {
        if self.by_id.contains_key(&id) {
            return Err(SlotRefusal::DuplicateId { id });
        }
        let held = match kind {
            Kind::Listen => self.listens,
            Kind::Request => self.by_id.len() - self.listens,
        };
        if held >= self.limit {
            return Err(SlotRefusal::TooMany { limit: self.limit });
        }
        self.listens += usize::from(kind == Kind::Listen);
        self.by_id.insert(id, Slot { handle, kind, cancelled: false });
        Ok(())
    }

    /// Marks request `id` cancelled, so it is never answered, and gives
    /// its handle to fire; `None` when it is not in flight (answered, or
    /// never admitted).
    pub fn cancel(&mut self, id: &RequestId) -> Option<&T> {
        let slot = self.by_id.get_mut(id)?;
        slot.cancelled = true;
        Some(&slot.handle)
    }

    /// Frees the slot of request `id`; its handle when the request is to be
    /// answered, `None` when it was cancelled or is not in flight (already
    /// answered by someone else, or drained).
    pub fn finish(&mut self, id: &RequestId) -> Option<T> {
        let slot = self.by_id.remove(id)?;
        self.listens -= usize::from(slot.kind == Kind::Listen);
        (!slot.cancelled).then_some(slot.handle)
    }

    /// Frees every slot (a lost upstream, a closed connection): each id
    /// with its handle, for the caller to cancel, and whether it may still
    /// be answered (`false` once cancelled).
    pub fn drain(&mut self) -> Vec<Drained<T>> {
        self.listens = 0;
        self.by_id.drain().map(|(id, slot)| Drained { id, handle: slot.handle, answerable: !slot.cancelled }).collect()
    }

    /// Requests in flight, listen streams included.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The limit of each kind.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[test]
    fn a_duplicate_id_is_refused_before_the_limit_is_counted() {
        let mut slots = Slots::new(1);
        slots.admit(id(1), Kind::Request, ()).unwrap();
        assert_eq!(slots.admit(id(1), Kind::Request, ()), Err(SlotRefusal::DuplicateId { id: id(1) }));
        assert_eq!(slots.admit(id(2), Kind::Request, ()), Err(SlotRefusal::TooMany { limit: 1 }));
    }

    #[test]
    fn listen_streams_are_bounded_on_their_own() {
        let mut slots = Slots::new(2);
        slots.admit(id(1), Kind::Listen, ()).unwrap();
        slots.admit(id(2), Kind::Listen, ()).unwrap();
        assert_eq!(slots.admit(id(3), Kind::Listen, ()), Err(SlotRefusal::TooMany { limit: 2 }));
        slots.admit(id(4), Kind::Request, ()).unwrap();
        slots.admit(id(5), Kind::Request, ()).unwrap();
        assert_eq!(slots.admit(id(6), Kind::Request, ()), Err(SlotRefusal::TooMany { limit: 2 }));
        assert_eq!(slots.finish(&id(1)), Some(()));
        slots.admit(id(3), Kind::Listen, ()).unwrap();
    }

    #[test]
    fn a_cancelled_request_is_never_answered() {
        let mut slots = Slots::new(4);
        slots.admit(id(1), Kind::Request, "token").unwrap();
        assert_eq!(slots.cancel(&id(1)), Some(&"token"));
        assert_eq!(slots.finish(&id(1)), None, "cancelled: no answer");
        assert_eq!(slots.cancel(&id(1)), None, "gone");
        slots.admit(id(1), Kind::Request, "again").unwrap();
        assert_eq!(slots.finish(&id(1)), Some("again"));
        assert_eq!(slots.finish(&id(1)), None, "answered once");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Admit(i64, bool),
        Cancel(i64),
        Finish(i64),
        Drain,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0i64..6, any::<bool>()).prop_map(|(n, listen)| Op::Admit(n, listen)),
            (0i64..6).prop_map(Op::Cancel),
            (0i64..6).prop_map(Op::Finish),
            Just(Op::Drain),
        ]
    }

    proptest! {
        /// Whatever the order of events, each admitted request is answered
        /// at most once and never after its cancel, and neither kind ever
        /// holds more than the limit.
        #[test]
        fn answered_xor_cancelled_and_the_limits_hold(ops in proptest::collection::vec(op(), 0..60)) {
            let mut slots = Slots::new(3);
            // Per id in flight: its admission, and whether it was cancelled.
            let mut model: HashMap<i64, (u32, bool)> = HashMap::new();
            let mut admissions = 0u32;
            for op in ops {
                match op {
                    Op::Admit(n, listen) => {
                        admissions += 1;
                        let kind = if listen { Kind::Listen } else { Kind::Request };
                        if slots.admit(id(n), kind, admissions).is_ok() {
                            prop_assert!(model.insert(n, (admissions, false)).is_none());
                        }
                    }
                    Op::Cancel(n) => {
                        if let Some(handle) = slots.cancel(&id(n)) {
                            let entry = model.get_mut(&n).unwrap();
                            prop_assert_eq!(*handle, entry.0);
                            entry.1 = true;
                        }
                    }
                    Op::Finish(n) => {
                        let answered = slots.finish(&id(n));
                        if let Some((admission, cancelled)) = model.remove(&n) {
                            prop_assert_eq!(answered, (!cancelled).then_some(admission));
                        } else {
                            prop_assert_eq!(answered, None);
                        }
                    }
                    Op::Drain => {
                        let mut drained: Vec<(u32, bool)> =
                            slots.drain().into_iter().map(|d| (d.handle, d.answerable)).collect();
                        let mut expected: Vec<(u32, bool)> =
                            model.drain().map(|(_, (admission, cancelled))| (admission, !cancelled)).collect();
                        drained.sort_unstable();
                        expected.sort_unstable();
                        prop_assert_eq!(drained, expected);
                    }
                }
                prop_assert_eq!(slots.len(), model.len());
                prop_assert!(slots.listens <= 3 && slots.len() - slots.listens <= 3);
            }
        }
    }
}
