//! A server in a child process, spoken to over its stdin and stdout
//! (2026-07-28, Transports: stdio).
//!
//! The child runs in a process tree of its own (a process group on Unix, a
//! job object on Windows), so that stopping it reaches its own children
//! too. Closing escalates: close stdin, wait `shutdown_grace`, SIGTERM to
//! the group, wait again, SIGKILL to the group (on Windows: `taskkill`,
//! then the job ended). Dropping the handle without closing kills the tree
//! at once; no child outlives it.
//!
//! A supervisor task owns the child. When the child ends (or closes its
//! stdout), the requests waiting on it fail with `Closed`; with
//! `max_restarts` the supervisor then starts a new child at once, and the
//! client's retry policy can send those requests again.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::Message;
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::lines::{read_frames, write_lines};
use super::{Incoming, Transport};
use crate::error::Error;
use crate::limits::{CLOSE_GRACE, OUTGOING_QUEUE};
use crate::os::{ProcessTree, Stop};
use crate::task_group::TaskGroup;

/// What happens to the child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StderrMode {
    /// It goes to this process's stderr (the default: servers log there).
    #[default]
    Inherit,
    /// It is discarded.
    Discard,
}

/// How to start a server process.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioCommand {
    /// The program.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    /// Its working directory; this process's when `None`.
    pub current_dir: Option<PathBuf>,
    /// What happens to its stderr.
    pub stderr: StderrMode,
    /// Longest line accepted from it.
    pub max_line_bytes: usize,
    /// Deepest nesting accepted from it.
    pub max_depth: usize,
    /// Each wait of the shutdown escalation.
    pub shutdown_grace: Duration,
    /// How many times a child that ended on its own is started again.
    pub max_restarts: u32,
}

impl StdioCommand {
    /// The program and its arguments as one line (arguments apart by
    /// spaces, not quoted): what tells one server from another.
    pub fn command_line(&self) -> String {
        let mut line = self.program.to_string_lossy().into_owned();
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }

    /// A command with the default limits and no restarts.
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            stderr: StderrMode::Inherit,
            max_line_bytes: mcp_bridge_protocol::DEFAULT_MAX_LINE_BYTES,
            max_depth: mcp_bridge_protocol::UPSTREAM_MAX_DEPTH,
            shutdown_grace: Duration::from_secs(2),
            max_restarts: 0,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets what happens to stderr.
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// Sets how many times the child is started again after it ends.
    pub fn max_restarts(mut self, restarts: u32) -> Self {
        self.max_restarts = restarts;
        self
    }

    fn start(&self) -> Result<(Child, ProcessTree), Error> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match self.stderr {
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Discard => Stdio::null(),
            })
            .kill_on_drop(false);
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        crate::os::spawn_tree(&mut cmd).map_err(|source| Error::Spawn { source })
    }
}

/// Stops what is left of the child `pid` and whatever it started, at
/// once: for a supervisor that must leave no orphans, such as a watchdog
/// that fires when a shutdown hangs. On Unix, SIGKILL to the child's
/// process group (every child of [`spawn`] leads one); on Windows,
/// `taskkill /T /F` (the job object each child of [`spawn`] is in also
/// ends the tree when this process exits).
pub fn kill_process_tree(pid: u32) {
    crate::os::stop_tree(pid, Stop::Force);
}

/// The end of a child whose stdin is closed (or who is gone): wait the
/// grace period, ask its tree to stop (SIGTERM), wait again, force it
/// (SIGKILL); then force whatever is left of the tree after the child ended.
async fn stop_group(tree: &ProcessTree, exited: &CancellationToken, grace: Duration) {
    let pid = tree.pid();
    if tokio::time::timeout(grace, exited.cancelled()).await.is_err() {
        tracing::debug!(pid, "server did not exit after stdin closed; sending SIGTERM");
        tree.stop(Stop::Ask);
        if tokio::time::timeout(grace, exited.cancelled()).await.is_err() {
            tracing::debug!(pid, "server did not exit after SIGTERM; sending SIGKILL");
            tree.stop(Stop::Force);
            // SIGKILL cannot be refused; the bound only guards this wait.
            let _ = tokio::time::timeout(grace, exited.cancelled()).await;
        }
    }
    tree.stop(Stop::Force);
}

/// The state the supervisor and the handle share.
#[derive(Debug)]
struct Shared {
    /// The current (or last) child's process tree.
    tree: Mutex<Arc<ProcessTree>>,
    /// Fired when the current child has ended; replaced at each restart.
    exited: Mutex<CancellationToken>,
    /// The exit status of the last child that ended.
    status: Mutex<Option<ExitStatus>>,
    /// Children started after the first.
    restarts: AtomicU32,
    /// Set by `close` and drop: no more restarts, stdin closes.
    closing: CancellationToken,
    /// Fired when the supervisor is done: no child will run again.
    ended: CancellationToken,
    grace: Duration,
}

