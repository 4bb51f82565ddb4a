//! `mcp-bridge daemon run|status|stop`: the per-user daemon that
//! `mcp-bridge attach` starts and connects to ([`mcp_bridge::daemon`]
//! serves; [`rendezvous`] says where it is and starts exactly one).
//! Elsewhere than Unix and Windows each command says so and exits 2.

#[cfg(any(unix, windows))]
pub(crate) mod rendezvous;

use std::path::PathBuf;
use std::process::ExitCode;

/// What `mcp-bridge daemon` was asked.
#[derive(Debug)]
// Not read where every job is refused.
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub(crate) enum DaemonJob {
    /// Run the daemon of the file here.
    Run {
        /// The configuration file.
        config: PathBuf,
        /// Its log's level.
        log_level: String,
        /// How its servers at a URL are signed in to.
        sign_in: SignInChoices,
    },
    /// Print what it runs.
    Status {
        /// The configuration file.
        config: PathBuf,
        /// As JSON.
        json: bool,
    },
    /// End it.
    Stop {
        /// The configuration file.
        config: PathBuf,
    },
}

/// How a daemon signs in to its servers at a URL (`daemon run`'s flags).
#[derive(Debug)]
// Not read where every job is refused.
#[cfg_attr(not(any(unix, windows)), allow(dead_code))]
pub(crate) struct SignInChoices {
    /// `--redirect-port`.
    pub(crate) redirect_port: u16,
    /// `--sign-in-timeout`.
    pub(crate) timeout: std::time::Duration,
    /// `--no-browser`.
    pub(crate) no_browser: bool,
}

/// Does `job`.
pub(crate) fn run(job: DaemonJob) -> ExitCode {
    #[cfg(any(unix, windows))]
    {
        let outcome = match job {
            DaemonJob::Run { config, log_level, sign_in } => jobs::run(&config, &log_level, &sign_in),
            DaemonJob::Status { config, json } => jobs::status(&config, json),
            DaemonJob::Stop { config } => jobs::stop(&config),
        };
        outcome.unwrap_or_else(|message| {
            eprintln!("mcp-bridge: {message}");
            ExitCode::from(1)
        })
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = job;
        eprintln!("mcp-bridge: the daemon runs on Linux, macOS and Windows only");
        ExitCode::from(2)
    }
}

#[cfg(any(unix, windows))]
mod jobs {
    use std::future::Future;
    use std::path::Path;
    use std::process::ExitCode;
    use std::time::Duration;

    use mcp_bridge::daemon::wire::{Answer, Hello, Status};
    use mcp_bridge::daemon::{self, DaemonListener, DaemonOptions};
    use mcp_bridge_sdk::task_group::TaskGroup;
    use tokio_util::sync::CancellationToken;

    use super::rendezvous::{self, Rendezvous};

    /// How long `stop` waits for the daemon to end.
    const STOP_TIMEOUT: Duration = Duration::from_secs(30);

    /// How often the daemon looks at its log's size.
    const LOG_CHECK: Duration = Duration::from_secs(30);

