//! One bridge per user and configuration file, shared by every MCP client
//! of the desktop (`mcp-bridge attach`): each client's connection (a Unix
//! socket in the user's own folder, a named pipe of the user's on
//! Windows; [`DaemonListener`]) is served the
//! servers it names, in its own revision, by one gateway whose servers
//! run once for all of them. A server starts when the first client asks
//! for it and stops when no client has used it for its idle time; the
//! daemon ends when no client and no server is left.
//!
//! What the gateway already does keeps clients apart: a server's input
//! requests go to the call that caused them (refused when none or several
//! could be meant), a `"sharing": "per-session"` server runs once per
//! connection, list changes reach every client shown the server.

#[cfg(unix)]
pub mod hand_over;
mod handshake;
mod listener;
mod memory;
pub mod resume;
mod usage;
pub mod wire;

pub use listener::DaemonListener;
#[cfg(windows)]
pub use listener::served_by_this_user;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mcp_bridge_sdk::Server;
use mcp_bridge_sdk::server::legacy::embed::{EmbedOptions, serve_stream_auto};
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::toolset::config::{ConfigFile, ServerEntry};
use mcp_bridge_sdk::transport::process_stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::gateway::{self, Gateway, Shown};
use listener::{Accepted, ReadHalf, WriteHalf};
use memory::resident_bytes;
use usage::Usage;
#[cfg(unix)]
use wire::Report;
use wire::{Answer, ClientStatus, Hello, ServerStatus, Status};

/// How long a server runs on after its last client left, unless its
/// entry says (`"idle"`): a client restarted (an editor's reload) finds
/// it still running.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(10 * 60);

/// How long a connection has to send its first line.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the daemon stays with no client and no server: the client
/// whose `attach` started it connects within it.
const EMPTY_GRACE: Duration = Duration::from_secs(10);

/// How long the clients' sessions get to end when the daemon stops.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The pause after a connection could not be accepted.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How a daemon runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DaemonOptions {
    /// The configuration file, as status names it.
    pub config_file: PathBuf,
    /// How long a server without `"idle"` runs on unused.
    pub default_idle: Duration,
    /// A file the daemon writes its process id in when it ends on purpose
    /// (asked to stop, `stop` cancelled, nothing left), before its
    /// clients' connections close: their `attach` (told the daemon's id
    /// in [`Answer::Attached`]) then end instead of starting another.
    pub stopped_marker: Option<PathBuf>,
}

impl DaemonOptions {
    /// The options of a daemon serving `config_file`'s servers.
    pub fn new(config_file: PathBuf) -> Self {
        DaemonOptions { config_file, default_idle: DEFAULT_IDLE, stopped_marker: None }
    }
}

/// Serves the clients that connect to `listener` with the servers of
/// `config` (a new version applied as it comes: a server changed starts
/// again, one gone stops, one added starts when a client names it) until
/// a client asks it to stop, `stop` is cancelled, or no client and no
/// server is left; then drops the listener (a client that comes now
/// starts another daemon) and stops its servers.
/// Only connections of this process's user are served.
///
/// # Errors
/// None yet: a connection that cannot be taken is waited out.
pub async fn serve(
    mut listener: DaemonListener,
    config: watch::Receiver<ConfigFile>,
    options: DaemonOptions,
    stop: CancellationToken,
) -> io::Result<()> {
    let tasks = TaskGroup::default();
    let mut none = config.borrow().clone();
    none.servers.clear();
    let gateway = gateway::start(none.clone(), &tasks, None).await;
    let daemon = Arc::new(Daemon {
        config,
        options,
        gateway,
        usage: Mutex::default(),
        applying: tokio::sync::Mutex::default(),
        views: tokio::sync::Mutex::default(),
        clients: Mutex::default(),
        next_client: AtomicU64::new(1),
        changed: Notify::new(),
        stop: stop.clone(),
        closing: CancellationToken::new(),
    });
    tasks.spawn(daemon.clone().keep());
    let connections = TaskGroup::default();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(Some(Accepted { stream, pid })) => {
                    let daemon = daemon.clone();
                    connections.spawn_to_finish(CLOSE_GRACE, async move { daemon.connection(stream, pid).await });
                }
                Ok(None) => {}
                Err(error) => {
                    // Out of descriptors, say: the connections that hold
                    // them end in time, so the daemon waits, not exits.
                    tracing::warn!("a connection could not be accepted: {error}");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
            () = stop.cancelled() => break,
        }
    }
    if let Some(marker) = &daemon.options.stopped_marker
        && let Err(error) = std::fs::write(marker, std::process::id().to_string())
    {
        tracing::warn!("{}: {error}", marker.display());
    }
    drop(listener);
    // Only now, with the mark written: a client's attach reads it when
    // its connection closes.
    daemon.closing.cancel();
    connections.stop(CLOSE_GRACE).await;
    // Under the lock, which `apply` checks `stop` under: no server starts after.
    let mut running = daemon.applying.lock().await;
    daemon.gateway.reload(none).await;
    running.clear();
    drop(running);
    tasks.cancel();
    Ok(())
}

