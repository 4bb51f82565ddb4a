//! `mcp-bridge`: a 2025-11-25 stdio server for legacy MCP clients in front
//! of a 2026-07-28 server: a child process (`-- CMD`), or a URL over
//! Streamable HTTP with OAuth sign-in; `mcp-bridge logout` forgets sign-ins.
//!
//! | exit code | when |
//! |---|---|
//! | 0 | the client closed stdin (also after the watchdog); a logout done |
//! | 1 | the server stopped, or an internal error |
//! | 2 | invalid arguments, a missing `--header-env` variable, a CA file or token store that cannot be used, a `--listen` socket's folder open to other users |

mod args;
mod attach;
mod config;
mod daemon;
mod dirs;
mod doctor;
mod hints;
mod listen;
mod reload;
mod sign_ins;
mod telemetry;
mod token_store;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mcp_bridge_sdk::server::legacy::{Hooks, RunOutcome};
use mcp_bridge_sdk::transport::process_stdio;

/// The time after the end of stdin before the bridge stops whatever is left
/// and exits: VS Code sends SIGTERM after 10 s, so 8 s stays ahead of it.
pub(crate) const WATCHDOG: Duration = Duration::from_secs(8);

fn main() -> ExitCode {
    return_large_buffers_to_the_system();
    mcp_bridge_sdk::server::legacy::translate::set_hints(hints::of);
    let line = std::env::args_os().collect();
    let args = match args::Args::from_command_line(line, |word| which::which(word).is_ok()) {
        Ok(args) => args,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // The endpoint's secrets are for this process alone: no child (the
    // server, the gateway's servers, a browser) inherits them.
    let mut private_variables: Vec<String> = args.listen_token_env.iter().cloned().collect();
    if args.listen_auth_introspection {
        private_variables.extend(listen::INTROSPECTION_VARIABLES.map(str::to_owned));
    }
    let config = match config::Job::from_args(args) {
        Ok(config::Job::Bridge(config)) => *config,
        Ok(config::Job::Logout { url }) => return logout(url.as_deref()),
        Ok(config::Job::Doctor { json, target }) => {
            let _log = mcp_bridge::log::init("mcp-bridge", "error", Default::default());
            return doctor::run(target, json);
        }
        Ok(config::Job::Attach { config, servers }) => return attach::run(&config, servers),
        Ok(config::Job::Daemon(job)) => return daemon::run(job),
        Err(message) => {
            eprintln!("mcp-bridge: {message}");
            return ExitCode::from(2);
        }
    };
    for variable in private_variables {
        // SAFETY: one thread still (the runtimes start later), so nothing
        // reads the environment meanwhile.
        unsafe { std::env::remove_var(variable) };
    }
    let log = mcp_bridge::log::init("mcp-bridge", &config.log_level, config.log_format);
    let level = log.as_ref().map(|log| log.level.clone());
    *STDERR_LOG.lock().unwrap_or_else(|e| e.into_inner()) = log;
    let code = match run(config, level) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::from(1)
        }
    };
    flush_log();
    code
}

/// The stderr log, kept here so that the watchdog, which exits without
/// returning from `main`, writes its queued lines too.
static STDERR_LOG: std::sync::Mutex<Option<mcp_bridge::log::StderrLog>> = std::sync::Mutex::new(None);

/// Writes what the stderr log has queued (about a second at most when
/// nobody reads stderr).
fn flush_log() {
    // Taken out first: the lock is not held while the queue drains.
    let log = STDERR_LOG.lock().unwrap_or_else(|e| e.into_inner()).take();
    drop(log);
}

/// Forgets the stored sign-in of `url`, or every one.
fn logout(url: Option<&str>) -> ExitCode {
    let store = match crate::token_store::open() {
        Ok(store) => store,
        Err(e) => {
            eprintln!("mcp-bridge: {e}");
            return ExitCode::from(2);
        }
    };
    let outcome = match url {
        Some(url) => mcp_bridge::signin::tokens::forget(&store, url).map(usize::from),
        None => store.remove_all().map_err(mcp_bridge::signin::tokens::TokenStoreError::from),
    };
    match outcome {
        Ok(0) => {
            eprintln!("mcp-bridge: no stored sign-in to forget");
            ExitCode::SUCCESS
        }
        Ok(n) => {
            eprintln!("mcp-bridge: forgot {n} stored record(s)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-bridge: logout failed: {e}");
            ExitCode::from(1)
        }
    }
}

