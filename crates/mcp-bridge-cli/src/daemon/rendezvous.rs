//! Where the daemon of a configuration file is found, and how exactly one
//! is started: its socket, its locks and its log sit in this user's own
//! folder (`$XDG_RUNTIME_DIR/mcp-bridge`, else `mcp-bridge-UID` in the
//! temporary folder; mode 0700, checked), named by a digest of the file's
//! full path. On Windows the folder is `%LOCALAPPDATA%\mcp-bridge\data\daemons`
//! and the daemon listens on a named pipe whose name has a random part,
//! written in the folder's `*.pipe` file; `attach` uses a pipe of that name
//! only when a process of this user made it (another user who saw the
//! name could make it once the daemon is gone).
//!
//! Two locks: `attach` holds `*.start.lock` while it checks for a daemon
//! and starts one, so four clients starting at once start one daemon; the
//! daemon holds `*.pid` for its whole life (with its process id in it),
//! so a second `daemon run` of the same file refuses, and a free lock
//! means any socket file left there is stale.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_bridge::daemon::wire::{self, Answer, Hello};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A connection to the daemon.
#[cfg(unix)]
pub(crate) type Connection = tokio::net::UnixStream;

/// A connection to the daemon.
#[cfg(windows)]
pub(crate) type Connection = tokio::net::windows::named_pipe::NamedPipeClient;

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
    /// The socket the daemon listens on; on Windows the file that names
    /// its pipe.
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
    /// (created, and on Unix checked to be closed to others).
    ///
    /// # Errors
    /// The file does not exist, or the folder cannot be made (or is open
    /// to others).
    pub(crate) fn of(config: &Path) -> Result<Rendezvous, String> {
        let config =
            dunce::canonicalize(config).map_err(|e| format!("the configuration file {}: {e}", config.display()))?;
        let folder = folder()?;
        private_folder(&folder)?;
        let digest = hex::encode(Sha256::digest(config.as_os_str().as_encoded_bytes()));
        let stem = folder.join(format!("daemon-{}", &digest[..16]));
        let with = |extension: &str| stem.with_extension(extension);
        Ok(Rendezvous {
            socket: with(if cfg!(windows) { "pipe" } else { "sock" }),
            start_lock: with("start.lock"),
            pid_file: with("pid"),
            log: with("log"),
            stopped: with("stopped"),
            config,
        })
    }

    /// A connection to the daemon, when one listens.
    #[cfg(unix)]
    pub(crate) async fn connect(&self) -> Option<Connection> {
        tokio::net::UnixStream::connect(&self.socket).await.ok()
    }

    /// A connection to the daemon, when one listens.
    #[cfg(windows)]
    pub(crate) async fn connect(&self) -> Option<Connection> {
        let name = self.pipe_name()?;
        open_pipe(&name, |name| tokio::net::windows::named_pipe::ClientOptions::new().open(name))
    }

    /// The name of the daemon's pipe, as the daemon wrote it.
    #[cfg(windows)]
    fn pipe_name(&self) -> Option<String> {
        let name = std::fs::read_to_string(&self.socket).ok()?;
        name.starts_with(PIPE_PREFIX).then_some(name)
    }

    /// Where the daemon should listen: on Windows a new pipe name, with a
    /// random part nobody else can know, written for `attach` to read
    /// once the daemon listens ([`Rendezvous::publish`]).
    #[cfg(windows)]
    pub(crate) fn new_pipe_name(&self) -> Result<String, String> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|e| format!("no random name for the pipe: {e}"))?;
        let stem = self.socket.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(format!("{PIPE_PREFIX}{stem}-{}", hex::encode(random)))
    }

    /// Tells `attach` where the daemon listens: the pipe's name, in the
    /// file it reads.
    #[cfg(windows)]
    pub(crate) fn publish(&self, pipe: &str) -> Result<(), String> {
        std::fs::write(&self.socket, pipe).map_err(|e| format!("{}: {e}", self.socket.display()))
    }

    /// Whether a daemon takes connections now (not waiting for one).
    pub(crate) fn listens(&self) -> bool {
        #[cfg(unix)]
        return std::os::unix::net::UnixStream::connect(&self.socket).is_ok();
        #[cfg(windows)]
        return self
            .pipe_name()
            .and_then(|name| open_pipe(&name, |name| OpenOptions::new().read(true).write(true).open(name)))
            .is_some();
    }

    /// Forgets where the daemon listened (Windows: the file naming its
    /// pipe), once it ended.
    pub(crate) fn unpublish(&self) {
        #[cfg(windows)]
        let _ = std::fs::remove_file(&self.socket);
    }

    /// A connection to the daemon, started first when none listens (one
    /// start at a time: the start lock).
    ///
    /// # Errors
    /// Why no daemon could be reached, for the user.
    pub(crate) async fn connect_or_start(&self) -> Result<Connection, String> {
        if let Some(stream) = self.connect().await {
            return Ok(stream);
        }
        // Blocking calls from here on (the lock, the start): nothing else
        // of `attach` runs before it is attached.
        let lock = private_file(&self.start_lock).map_err(|e| format!("{}: {e}", self.start_lock.display()))?;
        lock.lock().map_err(|e| format!("{}: {e}", self.start_lock.display()))?;
        // Another attach may have started it while this one waited.
        if let Some(stream) = self.connect().await {
            return Ok(stream);
        }
        self.start()?;
        let stream = self.connect().await;
        stream.ok_or_else(|| format!("the daemon started but {} takes no connection", self.socket.display()))
    }

    /// Starts the daemon in a session of its own (a client's end, or a
    /// signal to its process group, leaves it running), with its stderr
    /// in the log; returns once it listens.
    fn start(&self) -> Result<(), String> {
        let program = std::env::current_exe().map_err(|e| format!("mcp-bridge cannot find itself: {e}"))?;
        // Appended to: a daemon still ending writes there too; the new one
        // empties it once it is the daemon (see `daemon run`).
        let log = private_options(OpenOptions::new().create(true).append(true))
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
        let mut daemon = spawn_apart(command).map_err(|e| format!("the daemon could not be started: {e}"))?;
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

    /// Whether the daemon `pid` still lives: the pid file is held, and
    /// not by another daemon (one a client started meanwhile; on Windows,
    /// where a held file cannot be read, the process `pid` still runs).
    pub(crate) fn lives(&self, pid: u32) -> bool {
        let Ok(mut file) = File::open(&self.pid_file) else { return false };
        match file.try_lock_shared() {
            // Free: nobody holds it, so no daemon lives.
            Ok(()) => false,
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                match file.read_to_string(&mut text) {
                    Ok(_) => text.trim().parse() == Ok(pid),
                    // Windows: a held file cannot be read.
                    Err(_) => process_runs(pid),
                }
            }
            Err(TryLockError::Error(_)) => false,
        }
    }
}

