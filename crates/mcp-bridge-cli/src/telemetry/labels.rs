//! Label values from the network, bounded: a client names any tool it
//! likes, and each distinct name would be a new time series kept for the
//! life of the process.

use std::collections::HashSet;
use std::sync::Mutex;

/// Distinct tool names kept as labels; past it, new names count as
/// [`OTHER`]. Far above any real server's tool count (the largest real
/// servers list about a hundred), far below what would make a scrape slow.
const MAX_DISTINCT: usize = 1000;

/// The label of every name past the cap.
pub(super) const OTHER: &str = "_other";

/// The names seen so far.
#[derive(Default)]
pub(super) struct BoundedNames(Mutex<HashSet<String>>);

impl BoundedNames {
    /// `name` as a label: itself when seen before or while there is room,
    /// else [`OTHER`].
    pub(super) fn label(&self, name: &str) -> String {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if seen.contains(name) {
            return name.to_owned();
        }
        if seen.len() < MAX_DISTINCT {
            seen.insert(name.to_owned());
            return name.to_owned();
        }
        OTHER.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_past_the_cap_share_one_label() {
        let names = BoundedNames::default();
        for n in 0..MAX_DISTINCT {
            assert_eq!(names.label(&n.to_string()), n.to_string());
        }
        assert_eq!(names.label("one more"), OTHER);
        assert_eq!(names.label("7"), "7");
    }
}