/// A daemon's state, shared by its connections.
struct Daemon {
    /// Every server of the file, as it is now.
    config: watch::Receiver<ConfigFile>,
    options: DaemonOptions,
    gateway: Gateway,
    usage: Mutex<Usage>,
    /// The servers the gateway was last told to run; held while it
    /// changes them, so that one change follows the other.
    applying: tokio::sync::Mutex<Vec<ServerEntry>>,
    /// The served servers, by the names they show; shared by the clients
    /// that chose the same.
    views: tokio::sync::Mutex<HashMap<BTreeSet<String>, Weak<View>>>,
    clients: Mutex<HashMap<u64, Client>>,
    next_client: AtomicU64,
    /// Told when a client leaves.
    changed: Notify,
    /// Ends the daemon.
    stop: CancellationToken,
    /// Ends the clients' sessions, once the daemon's end is marked.
    closing: CancellationToken,
}

/// An attached client.
struct Client {
    pid: Option<u32>,
    servers: Arc<BTreeSet<String>>,
    since: Instant,
}

/// The gateway's server as the clients that chose the same servers see it.
struct View {
    server: Server,
    tasks: TaskGroup,
}

impl Drop for View {
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

impl Daemon {
    /// Keeps the servers in use (and not yet idle for their time)
    /// running, and ends the daemon once nothing is left for
    /// [`EMPTY_GRACE`].
    async fn keep(self: Arc<Self>) {
        let mut empty_since = Some(Instant::now());
        let mut file = self.config.clone();
        loop {
            let expiry = self.lock_usage().next_expiry();
            let ending = empty_since.map(|since| since + EMPTY_GRACE);
            let deadline = [expiry, ending].into_iter().flatten().min();
            tokio::select! {
                () = self.changed.notified() => {}
                Ok(()) = file.changed() => tracing::info!("the configuration file changed: applied"),
                () = sleep_until(deadline) => {}
                () = self.stop.cancelled() => return,
            }
            self.apply().await;
            let empty = self.lock_clients().is_empty() && self.gateway.servers().is_empty();
            empty_since = if empty { empty_since.or(Some(Instant::now())) } else { None };
            if empty_since.is_some_and(|since| since.elapsed() >= EMPTY_GRACE) {
                tracing::info!("no client and no server left: the daemon ends");
                self.stop.cancel();
                return;
            }
        }
    }