/// Sends `hello` on `stream` and reads the daemon's answer.
///
/// # Errors
/// The connection failed or the answer is not one.
pub(crate) async fn ask(stream: &mut Connection, hello: &Hello) -> Result<Answer, String> {
    stream.write_all(&wire::line(hello)).await.map_err(|e| format!("the daemon closed the connection: {e}"))?;
    let mut line = Vec::new();
    // Byte by byte: what follows the answer is the MCP stream, not ours to read.
    let read = async {
        loop {
            match stream.read_u8().await {
                Ok(b'\n') => return Ok(()),
                Ok(byte) if line.len() < wire::MAX_HELLO_BYTES => line.push(byte),
                Ok(_) => return Err("the daemon's answer is too long".to_owned()),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    return Err("the daemon closed the connection before it answered".to_owned());
                }
                Err(e) => return Err(format!("the daemon did not answer: {e}")),
            }
        }
    };
    match tokio::time::timeout(ANSWER_TIMEOUT, read).await {
        Ok(read) => read?,
        Err(_) => return Err(format!("the daemon did not answer within {} s", ANSWER_TIMEOUT.as_secs())),
    }
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
/// it holds the servers' stderr and, on Linux, lives in a memory-backed
/// folder.
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
    let mut log = private_options(OpenOptions::new().read(true).write(true)).open(path)?;
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
    private_options(OpenOptions::new().read(true).write(true).create(true).truncate(false)).open(path)
}

/// `options`, for a file only this user may read (created 0600 on Unix;
/// on Windows the folder's access list is inherited), never opened
/// through a symbolic link.
pub(crate) fn private_options(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        /// Opens a link itself, not what it points to.
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
    }
}

/// Starts `command` apart from this process: in a session of its own on
/// Unix (a client's end, or a signal to its process group, leaves it
/// running); on Windows in a process group of its own, without a console,
/// and out of this process's job when the job allows it (a client that
/// kills its job's processes at its end leaves it running).
fn spawn_apart(mut command: Command) -> std::io::Result<std::process::Child> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
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
        command.spawn()
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        use windows_sys::Win32::System::Threading::{
            CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW,
        };
        std_handles_not_inherited();
        let apart = CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW;
        match command.creation_flags(apart | CREATE_BREAKAWAY_FROM_JOB).spawn() {
            // A job that allows no breakaway: in it, then.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => command.creation_flags(apart).spawn(),
            spawned => spawned,
        }
    }
}

