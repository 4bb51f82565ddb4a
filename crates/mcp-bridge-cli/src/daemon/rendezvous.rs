//! Where the daemon of a configuration file is found, and how exactly one
//! is started: its socket, its locks and its log sit in this user's own
//! folder (`$XDG_RUNTIME_DIR/mcp-bridge`, else `mcp-bridge-UID` in the
//! temporary folder; mode 0700, checked), named by a digest of the file's
//! full path.
//!
//! Two locks: `attach` holds `*.start.lock` while it checks for a daemon
//! and starts one, so four clients starting at once start one daemon; the
//! daemon holds `*.pid` for its whole life (with its process id in it),
//! so a second `daemon run` of the same file refuses, and a free lock
//! means any socket file left there is stale.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_bridge::daemon::wire::{self, Answer, Hello};
use sha2::{Digest, Sha256};

/// What a started daemon writes on its stdout once it listens.
pub(crate) const READY: &str = "ready";

/// How long a starting daemon has to listen (waiting for one that is
/// ending first, [`ENDING_TIMEOUT`]).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the daemon has to answer a first line (it starts the servers
/// asked for before it answers `attach`).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a new daemon waits for one that is ending (stopping its
/// servers) to let go of the pid file.
pub(crate) const ENDING_TIMEOUT: Duration = Duration::from_secs(45);

/// The daemon's exit code when another daemon serves the file already.
pub(crate) const ALREADY_RUNNING: u8 = 3;

/// The places of the daemon of one configuration file.
#[derive(Debug, Clone)]
pub(crate) struct Rendezvous {
    /// The configuration file, its full path.
    pub(crate) config: PathBuf,
    /// The socket the daemon listens on.
    pub(crate) socket: PathBuf,
    /// Held by whoever checks for the daemon and starts it.
    start_lock: PathBuf,
    /// Held by the daemon while it lives; its process id in it.
    pub(crate) pid_file: PathBuf,
    /// The daemon's stderr (its log, and its servers').
    pub(crate) log: PathBuf,
    /// Written by a daemon that ends on purpose (see
    /// [`Rendezvous::was_stopped`]).
    pub(crate) stopped: PathBuf,
}

impl Rendezvous {
    /// The places of the daemon of `config`, in this user's folder
    /// (created, and checked to be closed to others).
    ///
    /// # Errors
    /// The file does not exist, or the folder cannot be made private.
    pub(crate) fn of(config: &Path) -> Result<Rendezvous, String> {
        let config = config.canonicalize().map_err(|e| format!("the configuration file {}: {e}", config.display()))?;
        let folder = folder();
        crate::dirs::private_folder(&folder)?;
        let digest = hex::encode(Sha256::digest(config.as_os_str().as_encoded_bytes()));
        let stem = folder.join(format!("daemon-{}", &digest[..16]));
        let with = |extension: &str| stem.with_extension(extension);
        Ok(Rendezvous {
            socket: with("sock"),
            start_lock: with("start.lock"),
            pid_file: with("pid"),
            log: with("log"),
            stopped: with("stopped"),
            config,
        })
    }

    /// A connection to the daemon, when one listens.
    pub(crate) fn connect(&self) -> Option<UnixStream> {
        UnixStream::connect(&self.socket).ok()
    }

    /// A connection to the daemon, started first when none listens (one
    /// start at a time: the start lock).
    ///
    /// # Errors
    /// Why no daemon could be reached, for the user.
    pub(crate) fn connect_or_start(&self) -> Result<UnixStream, String> {
        if let Some(stream) = self.connect() {
            return Ok(stream);
        }
        let lock = private_file(&self.start_lock).map_err(|e| format!("{}: {e}", self.start_lock.display()))?;
        lock.lock().map_err(|e| format!("{}: {e}", self.start_lock.display()))?;
        // Another attach may have started it while this one waited.
        if let Some(stream) = self.connect() {
            return Ok(stream);
        }
        self.start()?;
        self.connect().ok_or_else(|| format!("the daemon started but {} takes no connection", self.socket.display()))
    }