    fn lock_usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_clients(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Client>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves one connection: its first line says what for.
    async fn connection(self: Arc<Self>, stream: listener::Stream, pid: Option<u32>) {
        let (read, mut write) = listener::split(stream);
        let mut reader = BufReader::new(read);
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, read_hello(&mut reader)).await {
            Ok(Ok(hello)) => hello,
            Ok(Err(reason)) => {
                let _ = write.write_all(&wire::line(&Answer::Refused { reason })).await;
                return;
            }
            Err(_) => return,
        };
        let (names, hand_over, resume) = match hello {
            Hello::Status => {
                let _ = write.write_all(&wire::line(&Answer::Status(self.status()))).await;
                return;
            }
            Hello::Stop => {
                let _ = write.write_all(&wire::line(&Answer::Stopping)).await;
                tracing::info!("asked to stop");
                self.stop.cancel();
                return;
            }
            Hello::Attach { servers, hand_over, resume } => match self.resolve(servers) {
                Ok(names) => (Arc::new(names), hand_over && wire::HANDS_OVER, resume),
                Err(reason) => {
                    let _ = write.write_all(&wire::line(&Answer::Refused { reason })).await;
                    return;
                }
            },
        };
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        self.lock_clients().insert(id, Client { pid, servers: names.clone(), since: Instant::now() });
        let default_idle = self.options.default_idle;
        {
            let config = self.config.borrow();
            let idle_of = |name: &str| {
                let entry = config.servers.iter().find(|e| e.name == name);
                entry.and_then(|e| e.idle).unwrap_or(default_idle)
            };
            self.lock_usage().attach(names.iter(), idle_of);
        }
        self.apply().await;
        let view = self.view(&names).await;
        tracing::info!(client = id, pid, "attached with {}", names.iter().cloned().collect::<Vec<_>>().join(", "));
        let attached =
            Answer::Attached { servers: names.iter().cloned().collect(), pid: std::process::id(), hand_over };
        if write.write_all(&wire::line(&attached)).await.is_ok() {
            let served = match hand_over {
                // Nothing was read past the first line: `attach` passes its
                // stdio only once it has the answer.
                #[cfg(unix)]
                true => self.serve_handed_over(&view, reader.into_inner(), write, resume).await,
                _ => self.serve_copied(&view, reader, write, resume).await,
            };
            if let Err(error) = served {
                tracing::debug!(client = id, "the connection ended: {error}");
            }
        }
        tracing::info!(client = id, "detached");
        self.lock_clients().remove(&id);
        self.lock_usage().detach(names.iter(), Instant::now());
        self.changed.notify_one();
    }

    /// Serves MCP on the connection itself, the client's bytes copied by
    /// `attach` (on Windows; on Unix an `attach` from before the
    /// hand-over, still running after an upgrade), `resume`d first.
    async fn serve_copied(
        &self,
        view: &View,
        reader: BufReader<ReadHalf>,
        write: WriteHalf,
        resume: Option<wire::Resume>,
    ) -> io::Result<()> {
        let (input, output): (process_stdio::Input, process_stdio::Output) =
            match resume::resumed(resume.as_ref(), reader, write) {
                Ok((input, output)) => (Box::pin(input), Box::pin(output)),
                Err((input, output)) => (Box::pin(input), Box::pin(output)),
            };
        serve_stream_auto(&view.server, input, output, EmbedOptions::default(), self.closing.child_token())
            .await
            .map(|_| ())
    }

    /// Serves the client whose stdin and stdout its `attach` passes on
    /// `socket` next, resuming its handshake with another daemon; reports
    /// the handshake on `control` until the session ends: the client's
    /// input ended (then [`Report::Ended`]), `attach` went away, or the
    /// daemon ends.
    #[cfg(unix)]
    async fn serve_handed_over(
        &self,
        view: &View,
        mut socket: tokio::net::unix::OwnedReadHalf,
        mut control: tokio::net::unix::OwnedWriteHalf,
        resume: Option<wire::Resume>,
    ) -> io::Result<()> {
        let (input, output) = hand_over::receive(socket.as_ref()).await?;
        let (Some(input), Some(output)) = (process_stdio::reader_of(input), process_stdio::writer_of(output)) else {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "the client's stdio is not a pipe or a socket"));
        };
        let (reports, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let (input, output): (process_stdio::Input, process_stdio::Output) =
            match resume::resumed(resume.as_ref(), input, output) {
                Ok((input, output)) => (Box::pin(input), Box::pin(output)),
                // Not a resumed handshake: the client's own is watched.
                Err((input, output)) => (Box::pin(resume::InputTap::new(input, reports)), output),
            };
        let stop = self.closing.child_token();
        let served = serve_stream_auto(&view.server, input, output, EmbedOptions::default(), stop.clone());
        // `attach` sends nothing more: a read that returns is its end.
        let mut byte = [0u8; 1];
        let attach_gone = async {
            loop {
                tokio::select! {
                    Some(report) = heard.recv() => {
                        let _ = control.write_all(&wire::line(&report)).await;
                    }
                    _ = socket.read(&mut byte) => return,
                }
            }
        };
        tokio::pin!(served);
        let ended = tokio::select! {
            ended = &mut served => ended,
            () = attach_gone => {
                stop.cancel();
                return served.await.map(|_| ());
            }
        };
        if !stop.is_cancelled() {
            while let Ok(report) = heard.try_recv() {
                let _ = control.write_all(&wire::line(&report)).await;
            }
            control.write_all(&wire::line(&Report::Ended)).await?;
        }
        ended.map(|_| ())
    }

