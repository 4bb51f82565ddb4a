//! The stdio bridge for one client: the reader of its lines, the single
//! writer of stdout, and the two ways to end (end of input, loss of the
//! upstream); everything between is the client's `LegacySession`.
//!
//! ```text
//!  stdin ─▶ reader: frames, decoding ─▶ LegacySession ─┬─ answers itself: ping, setLevel,
//!                                                 │  server/discover, bad lines, lifecycle
//!                                                 └─▶ slot task ─▶ Upstream ─▶ child
//!  stdout ◀── writer task ◀── every message (one line each, never interleaved)
//! ```
//!
//! Lifecycle: `awaiting_initialize` → (first initialize) `initializing` →
//! (discover result) `ready`; a failed initialize goes back to
//! `awaiting_initialize`; the end of input or the loss of the upstream goes
//! to `closing`.

use std::sync::Arc;
use std::time::Duration;

use crate::limits::ServerLimits;
use crate::transport::lines::{FrameReader, finish_writer, write_lines};
use mcp_bridge_protocol::methods::Wait;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::server::frames::{Ended, read_until};
use crate::server::legacy::profile::Profile;
use crate::server::legacy::session::LegacySession;
use crate::server::legacy::upstream::UpstreamConfig;

/// Frames queued for the writer before senders wait.
const OUTPUT_QUEUE: usize = 1024;

/// Time limits of forwarded requests, by method.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The list requests and `completion/complete`.
    pub list: Duration,
    /// `prompts/get` and `resources/read`.
    pub read: Duration,
    /// `tools/call`: long, because tools can be; the client's cancel is the
    /// outer limit.
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { list: Duration::from_secs(120), read: Duration::from_secs(120), call: Duration::from_secs(3600) }
    }
}

impl Timeouts {
    pub(crate) fn for_method(&self, method: &str) -> Duration {
        match mcp_bridge_protocol::methods::spec(method).map(|m| m.wait) {
            Some(Wait::Call) => self.call,
            Some(Wait::Read) => self.read,
            Some(Wait::List) | None => self.list,
        }
    }
}

/// How a front end behaves: [`FrontendOptions::default`], then the
/// `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FrontendOptions {
    /// The client family.
    pub profile: &'static Profile,
    /// The limits of what the client sends, as an SDK server's: the
    /// longest line, the deepest nesting, the requests handled at once (one
    /// more is answered -32603 at once), and the time the requests in flight
    /// get at the end.
    pub limits: ServerLimits,
    /// Time limit of `server/discover` at initialize.
    pub discover_timeout: Duration,
    /// Time limits of forwarded requests.
    pub timeouts: Timeouts,
    /// Time the client gets to answer one round of input requests.
    pub input_timeout: Duration,
    /// The upstream's revision: found out by default (see
    /// [`crate::client::Era`]).
    pub upstream_era: crate::client::Era,
    /// Where the upstream's era is remembered between sessions, so a
    /// bridge started again skips the probe; none by default.
    pub era_cache: Option<crate::client::EraCache>,
    /// Hears of every request the front end forwards to the upstream, as
    /// the server that answers it (see [`crate::telemetry`]); none by
    /// default. Requests of an in-process upstream are its server's to
    /// observe.
    pub observer: Option<Arc<dyn crate::telemetry::Observer>>,
}

crate::with_setters! {
    FrontendOptions {
        value with_profile => profile: &'static Profile,
        value with_limits => limits: ServerLimits,
        value with_discover_timeout => discover_timeout: Duration,
        value with_timeouts => timeouts: Timeouts,
        value with_input_timeout => input_timeout: Duration,
        value with_upstream_era => upstream_era: crate::client::Era,
        some with_era_cache => era_cache: crate::client::EraCache,
        some with_observer => observer: Arc<dyn crate::telemetry::Observer>,
    }
}

impl Default for FrontendOptions {
    fn default() -> Self {
        FrontendOptions {
            profile: &crate::server::legacy::profile::VSCODE,
            limits: ServerLimits::default(),
            discover_timeout: Duration::from_secs(60),
            timeouts: Timeouts::default(),
            input_timeout: Duration::from_secs(3600),
            upstream_era: crate::client::Era::Auto,
            era_cache: None,
            observer: None,
        }
    }
}

/// Calls the front end makes to its host (the executable).
#[derive(Default)]
pub struct Hooks {
    /// Called at the end of the input, before the shutdown waits: the
    /// executable starts its watchdog here.
    pub on_eof: Option<Box<dyn FnOnce() + Send>>,
    /// Called with the process id (and group id) of each upstream child
    /// started, so the watchdog can stop its group.
    pub on_upstream_started: Option<Arc<dyn Fn(u32) + Send + Sync>>,
    /// Called at the client's `notifications/initialized` with the way to
    /// ask the client to let the user sign in (a URL elicitation), or
    /// `None` when the client cannot show one: the sign-in gate takes it.
    pub on_initialized: Option<OnInitialized>,
    /// Called with the level of each `logging/setLevel` of the client: the
    /// executable's own log follows it (seed: `bridge.log`).
    pub on_log_level: Option<OnLogLevel>,
}

