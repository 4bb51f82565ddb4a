//! A 2025-11-25 client on a WebSocket connection (the TypeScript SDK 1.x's
//! `WebSocketClientTransport`, say): its text messages go to a legacy
//! session as a stdio client's lines do, and the session's lines come back
//! as text messages. The connection's own limits (message size, the cap,
//! the stop) stay with the WebSocket loop.

use std::time::Duration;

use mcp_bridge_protocol::{Frame, Message, decode_message};
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::server::Server;
use crate::server::legacy::embed::EmbedOptions;
use crate::server::legacy::frontend::{Hooks, run};
use crate::server::legacy::upstream::UpstreamConfig;
use crate::server::protect::{Caller, CallerSlot};
use crate::transport::lines::FrameReader;

/// Bytes buffered each way between the connection and its session.
const PIPE_BYTES: usize = 64 * 1024;

/// The link from one WebSocket connection to its 2025-11-25 session: the
/// pipe its text messages go into and the task that runs the session.
pub(super) struct LegacyLink {
    input: DuplexStream,
    session: JoinHandle<()>,
    /// Cancelled when the session ended by itself (its upstream lost).
    pub(super) ended: CancellationToken,
}

impl LegacyLink {
    /// Starts the session of a client speaking for `caller`, its messages
    /// to the client sent on `out`.
    pub(super) fn start(
        server: &Server,
        options: EmbedOptions,
        caller: Option<std::sync::Arc<Caller>>,
        out: mpsc::Sender<Message>,
    ) -> Self {
        let (input, session_input) = tokio::io::duplex(PIPE_BYTES);
        let (session_output, output) = tokio::io::duplex(PIPE_BYTES);
        let config = UpstreamConfig::Memory { server: server.clone(), caller: CallerSlot::new(caller) };
        let frontend = options.frontend(server);
        let max_depth = server.limits().max_depth;
        let ended = CancellationToken::new();
        let ending = ended.clone();
        let session = tokio::spawn(async move {
            let serving = run(session_input, session_output, config, frontend, Hooks::default());
            let (served, ()) = tokio::join!(serving, forward(output, out, max_depth));
            if let Err(e) = served {
                tracing::debug!("a WebSocket client's 2025-11-25 session failed: {e}");
            }
            ending.cancel();
        });
        LegacyLink { input, session, ended }
    }

    /// Passes one text message to the session, as one line: a raw CR or LF
    /// can only be whitespace between a JSON message's tokens.
    pub(super) async fn send(&mut self, text: &str) -> std::io::Result<()> {
        let mut line = text.replace(['\r', '\n'], " ");
        line.push('\n');
        self.input.write_all(line.as_bytes()).await
    }

    /// Ends the session as at the end of a stdio client's input: its
    /// requests get `grace`, then it is stopped.
    pub(super) async fn finish(self, grace: Duration) {
        let LegacyLink { input, mut session, .. } = self;
        drop(input);
        if tokio::time::timeout(grace, &mut session).await.is_err() {
            session.abort();
        }
    }
}

/// The session's lines, decoded, to the connection's writer.
async fn forward(output: DuplexStream, out: mpsc::Sender<Message>, max_depth: usize) {
    // The session's own output: no line is too long to pass on.
    let mut lines = FrameReader::new(output, usize::MAX);
    while let Ok(Some(frame)) = lines.next().await {
        let Frame::Line(line) = frame else { continue };
        match decode_message(&line, max_depth) {
            Ok(message) => {
                if out.send(message).await.is_err() {
                    return;
                }
            }
            Err(e) => tracing::warn!("a 2025-11-25 session's message was not sent over WebSocket: {e}"),
        }
    }
}