impl Shared {
    fn exited(&self) -> CancellationToken {
        self.exited.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn tree(&self) -> Arc<ProcessTree> {
        self.tree.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The running child: its process group, its exit status, and the shutdown.
#[derive(Debug)]
pub struct ChildProcess {
    shared: Arc<Shared>,
}

impl ChildProcess {
    /// The current child's process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.shared.tree().pid()
    }

    /// How the last child that ended ended.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.shared.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the current child has ended.
    pub fn has_exited(&self) -> bool {
        self.shared.exited().is_cancelled()
    }

    /// How many times the child was started again.
    pub fn restarts(&self) -> u32 {
        self.shared.restarts.load(Ordering::SeqCst)
    }

    /// Completes when the current child has ended, with its status.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait(&self) -> Option<ExitStatus> {
        self.shared.exited().cancelled().await;
        self.exit_status()
    }

    /// Stops the child for good: closes its stdin, waits, then SIGTERM and
    /// SIGKILL to its process group, each after the grace period. Whatever
    /// is left of the group after the child ended is killed too.
    pub async fn close(&self) -> Option<ExitStatus> {
        let shared = &self.shared;
        shared.closing.cancel();
        stop_group(&shared.tree(), &shared.exited(), shared.grace).await;
        let _ = tokio::time::timeout(shared.grace, shared.ended.cancelled()).await;
        self.exit_status()
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        self.shared.closing.cancel();
        self.shared.tree().stop(Stop::Force);
    }
}

/// Starts the server process and connects a transport to it.
///
/// On Linux the process ends when this one does, even when this one is
/// killed (`PR_SET_PDEATHSIG`); the kernel ties that to the thread that
/// spawns it, so call this from a thread that lives as long as the server
/// should: a runtime's (not `spawn_blocking`'s, whose threads come and go).
///
/// # Errors
/// [`Error::Spawn`] when the program cannot be started.
pub fn spawn(command: StdioCommand) -> Result<Transport, Error> {
    let (child, tree) = command.start()?;
    let address = command.command_line();
    let tasks = TaskGroup::default();
    let shared = Arc::new(Shared {
        tree: Mutex::new(Arc::new(tree)),
        exited: Mutex::new(CancellationToken::new()),
        status: Mutex::default(),
        restarts: AtomicU32::new(0),
        // Closing the client closes the child (when `ChildProcess::close` has not).
        closing: tasks.child_token(),
        ended: CancellationToken::new(),
        grace: command.shutdown_grace,
    });
    let (outgoing, out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    tasks.spawn_to_finish(CLOSE_GRACE, supervise(command, child, shared.clone(), out_rx, to_client, tasks.clone()));
    Ok(Transport {
        outgoing,
        incoming,
        process: Some(ChildProcess { shared }),
        timed: true,
        credential: Default::default(),
        endpoint: None,
        address: Some(address),
        tasks,
    })
}

/// Runs children one after the other until the last one ends.
async fn supervise(
    command: StdioCommand,
    mut child: Child,
    shared: Arc<Shared>,
    mut out_rx: mpsc::Receiver<Message>,
    to_client: mpsc::Sender<Incoming>,
    tasks: TaskGroup,
) {
    loop {
        run_child(&command, child, &shared, &mut out_rx, &to_client, &tasks).await;
        let restarts = shared.restarts.load(Ordering::SeqCst);
        if shared.closing.is_cancelled() || restarts >= command.max_restarts {
            break;
        }
        match command.start() {
            Ok((next, tree)) => {
                shared.restarts.store(restarts + 1, Ordering::SeqCst);
                tracing::info!(restart = restarts + 1, "server process started again");
                *shared.tree.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(tree);
                child = next;
            }
            Err(e) => {
                tracing::warn!("{}", crate::error::report(&e));
                break;
            }
        }
    }
    shared.ended.cancel();
}

/// Connects one child to the channels until it is gone: stdout closed or
/// the process ended. Then the client learns that the connection dropped.
async fn run_child(
    command: &StdioCommand,
    mut child: Child,
    shared: &Arc<Shared>,
    out_rx: &mut mpsc::Receiver<Message>,
    to_client: &mpsc::Sender<Incoming>,
    tasks: &TaskGroup,
) {
    let tree = shared.tree();
    let pid = tree.pid();
    // The first child keeps the token made at spawn: a `close` that runs
    // before this task waits on the token this child's waiter fires. A
    // restarted child gets a fresh one (the last one fired).
    let exited = {
        let mut current = shared.exited.lock().unwrap_or_else(|e| e.into_inner());
        if current.is_cancelled() {
            *current = CancellationToken::new();
        }
        current.clone()
    };
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        tree.stop(Stop::Force);
        exited.cancel();
        return;
    };

    let status_shared = shared.clone();
    let exited_by_waiter = exited.clone();
    // Not ended by the stop: the child is killed then, and reaped here.
    tasks.spawn_to_finish(CLOSE_GRACE, async move {
        if let Ok(status) = child.wait().await {
            *status_shared.status.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
        }
        exited_by_waiter.cancel();
    });

    let gone = shared.closing.child_token();
    let reader = tasks.spawn(read_frames(stdout, to_client.clone(), command.max_line_bytes, command.max_depth));
    let reader_done = gone.clone();
    let watch = async {
        tokio::select! {
            _ = async { let _ = reader.await; } => {}
            _ = exited.cancelled() => {}
        }
        reader_done.cancel();
    };
    let (_, written) = tokio::join!(watch, write_lines(stdin, out_rx, gone.clone()));
    if let Err(e) = written {
        tracing::debug!(pid, "server stdin closed: {e}");
    }
    // The child is gone for this client; whatever it left running in its
    // group is stopped before another child starts.
    if !shared.closing.is_cancelled() {
        stop_group(&tree, &exited, shared.grace).await;
    }
    let _ = to_client.send(Incoming::Disconnected).await;
}
