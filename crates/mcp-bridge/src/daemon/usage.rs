//! Which servers a daemon keeps running: those an attached client uses,
//! and those whose last client left less than their idle time ago. No I/O:
//! the daemon asks and applies.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How each server is used.
#[derive(Debug, Default)]
pub(super) struct Usage {
    servers: HashMap<String, Use>,
}

#[derive(Debug)]
struct Use {
    /// Clients attached with it.
    clients: usize,
    /// When the last client left; `None` while one is attached.
    left: Option<Instant>,
    /// How long it runs on after the last client left.
    idle: Duration,
}

impl Usage {
    /// A client attached with the servers `names`; `idle` says how long
    /// each runs on once unused.
    pub(super) fn attach<'a>(&mut self, names: impl IntoIterator<Item = &'a String>, idle: impl Fn(&str) -> Duration) {
        for name in names {
            let used = self.servers.entry(name.clone()).or_insert(Use { clients: 0, left: None, idle: idle(name) });
            used.clients += 1;
            used.left = None;
            used.idle = idle(name);
        }
    }

    /// A client attached with `names` left at `now`.
    pub(super) fn detach<'a>(&mut self, names: impl IntoIterator<Item = &'a String>, now: Instant) {
        for name in names {
            if let Some(used) = self.servers.get_mut(name) {
                used.clients = used.clients.saturating_sub(1);
                if used.clients == 0 {
                    used.left = Some(now);
                }
            }
        }
    }

    /// How many clients use the server `name`.
    pub(super) fn clients_of(&self, name: &str) -> usize {
        self.servers.get(name).map_or(0, |used| used.clients)
    }

    /// The servers to keep running at `now`; those idle for their time
    /// are forgotten.
    pub(super) fn wanted(&mut self, now: Instant) -> BTreeSet<String> {
        self.servers.retain(|_, used| used.left.is_none_or(|left| now.saturating_duration_since(left) < used.idle));
        self.servers.keys().cloned().collect()
    }

    /// When the next unused server's idle time runs out (an idle time
    /// beyond the clock's range never does).
    pub(super) fn next_expiry(&self) -> Option<Instant> {
        self.servers.values().filter_map(|used| used.left?.checked_add(used.idle)).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn a_server_runs_while_used_and_for_its_idle_time_after() {
        let start = Instant::now();
        let idle = |name: &str| if name == "quick" { Duration::from_secs(1) } else { Duration::from_secs(600) };
        let mut usage = Usage::default();
        usage.attach(&names(&["quick", "slow"]), idle);
        usage.attach(&names(&["slow"]), idle);
        assert_eq!(usage.clients_of("slow"), 2);
        assert_eq!(usage.wanted(start), BTreeSet::from(["quick".into(), "slow".into()]));
        assert_eq!(usage.next_expiry(), None, "every server is in use");

        usage.detach(&names(&["quick", "slow"]), start);
        assert_eq!(usage.next_expiry(), Some(start + Duration::from_secs(1)), "slow still has a client");
        assert_eq!(usage.wanted(start + Duration::from_millis(999)).len(), 2);
        assert_eq!(usage.wanted(start + Duration::from_secs(1)), BTreeSet::from(["slow".into()]));
        assert_eq!(usage.clients_of("quick"), 0);

        usage.detach(&names(&["slow"]), start + Duration::from_secs(2));
        usage.attach(&names(&["slow"]), idle);
        assert_eq!(usage.next_expiry(), None, "back in use before its time ran out");
        usage.detach(&names(&["slow"]), start + Duration::from_secs(3));
        assert!(usage.wanted(start + Duration::from_secs(603)).is_empty());
        assert_eq!(usage.next_expiry(), None);
    }

    #[test]
    fn an_idle_time_beyond_the_clock_never_runs_out() {
        let start = Instant::now();
        let mut usage = Usage::default();
        usage.attach(&names(&["forever"]), |_| Duration::MAX);
        usage.detach(&names(&["forever"]), start);
        assert_eq!(usage.next_expiry(), None);
        assert_eq!(usage.wanted(start + Duration::from_secs(1 << 40)).len(), 1);
    }
}
