//! Limits and time limits of the SDK, each with why it has its value.

use std::time::Duration;

/// Protocol versions this SDK speaks, newest first.
pub const SUPPORTED_VERSIONS: [&str; 1] = [mcp_bridge_protocol::PROTOCOL_VERSION];

/// Default time for a whole request, all input rounds included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Upper bound of any request timeout: a longer one is cut to this.
pub const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest [`crate::Client::close`] waits for a transport to end
/// (an HTTP transport its 2025-11-25 session, a WebSocket its close
/// handshake) before its tasks are ended regardless.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Input rounds of one multi round-trip request before the client gives up:
/// the protocol crate's [`MAX_ROUNDS`](mcp_bridge_protocol::rounds::MAX_ROUNDS),
/// which says why.
pub const MAX_INPUT_ROUNDS: usize = mcp_bridge_protocol::rounds::MAX_ROUNDS;

/// Times one request is sent again after its connection was lost (a
/// restarted child process); enough for a flapping server, not a loop.
pub const MAX_LOST_STREAM_RETRIES: usize = 3;

/// Requests of a 2025-11-25 server (elicitation, sampling, roots) its
/// client answers at once: each may be a dialog or a model call, and no
/// real server asks for more than a few; a server that asks for more is
/// answered an error at once instead of starting unbounded work.
pub const MAX_SERVER_REQUESTS: usize = 64;

/// Requests one client keeps waiting for answers by default: far beyond
/// any real workload, low enough that a runaway caller fails fast.
pub const MAX_PENDING_REQUESTS: usize = 4096;

/// Streamable HTTP requests sent at once by default; more wait for a free
/// slot (listen streams are not counted: they stay open by design).
pub const HTTP_MAX_IN_FLIGHT: usize = 64;

/// Redirects of one Streamable HTTP request followed (on the server's own
/// origin only): enough for a moved endpoint or a trailing slash, not a
/// loop.
pub const HTTP_MAX_REDIRECTS: usize = 5;

/// Polls of one task before `await_task` gives up and cancels it: the
/// deadline bounds the time, this the requests. An hour at the usual
/// one-second interval, and three minutes for a server that asks for the
/// shortest one (50 ms) instead of 12,000 polls in the ten-minute default.
pub const MAX_TASK_POLLS: usize = 3_600;

/// Pages the automatic pagination helpers read before they stop.
pub const MAX_AUTO_PAGES: usize = 64;

/// Progress notifications per second handed to `on_progress`; the rest are
/// dropped so a flooding server cannot starve the caller.
pub const MAX_PROGRESS_RATE_PER_S: u32 = 50;

/// Notifications queued for one request before new ones are dropped.
pub(crate) const REQUEST_EVENT_QUEUE: usize = 1024;

/// Messages queued for one connection's writer; senders wait when it is full,
/// which is the back-pressure of a slow peer.
pub(crate) const OUTGOING_QUEUE: usize = 256;

/// A line read from a stream is long from this size on, and its buffer is
/// kept after use for the next long line: glibc serves a buffer this large
/// from fresh pages (the binaries set `M_MMAP_THRESHOLD` here so that it is
/// given back when freed), and every fresh page costs a fault and a zeroing.
pub(crate) const LONG_LINE: usize = 256 * 1024;

/// How long a long line's buffer is kept for the next one: long enough for
/// a client's next call in a series of large results, short enough that a
/// process goes back to its idle memory soon after the last. The writer
/// that kept it lets go of it, so a writer still busy with a slow reader
/// lets go once that write is done.
pub(crate) const LONG_LINE_BUFFER_KEPT: Duration = Duration::from_secs(2);

/// Limits of one server connection.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Longest accepted line (stdio).
    pub max_line_bytes: usize,
    /// Deepest accepted nesting of a client message.
    pub max_depth: usize,
    /// Requests handled at once; one more is rejected with -32603 at once.
    /// Listen streams (`subscriptions/listen`) are not counted: they have a
    /// bound of their own, the same number.
    pub max_in_flight: usize,
    /// Time the requests in flight get to finish at the end of the input.
    pub shutdown_grace: Duration,
    /// Clients of a Unix socket ([`crate::Server::serve_unix`]) connected at
    /// once; one more is closed at once, before a byte is read. Such clients
    /// all run as users the socket's mode lets in, so there are no shares
    /// to keep between them as an HTTP endpoint keeps between addresses
    /// (its cap is `ConnectionLimits::max_connections`).
    /// The default is [`default_max_connections`].
    pub max_connections: usize,
}

crate::setters::with_setters! {
    ServerLimits {
        value with_max_line_bytes => max_line_bytes: usize,
        value with_max_depth => max_depth: usize,
        value with_max_in_flight => max_in_flight: usize,
        value with_shutdown_grace => shutdown_grace: Duration,
        value with_max_connections => max_connections: usize,
    }
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_line_bytes: mcp_bridge_protocol::DEFAULT_MAX_LINE_BYTES,
            max_depth: mcp_bridge_protocol::CLIENT_MAX_DEPTH,
            max_in_flight: 256,
            shutdown_grace: Duration::from_secs(2),
            max_connections: default_max_connections(),
        }
    }
}

/// The fewest connections the default cap allows, whatever the limit of
/// open files: the cap before it was derived from that limit.
pub const MIN_DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// The most connections the default cap allows: at some tens of KiB of
/// buffers each, 64 Ki connections stay within a few GiB.
pub const MAX_DEFAULT_MAX_CONNECTIONS: usize = 65_536;

/// The default cap on connections: half the process's soft limit of open
/// files (the other half for what the server opens itself: an upstream's
/// pipes and connections, files, the listener), within
/// [`MIN_DEFAULT_MAX_CONNECTIONS`] and [`MAX_DEFAULT_MAX_CONNECTIONS`].
/// [`raise_open_files_limit`] first makes the soft limit the hard one, as
/// the binaries do at start.
pub fn default_max_connections() -> usize {
    let soft = crate::os::open_files_limit().map_or(0, |(soft, _)| soft);
    usize::try_from(soft / 2).unwrap_or(usize::MAX).clamp(MIN_DEFAULT_MAX_CONNECTIONS, MAX_DEFAULT_MAX_CONNECTIONS)
}

/// Raises the process's soft limit of open files to its hard limit (no
/// privilege needed), so that [`default_max_connections`] can be higher;
/// returns the soft limit now, `None` where it cannot be read. For a
/// binary to call at start.
pub fn raise_open_files_limit() -> Option<u64> {
    crate::os::raise_open_files_limit()
}
