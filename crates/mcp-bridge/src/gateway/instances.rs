//! The servers a gateway runs once per client (`"sharing":
//! "per-session"`): a stateful server that must not be shared gets an
//! instance of its own (its own process, or its own connection) for each
//! client. The toolset's own instance of the server lists what it offers;
//! tool calls go to the caller's.
//!
//! Whose instance a request uses: a 2025-11-25 session's (each session has
//! a connection of its own to the gateway), or on a connection that lasts
//! (stdio, a WebSocket) that connection's. A 2026-07-28 request over HTTP
//! belongs to no session: it uses its caller's instance (its token's
//! issuer and subject, else client; every caller without either is one).
//!
//! A call holds its instance ([`Lease`]) until it ends, input rounds
//! included: an instance in use is never ended for being idle or for the
//! cap. A dead instance (its process exited) is replaced at the next call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_bridge_sdk::server::RequestContext;
use mcp_bridge_sdk::toolset::config::ServerEntry;
use mcp_bridge_sdk::{Client, ClientOptions};

/// How long an instance nobody uses lives on: then it ends (its process
/// too). A session's instance ends at most this long (and a reaping
/// round) after the session.
pub(super) const IDLE: Duration = Duration::from_secs(5 * 60);

/// Instances of one server at once: each may be a process. One more ends
/// the instance unused the longest, or is refused when every one is in use.
const MAX_PER_SERVER: usize = 64;

/// Whose instance a request uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Holder {
    /// The connection's (a session's, a WebSocket's, stdio's).
    Connection(u64),
    /// The caller's, by its token's issuer and subject or client: a
    /// 2026-07-28 request over HTTP.
    Principal(String),
}

impl Holder {
    /// The holder of the request of `ctx`.
    pub(super) fn of(ctx: &RequestContext) -> Holder {
        if let Some(id) = ctx.connection_id() {
            return Holder::Connection(id);
        }
        let Some(caller) = ctx.caller.as_deref() else { return Holder::Principal("anonymous".into()) };
        let issuer = caller.claims.get("iss").and_then(serde_json::Value::as_str).unwrap_or_default();
        Holder::Principal(match (&caller.subject, &caller.client_id) {
            (Some(subject), _) => format!("subject {issuer} {subject}"),
            (None, Some(client)) => format!("client {issuer} {client}"),
            (None, None) => "anonymous".into(),
        })
    }

    /// The name under which the relays know the instance of `server` for
    /// this holder: its input requests go to its own calls only.
    pub(super) fn relay_key(&self, server: &str) -> String {
        format!("{server}\u{1f}{self:?}")
    }
}

/// What the instances of a server need of their gateway: how a client of
/// one speaks (given its relay key) and what to forget when one ends.
pub(super) trait Host: Send + Sync + 'static {
    /// The options of a new instance's client.
    fn options(&self, server: &str, relay_key: &str) -> ClientOptions;
    /// An instance ended: its relay key is free.
    fn ended(&self, relay_key: &str);
}

struct Instance {
    client: Client,
    /// The entry it was started from: another means it is stale.
    entry: ServerEntry,
    relay_key: String,
    use_: Arc<Use>,
}

/// How an instance is used: calls under way, and when the last ended.
struct Use {
    calls: AtomicUsize,
    last: Mutex<Instant>,
    /// Told when the last call under way ends.
    unused: tokio::sync::Notify,
}

impl Use {
    fn idle_since(&self) -> Option<Instant> {
        (self.calls.load(Ordering::Acquire) == 0).then(|| *self.last.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A call's hold on its instance, released when dropped.
pub(super) struct Lease {
    /// The instance's client.
    pub(super) client: Client,
    use_: Arc<Use>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        *self.use_.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        if self.use_.calls.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.use_.unused.notify_waiters();
        }
    }
}

/// The running instances, by server and holder.
pub(super) struct Instances {
    running: Mutex<HashMap<(String, Holder), Instance>>,
    host: Arc<dyn Host>,
}

impl Instances {
    /// No instance yet; `host` makes their clients.
    pub(super) fn new(host: Arc<dyn Host>) -> Self {
        Instances { running: Mutex::default(), host }
    }

    /// A hold on `entry`'s instance for `holder`, started now when it has
    /// none, when it is dead, or when it was started from another entry.
    ///
    /// # Errors
    /// Why none can be had: the server cannot be started, or every one
    /// of the cap is in use.
    pub(super) fn lease(&self, entry: &ServerEntry, holder: &Holder) -> mcp_bridge_sdk::Result<Lease> {
        let key = (entry.name.clone(), holder.clone());
        let mut ended = Vec::new();
        let leased = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(instance) = running.get(&key)
                && (instance.entry != *entry || instance.client.process().is_some_and(|p| p.has_exited()))
            {
                ended.extend(running.remove(&key));
            }
            match running.get(&key) {
                Some(instance) => Ok(lease(instance)),
                None => self.start(&mut running, key, entry, &mut ended),
            }
        };
        self.end(ended);
        leased
    }