/// Keeps this process's standard handles from the processes it starts
/// (Windows gives a child every inheritable handle): the daemon must not
/// hold a client's pipes open once its `attach` ended (the client would
/// never see their end), nor a server the daemon's. What a child is given
/// as its stdio is passed anyway (Rust's `Command` duplicates it).
#[cfg(windows)]
pub(crate) fn std_handles_not_inherited() {
    use windows_sys::Win32::Foundation::{HANDLE_FLAG_INHERIT, SetHandleInformation};
    use windows_sys::Win32::System::Console::{GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE};
    for which in [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
        // SAFETY: a handle of this process or null/invalid, which the call refuses.
        unsafe { SetHandleInformation(GetStdHandle(which), HANDLE_FLAG_INHERIT, 0) };
    }
}

/// Opens the daemon's pipe `name` with `open`, waiting a little while
/// every instance is taken (the daemon is making the next; blocking: it
/// comes before anything else of `attach` runs); only a pipe that a
/// process of this user made.
#[cfg(windows)]
fn open_pipe<P: std::os::windows::io::AsRawHandle>(name: &str, open: impl Fn(&str) -> std::io::Result<P>) -> Option<P> {
    use windows_sys::Win32::Foundation::ERROR_PIPE_BUSY;
    for _ in 0..40 {
        match open(name) {
            Ok(pipe) => match mcp_bridge::daemon::served_by_this_user(&pipe) {
                Ok(true) => return Some(pipe),
                Ok(false) => {
                    eprintln!("mcp-bridge: the pipe {name} was made by another user: not used");
                    return None;
                }
                Err(_) => return None,
            },
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => return None,
        }
    }
    None
}

/// Whether the process `pid` runs (Windows).
#[cfg(windows)]
fn process_runs(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
    // SAFETY: no pointer is passed; a null handle is checked.
    let process = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if process.is_null() {
        return false;
    }
    let mut code = 0u32;
    // SAFETY: an open handle; `code` is written on success.
    let read = unsafe { GetExitCodeProcess(process, &mut code) } != 0;
    // SAFETY: opened above, closed once.
    unsafe { CloseHandle(process) };
    read && code == STILL_ACTIVE as u32
}

/// Unix reads the pid file: never asked.
#[cfg(unix)]
fn process_runs(_: u32) -> bool {
    false
}

/// Creates this user's folder for the daemons, and checks that only this
/// user may enter it (Unix; on Windows the user's own application data
/// folder is).
fn private_folder(folder: &Path) -> Result<(), String> {
    #[cfg(unix)]
    return crate::dirs::private_folder(folder);
    #[cfg(windows)]
    return crate::dirs::create_private_dir(folder).map_err(|e| format!("cannot create {} ({e})", folder.display()));
}

/// This user's folder for the daemons' sockets: `$XDG_RUNTIME_DIR`, else
/// the folder systemd gives it as (`/run/user/UID`), else one in `/tmp`.
/// Not `$TMPDIR`: clients start `attach` with a reduced environment, and
/// every `attach` of a user must find the same folder.
#[cfg(unix)]
fn folder() -> Result<PathBuf, String> {
    if let Some(runtime) = directories::BaseDirs::new().and_then(|dirs| dirs.runtime_dir().map(Path::to_path_buf)) {
        return Ok(runtime.join("mcp-bridge"));
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    let run_user = PathBuf::from(format!("/run/user/{uid}"));
    if run_user.is_dir() {
        return Ok(run_user.join("mcp-bridge"));
    }
    Ok(PathBuf::from(format!("/tmp/mcp-bridge-{uid}")))
}

/// This user's folder for the daemons' files: `daemons` in mcp-bridge's
/// local application data (`%LOCALAPPDATA%\mcp-bridge\data`), closed to
/// other users by the profile's access list. Never a shared temporary
/// folder.
#[cfg(windows)]
fn folder() -> Result<PathBuf, String> {
    Ok(crate::dirs::state_dir().map_err(|e| e.to_string())?.join("daemons"))
}

/// How every daemon pipe's name begins.
#[cfg(windows)]
const PIPE_PREFIX: &str = r"\\.\pipe\mcp-bridge-";

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
