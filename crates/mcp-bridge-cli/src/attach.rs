//! `mcp-bridge attach [--config FILE] SERVER…`: what a client's
//! configuration runs to use the per-user daemon ([`crate::daemon`]). It
//! connects to the daemon of the file (starting it when none runs), asks
//! for the named servers, then copies the client's stdin to the daemon
//! and the daemon's answers to stdout, byte for byte: the daemon serves
//! the client in the client's own revision.
//!
//! When the daemon goes away while the client still talks, `attach`
//! connects once more (starting a new daemon) and replays the client's
//! `initialize` and `notifications/initialized` there, keeping the answer
//! to itself; requests under way at the loss get no answer. A second
//! loss ends it with exit code 1 and the cause on stderr.
//!
//! | exit code | when |
//! |---|---|
//! | 0 | the client closed stdin (or stopped reading); the daemon was stopped (`mcp-bridge daemon stop`) |
//! | 1 | the daemon could not be reached or started, refused, or went away twice |
//! | 2 | no configuration file, no usable socket folder; not supported on this system |

use std::path::Path;
use std::process::ExitCode;

/// Serves the client on stdio from the daemon of `config` with
/// `servers` (every one for `None`).
pub(crate) fn run(config: &Path, servers: Option<Vec<String>>) -> ExitCode {
    #[cfg(unix)]
    return unix::run(config, servers);
    #[cfg(not(unix))]
    {
        let _ = (config, servers);
        eprintln!("mcp-bridge: attach runs on Linux and macOS only for now");
        ExitCode::from(2)
    }
}

#[cfg(unix)]
mod unix {
    use std::path::Path;
    use std::process::ExitCode;

    use mcp_bridge::daemon::wire::{Answer, Hello};
    use mcp_bridge_protocol::method::{
        Initialize, Initialized, Method, PromptsListChanged, ResourcesListChanged, ServerDiscover, ToolsListChanged,
    };
    use serde::Deserialize;
    use serde_json::Value;
    use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
    use tokio::net::UnixStream;
    use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

    use mcp_bridge_sdk::transport::process_stdio::{self, Input, Output};

    use crate::daemon::rendezvous::{self, Rendezvous};

    /// The longest handshake line `attach` keeps to replay.
    const MAX_HANDSHAKE_LINE: u64 = 4 * 1024 * 1024;

    /// The buffer of each direction.
    const BUFFER: usize = 64 * 1024;