    /// Starts the instance `key` of `entry`, ending the one unused the
    /// longest at the cap. Under the lock: starting is a spawn, not a wait.
    fn start(
        &self,
        running: &mut HashMap<(String, Holder), Instance>,
        key: (String, Holder),
        entry: &ServerEntry,
        ended: &mut Vec<Instance>,
    ) -> mcp_bridge_sdk::Result<Lease> {
        let of_server: Vec<_> = running.iter().filter(|((server, _), _)| *server == entry.name).collect();
        if of_server.len() >= MAX_PER_SERVER {
            let idlest = of_server
                .iter()
                .filter_map(|(k, i)| Some(((*k).clone(), i.use_.idle_since()?)))
                .min_by_key(|(_, since)| *since);
            let Some((idlest, _)) = idlest else { return Err(mcp_bridge_sdk::Error::Busy { limit: MAX_PER_SERVER }) };
            ended.extend(running.remove(&idlest));
        }
        let relay_key = key.1.relay_key(&entry.name);
        let client = entry.client(self.host.options(&entry.name, &relay_key))?;
        let use_ = Arc::new(Use {
            calls: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
            unused: tokio::sync::Notify::new(),
        });
        let instance = Instance { client, entry: entry.clone(), relay_key, use_ };
        let leased = lease(&instance);
        running.insert(key, instance);
        Ok(leased)
    }

    /// Ends the instances unused for [`IDLE`].
    pub(super) fn reap(&self) {
        let now = Instant::now();
        let ended = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            let idle: Vec<_> = running
                .iter()
                .filter(|(_, i)| i.use_.idle_since().is_some_and(|since| now - since >= IDLE))
                .map(|(k, _)| k.clone())
                .collect();
            idle.iter().filter_map(|key| running.remove(key)).collect()
        };
        self.end(ended);
    }

    /// Ends every instance of the server `name` not started from `keep`
    /// (the server is gone when `keep` is `None`). Calls under way finish
    /// on them first.
    pub(super) fn end_stale(&self, name: &str, keep: Option<&ServerEntry>) {
        let ended = {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            let stale: Vec<_> = running
                .iter()
                .filter(|((server, _), i)| server == name && keep != Some(&i.entry))
                .map(|(k, _)| k.clone())
                .collect();
            stale.iter().filter_map(|key| running.remove(key)).collect()
        };
        self.end(ended);
    }

    /// How many instances of the server `name` run.
    pub(super) fn count(&self, name: &str) -> usize {
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.keys().filter(|(server, _)| server == name).count()
    }

    /// Ends instances, each on a task: its process gets the time to exit,
    /// after the calls that hold it.
    fn end(&self, ended: Vec<Instance>) {
        for instance in ended {
            self.host.ended(&instance.relay_key);
            tokio::spawn(async move {
                loop {
                    let unused = instance.use_.unused.notified();
                    if instance.use_.calls.load(Ordering::Acquire) == 0 {
                        break;
                    }
                    unused.await;
                }
                instance.client.close().await;
            });
        }
    }
}

fn lease(instance: &Instance) -> Lease {
    instance.use_.calls.fetch_add(1, Ordering::AcqRel);
    Lease { client: instance.client.clone(), use_: instance.use_.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    struct Options;

    #[cfg(unix)]
    impl Host for Options {
        fn options(&self, _server: &str, _relay_key: &str) -> ClientOptions {
            ClientOptions::new("instances-test", "1")
        }

        fn ended(&self, _relay_key: &str) {}
    }

    #[cfg(unix)]
    fn entry(args: &[&str]) -> ServerEntry {
        let file = serde_json::json!({"mcpServers": {"own": {"command": "sleep", "args": args}}});
        mcp_bridge_sdk::toolset::config::parse(&file.to_string(), |_| None).unwrap().remove(0)
    }

    #[cfg(unix)]
    fn pid(lease: &Lease) -> u32 {
        lease.client.process().unwrap().id()
    }

    // Unix only: it needs a program that waits (`sleep`), which Windows
    // (and Wine, where the platform check runs the tests) lacks.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_holder_keeps_its_instance_until_it_dies_or_its_entry_changes() {
        let instances = Instances::new(Arc::new(Options));
        let (first, second) = (Holder::Connection(1), Holder::Connection(2));
        let own = entry(&["30"]);
        let kept = pid(&instances.lease(&own, &first).unwrap());
        assert_eq!(pid(&instances.lease(&own, &first).unwrap()), kept);
        assert_ne!(pid(&instances.lease(&own, &second).unwrap()), kept);
        assert_eq!(instances.count("own"), 2);

        // Dead: replaced at the next call.
        let lease = instances.lease(&own, &first).unwrap();
        mcp_bridge_sdk::transport::stdio::kill_process_tree(pid(&lease));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !lease.client.process().unwrap().has_exited() {
            assert!(Instant::now() < deadline, "the instance died in time");
            tokio::task::yield_now().await;
        }
        drop(lease);
        let replaced = pid(&instances.lease(&own, &first).unwrap());
        assert_ne!(replaced, kept);

        // Another entry: the old instances end, a call starts a new one.
        instances.end_stale("own", Some(&entry(&["31"])));
        assert_eq!(instances.count("own"), 0);
        assert_ne!(pid(&instances.lease(&entry(&["31"]), &first).unwrap()), replaced);
    }

    #[test]
    fn each_holder_has_a_relay_key_of_its_own() {
        let keys = [Holder::Connection(1), Holder::Connection(2), Holder::Principal("subject i a".into())]
            .map(|holder| holder.relay_key("own"));
        assert!(keys[0] != keys[1] && keys[1] != keys[2] && keys[0] != keys[2]);
        assert!(keys.iter().all(|key| key.starts_with("own") && key != "own"));
    }
}
