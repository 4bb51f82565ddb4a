//! Fair shares of a capped resource (an endpoint's connections, a bridge's
//! sessions) among the clients holding it: who gives way when a newcomer
//! finds it full, so one client cannot lock the others out. Pure rules:
//! the caller describes what is held and acts on the verdict.
//!
//! The rules, in order, for a newcomer of holder `h`:
//! 1. `h` already holds its cap: its own idlest place is given up.
//! 2. Below the total cap: admitted.
//! 3. At the cap, of the places still reading a request head (a slowloris
//!    client), the one reading the longest of the holder with the most
//!    such places is given up.
//! 4. Else the idlest place of the biggest holder, when that holder has at
//!    least two more than `h`: a holder keeps its share while others want
//!    places, no more.
//! 5. Else (every holder has about as many as `h`) the newcomer is refused.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Instant;

/// One place held, as the rules see it.
#[derive(Debug, Clone)]
pub(crate) struct Held<K, I> {
    /// Which place: the caller's handle to give it up.
    pub id: I,
    /// Who holds it: a peer address, or an authenticated subject.
    pub holder: K,
    /// Since when it has made no progress (no byte read or written; for a
    /// session, no request).
    pub quiet_since: Instant,
    /// Still reading its request head: costs its client nothing to hold,
    /// so it is the first given up.
    pub reading_head: bool,
}

/// The caps the rules keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Places held at once, by everyone.
    pub total: usize,
    /// Places one holder may hold at once, whether or not others want some.
    pub per_holder: usize,
}

/// What to do with a newcomer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict<I> {
    /// There is room: admit it.
    Admit,
    /// Give up this place, then admit the newcomer.
    Shed(I),
    /// Refuse the newcomer (every holder holds no more than its share).
    Refuse,
}