/// Receives the level the client asked for (see [`Hooks`]).
pub type OnLogLevel = Arc<dyn Fn(mcp_bridge_protocol::types::LoggingLevel) + Send + Sync>;

/// Receives the way to ask the client about a sign-in (see [`Hooks`]).
pub type OnInitialized = Box<dyn FnOnce(Option<Consent>) + Send>;

/// What the client is asked to show the user for a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInPrompt {
    /// The page to open: the authorization URL, or a device sign-in's
    /// verification URL.
    pub url: String,
    /// What the user is told.
    pub message: String,
}

/// A number of its own for each sign-in prompt of the process.
fn next_sign_in() -> u64 {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    LAST.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

impl SignInPrompt {
    /// The URL elicitation that asks a client to let the user sign in: the
    /// page to open and what the user is told.
    pub fn input_request(&self) -> mcp_bridge_protocol::types::InputRequest {
        use mcp_bridge_protocol::method::MethodCall;
        use mcp_bridge_protocol::types::{ElicitRequestParams, ElicitRequestUrlParams, InputRequest};
        InputRequest::Elicit(MethodCall::new(ElicitRequestParams::Url(ElicitRequestUrlParams {
            mode: Default::default(),
            message: self.message.clone(),
            url: self.url.clone(),
            elicitation_id: Some(format!("sign-in-{}-{}", std::process::id(), next_sign_in())),
            extra: Default::default(),
        })))
    }
}

/// Asks the client to let the user sign in (a URL elicitation with the
/// [`SignInPrompt`]): `Ok(true)` when the user accepted.
pub type Consent = Arc<dyn Fn(SignInPrompt) -> crate::BoxFuture<Result<bool, crate::BoxError>> + Send + Sync>;

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("on_eof", &self.on_eof.is_some())
            .field("on_upstream_started", &self.on_upstream_started.is_some())
            .field("on_initialized", &self.on_initialized.is_some())
            .field("on_log_level", &self.on_log_level.is_some())
            .finish()
    }
}

/// How a front end ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The client closed its input (exit code 0).
    Eof,
    /// The upstream server was lost (exit code 1).
    UpstreamExited,
}

/// Serves one legacy client on `input`/`output` in front of the upstream of
/// `config`, until the input ends or the upstream is lost.
///
/// # Errors
/// An I/O error of the input or the output.
pub async fn run<R, W>(
    input: R,
    output: W,
    config: UpstreamConfig,
    options: FrontendOptions,
    hooks: Hooks,
) -> std::io::Result<RunOutcome>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let reader = FrameReader::new(input, options.limits.max_line_bytes);
    run_frames(reader, output, config, options, hooks).await
}

/// [`run`] on frames some of which may already have been read (the embed's
/// first line).
pub(crate) async fn run_frames<R, W>(
    mut reader: FrameReader<R>,
    output: W,
    config: UpstreamConfig,
    options: FrontendOptions,
    mut hooks: Hooks,
) -> std::io::Result<RunOutcome>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut rx) = mpsc::channel(OUTPUT_QUEUE);
    let stop_writer = CancellationToken::new();
    let writer_stop = stop_writer.clone();
    let writer = tokio::spawn(async move { write_lines(output, &mut rx, writer_stop).await });
    let session_hooks = crate::server::legacy::session::SessionHooks {
        on_upstream_started: hooks.on_upstream_started.clone(),
        on_initialized: hooks.on_initialized.take(),
        on_log_level: hooks.on_log_level.clone(),
        writes_lines: true,
    };
    let session = LegacySession::new(config, options.clone(), out, session_hooks);
    let max_depth = options.limits.max_depth;
    let outcome = match read_until(&mut reader, &session, max_depth, session.upstream_lost()).await {
        Ok(Ended::Input) => RunOutcome::Eof,
        Ok(Ended::Stopped) => RunOutcome::UpstreamExited,
        Err(e) => {
            tracing::warn!("reading stdin failed: {e}");
            RunOutcome::Eof
        }
    };

    let upstream = match outcome {
        RunOutcome::Eof => {
            tracing::debug!("end of input; shutting down");
            if let Some(on_eof) = hooks.on_eof.take() {
                on_eof();
            }
            session.end_of_input().await
        }
        RunOutcome::UpstreamExited => {
            let upstream = session.upstream_exited();
            // The reader keeps answering -32603 until the output closes.
            let read = read_until(&mut reader, &session, max_depth, session.wait_slots()).await;
            if !matches!(read, Ok(Ended::Stopped)) {
                session.wait_slots().await;
            }
            upstream
        }
    };
    drop(reader);
    drop(session);
    // Every request is answered and its answer queued: the writer writes
    // what is queued and stops. Waiting for the last sender to go would
    // wait for the listener's streams, which end with the upstream.
    stop_writer.cancel();
    let written = finish_writer(writer, stop_writer, options.limits.shutdown_grace).await;
    if let Some(upstream) = upstream {
        upstream.close().await;
    }
    written?;
    Ok(outcome)
}