/// Starts the watchdog: a plain thread, so it fires even when every task is
/// stuck. It stops the server's process tree and exits 0.
fn start_watchdog(upstream_group: Arc<AtomicU32>) {
    watchdog(WATCHDOG, upstream_group, || {
        flush_log();
        std::process::exit(0)
    });
}

/// After `after`, stops the process tree of the server in `upstream_group`
/// (when one started), says so, and calls `exit`.
fn watchdog(after: Duration, upstream_group: Arc<AtomicU32>, exit: impl FnOnce() + Send + 'static) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let pid = upstream_group.load(Ordering::SeqCst);
        if pid > 0 {
            mcp_bridge_sdk::transport::stdio::kill_process_tree(pid);
        }
        tracing::warn!("shutdown took longer than {} s; exiting", after.as_secs());
        exit();
    });
}

/// glibc raises its mmap threshold to the size of the largest buffer freed
/// (up to 32 MiB); from then on the buffers of large results come from the
/// heap and stay resident after use. A fixed threshold gives each buffer
/// over 256 KiB back to the system when it is freed (peak RSS after 4 MiB
/// results over HTTP: 25.4 -> 17.7 MiB).
fn return_large_buffers_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt changes an allocator parameter; no other thread runs yet.
    unsafe {
        // The SDK's long lines (`limits::LONG_LINE`) start at the same size.
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

/// Runs the bridge; `log_level` changes the stderr log's level when the
/// client asks for another.
fn run(mut config: config::Config, log_level: Option<mcp_bridge::log::LogLevel>) -> anyhow::Result<ExitCode> {
    if let Some(on) = config.listen.take() {
        return listen::run(config, on);
    }
    // One thread: the bridge relays one client's lines, and a second worker
    // only added cross-thread wake-ups and allocator lock contention
    // (stdio calls/s at 256 in flight 53.7k -> 63.3k, BENCHMARKS.md).
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let upstream_group = Arc::new(AtomicU32::new(0));
    let watched = upstream_group.clone();
    let recorded = upstream_group.clone();
    let gate = config.gate.clone();
    let hooks = Hooks {
        on_eof: Some(Box::new(move || start_watchdog(watched))),
        on_upstream_started: Some(Arc::new(move |pid| recorded.store(pid, Ordering::SeqCst))),
        on_initialized: gate.map(|gate| -> mcp_bridge_sdk::server::legacy::frontend::OnInitialized {
            Box::new(move |consent| gate.client_initialized(consent))
        }),
        on_log_level: log_level.map(|log| -> mcp_bridge_sdk::server::legacy::frontend::OnLogLevel {
            Arc::new(move |level| log.set(level))
        }),
    };
    let gateway_tasks = mcp_bridge_sdk::task_group::TaskGroup::default();
    let outcome = runtime.block_on(async {
        if let Some(gateway) = config.gateway {
            reload::start(gateway, false, &gateway_tasks, None).await;
        }
        mcp_bridge_sdk::server::legacy::run(
            process_stdio::stdin(),
            process_stdio::stdout(),
            config.upstream,
            config.frontend,
            hooks,
        )
        .await
    });
    gateway_tasks.cancel();
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(RunOutcome::Eof) => Ok(ExitCode::SUCCESS),
        Ok(RunOutcome::UpstreamExited) => Ok(ExitCode::from(1)),
        // The client went away mid-write: a clean end, as for end of input.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_stops_the_servers_process_tree_then_exits() {
        use std::os::unix::process::CommandExt;
        // A server that started a child of its own and ignores SIGTERM: the
        // watchdog's SIGKILL to the group ends both.
        let mut server = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; sleep 300 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let group = Arc::new(AtomicU32::new(server.id()));
        let (exited, exit_called) = std::sync::mpsc::channel();
        watchdog(Duration::from_millis(50), group, move || exited.send(()).unwrap());
        exit_called.recv_timeout(Duration::from_secs(30)).expect("the watchdog called exit");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = server.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: a signal to the group this test started.
                unsafe { libc::kill(-(server.id() as i32), libc::SIGKILL) };
                panic!("the server still ran when the watchdog exited");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
        // The server's own child went with the group (a zombie counts as gone).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !living_in_group(server.id()).is_empty() {
            assert!(std::time::Instant::now() < deadline, "left in the group: {:?}", living_in_group(server.id()));
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The processes of group `group` that are not zombies.
    fn living_in_group(group: u32) -> Vec<u32> {
        let mut living = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
            // After the command's closing parenthesis: state, ppid, pgrp, ...
            let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
            if fields.get(2) == Some(&group.to_string().as_str()) && fields.first() != Some(&"Z") {
                living.push(pid);
            }
        }
        living
    }
}
