//! The buffer of the last long line written, kept a short while for the
//! next long line read: relaying large results one after another then
//! reuses one buffer's pages instead of faulting in fresh ones for each
//! (see [`LONG_LINE`]). One buffer for the whole process, whichever stream
//! wrote the line and whichever reads the next: it is a cache of memory,
//! not a part of any stream's state.

use std::sync::{Mutex, MutexGuard};

use tokio::time::Instant;

use crate::limits::{LONG_LINE, LONG_LINE_BUFFER_KEPT};

/// The kept buffer with the number of its keeping, so that a writer lets
/// go of the buffer it kept only, not of one kept after it.
struct Spare {
    kept: Option<(u64, Vec<u8>)>,
    keepings: u64,
}

static SPARE: Mutex<Spare> = Mutex::new(Spare { kept: None, keepings: 0 });

fn spare() -> MutexGuard<'static, Spare> {
    // The data is a buffer: a panic while it was held left nothing to repair.
    SPARE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A writer's hold on the buffer it kept: the buffer is let go of when
/// this is dropped (the writer kept another, its time ran out, or the
/// writer ended), unless a reader took it first.
#[derive(Debug)]
pub(crate) struct Kept {
    number: u64,
    until: Instant,
}

impl Kept {
    /// When the writer should let go of the buffer if no reader took it.
    pub(crate) fn until(&self) -> Instant {
        self.until
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let mut spare = spare();
        let freed = spare.kept.take_if(|(kept, _)| *kept == self.number);
        drop(spare);
        drop(freed);
    }
}

/// Keeps `buffer` for the next long line when it is large enough to be
/// worth it, in place of any kept before. Its bytes do not matter: the
/// reader's framer empties it when it adopts it.
pub(crate) fn keep(buffer: Vec<u8>) -> Option<Kept> {
    if buffer.capacity() < LONG_LINE {
        return None;
    }
    let mut spare = spare();
    spare.keepings = spare.keepings.wrapping_add(1);
    let number = spare.keepings;
    let replaced = spare.kept.replace((number, buffer));
    drop(spare);
    drop(replaced);
    Some(Kept { number, until: Instant::now() + LONG_LINE_BUFFER_KEPT })
}

/// The kept buffer, if there is one.
pub(crate) fn take() -> Option<Vec<u8>> {
    spare().kept.take().map(|(_, buffer)| buffer)
}
