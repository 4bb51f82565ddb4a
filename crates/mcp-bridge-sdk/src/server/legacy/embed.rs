//! The embedded bridge: one stdio connection of a server built with the
//! SDK, served to a 2025-11-25 client and to a 2026-07-28 client alike. The
//! client's first request chooses: `initialize` selects the legacy path (the
//! bridge's front end, its upstream the same server over an in-memory
//! link), any other request the modern path (the SDK's own stdio server).
//! A `server/discover` before the first other request chooses nothing: it
//! is answered (or refused) and the next request decides.

#[cfg(feature = "http-server")]
pub mod http;

use crate::Server;
use mcp_bridge_protocol::method::{Initialize, Method, ServerDiscover};
use mcp_bridge_protocol::{ErrorObject, Frame, JsonRpcErrorResponse, Message, decode_message, error_code};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::server::legacy::frontend::{FrontendOptions, Hooks, run_frames};
use crate::server::legacy::profile::Profile;
use crate::server::legacy::upstream::UpstreamConfig;
use crate::transport::lines::FrameReader;

/// What a `server/discover` before the first other request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiscoverPolicy {
    /// The server answers it.
    #[default]
    Answer,
    /// -32601, as from a server that only speaks 2025-11-25, so a client
    /// that probes falls back to `initialize`.
    Refuse,
}

/// How an embedded bridge behaves: [`EmbedOptions::default`], then the
/// `with_*` setters.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct EmbedOptions {
    /// The client family of the legacy path.
    pub profile: &'static Profile,
    /// What an early `server/discover` gets.
    pub discover: DiscoverPolicy,
}

crate::with_setters! {
    EmbedOptions {
        value with_profile => profile: &'static Profile,
        value with_discover => discover: DiscoverPolicy,
    }
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions { profile: &crate::server::legacy::profile::VSCODE, discover: DiscoverPolicy::Answer }
    }
}

impl EmbedOptions {
    /// The front end's options of each legacy session of `server`: this
    /// profile, the server's limits.
    pub(crate) fn frontend(&self, server: &Server) -> FrontendOptions {
        FrontendOptions { profile: self.profile, limits: server.limits().clone(), ..FrontendOptions::default() }
    }
}

/// The path the first request chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// 2025-11-25, through the bridge's front end.
    Legacy,
    /// 2026-07-28, straight to the server.
    Modern,
    /// The input ended before a request chose.
    None,
}

/// What a client's first message says of its revision.
pub(crate) enum FirstLine {
    /// `initialize`: a 2025-11-25 client.
    Initialize,
    /// `server/discover`: answered by [`discover_answer`]; the next
    /// message decides.
    Discover(mcp_bridge_protocol::JsonRpcRequest),
    /// Anything else, bad messages included: the 2026-07-28 server's.
    Other,
}

/// What the first message `line` (one JSON-RPC message) says.
pub(crate) fn classify(line: &[u8], max_depth: usize) -> FirstLine {
    match decode_message(line, max_depth) {
        Ok(Message::Request(r)) if r.method == Initialize::NAME => FirstLine::Initialize,
        Ok(Message::Request(r)) if r.method == ServerDiscover::NAME => FirstLine::Discover(r),
        _ => FirstLine::Other,
    }
}

/// The answer to a `server/discover` that came before the first other
/// request, as `policy` says.
pub(crate) async fn discover_answer(
    server: &Server,
    request: mcp_bridge_protocol::JsonRpcRequest,
    policy: DiscoverPolicy,
) -> Message {
    match policy {
        DiscoverPolicy::Answer => server.answer(request).await,
        DiscoverPolicy::Refuse => Message::Error(JsonRpcErrorResponse::new(
            Some(request.id),
            ErrorObject::new(error_code::METHOD_NOT_FOUND, "Method not found"),
        )),
    }
}

/// Serves one connection on `input` and `output` until the input ends, with
/// the line length, depth, in-flight limit and shutdown grace of the
/// server's limits. Returns the path the client chose.
///
/// # Errors
/// An I/O error of the input or the output.
pub async fn serve_stdio_auto<R, W>(
    server: &Server,
    input: R,
    output: W,
    options: EmbedOptions,
) -> std::io::Result<Path>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_stream_auto(server, input, output, options, CancellationToken::new()).await
}

/// [`serve_stdio_auto`] until the input ends or `stop` is cancelled, which
/// ends the connection as the end of its input does.
///
/// # Errors
/// An I/O error of the input or the output.
pub async fn serve_stream_auto<R, W>(
    server: &Server,
    input: R,
    mut output: W,
    options: EmbedOptions,
    stop: CancellationToken,
) -> std::io::Result<Path>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let limits = server.limits().clone();
    let mut reader = FrameReader::new(EndAtStop::new(input, stop.clone()), limits.max_line_bytes);
    let path = loop {
        let line = match reader.peek().await? {
            None => break Path::None,
            Some(Frame::Line(line)) => line,
            // Too long to be `initialize`: the modern server answers it.
            Some(Frame::TooLong(_)) => break Path::Modern,
        };
        match classify(line, limits.max_depth) {
            FirstLine::Initialize => break Path::Legacy,
            FirstLine::Other => break Path::Modern,
            FirstLine::Discover(request) => {
                reader.next().await?;
                let answer = discover_answer(server, request, options.discover).await;
                output.write_all(&mcp_bridge_protocol::encode_line(&answer)).await?;
                output.flush().await?;
            }
        }
    };
    match path {
        Path::Legacy => {
            let (upstream, frontend) = (UpstreamConfig::memory(server), options.frontend(server));
            run_frames(reader, output, upstream, frontend, Hooks::default()).await?;
        }
        Path::Modern => server.serve_modern_frames(reader, output, stop).await?,
        Path::None => {}
    }
    Ok(path)
}

/// An input that ends when `stop` is cancelled: the legacy front end ends
/// a connection at the end of its input, and a stopped listener ends its
/// connections the same way.
struct EndAtStop<R> {
    input: R,
    stopped: std::pin::Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<R> EndAtStop<R> {
    fn new(input: R, stop: CancellationToken) -> Self {
        EndAtStop { input, stopped: Box::pin(stop.cancelled_owned()) }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EndAtStop<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.stopped.as_mut().poll(cx).is_ready() {
            // Nothing read: the end of the input.
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut self.input).poll_read(cx, buf)
    }
}
