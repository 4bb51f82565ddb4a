//! A server in a child process, spoken to over its stdin and stdout
//! (2026-07-28, Transports: stdio).
//!
//! The child runs in its own process group, so that closing it reaches its
//! own children too. Closing escalates: close stdin, wait `shutdown_grace`,
//! SIGTERM to the group, wait again, SIGKILL to the group. Dropping the
//! handle without closing kills the group at once; no child outlives it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::{Frame, Message, decode_message};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::lines::{FrameReader, write_lines};
use super::{Incoming, Transport};
use crate::error::Error;
use crate::limits::OUTGOING_QUEUE;

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
}

impl StdioCommand {
    /// A command with the default limits.
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
            stderr: StderrMode::Inherit,
            max_line_bytes: mcp_protocol::DEFAULT_MAX_LINE_BYTES,
            max_depth: mcp_protocol::UPSTREAM_MAX_DEPTH,
            shutdown_grace: Duration::from_secs(2),
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
}

/// The running child: its process group, its exit status, and the shutdown.
#[derive(Debug)]
pub struct ChildProcess {
    pid: u32,
    grace: Duration,
    stop_stdin: CancellationToken,
    exited: CancellationToken,
    status: Arc<Mutex<Option<ExitStatus>>>,
}

/// Sends `signal` to the child's process group. A group that no longer
/// exists is not an error.
fn signal_group(pid: u32, signal: libc::c_int) {
    if let Ok(pgid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) with a negative pid signals a process group; it
        // touches no memory of this process.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

impl ChildProcess {
    /// The child's process id (also its process group id).
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// How the child ended, once it has.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the child has ended.
    pub fn has_exited(&self) -> bool {
        self.exited.is_cancelled()
    }

    /// Completes when the child has ended.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait(&self) -> Option<ExitStatus> {
        self.exited.cancelled().await;
        self.exit_status()
    }

    /// Stops the child: closes its stdin, waits, then SIGTERM and SIGKILL to
    /// its process group, each after the grace period. Whatever is left of
    /// the group after the child ended is killed too.
    pub async fn close(&self) -> Option<ExitStatus> {
        self.stop_stdin.cancel();
        if tokio::time::timeout(self.grace, self.exited.cancelled()).await.is_err() {
            tracing::debug!(pid = self.pid, "server did not exit after stdin closed; sending SIGTERM");
            signal_group(self.pid, libc::SIGTERM);
            if tokio::time::timeout(self.grace, self.exited.cancelled()).await.is_err() {
                tracing::debug!(pid = self.pid, "server did not exit after SIGTERM; sending SIGKILL");
                signal_group(self.pid, libc::SIGKILL);
                self.exited.cancelled().await;
            }
        }
        signal_group(self.pid, libc::SIGKILL);
        self.exit_status()
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        signal_group(self.pid, libc::SIGKILL);
    }
}

/// Starts the server process and connects a transport to it.
///
/// # Errors
/// [`Error::Spawn`] when the program cannot be started.
pub fn spawn(command: StdioCommand) -> Result<Transport, Error> {
    let mut cmd = tokio::process::Command::new(&command.program);
    cmd.args(&command.args)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(match command.stderr {
            StderrMode::Inherit => Stdio::inherit(),
            StderrMode::Discard => Stdio::null(),
        })
        .process_group(0)
        .kill_on_drop(false);
    if let Some(dir) = &command.current_dir {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|source| Error::Spawn { source })?;
    let pid = child.id().ok_or_else(|| Error::Spawn { source: std::io::Error::other("child exited at once") })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::Spawn { source: std::io::Error::other("child has no stdio pipes") });
    };

    let process = ChildProcess {
        pid,
        grace: command.shutdown_grace,
        stop_stdin: CancellationToken::new(),
        exited: CancellationToken::new(),
        status: Arc::default(),
    };
    let (status, exited) = (process.status.clone(), process.exited.clone());
    tokio::spawn(async move {
        let result = child.wait().await;
        if let Ok(s) = result {
            *status.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
        }
        exited.cancel();
    });

    let (outgoing, rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let stop = process.stop_stdin.clone();
    tokio::spawn(async move {
        if let Err(e) = write_lines(stdin, rx, stop).await {
            tracing::debug!("server stdin closed: {e}");
        }
    });

    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let (max_line, max_depth) = (command.max_line_bytes, command.max_depth);
    tokio::spawn(async move {
        let mut reader = FrameReader::new(stdout, max_line);
        loop {
            let item = match reader.next().await {
                Ok(Some(Frame::Line(line))) => match decode_message(&line, max_depth) {
                    Ok(message) => Incoming::Message(message),
                    Err(e) => Incoming::Undecodable { id: e.reply_id(&line), reason: e.to_string() },
                },
                Ok(Some(Frame::TooLong(line))) => Incoming::Undecodable {
                    id: line.recover_id(),
                    reason: format!("a line of {} bytes is over the limit of {max_line}", line.len),
                },
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("server stdout failed: {e}");
                    break;
                }
            };
            if to_client.send(item).await.is_err() {
                break;
            }
        }
    });

    Ok(Transport { outgoing, incoming, process: Some(process) })
}