    /// Starts the daemon in a session of its own (a client's end, or a
    /// signal to its process group, leaves it running), with its stderr
    /// in the log; returns once it listens.
    fn start(&self) -> Result<(), String> {
        let program = std::env::current_exe().map_err(|e| format!("mcp-bridge cannot find itself: {e}"))?;
        // Appended to: a daemon still ending writes there too; the new one
        // empties it once it is the daemon (see `daemon run`).
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let mut command = Command::new(program);
        command
            .args(["daemon", "run", "--config"])
            .arg(&self.config)
            .current_dir(self.config.parent().unwrap_or(Path::new("/")))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log);
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of
        // the parent.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut daemon = command.spawn().map_err(|e| format!("the daemon could not be started: {e}"))?;
        let stdout = daemon.stdout.take().ok_or("the daemon has no stdout")?;
        let (said, heard) = std::sync::mpsc::channel();
        // Reads its one line, then waits for its end: no zombie is left
        // for as long as this attach lives.
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let ready = line.trim() == READY;
            let _ = said.send(if ready { Ok(()) } else { Err(daemon.wait().ok().and_then(|s| s.code())) });
            if ready {
                let _ = daemon.wait();
            }
        });
        match heard.recv_timeout(START_TIMEOUT) {
            Ok(Ok(())) => Ok(()),
            // Another daemon of the file started meanwhile (by hand).
            Ok(Err(Some(code))) if code == i32::from(ALREADY_RUNNING) => Ok(()),
            Ok(Err(_)) => Err(format!("the daemon could not start: {}", self.log_tail())),
            Err(_) => Err(format!(
                "the daemon did not listen within {} s; its log: {}",
                START_TIMEOUT.as_secs(),
                self.log.display()
            )),
        }
    }

    /// Whether the daemon `pid` ended on purpose (asked to stop, say): an
    /// `attach` that lost it then ends instead of starting another.
    pub(crate) fn was_stopped(&self, pid: u32) -> bool {
        std::fs::read_to_string(&self.stopped).is_ok_and(|marked| marked.trim() == pid.to_string())
    }

    /// The last lines of the daemon's log, to say why it failed.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
        if lines.is_empty() { format!("see {}", self.log.display()) } else { lines.join(" / ") }
    }

    /// The process id of the daemon that lives now, if one does.
    pub(crate) fn living_daemon(&self) -> Option<u32> {
        let mut file = File::open(&self.pid_file).ok()?;
        match file.try_lock_shared() {
            // Free: nobody holds it, so no daemon lives.
            Ok(()) => None,
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                file.read_to_string(&mut text).ok()?;
                text.trim().parse().ok()
            }
            Err(TryLockError::Error(_)) => None,
        }
    }
}

/// Sends `hello` on `stream` and reads the daemon's answer.
///
/// # Errors
/// The connection failed or the answer is not one.
pub(crate) fn ask(stream: &mut UnixStream, hello: &Hello) -> Result<Answer, String> {
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).map_err(|e| e.to_string())?;
    stream.write_all(&wire::line(hello)).map_err(|e| format!("the daemon closed the connection: {e}"))?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: what follows the answer is the MCP stream, not ours to read.
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return Err("the daemon closed the connection before it answered".into()),
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if line.len() < wire::MAX_HELLO_BYTES => line.push(byte[0]),
            Ok(_) => return Err("the daemon's answer is too long".into()),
            Err(e) => return Err(format!("the daemon did not answer: {e}")),
        }
    }
    stream.set_read_timeout(None).map_err(|e| e.to_string())?;
    serde_json::from_slice(&line).map_err(|e| format!("the daemon's answer is not one: {e}"))
}

