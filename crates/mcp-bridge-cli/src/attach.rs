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
//! On Windows, which passes no descriptors, `attach` copies the client's
//! bytes to and from the daemon's pipe; it then watches the handshake
//! itself, and answers not yet written when the client closes its input
//! are not waited for.
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
    #[cfg(any(unix, windows))]
    return shim::run(config, servers);
    #[cfg(not(any(unix, windows)))]
    {
        let _ = (config, servers);
        eprintln!("mcp-bridge: attach runs on Linux, macOS and Windows only");
        ExitCode::from(2)
    }
}

#[cfg(any(unix, windows))]
mod shim {
    #[cfg(unix)]
    use std::os::fd::{AsFd, OwnedFd};
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;
    use std::path::Path;
    use std::process::ExitCode;

    #[cfg(unix)]
    use mcp_bridge::daemon::hand_over;
    use mcp_bridge::daemon::wire::{self, Answer, Hello, Report, Resume};

    use crate::daemon::rendezvous::{self, Connection, Rendezvous};

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
    #[cfg(unix)]
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
            let (stream, daemon) = match attach(rendezvous, &servers, &handshake, lost_before).await {
                Ok(attached) => attached,
                Err(code) => return code,
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
                Err(cause) => cause,
            };
            if let Err(code) = went_away(rendezvous, daemon, &cause, lost_before) {
                return code;
            }
            lost_before = true;
        }
    }

    /// Copies the client's stdio to and from the daemon, again once when
    /// it goes away; the exit code.
    #[cfg(windows)]
    async fn serve(rendezvous: &Rendezvous, servers: Option<Vec<String>>) -> ExitCode {
        use mcp_bridge::daemon::resume::{CarriedInput, InputTap};
        use tokio::io::AsyncWriteExt;
        let (reports, mut heard) = tokio::sync::mpsc::unbounded_channel();
        let mut client = Client {
            input: InputTap::new(tokio::io::stdin(), reports),
            output: tokio::io::stdout(),
            carried: CarriedInput::default(),
            output_mid_line: false,
        };
        let mut handshake = Handshake::default();
        let mut lost_before = false;
        loop {
            while let Ok(report) = heard.try_recv() {
                handshake.note(report);
            }
            let (stream, daemon) = match attach(rendezvous, &servers, &handshake, lost_before).await {
                Ok(attached) => attached,
                Err(code) => return code,
            };
            let lost = client.copy(stream).await;
            let _ = client.output.flush().await;
            let Err(cause) = lost else { return ExitCode::SUCCESS };
            if let Err(code) = went_away(rendezvous, daemon, &cause, lost_before) {
                return code;
            }
            lost_before = true;
        }
    }

    /// The client's side of the copy (Windows), kept across daemons.
    #[cfg(windows)]
    struct Client {
        input: mcp_bridge::daemon::resume::InputTap<tokio::io::Stdin>,
        output: tokio::io::Stdout,
        carried: mcp_bridge::daemon::resume::CarriedInput,
        /// The last byte written to the client ended no line.
        output_mid_line: bool,
    }

    #[cfg(windows)]
    impl Client {
        /// Copies between the client and the daemon on `stream` until the
        /// client's input ends (`Ok`) or the daemon goes away (`Err`, why):
        /// then what the daemon wrote before is passed on, the client's
        /// line it had the start of is dropped, and a line of the daemon's
        /// cut short is ended (the client's next line stands alone).
        async fn copy(&mut self, stream: Connection) -> Result<(), String> {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            /// The bytes read at a time, each way.
            const COPY_BUFFER: usize = 64 * 1024;
            /// How long what a daemon that went away wrote is read on.
            const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);
            let Client { input, output, carried, output_mid_line } = self;
            let (mut from_daemon, mut to_daemon) = tokio::io::split(stream);
            let mut read = vec![0u8; COPY_BUFFER];
            let to = async {
                loop {
                    if carried.unsent().is_empty() {
                        // The client's input ended, or cannot be read: its end.
                        let Ok(n @ 1..) = input.read(&mut read).await else { return Ok(()) };
                        carried.read(&read[..n]);
                        continue;
                    }
                    match to_daemon.write(carried.unsent()).await {
                        Ok(n @ 1..) => carried.sent(n),
                        Ok(_) => return Err("it takes no more input".to_owned()),
                        Err(e) => return Err(e.to_string()),
                    }
                }
            };
            let from = async {
                let mut answers = vec![0u8; COPY_BUFFER];
                loop {
                    let n = match from_daemon.read(&mut answers).await {
                        Ok(0) => return "it closed the connection".to_owned(),
                        Ok(n) => n,
                        Err(e) => return e.to_string(),
                    };
                    if let Err(e) = output.write_all(&answers[..n]).await {
                        return format!("the client's output: {e}");
                    }
                    *output_mid_line = answers[n - 1] != b'\n';
                    let _ = output.flush().await;
                }
            };
            let lost = {
                tokio::pin!(from);
                tokio::select! {
                    ended = to => match ended {
                        Ok(()) => return Ok(()),
                        Err(cause) => {
                            let _ = tokio::time::timeout(DRAIN, &mut from).await;
                            cause
                        }
                    },
                    cause = &mut from => cause,
                }
            };
            carried.lost();
            if std::mem::take(output_mid_line) {
                let _ = output.write_all(b"\n").await;
            }
            Err(lost)
        }
    }

    /// After the daemon `daemon` went away: `Err` with the exit code when
    /// `attach` ends (it was stopped, or it was lost before), `Ok` to
    /// connect once more.
    fn went_away(rendezvous: &Rendezvous, daemon: u32, cause: &str, lost_before: bool) -> Result<(), ExitCode> {
        if rendezvous.was_stopped(daemon) {
            eprintln!("mcp-bridge: the daemon of {} was stopped", rendezvous.config.display());
            return Err(ExitCode::SUCCESS);
        }
        if lost_before {
            eprintln!("mcp-bridge: the daemon went away again ({cause}); its log: {}", rendezvous.log.display());
            return Err(ExitCode::from(1));
        }
        eprintln!("mcp-bridge: the daemon went away ({cause}); connecting again");
        Ok(())
    }

    /// A connection to the daemon, attached with `servers` and resuming
    /// `handshake`, and the daemon's process id; else the exit code, the
    /// cause said.
    async fn attach(
        rendezvous: &Rendezvous,
        servers: &Option<Vec<String>>,
        handshake: &Handshake,
        lost_before: bool,
    ) -> Result<(Connection, u32), ExitCode> {
        let hello = Hello::Attach { servers: servers.clone(), hand_over: wire::HANDS_OVER, resume: handshake.resume() };
        match attach_once_more(rendezvous, &hello).await {
            Ok(attached) => Ok(attached),
            Err(why) if lost_before => {
                eprintln!("mcp-bridge: the daemon went away and cannot be reached again: {why}");
                Err(ExitCode::from(1))
            }
            Err(why) => {
                eprintln!("mcp-bridge: {why}");
                Err(ExitCode::from(1))
            }
        }
    }

    /// A connection to the daemon, attached with `hello`, and the daemon's
    /// process id; tried once more when the daemon was ending.
    async fn attach_once_more(rendezvous: &Rendezvous, hello: &Hello) -> Result<(Connection, u32), String> {
        let attempt = async || -> Result<_, Result<String, String>> {
            let mut stream = rendezvous.connect_or_start().await.map_err(Err)?;
            match rendezvous::ask(&mut stream, hello).await {
                Ok(Answer::Attached { pid, hand_over: wire::HANDS_OVER, .. }) => Ok((stream, pid)),
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
        match attempt().await {
            Ok(stream) => Ok(stream),
            Err(Err(why)) => Err(why),
            Err(Ok(_)) => attempt().await.map_err(|why| why.unwrap_or_else(|why| why)),
        }
    }

    /// Reads the daemon's reports until the session ends: `Ok` when the
    /// client closed its input, `Err` with why when the daemon went away.
    #[cfg(unix)]
    async fn follow(stream: Connection, handshake: &mut Handshake) -> Result<(), String> {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(stream).lines();
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
    #[cfg(unix)]
    struct Stdio {
        input: OwnedFd,
        output: OwnedFd,
        /// The copy to stdout, when stdout is not handed over itself.
        copied_out: Option<tokio::task::JoinHandle<()>>,
    }

    /// Duplicates of stdin and stdout when they are pipes or sockets (the
    /// daemon's event loop reads those); else one end of a socket pair,
    /// the other copied to and from stdin and stdout here.
    #[cfg(unix)]
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
    #[cfg(unix)]
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
