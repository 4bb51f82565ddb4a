//! What travels on a connection to the daemon besides MCP: the first line
//! a connection sends ([`Hello`]) and the daemon's one-line answer
//! ([`Answer`]), each a JSON object. After [`Answer::Attached`] the
//! connection carries the client's MCP messages, line by line, as stdio
//! does; or, when `attach` hands its stdin and stdout over
//! ([`Hello::Attach::hand_over`]), the daemon's [`Report`]s of the
//! client's handshake, which `attach` keeps to resume with ([`Resume`]).

use serde::{Deserialize, Serialize};

/// The longest first line the daemon reads: a list of server names, and
/// a client's `initialize` to resume (at most 1 MiB is watched).
pub const MAX_HELLO_BYTES: usize = 2 * 1024 * 1024;

/// Whether this system passes the client's stdin and stdout over the
/// connection ([`Hello::Attach::hand_over`]): Unix does (`SCM_RIGHTS`);
/// on Windows `attach` copies the bytes on the connection.
pub const HANDS_OVER: bool = cfg!(unix);

/// The first line of a connection: what it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hello {
    /// Serve MCP on this connection from the next line on, with the
    /// servers of these names (every server of the file when `None`).
    Attach {
        /// The servers' names in the configuration file.
        servers: Option<Vec<String>>,
        /// The client's stdin and stdout follow the answer (passed over
        /// the socket): the daemon reads and writes them itself, and the
        /// connection carries [`Report`]s. Without it, MCP follows on the
        /// connection.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        hand_over: bool,
        /// The handshake the client made with a daemon that went away.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Resume>,
    },
    /// Tell who is attached and what runs ([`Answer::Status`]).
    Status,
    /// End the daemon: its clients' connections close, its servers stop.
    Stop,
}

/// A 2025-11-25 client's handshake with a daemon that went away: the new
/// daemon reads it first, as if the client had sent it again; a client
/// that had sent `notifications/initialized` had the answer to its
/// `initialize`, and gets no second one.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Resume {
    /// The client's `initialize` request, its line without the newline.
    pub initialize: String,
    /// The client sent `notifications/initialized`.
    pub initialized: bool,
}

/// What the daemon tells an `attach` that handed its stdin and stdout
/// over: the client's handshake as it happens, and the session's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Report {
    /// The client's first line is this `initialize` request.
    Initialize(String),
    /// The client sent `notifications/initialized`.
    Initialized,
    /// The client closed its input: the session is over (the daemon
    /// closes the connection next, and `attach` exits).
    Ended,
}

/// The daemon's answer to a [`Hello`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// MCP follows, with these servers.
    Attached {
        /// The servers the connection is served.
        servers: Vec<String>,
        /// The daemon's process id.
        pid: u32,
        /// The daemon takes the client's stdio next, as asked (a daemon
        /// older than the hand-over does not say so).
        #[serde(default)]
        hand_over: bool,
    },
    /// Who is attached and what runs.
    Status(Status),
    /// The daemon ends.
    Stopping,
    /// Not served, and why (an unknown server's name, say).
    Refused {
        /// For the user.
        reason: String,
    },
}

/// A daemon's state for `mcp-bridge daemon status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The daemon's process id.
    pub pid: u32,
    /// Its resident memory, in bytes, where the system tells it.
    pub resident_bytes: Option<u64>,
    /// The configuration file it serves.
    pub config: String,
    /// The clients attached now.
    pub clients: Vec<ClientStatus>,
    /// The servers of the file.
    pub servers: Vec<ServerStatus>,
}

/// One attached client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientStatus {
    /// The process id of its `mcp-bridge attach`, where the system tells it.
    pub pid: Option<u32>,
    /// The servers it asked for.
    pub servers: Vec<String>,
    /// Seconds since it attached.
    pub attached_seconds: u64,
}

/// One server of the configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// Its name in the file.
    pub name: String,
    /// Whether it runs now (a client uses it, or its idle time has not
    /// run out).
    pub running: bool,
    /// Whether it answers now.
    pub available: bool,
    /// Its process id, while it runs a program.
    pub pid: Option<u32>,
    /// The resident memory of its process, in bytes, where the system
    /// tells it.
    pub resident_bytes: Option<u64>,
    /// How many attached clients use it.
    pub clients: usize,
    /// Why it does not answer, when it does not.
    pub problem: Option<String>,
}

/// `message` as one line of JSON, with its newline.
pub fn line<T: Serialize>(message: &T) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_reads_back_as_it_was_written() {
        let resume = Resume { initialize: r#"{"id":1}"#.into(), initialized: false };
        for hello in [
            Hello::Attach { servers: Some(vec!["github".into()]), hand_over: false, resume: None },
            Hello::Attach { servers: None, hand_over: true, resume: Some(resume) },
            Hello::Status,
            Hello::Stop,
        ] {
            let written = line(&hello);
            assert!(written.ends_with(b"\n") && !written[..written.len() - 1].contains(&b'\n'));
            assert_eq!(serde_json::from_slice::<Hello>(&written).unwrap(), hello);
        }
        let attach: Hello = serde_json::from_str(r#"{"attach":{"servers":["a","b"]}}"#).unwrap();
        assert_eq!(
            attach,
            Hello::Attach { servers: Some(vec!["a".into(), "b".into()]), hand_over: false, resume: None }
        );
        for report in [Report::Initialize("{}".into()), Report::Initialized, Report::Ended] {
            assert_eq!(serde_json::from_slice::<Report>(&line(&report)).unwrap(), report);
        }
        assert_eq!(serde_json::from_str::<Hello>(r#""status""#).unwrap(), Hello::Status);
    }
}
