//! Which revision a WebSocket connection's client speaks, as its first
//! request says (`initialize`: 2025-11-25) when the server serves both
//! (the `legacy` feature), and where each text message goes accordingly.

use std::time::Duration;

use tokio_tungstenite::tungstenite::Utf8Bytes;
use tokio_util::sync::CancellationToken;

use super::given_up;
#[cfg(feature = "legacy")]
use super::legacy::LegacyLink;
use crate::server::Server;
use crate::server::http::Slot;
#[cfg(feature = "legacy")]
use crate::server::legacy::embed::{EmbedOptions, FirstLine, classify, discover_answer};
use crate::server::protect::Caller;
use mcp_bridge_protocol::Message;
use tokio::sync::mpsc;

/// Which revision the connection's client speaks, as its first request
/// said (`initialize`: 2025-11-25), when the server serves both.
#[cfg(feature = "legacy")]
pub(super) enum Era {
    /// No request chose yet (a `server/discover` chooses nothing).
    Undecided {
        server: Server,
        options: EmbedOptions,
        caller: Option<std::sync::Arc<Caller>>,
        out: mpsc::Sender<Message>,
    },
    /// A 2025-11-25 client, served by its session.
    Legacy(LegacyLink),
    /// A 2026-07-28 client (or a server serving no other).
    Modern,
}

/// What [`Era::take`] did with a text message.
pub(super) enum Taken {
    /// Not the legacy session's: the connection handles it.
    Not(Utf8Bytes),
    /// Handled.
    Yes,
    /// The connection ends (its session did, or it must stop).
    Ended,
}

#[cfg(feature = "legacy")]
impl Era {
    pub(super) fn new(server: &Server, caller: Option<std::sync::Arc<Caller>>, out: mpsc::Sender<Message>) -> Era {
        match server.legacy_options() {
            Some(options) => Era::Undecided { server: server.clone(), options, caller, out },
            None => Era::Modern,
        }
    }

    pub(super) fn is_legacy(&self) -> bool {
        matches!(self, Era::Legacy(_))
    }

    /// Completes when a legacy session ended by itself; never otherwise.
    pub(super) async fn session_ended(&self) {
        match self {
            Era::Legacy(session) => session.ended.cancelled().await,
            _ => std::future::pending().await,
        }
    }

    /// Takes `text` when it is the legacy session's, or chooses the era on
    /// the first request; a message passed to the session gives way to the
    /// stop and to the cap (a session slow to read holds it back).
    pub(super) async fn take(&mut self, text: Utf8Bytes, stop: &CancellationToken, slot: Option<&Slot>) -> Taken {
        if let Era::Undecided { server, options, caller, out } = self {
            match classify(text.as_bytes(), server.limits().max_depth) {
                FirstLine::Initialize => {
                    let session = LegacyLink::start(server, *options, caller.take(), out.clone());
                    *self = Era::Legacy(session);
                }
                FirstLine::Discover(request) => {
                    let answer = discover_answer(server, request, options.discover).await;
                    return if out.send(answer).await.is_ok() { Taken::Yes } else { Taken::Ended };
                }
                FirstLine::Other => *self = Era::Modern,
            }
        }
        let Era::Legacy(session) = self else { return Taken::Not(text) };
        tokio::select! {
            sent = session.send(text.as_str()) => if sent.is_ok() { Taken::Yes } else { Taken::Ended },
            () = stop.cancelled() => Taken::Ended,
            () = given_up(slot) => Taken::Ended,
        }
    }

    /// Ends a legacy session as at the end of its client's input.
    pub(super) async fn finish(self, grace: Duration) {
        if let Era::Legacy(session) = self {
            session.finish(grace).await;
        }
    }
}

/// Without the `legacy` feature every client speaks 2026-07-28.
#[cfg(not(feature = "legacy"))]
pub(super) struct Era;

#[cfg(not(feature = "legacy"))]
impl Era {
    pub(super) fn new(_server: &Server, _caller: Option<std::sync::Arc<Caller>>, _out: mpsc::Sender<Message>) -> Era {
        Era
    }

    pub(super) fn is_legacy(&self) -> bool {
        false
    }

    pub(super) async fn session_ended(&self) {
        std::future::pending().await
    }

    pub(super) async fn take(&mut self, text: Utf8Bytes, _stop: &CancellationToken, _slot: Option<&Slot>) -> Taken {
        Taken::Not(text)
    }

    pub(super) async fn finish(self, _grace: Duration) {}
}