    pub(super) fn run(config: &Path, log_level: &str, sign_in: &super::SignInChoices) -> Result<ExitCode, String> {
        #[cfg(windows)]
        rendezvous::std_handles_not_inherited();
        let rendezvous = Rendezvous::of(config)?;
        let _held = match rendezvous::hold_pid_file(&rendezvous.pid_file, || rendezvous.listens()) {
            Ok(file) => file,
            Err(None) => {
                eprintln!("mcp-bridge: a daemon already serves {}", rendezvous.config.display());
                return Ok(ExitCode::from(rendezvous::ALREADY_RUNNING));
            }
            Err(Some(why)) => return Err(why),
        };
        // The daemon now: the log is this one's from here on.
        let log = rendezvous::private_options(std::fs::OpenOptions::new().write(true)).open(&rendezvous.log);
        if let Ok(log) = log {
            let _ = log.set_len(0);
        }
        let sign_ins = crate::sign_ins::SignIns::new(sign_in.redirect_port, sign_in.timeout, sign_in.no_browser);
        let servers = crate::reload::read(&rendezvous.config, Some(&sign_ins))?;
        let (file_changed, servers) = tokio::sync::watch::channel(servers);
        let _log = mcp_bridge::log::init("mcp-bridge daemon", log_level, Default::default());
        // Holding the pid file: nothing else listens there, whatever is left.
        let _ = std::fs::remove_file(&rendezvous.socket);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no runtime: {e}"))?;
        let outcome = runtime.block_on(async {
            let listener = listen(&rendezvous)?;
            // The one line on stdout: `attach` waits for it.
            println!("{}", rendezvous::READY);
            let stop = CancellationToken::new();
            let stopped = stop.clone();
            let ended = ended_by_the_system()?;
            tokio::spawn(async move {
                ended.await;
                stopped.cancel();
            });
            let log = rendezvous.log.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(LOG_CHECK);
                loop {
                    every.tick().await;
                    if let Err(error) = rendezvous::trim_log(&log, rendezvous::LOG_LIMIT, rendezvous::LOG_KEPT) {
                        tracing::debug!("{}: {error}", log.display());
                    }
                }
            });
            tracing::info!(
                pid = std::process::id(),
                "serving {} on {}",
                rendezvous.config.display(),
                rendezvous.socket.display()
            );
            let followed = TaskGroup::default();
            crate::reload::follow(rendezvous.config.clone(), Some(sign_ins), &followed, move |config| {
                file_changed.send_replace(config);
                std::future::ready("given to the daemon".to_owned())
            });
            let mut options = DaemonOptions::new(rendezvous.config.clone());
            options.stopped_marker = Some(rendezvous.stopped.clone());
            daemon::serve(listener, servers, options, stop).await.map_err(|e| e.to_string())
        });
        runtime.shutdown_timeout(Duration::from_secs(1));
        rendezvous.unpublish();
        outcome.map(|()| ExitCode::SUCCESS)
    }

    /// The daemon's listener, where `attach` looks for it.
    #[cfg(unix)]
    fn listen(rendezvous: &Rendezvous) -> Result<DaemonListener, String> {
        DaemonListener::bind(&rendezvous.socket).map_err(|e| format!("{}: {e}", rendezvous.socket.display()))
    }

    /// The daemon's listener, where `attach` looks for it.
    #[cfg(windows)]
    fn listen(rendezvous: &Rendezvous) -> Result<DaemonListener, String> {
        let name = rendezvous.new_pipe_name()?;
        let listener = DaemonListener::create(&name).map_err(|e| format!("{name}: {e}"))?;
        rendezvous.publish(&name)?;
        Ok(listener)
    }

    /// Ends when the system asks the daemon to end: SIGTERM or SIGINT on
    /// Unix, Ctrl+C or Ctrl+Break on Windows.
    fn ended_by_the_system() -> Result<impl Future<Output = ()> + Send + 'static, String> {
        #[cfg(unix)]
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("no signal handler: {e}"))?;
        #[cfg(windows)]
        let mut terminate = tokio::signal::windows::ctrl_break().map_err(|e| format!("no signal handler: {e}"))?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        })
    }

    /// Runs `work` on a runtime of its own (the commands that ask the
    /// daemon something and end).
    fn block_on<T>(work: impl Future<Output = Result<T, String>>) -> Result<T, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no runtime: {e}"))?;
        runtime.block_on(work)
    }

    pub(super) fn status(config: &Path, json: bool) -> Result<ExitCode, String> {
        let rendezvous = Rendezvous::of(config)?;
        let asked = block_on(async {
            let Some(mut stream) = rendezvous.connect().await else { return Ok(None) };
            rendezvous::ask(&mut stream, &Hello::Status).await.map(Some)
        })?;
        let Some(answer) = asked else {
            eprintln!("mcp-bridge: no daemon serves {}", rendezvous.config.display());
            return Ok(ExitCode::from(1));
        };
        match answer {
            Answer::Status(status) if json => {
                println!("{}", serde_json::to_string_pretty(&status).unwrap_or_default());
            }
            Answer::Status(status) => print!("{}", describe(&status, &rendezvous)),
            other => return Err(format!("the daemon answered {other:?}")),
        }
        Ok(ExitCode::SUCCESS)
    }

    pub(super) fn stop(config: &Path) -> Result<ExitCode, String> {
        let rendezvous = Rendezvous::of(config)?;
        // Its process id first: the one to wait for.
        let asked = block_on(async {
            let Some(mut stream) = rendezvous.connect().await else { return Ok(None) };
            let pid = match rendezvous::ask(&mut stream, &Hello::Status).await? {
                Answer::Status(status) => status.pid,
                other => return Err(format!("the daemon answered {other:?}")),
            };
            // Gone meanwhile: it ends already, waited for below.
            let Some(mut stream) = rendezvous.connect().await else { return Ok(Some(pid)) };
            match rendezvous::ask(&mut stream, &Hello::Stop).await? {
                Answer::Stopping => Ok(Some(pid)),
                other => Err(format!("the daemon answered {other:?}")),
            }
        })?;
        let Some(pid) = asked else {
            eprintln!("mcp-bridge: no daemon serves {}", rendezvous.config.display());
            return Ok(ExitCode::SUCCESS);
        };
        let deadline = std::time::Instant::now() + STOP_TIMEOUT;
        while rendezvous.lives(pid) {
            if std::time::Instant::now() > deadline {
                return Err(format!("the daemon (pid {pid}) did not end within {} s", STOP_TIMEOUT.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("mcp-bridge: the daemon of {} ended", rendezvous.config.display());
        Ok(ExitCode::SUCCESS)
    }

    /// The status as a person reads it.
    fn describe(status: &Status, rendezvous: &Rendezvous) -> String {
        let mib = |bytes: Option<u64>| bytes.map_or("-".to_owned(), |b| format!("{:.1} MiB", b as f64 / 1048576.0));
        let mut text = format!(
            "daemon pid {} ({}), serving {}\n{} {}\nlog {}\n\nclients: {}\n",
            status.pid,
            mib(status.resident_bytes),
            status.config,
            if cfg!(windows) { "pipe named in" } else { "socket" },
            rendezvous.socket.display(),
            rendezvous.log.display(),
            status.clients.len()
        );
        for client in &status.clients {
            let pid = client.pid.map_or("-".to_owned(), |p| p.to_string());
            text += &format!("  pid {pid}: {} (for {} s)\n", client.servers.join(", "), client.attached_seconds);
        }
        text += "\nservers:\n";
        for server in &status.servers {
            let state = match (server.running, server.available) {
                (false, _) => "stopped".to_owned(),
                (true, true) => "running".to_owned(),
                (true, false) => format!("not answering ({})", server.problem.as_deref().unwrap_or("starting")),
            };
            let pid = server.pid.map_or("-".to_owned(), |p| p.to_string());
            text += &format!(
                "  {}: {state}, pid {pid}, {}, {} client(s)\n",
                server.name,
                mib(server.resident_bytes),
                server.clients
            );
        }
        text
    }
}