    pub(super) fn run(config: &Path, servers: Option<Vec<String>>) -> ExitCode {
        let rendezvous = match Rendezvous::of(config) {
            Ok(rendezvous) => rendezvous,
            Err(why) => {
                eprintln!("mcp-bridge: {why}");
                return ExitCode::from(2);
            }
        };
        let hello = Hello::Attach { servers };
        let first = match attach(&rendezvous, &hello) {
            Ok(stream) => stream,
            Err(why) => {
                eprintln!("mcp-bridge: {why}");
                return ExitCode::from(1);
            }
        };
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("mcp-bridge: no runtime: {e}");
                return ExitCode::from(1);
            }
        };
        let code = runtime.block_on(relay(first, &rendezvous, &hello));
        // stdin's reader may still wait in a thread of its own.
        runtime.shutdown_background();
        code
    }

    /// A connection to the daemon, attached, and the daemon's process id.
    fn attach(rendezvous: &Rendezvous, hello: &Hello) -> Result<(std::os::unix::net::UnixStream, u32), String> {
        let attempt = || -> Result<_, Result<String, String>> {
            let mut stream = rendezvous.connect_or_start().map_err(Err)?;
            match rendezvous::ask(&mut stream, hello) {
                Ok(Answer::Attached { pid, .. }) => Ok((stream, pid)),
                Ok(Answer::Refused { reason }) => Err(Err(reason)),
                Ok(other) => Err(Err(format!("the daemon answered {other:?}"))),
                // A daemon that was ending as this one connected: once more.
                Err(why) => Err(Ok(why)),
            }
        };
        match attempt() {
            Ok(stream) => Ok(stream),
            Err(Err(why)) => Err(why),
            Err(Ok(_)) => attempt().map_err(|why| why.unwrap_or_else(|why| why)),
        }
    }

    /// How one connection to the daemon ended.
    enum Ended {
        /// The client closed stdin or stdout: done.
        ClientDone,
        /// The daemon closed the connection or failed, and why.
        DaemonLost(String),
    }

    /// Copies between the client and the daemon, connecting once more
    /// when the daemon goes away; the exit code.
    async fn relay(first: (std::os::unix::net::UnixStream, u32), rendezvous: &Rendezvous, hello: &Hello) -> ExitCode {
        let mut client_in = BufReader::with_capacity(BUFFER, process_stdio::stdin());
        let mut client_out = process_stdio::stdout();
        let mut handshake = Handshake::default();
        let (mut stream, mut daemon) = first;
        let mut reconnected = false;
        loop {
            let connected = stream.set_nonblocking(true).and_then(|()| UnixStream::from_std(stream));
            let (from_daemon, mut to_daemon) = match connected {
                Ok(stream) => stream.into_split(),
                Err(e) => {
                    eprintln!("mcp-bridge: the daemon's connection cannot be used: {e}");
                    return ExitCode::from(1);
                }
            };
            let mut from_daemon = BufReader::with_capacity(BUFFER, from_daemon);
            let replayed = if reconnected {
                handshake.replay(&mut to_daemon, &mut from_daemon, &mut client_out).await
            } else {
                Ok(())
            };
            let ended = match replayed {
                Ok(()) => connection(&mut client_in, &mut client_out, from_daemon, to_daemon, &mut handshake).await,
                Err(lost) => Ended::DaemonLost(lost),
            };
            let cause = match ended {
                Ended::ClientDone => return ExitCode::SUCCESS,
                Ended::DaemonLost(_) if rendezvous.was_stopped(daemon) => {
                    eprintln!("mcp-bridge: the daemon of {} was stopped", rendezvous.config.display());
                    return ExitCode::SUCCESS;
                }
                Ended::DaemonLost(cause) if reconnected => {
                    eprintln!(
                        "mcp-bridge: the daemon went away again ({cause}); its log: {}",
                        rendezvous.log.display()
                    );
                    return ExitCode::from(1);
                }
                Ended::DaemonLost(cause) => cause,
            };
            eprintln!("mcp-bridge: the daemon went away ({cause}); connecting again");
            reconnected = true;
            (stream, daemon) = match attach(rendezvous, hello) {
                Ok(attached) => attached,
                Err(why) => {
                    eprintln!("mcp-bridge: the daemon went away ({cause}) and cannot be reached again: {why}");
                    return ExitCode::from(1);
                }
            };
        }
    }

    /// One connection's copying, both ways, until one side ends.
    async fn connection(
        client_in: &mut BufReader<Input>,
        client_out: &mut Output,
        mut from_daemon: BufReader<OwnedReadHalf>,
        mut to_daemon: OwnedWriteHalf,
        handshake: &mut Handshake,
    ) -> Ended {
        let upward = async {
            while handshake.recording() {
                // Into the handshake's own buffer: a line cut by the loss
                // of the daemon is finished on the next connection.
                let limit = MAX_HANDSHAKE_LINE.saturating_sub(handshake.partial.len() as u64);
                match (&mut *client_in).take(limit).read_until(b'\n', &mut handshake.partial).await {
                    Ok(0) | Err(_) => return Ok(()),
                    Ok(_) => {}
                }
                let line = std::mem::take(&mut handshake.partial);
                handshake.record(&line);
                to_daemon.write_all(&line).await.map_err(|e| e.to_string())?;
            }
            match copy(client_in, &mut to_daemon).await {
                Copied::End | Copied::ReadFailed(_) => Ok(()),
                Copied::WriteFailed(e) => Err(e),
            }
        };
        tokio::select! {
            up = upward => match up {
                Ok(()) => {
                    // The client is done: the daemon ends the session and closes.
                    let _ = to_daemon.shutdown().await;
                    let _ = tokio::time::timeout(crate::WATCHDOG, copy(&mut from_daemon, client_out)).await;
                    Ended::ClientDone
                }
                Err(e) => Ended::DaemonLost(e),
            },
            down = copy(&mut from_daemon, client_out) => match down {
                Copied::End => Ended::DaemonLost("it closed the connection".into()),
                Copied::ReadFailed(e) => Ended::DaemonLost(e),
                Copied::WriteFailed(_) => Ended::ClientDone,
            },
        }
    }

    /// How a [`copy`] ended.
    enum Copied {
        /// The end of the input.
        End,
        /// Reading failed.
        ReadFailed(String),
        /// Writing failed.
        WriteFailed(String),
    }

    /// Copies `from` to `to` until `from` ends or either fails.
    ///
    /// # Cancel safety
    /// What was read is consumed only once written: a cancelled copy
    /// loses nothing that was not sent (a write cut in half excepted).
    async fn copy(from: &mut (impl AsyncBufRead + Unpin), to: &mut (impl AsyncWrite + Unpin)) -> Copied {
        loop {
            let chunk = match from.fill_buf().await {
                Ok([]) => return Copied::End,
                Ok(chunk) => chunk,
                Err(e) => return Copied::ReadFailed(e.to_string()),
            };
            let length = chunk.len();
            if let Err(e) = to.write_all(chunk).await {
                return Copied::WriteFailed(e.to_string());
            }
            from.consume(length);
            if let Err(e) = to.flush().await {
                return Copied::WriteFailed(e.to_string());
            }
        }
    }

    /// What a JSON-RPC line is, as far as the handshake cares.
    #[derive(Deserialize)]
    struct Envelope {
        #[serde(default)]
        id: Option<Value>,
        #[serde(default)]
        method: Option<String>,
    }

    /// The client's 2025-11-25 handshake, kept to be replayed to a new
    /// daemon: `initialize`, then `notifications/initialized`.
    #[derive(Default)]
    struct Handshake {
        lines: Vec<Vec<u8>>,
        initialize_id: Option<Value>,
        /// The client sent `notifications/initialized`, so it had the
        /// answer to its `initialize`.
        initialized: bool,
        done: bool,
        /// The start of a line still being read.
        partial: Vec<u8>,
    }

    impl Handshake {
        /// Whether the client's lines are still read one by one.
        fn recording(&self) -> bool {
            !self.done
        }

        /// Notes one line the client sent.
        fn record(&mut self, line: &[u8]) {
            let envelope: Option<Envelope> = serde_json::from_slice(line).ok();
            let method = envelope.as_ref().and_then(|e| e.method.as_deref());
            match (self.lines.is_empty(), method) {
                (true, Some(Initialize::NAME)) => {
                    self.initialize_id = envelope.and_then(|e| e.id);
                    self.lines.push(line.to_vec());
                }
                (true, Some(ServerDiscover::NAME)) => {}
                // A 2026-07-28 client: each request stands alone.
                (true, _) => self.done = true,
                (false, Some(Initialized::NAME)) => {
                    self.lines.push(line.to_vec());
                    self.initialized = true;
                    self.done = true;
                }
                (false, _) => {}
            }
        }

        /// Sends the handshake to a new daemon. A client that had the
        /// answer to its `initialize` does not get it again, and is told
        /// the lists may have changed; one still waiting gets it.
        async fn replay(
            &self,
            to_daemon: &mut OwnedWriteHalf,
            from_daemon: &mut BufReader<OwnedReadHalf>,
            client_out: &mut Output,
        ) -> Result<(), String> {
            for line in &self.lines {
                to_daemon.write_all(line).await.map_err(|e| e.to_string())?;
            }
            let Some(id) = self.initialize_id.as_ref().filter(|_| self.initialized) else { return Ok(()) };
            loop {
                let mut line = Vec::new();
                match from_daemon.take(MAX_HANDSHAKE_LINE).read_until(b'\n', &mut line).await {
                    Ok(0) => return Err("it closed the connection".into()),
                    Ok(_) => {}
                    Err(e) => return Err(e.to_string()),
                }
                let envelope: Option<Envelope> = serde_json::from_slice(&line).ok();
                if envelope.is_some_and(|e| e.method.is_none() && e.id.as_ref() == Some(id)) {
                    break;
                }
                let _ = client_out.write_all(&line).await;
            }
            for list in [ToolsListChanged::NAME, PromptsListChanged::NAME, ResourcesListChanged::NAME] {
                let line = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{list}\"}}\n");
                let _ = client_out.write_all(line.as_bytes()).await;
            }
            let _ = client_out.flush().await;
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_handshake_keeps_initialize_and_initialized_only() {
            let mut legacy = Handshake::default();
            legacy.record(br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}"#);
            assert!(legacy.recording());
            legacy.record(br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#);
            legacy.record(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
            assert!(!legacy.recording() && legacy.initialized);
            assert_eq!(legacy.lines.len(), 2);
            assert_eq!(legacy.initialize_id, Some(serde_json::json!(7)));

            let mut modern = Handshake::default();
            modern.record(br#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#);
            assert!(modern.recording(), "a probe decides nothing");
            modern.record(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
            assert!(!modern.recording() && modern.lines.is_empty() && modern.initialize_id.is_none());
        }
    }
}