/// The verdict on a newcomer of `holder`, given the places `held` now.
pub(crate) fn admit<K: Eq + Hash, I: Clone>(holder: &K, held: &[Held<K, I>], caps: Caps) -> Verdict<I> {
    let idlest_of = |who: &K| {
        held.iter().filter(|h| &h.holder == who).min_by_key(|h| h.quiet_since).map(|h| Verdict::Shed(h.id.clone()))
    };
    let mut counts: HashMap<&K, usize> = HashMap::new();
    for place in held {
        *counts.entry(&place.holder).or_default() += 1;
    }
    let mine = counts.get(holder).copied().unwrap_or(0);
    if mine >= caps.per_holder {
        return idlest_of(holder).unwrap_or(Verdict::Refuse);
    }
    if held.len() < caps.total {
        return Verdict::Admit;
    }
    // Of the heads, one of the holder reading the most: a client flooding
    // heads gives up its own, not the one head another client is sending
    // while its connection waits to be read (the server's delay, not the
    // client's, made that one older than the flood's newest).
    let mut heads: HashMap<&K, usize> = HashMap::new();
    for place in held.iter().filter(|h| h.reading_head) {
        *heads.entry(&place.holder).or_default() += 1;
    }
    let slowest = held
        .iter()
        .filter(|h| h.reading_head)
        .max_by(|a, b| heads[&a.holder].cmp(&heads[&b.holder]).then_with(|| b.quiet_since.cmp(&a.quiet_since)));
    if let Some(slow) = slowest {
        return Verdict::Shed(slow.id.clone());
    }
    // The biggest holder; of equals, the one with the idlest place.
    let biggest = counts.iter().max_by(|(a, n), (b, m)| {
        let quiet = |who: &K| held.iter().filter(|h| &h.holder == who).map(|h| h.quiet_since).min();
        n.cmp(m).then_with(|| quiet(b).cmp(&quiet(a)))
    });
    match biggest {
        Some((&big, &count)) if count > mine + 1 => idlest_of(big).unwrap_or(Verdict::Refuse),
        _ => Verdict::Refuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn place(id: u32, holder: &'static str, age_s: u64, reading_head: bool, now: Instant) -> Held<&'static str, u32> {
        Held { id, holder, quiet_since: now - Duration::from_secs(age_s), reading_head }
    }

    const CAPS: Caps = Caps { total: 4, per_holder: 4 };

    #[test]
    fn below_the_cap_everyone_is_admitted() {
        let now = Instant::now();
        let held = [place(1, "a", 1, false, now), place(2, "a", 1, true, now)];
        assert_eq!(admit(&"b", &held, CAPS), Verdict::Admit);
        assert_eq!(admit(&"a", &held, CAPS), Verdict::Admit);
    }

    #[test]
    fn at_the_cap_the_oldest_head_still_being_read_goes_first() {
        let now = Instant::now();
        let held = [
            place(1, "a", 50, false, now),
            place(2, "a", 3, true, now),
            place(3, "a", 9, true, now),
            place(4, "b", 1, false, now),
        ];
        assert_eq!(admit(&"b", &held, CAPS), Verdict::Shed(3));
        // A slowloris head goes even for a newcomer of its own holder.
        assert_eq!(admit(&"a", &held, CAPS), Verdict::Shed(3));
    }

    #[test]
    fn at_the_cap_a_flood_of_heads_gives_up_its_own_not_another_clients() {
        let now = Instant::now();
        // b's head waited longer for the server to read it than a's newest.
        let held = [
            place(1, "a", 2, true, now),
            place(2, "a", 1, true, now),
            place(3, "b", 5, true, now),
            place(4, "a", 3, true, now),
        ];
        assert_eq!(admit(&"a", &held, CAPS), Verdict::Shed(4));
        assert_eq!(admit(&"c", &held, CAPS), Verdict::Shed(4));
    }

    #[test]
    fn at_the_cap_the_biggest_holder_gives_up_its_idlest_place() {
        let now = Instant::now();
        let held = [
            place(1, "a", 5, false, now),
            place(2, "a", 30, false, now),
            place(3, "a", 1, false, now),
            place(4, "b", 99, false, now),
        ];
        assert_eq!(admit(&"c", &held, CAPS), Verdict::Shed(2));
        assert_eq!(admit(&"b", &held, CAPS), Verdict::Shed(2));
        // The biggest holder itself gets no more.
        assert_eq!(admit(&"a", &held, CAPS), Verdict::Refuse);
    }

    #[test]
    fn when_shares_are_even_the_newcomer_is_refused() {
        let now = Instant::now();
        let held = [
            place(1, "a", 5, false, now),
            place(2, "a", 30, false, now),
            place(3, "b", 1, false, now),
            place(4, "b", 9, false, now),
        ];
        assert_eq!(admit(&"a", &held, CAPS), Verdict::Refuse);
        // One place more than the newcomer's is its share, not a surplus.
        assert_eq!(admit(&"b", &held, CAPS), Verdict::Refuse);
        // A newcomer with none: a holder of two has two more.
        assert_eq!(admit(&"c", &held, CAPS), Verdict::Shed(2));
    }

    #[test]
    fn of_equal_holders_the_one_with_the_idlest_place_gives_way() {
        let now = Instant::now();
        let held = [
            place(1, "a", 5, false, now),
            place(2, "a", 6, false, now),
            place(3, "b", 1, false, now),
            place(4, "b", 70, false, now),
        ];
        assert_eq!(admit(&"c", &held, CAPS), Verdict::Shed(4));
    }

    #[test]
    fn a_holder_at_its_own_cap_gives_up_its_idlest_place() {
        let now = Instant::now();
        let caps = Caps { total: 10, per_holder: 2 };
        let held = [place(1, "a", 5, false, now), place(2, "a", 60, false, now), place(3, "b", 99, false, now)];
        assert_eq!(admit(&"a", &held, caps), Verdict::Shed(2));
        assert_eq!(admit(&"b", &held, caps), Verdict::Admit);
        assert_eq!(admit(&"c", &held, Caps { total: 10, per_holder: 0 }), Verdict::Refuse);
    }
}
