//! The servers a gateway runs once per client (`"sharing":
//! "per-session"`): a stateful server that must not be shared gets an
//! instance of its own (its own process, or its own connection) for each
//! client. The toolset's own instance of the server only lists what it
//! offers; calls go to the caller's.
//!
//! Whose instance a request uses: a 2025-11-25 session's (each session has
//! a connection of its own to the gateway), or on a connection that lasts
//! (stdio, a WebSocket) that connection's. A 2026-07-28 request over HTTP
//! belongs to no session: it uses its caller's instance (the principal of
//! its token; every caller of an endpoint without OAuth is one).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mcp_bridge_sdk::server::RequestContext;
use mcp_bridge_sdk::toolset::config::ServerEntry;
use mcp_bridge_sdk::{Client, ClientOptions};

/// How long an instance nobody used lives on: then it ends (its process
/// too). A session's instance ends at most this long after the session.
const IDLE: Duration = Duration::from_secs(5 * 60);

/// Instances of one server at once: each may be a process. One more ends
/// the instance unused the longest.
const MAX_PER_SERVER: usize = 64;

/// Whose instance a request uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Holder {
    /// The connection's (a session's, a WebSocket's, stdio's).
    Connection(u64),
    /// The caller's: a 2026-07-28 request over HTTP.
    Principal(String),
}

impl Holder {
    /// The holder of the request of `ctx`.
    pub(super) fn of(ctx: &RequestContext) -> Holder {
        match ctx.connection_id() {
            Some(id) => Holder::Connection(id),
            None => Holder::Principal(ctx.caller.as_ref().map(|c| c.principal().to_owned()).unwrap_or_default()),
        }
    }
}

struct Instance {
    client: Client,
    last_used: Instant,
}

/// The running instances, by server and holder.
#[derive(Default)]
pub(super) struct Instances(Mutex<HashMap<(String, Holder), Instance>>);

impl Instances {
    /// The client of `entry`'s instance for `holder`, started now when it
    /// has none (`options` is how it speaks). The instances idle for
    /// [`IDLE`] end first.
    ///
    /// # Errors
    /// Why the server cannot be started (a missing program, say).
    pub(super) fn client(
        &self,
        entry: &ServerEntry,
        holder: Holder,
        options: impl FnOnce() -> ClientOptions,
    ) -> mcp_bridge_sdk::Result<Client> {
        let mut instances = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let idle: Vec<_> =
            instances.iter().filter(|(_, i)| now - i.last_used >= IDLE).map(|(k, _)| k.clone()).collect();
        for key in idle {
            end(instances.remove(&key));
        }
        let key = (entry.name.clone(), holder);
        if let Some(instance) = instances.get_mut(&key) {
            instance.last_used = now;
            return Ok(instance.client.clone());
        }
        let of_server = instances.iter().filter(|((server, _), _)| *server == entry.name);
        if of_server.clone().count() >= MAX_PER_SERVER
            && let Some(oldest) = of_server.min_by_key(|(_, i)| i.last_used).map(|(k, _)| k.clone())
        {
            end(instances.remove(&oldest));
        }
        let client = entry.client(options())?;
        instances.insert(key, Instance { client: client.clone(), last_used: now });
        Ok(client)
    }

    /// Ends every instance of the server `name` (gone, or changed by a
    /// reload).
    pub(super) fn end_server(&self, name: &str) {
        let mut instances = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<_> = instances.keys().filter(|(server, _)| server == name).cloned().collect();
        for key in keys {
            end(instances.remove(&key));
        }
    }

    /// How many instances of the server `name` run.
    pub(super) fn count(&self, name: &str) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).keys().filter(|(server, _)| server == name).count()
    }
}

/// Ends an instance, on a task: its process gets the time to exit.
fn end(instance: Option<Instance>) {
    if let Some(instance) = instance {
        tokio::spawn(async move {
            instance.client.close().await;
        });
    }
}
