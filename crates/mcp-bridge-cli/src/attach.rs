//! `mcp-bridge attach [--config FILE] SERVER…`: what a client's
//! configuration runs to use the per-user daemon ([`crate::daemon`]). It
//! connects to the daemon of the file (starting it when none runs), asks
//! for the named servers, then hands its stdin and stdout to the daemon
//! (passed over the socket): the daemon reads and writes the client's own
//! pipes, in the client's own revision, and no process copies the bytes
//! in between. `attach` stays, as the process the client started, until
//! the session ends; its end (the client killed it) ends the session.
//! A stdin or stdout that is neither a pipe nor a socket (a terminal, a
//! file) is copied to a socket pair whose end is handed over instead.
//!
//! The daemon tells `attach` of the client's 2025-11-25 handshake. When
//! the daemon goes away while the client still talks, `attach` connects
//! once more (starting a new daemon) and hands the same stdio over with
//! that handshake, which the new daemon reads first; a client that had
//! the answer to its `initialize` gets no second one, and is told the
//! lists may have changed. Requests under way at the loss get no answer.
//! A second loss ends it with exit code 1 and the cause on stderr.
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
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use std::path::Path;
    use std::process::ExitCode;

    use mcp_bridge::daemon::hand_over;
    use mcp_bridge::daemon::wire::{Answer, Hello, Report, Resume};
    use tokio::io::{AsyncBufReadExt, BufReader};

    use crate::daemon::rendezvous::{self, Rendezvous};

    pub(super) fn run(config: &Path, servers: Option<Vec<String>>) -> ExitCode {
        let rendezvous = match Rendezvous::of(config) {
            Ok(rendezvous) => rendezvous,
            Err(why) => {
                eprintln!("mcp-bridge: {why}");
                return ExitCode::from(2);
            }
        };
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("mcp-bridge: no runtime: {e}");
                return ExitCode::from(1);
            }
        };
        let code = runtime.block_on(serve(&rendezvous, servers));
        // A terminal's reader may still wait in a thread of its own.
        runtime.shutdown_background();
        code
    }

    /// Hands the client's stdio to the daemon, again once when it goes
    /// away; the exit code.
    async fn serve(rendezvous: &Rendezvous, servers: Option<Vec<String>>) -> ExitCode {
        let Stdio { input, output, copied_out } = match stdio() {
            Ok(stdio) => stdio,
            Err(e) => {
                eprintln!("mcp-bridge: stdin and stdout cannot be handed to the daemon: {e}");
                return ExitCode::from(1);
            }
        };
        let mut handshake = Handshake::default();
        let mut lost_before = false;
        loop {
            let hello = Hello::Attach { servers: servers.clone(), hand_over: true, resume: handshake.resume() };
            let (stream, daemon) = match attach(rendezvous, &hello) {
                Ok(attached) => attached,
                Err(why) if lost_before => {
                    eprintln!("mcp-bridge: the daemon went away and cannot be reached again: {why}");
                    return ExitCode::from(1);
                }
                Err(why) => {
                    eprintln!("mcp-bridge: {why}");
                    return ExitCode::from(1);
                }
            };
            if let Err(e) = hand_over::send(&stream, input.as_fd(), output.as_fd()) {
                eprintln!("mcp-bridge: stdin and stdout could not be handed to the daemon: {e}");
                return ExitCode::from(1);
            }
            let cause = match follow(stream, &mut handshake).await {
                Ok(()) => {
                    // A terminal's or a file's copy: what the daemon wrote is
                    // written out before the end.
                    drop((input, output));
                    if let Some(copy) = copied_out {
                        let _ = tokio::time::timeout(crate::WATCHDOG, copy).await;
                    }
                    return ExitCode::SUCCESS;
                }
                Err(_) if rendezvous.was_stopped(daemon) => {
                    eprintln!("mcp-bridge: the daemon of {} was stopped", rendezvous.config.display());
                    return ExitCode::SUCCESS;
                }
                Err(cause) if lost_before => {
                    eprintln!(
                        "mcp-bridge: the daemon went away again ({cause}); its log: {}",
                        rendezvous.log.display()
                    );
                    return ExitCode::from(1);
                }
                Err(cause) => cause,
            };
            eprintln!("mcp-bridge: the daemon went away ({cause}); connecting again");
            lost_before = true;
        }
    }

    /// A connection to the daemon, attached, and the daemon's process id.
    fn attach(rendezvous: &Rendezvous, hello: &Hello) -> Result<(std::os::unix::net::UnixStream, u32), String> {
        let attempt = || -> Result<_, Result<String, String>> {
            let mut stream = rendezvous.connect_or_start().map_err(Err)?;
            match rendezvous::ask(&mut stream, hello) {
                Ok(Answer::Attached { pid, hand_over: true, .. }) => Ok((stream, pid)),
                Ok(Answer::Attached { .. }) => Err(Err(format!(
                    "the daemon of {} is older than this mcp-bridge; run `mcp-bridge daemon stop --config {}` and start the client again",
                    rendezvous.config.display(),
                    rendezvous.config.display()
                ))),
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

    /// Reads the daemon's reports until the session ends: `Ok` when the
    /// client closed its input, `Err` with why when the daemon went away.
    async fn follow(stream: std::os::unix::net::UnixStream, handshake: &mut Handshake) -> Result<(), String> {
        let stream = stream.set_nonblocking(true).and_then(|()| tokio::net::UnixStream::from_std(stream));
        let mut lines = BufReader::new(stream.map_err(|e| e.to_string())?).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => match serde_json::from_str::<Report>(&line) {
                    Ok(Report::Ended) => return Ok(()),
                    Ok(report) => handshake.note(report),
                    Err(e) => return Err(format!("it said something else ({e})")),
                },
                Ok(None) => return Err("it closed the connection".into()),
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The client's handshake as the daemon reported it.
    #[derive(Default)]
    struct Handshake {
        initialize: Option<String>,
        initialized: bool,
    }

    impl Handshake {
        fn note(&mut self, report: Report) {
            match report {
                Report::Initialize(line) => self.initialize = Some(line),
                Report::Initialized => self.initialized = true,
                Report::Ended => {}
            }
        }

        /// What a new daemon resumes, for a client that began a handshake.
        fn resume(&self) -> Option<Resume> {
            let initialize = self.initialize.clone()?;
            Some(Resume { initialize, initialized: self.initialized })
        }
    }

    /// What is handed over as the client's input and output.
    struct Stdio {
        input: OwnedFd,
        output: OwnedFd,
        /// The copy to stdout, when stdout is not handed over itself.
        copied_out: Option<tokio::task::JoinHandle<()>>,
    }

    /// Duplicates of stdin and stdout when they are pipes or sockets (the
    /// daemon's event loop reads those); else one end of a socket pair,
    /// the other copied to and from stdin and stdout here.
    fn stdio() -> std::io::Result<Stdio> {
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        if passable(stdin.as_fd()) && passable(stdout.as_fd()) {
            let (input, output) = (stdin.as_fd().try_clone_to_owned()?, stdout.as_fd().try_clone_to_owned()?);
            return Ok(Stdio { input, output, copied_out: None });
        }
        let (ours, theirs) = tokio::net::UnixStream::pair()?;
        let (mut from_daemon, mut to_daemon) = ours.into_split();
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut to_daemon).await;
        });
        let copied_out = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            let _ = tokio::io::copy(&mut from_daemon, &mut stdout).await;
            let _ = tokio::io::AsyncWriteExt::flush(&mut stdout).await;
        });
        let theirs = OwnedFd::from(theirs.into_std()?);
        Ok(Stdio { input: theirs.try_clone()?, output: theirs, copied_out: Some(copied_out) })
    }

    /// Whether `fd` is a pipe or a socket.
    fn passable(fd: std::os::fd::BorrowedFd<'_>) -> bool {
        let Ok(owned) = fd.try_clone_to_owned() else { return false };
        std::fs::File::from(owned).metadata().is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_handshake_resumes_only_a_client_that_began_one() {
            let mut handshake = Handshake::default();
            assert_eq!(handshake.resume(), None, "a 2026-07-28 client: nothing to resume");
            handshake.note(Report::Initialize("{}".into()));
            assert!(!handshake.resume().unwrap().initialized);
            handshake.note(Report::Initialized);
            assert!(handshake.resume().unwrap().initialized);
        }
    }
}
