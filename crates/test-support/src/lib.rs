//! Helpers shared by the tests of the workspace: where the official MCP
//! schemas are, validators for their definitions, a raw line-level peer for
//! stdio programs, the installed Python peer, and a small OAuth world
//! ([`oauth`]).

#![allow(clippy::unwrap_used, clippy::missing_panics_doc, missing_debug_implementations)]

pub mod hostile;
pub mod jwt;
pub mod oauth;
pub mod oidc;
pub mod scale;

mod http;
mod peers;
mod programs;
mod python_server;
mod raw_peer;
mod schema;

pub use http::*;
pub use peers::*;
pub use programs::*;
pub use python_server::*;
pub use raw_peer::*;
pub use schema::*;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The root of the workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// A size field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`, ...) in KiB;
/// `None` once the process is gone.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The URIs of the example server's resources, sorted: what a client that
/// lists them all sees.
pub const EXAMPLE_SERVER_RESOURCES: [&str; 5] = [
    "example://logo.png",
    "example://readme",
    "skill://example-tour/SKILL.md",
    "skill://example-tour/reference/tools.md",
    "ui://example/weather",
];

/// Waits until `condition` holds, checking every 10 ms for at most 15 s
/// of the test's clock (virtual on a paused clock); panics naming `what`.
/// For states no event announces; an event is better where there is one.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The log lines of one test: a tracing subscriber for the current thread
/// that writes into memory, read back with [`LogCapture::text`].
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// Captures the events of the current thread until the guard is dropped.
    pub fn start() -> (LogCapture, tracing::subscriber::DefaultGuard) {
        let capture = LogCapture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        (capture, tracing::subscriber::set_default(subscriber))
    }

    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A folder of one test's own under the system's temporary folder
/// (`mcp-NAME-PID-N`), empty at the start and removed when dropped, unless
/// the test is failing (then it is kept to be looked at).
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Makes the folder `mcp-NAME-PID-N` (N counts the folders this
    /// process made, so two of one name never meet), emptied first.
    pub fn new(name: &str) -> ScratchDir {
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcp-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
