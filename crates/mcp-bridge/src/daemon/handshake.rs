//! The rule of a client's 2025-11-25 handshake as the daemon watches it
//! for `attach`: the first line `initialize` (a `server/discover` probe
//! before it decides nothing), then `notifications/initialized`; any other
//! first line is a 2026-07-28 client's, which has no handshake. Pure: the
//! lines in, the [`Report`]s out.

use mcp_bridge_protocol::method::{Initialize, Initialized, Method, ServerDiscover};
use serde::Deserialize;

use super::wire::Report;

/// The longest line watched: a handshake line longer than this ends the
/// watch (the client is served as ever; a new daemon would not resume it).
pub(crate) const MAX_LINE: usize = 1024 * 1024;

/// What a JSON-RPC line is, as far as the handshake (and its resume) cares.
#[derive(Deserialize)]
pub(crate) struct Envelope {
    /// Its id: a request's or a response's.
    #[serde(default)]
    pub(crate) id: Option<serde_json::Value>,
    /// Its method: a request's or a notification's.
    #[serde(default)]
    pub(crate) method: Option<String>,
}

/// Where a client's handshake stands.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) enum Handshake {
    /// No line decided yet.
    #[default]
    Before,
    /// `initialize` came; `notifications/initialized` not yet.
    Initializing,
    /// Over (or never one): nothing more to watch.
    Over,
}

impl Handshake {
    /// Notes one line the client sent (without its newline); what to
    /// report of it.
    pub(crate) fn read(&mut self, line: &[u8]) -> Option<Report> {
        let method = serde_json::from_slice::<Envelope>(line).ok().and_then(|e| e.method);
        match (&*self, method.as_deref()) {
            (Handshake::Before, Some(Initialize::NAME)) => {
                *self = Handshake::Initializing;
                Some(Report::Initialize(String::from_utf8_lossy(line).into_owned()))
            }
            (Handshake::Before, Some(ServerDiscover::NAME)) => None,
            (Handshake::Before, _) => {
                *self = Handshake::Over;
                None
            }
            (Handshake::Initializing, Some(Initialized::NAME)) => {
                *self = Handshake::Over;
                Some(Report::Initialized)
            }
            _ => None,
        }
    }

    /// Whether lines are still watched.
    pub(crate) fn watching(&self) -> bool {
        *self != Handshake::Over
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_handshake_reports_initialize_and_initialized_only() {
        let mut legacy = Handshake::default();
        let first = br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#;
        assert_eq!(legacy.read(first), Some(Report::Initialize(String::from_utf8_lossy(first).into_owned())));
        assert_eq!(legacy.read(br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#), None);
        assert!(legacy.watching());
        assert_eq!(
            legacy.read(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Some(Report::Initialized)
        );
        assert!(!legacy.watching());

        let mut modern = Handshake::default();
        assert_eq!(modern.read(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#), None);
        assert!(modern.watching(), "a probe decides nothing");
        assert_eq!(modern.read(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#), None);
        assert!(!modern.watching());
        assert_eq!(Handshake::default().read(b"not json"), None);
    }
}
