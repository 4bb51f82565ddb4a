//! A running toolset made to follow a new version of its configuration
//! file: servers added, removed or changed start and stop, the others'
//! clients (and so their sessions) go on. What changes is decided by
//! [`plan`], a rule without I/O.

use super::Toolset;
use super::config::{ServerEntry, connector};
use super::member::Member;

/// What a new configuration changed in a running toolset, by server name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reconfigured {
    /// Servers new in the file: started.
    pub added: Vec<String>,
    /// Servers gone from the file (or disabled): stopped.
    pub removed: Vec<String>,
    /// Servers now reached another way (command, arguments, environment,
    /// URL, headers): stopped and started again.
    pub restarted: Vec<String>,
    /// Servers of which only what is shown changed (filters, renames,
    /// prefix) or who may use it (`authorize`): their lists redone, their
    /// connection kept.
    pub reshaped: Vec<String>,
}

impl Reconfigured {
    /// Whether the new configuration changed nothing.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.restarted.is_empty() && self.reshaped.is_empty()
    }
}

impl std::fmt::Display for Reconfigured {
    /// `added a, b; removed c`, or `no change`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            ("added", &self.added),
            ("removed", &self.removed),
            ("restarted", &self.restarted),
            ("reshaped", &self.reshaped),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("{what} {}", names.join(", ")))
        .collect();
        if parts.is_empty() { f.write_str("no change") } else { f.write_str(&parts.join("; ")) }
    }
}

/// What going from the `running` entries to the `wanted` ones changes.
pub(super) fn plan(running: &[ServerEntry], wanted: &[ServerEntry]) -> Reconfigured {
    let mut plan = Reconfigured::default();
    for entry in wanted {
        match running.iter().find(|r| r.name == entry.name) {
            None => plan.added.push(entry.name.clone()),
            Some(old) if old.kind != entry.kind => plan.restarted.push(entry.name.clone()),
            Some(old)
                if old.exposure != entry.exposure
                    || old.authorize != entry.authorize
                    || old.pinned != entry.pinned
                    || old.sharing != entry.sharing =>
            {
                plan.reshaped.push(entry.name.clone());
            }
            Some(_) => {}
        }
    }
    plan.removed =
        running.iter().filter(|r| !wanted.iter().any(|w| w.name == r.name)).map(|r| r.name.clone()).collect();
    plan
}

impl Toolset {
    /// Makes the configured servers those of `entries` (a configuration
    /// file read again; see [`ToolsetBuilder::configured_each`]): a server
    /// gone is stopped, a new one started, one reached another way
    /// restarted, one whose filters, renames or prefix changed re-listed
    /// over its connection; the others are left alone. Returns once the
    /// started servers answered or failed their first attempt; the lists
    /// change (see [`Toolset::changes`]) as servers come and go. Two calls
    /// run one after the other.
    ///
    /// [`ToolsetBuilder::configured_each`]: super::ToolsetBuilder::configured_each
    pub async fn reconfigure(
        &self,
        entries: Vec<ServerEntry>,
        options_for: impl Fn(&str) -> crate::ClientOptions,
    ) -> Reconfigured {
        let mut configured = self.shared.configured.lock().await;
        let plan = plan(&configured, &entries);
        for name in &plan.removed {
            self.remove_server(name).await;
        }
        let named = |name: &String| entries.iter().find(|e| &e.name == name);
        for entry in plan.reshaped.iter().filter_map(named) {
            self.set_exposure(&entry.name, entry.exposure.clone());
        }
        let started = plan.restarted.iter().chain(&plan.added).filter_map(named);
        let members = started
            .map(|e| Member::new(e.name.clone(), e.exposure.clone(), connector(&e.kind, options_for(&e.name))))
            .collect();
        self.start_members(members).await;
        *configured = entries;
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolset::config::ServerKind;
    use crate::toolset::exposure::{Exposure, Prefix};

    fn entry(name: &str, command: &str, prefix: Prefix) -> ServerEntry {
        ServerEntry {
            name: name.into(),
            kind: ServerKind::Command { command: command.into(), args: Vec::new(), env: Vec::new() },
            exposure: Exposure::default().with_prefix(prefix),
            authorize: Default::default(),
            pinned: Default::default(),
            sharing: Default::default(),
            idle: None,
        }
    }

    #[test]
    fn a_new_file_adds_removes_restarts_and_reshapes_by_what_changed() {
        let running = [
            entry("same", "a", Prefix::Always),
            entry("gone", "b", Prefix::Always),
            entry("moved", "c", Prefix::Always),
            entry("shown", "d", Prefix::Always),
        ];
        let wanted = [
            entry("shown", "d", Prefix::Never),
            entry("moved", "c2", Prefix::Always),
            entry("same", "a", Prefix::Always),
            entry("new", "e", Prefix::Always),
        ];
        let plan = plan(&running, &wanted);
        assert_eq!(plan.added, ["new"]);
        assert_eq!(plan.removed, ["gone"]);
        assert_eq!(plan.restarted, ["moved"], "another command: connected again");
        assert_eq!(plan.reshaped, ["shown"], "only the prefix: the connection stays");
        assert_eq!(plan.to_string(), "added new; removed gone; restarted moved; reshaped shown");
    }

    #[test]
    fn the_same_file_changes_nothing() {
        let running = [entry("a", "a", Prefix::Always)];
        let plan = plan(&running, &running);
        assert!(plan.is_empty());
        assert_eq!(plan.to_string(), "no change");
    }
}