    /// The servers a client asked for, every one for `None`.
    fn resolve(&self, asked: Option<Vec<String>>) -> Result<BTreeSet<String>, String> {
        let known: BTreeSet<String> = self.config.borrow().servers.iter().map(|e| e.name.clone()).collect();
        let Some(asked) = asked else { return Ok(known) };
        let unknown: Vec<&String> = asked.iter().filter(|name| !known.contains(*name)).collect();
        if !unknown.is_empty() {
            let known: Vec<&String> = known.iter().collect();
            return Err(format!(
                "{} {unknown:?} not in {} (it has {known:?})",
                if unknown.len() == 1 { "the server" } else { "the servers" },
                self.options.config_file.display()
            ));
        }
        if asked.is_empty() {
            return Err("name at least one server, or ask for all of them".into());
        }
        Ok(asked.into_iter().collect())
    }

    /// Makes the gateway run the servers in use or not yet idle for their
    /// time (starting or stopping the others).
    async fn apply(&self) {
        let mut running = self.applying.lock().await;
        if self.stop.is_cancelled() {
            return;
        }
        let wanted = self.lock_usage().wanted(Instant::now());
        let mut config = self.config.borrow().clone();
        config.servers.retain(|entry| wanted.contains(&entry.name));
        if *running == config.servers {
            return;
        }
        let entries = config.servers.clone();
        let changed = self.gateway.reload(config).await;
        tracing::info!("servers: {changed}");
        *running = entries;
    }

    /// The server showing `names`, made when no client shows them now.
    async fn view(&self, names: &Arc<BTreeSet<String>>) -> Arc<View> {
        let mut views = self.views.lock().await;
        if let Some(view) = views.get(names.as_ref()).and_then(Weak::upgrade) {
            return view;
        }
        let view = View { server: gateway::server(), tasks: TaskGroup::default() };
        self.gateway.serve(&view.server, Shown::Only(names.clone()), &view.tasks).await;
        let view = Arc::new(view);
        views.retain(|_, view| view.strong_count() > 0);
        views.insert(names.as_ref().clone(), Arc::downgrade(&view));
        view
    }

    /// Who is attached and what runs.
    fn status(&self) -> Status {
        let states = self.gateway.servers();
        let config = self.config.borrow().clone();
        let usage = self.lock_usage();
        let servers: Vec<ServerStatus> = config
            .servers
            .iter()
            .map(|entry| {
                let state = states.iter().find(|s| s.name == entry.name);
                let pid = state.and_then(|s| s.process_id);
                ServerStatus {
                    name: entry.name.clone(),
                    running: state.is_some(),
                    available: state.is_some_and(|s| s.available),
                    pid,
                    resident_bytes: pid.and_then(resident_bytes),
                    clients: usage.clients_of(&entry.name),
                    problem: state.and_then(|s| s.problem.clone()),
                }
            })
            .collect();
        drop(usage);
        let clients = self
            .lock_clients()
            .values()
            .map(|client| ClientStatus {
                pid: client.pid,
                servers: client.servers.iter().cloned().collect(),
                attached_seconds: client.since.elapsed().as_secs(),
            })
            .collect();
        let pid = std::process::id();
        Status {
            pid,
            resident_bytes: resident_bytes(pid),
            config: self.options.config_file.display().to_string(),
            clients,
            servers,
        }
    }
}

/// Sleeps until `deadline`, forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// Reads a connection's first line.
async fn read_hello(reader: &mut BufReader<ReadHalf>) -> Result<Hello, String> {
    let mut line = Vec::new();
    let mut limited = (&mut *reader).take(wire::MAX_HELLO_BYTES as u64 + 1);
    limited.read_until(b'\n', &mut line).await.map_err(|e| format!("the first line could not be read: {e}"))?;
    if !line.ends_with(b"\n") {
        return Err(format!("the first line must be a request of at most {} bytes", wire::MAX_HELLO_BYTES));
    }
    serde_json::from_slice(&line).map_err(|e| format!("the first line is not a request to the daemon: {e}"))
}