/// The daemon holds its pid file locked while it lives and writes its
/// process id in it. When another holds it but `listens()` says nobody
/// takes connections, that one is ending: this waits for it a while.
///
/// # Errors
/// `Err(None)`: another daemon holds it; `Err(Some(why))`: it cannot be
/// used.
pub(crate) fn hold_pid_file(path: &Path, listens: impl Fn() -> bool) -> Result<File, Option<String>> {
    let mut file = private_file(path).map_err(|e| Some(format!("{}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) if listens() => return Err(None),
        Err(TryLockError::WouldBlock) => {
            let waiting = file.try_clone().map_err(|e| Some(e.to_string()))?;
            let (locked, heard) = std::sync::mpsc::channel();
            std::thread::spawn(move || locked.send(waiting.lock()));
            match heard.recv_timeout(ENDING_TIMEOUT) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(Some(format!("{}: {e}", path.display()))),
                Err(_) => {
                    return Err(Some(format!(
                        "the daemon before this one still ends after {} s (see `mcp-bridge daemon status`)",
                        ENDING_TIMEOUT.as_secs()
                    )));
                }
            }
        }
        Err(TryLockError::Error(e)) => return Err(Some(format!("{}: {e}", path.display()))),
    }
    file.set_len(0).and_then(|()| write!(file, "{}", std::process::id())).map_err(|e| Some(e.to_string()))?;
    Ok(file)
}

/// The daemon's log past this size is cut to its last [`LOG_KEPT`] bytes:
/// it holds the servers' stderr and lives in a memory-backed folder.
pub(crate) const LOG_LIMIT: u64 = 16 * 1024 * 1024;

/// What of a log cut at [`LOG_LIMIT`] is kept: its end.
pub(crate) const LOG_KEPT: u64 = 1024 * 1024;

/// Cuts the log at `path` to its last `kept` bytes (from a line's start)
/// when it is over `limit`; whether it did. Its writers append (the
/// daemon and its servers share the open file), so they write on after
/// the kept part; a line written during the cut may be lost.
///
/// # Errors
/// The log cannot be read or written.
pub(crate) fn trim_log(path: &Path, limit: u64, kept: u64) -> std::io::Result<bool> {
    use std::io::{Seek, SeekFrom};
    let mut log = OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
    let length = log.metadata()?.len();
    if length <= limit {
        return Ok(false);
    }
    log.seek(SeekFrom::Start(length.saturating_sub(kept)))?;
    let mut tail = Vec::new();
    log.read_to_end(&mut tail)?;
    let start = tail.iter().position(|&b| b == b'\n').map_or(0, |newline| newline + 1);
    log.set_len(0)?;
    log.seek(SeekFrom::Start(0))?;
    writeln!(log, "mcp-bridge daemon: the log passed {} MiB: its start was cut", limit / (1024 * 1024))?;
    log.write_all(&tail[start..])?;
    Ok(true)
}

/// A file only this user may read, created when missing; never through
/// a symbolic link.
fn private_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// This user's folder for the daemons' sockets: `$XDG_RUNTIME_DIR`, else
/// the folder systemd gives it as (`/run/user/UID`), else one in `/tmp`.
/// Not `$TMPDIR`: clients start `attach` with a reduced environment, and
/// every `attach` of a user must find the same folder.
fn folder() -> PathBuf {
    if let Some(runtime) = directories::BaseDirs::new().and_then(|dirs| dirs.runtime_dir().map(Path::to_path_buf)) {
        return runtime.join("mcp-bridge");
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let run_user = PathBuf::from(format!("/run/user/{uid}"));
    if run_user.is_dir() {
        return run_user.join("mcp-bridge");
    }
    PathBuf::from(format!("/tmp/mcp-bridge-{uid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_past_its_limit_keeps_its_last_whole_lines() {
        let dir = std::env::temp_dir().join(format!("mcp-bridge-trim-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("daemon.log");
        let lines: String = (0..100).map(|i| format!("line {i:03}\n")).collect();
        std::fs::write(&path, &lines).unwrap();
        assert!(!trim_log(&path, 1000, 30).unwrap(), "800 bytes: under the limit");
        assert!(trim_log(&path, 500, 30).unwrap());
        let trimmed = std::fs::read_to_string(&path).unwrap();
        let kept: Vec<&str> = trimmed.lines().skip(1).collect();
        assert!(trimmed.starts_with("mcp-bridge daemon: the log passed"), "{trimmed}");
        assert_eq!(kept, ["line 097", "line 098", "line 099"], "whole lines from the last 30 bytes");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
