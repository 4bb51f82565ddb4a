//! `mcp-bridge --listen ADDR`: the bridge as a Streamable HTTP server for
//! 2025-11-25 clients, many at once, each a session in front of the one
//! upstream (one child process, one HTTP client with one sign-in, or the
//! gateway of `--config`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_bridge::embed::http::{LegacyHttpOptions, serve_legacy_http};
use mcp_bridge::upstream::{Fanout, Speaker, Upstream, UpstreamConfig, describe_exit};
use mcp_bridge_protocol::types::{ClientCapabilities, Implementation};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::task_group::TaskGroup;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// Serves until Ctrl-C (exit 0) or the loss of the upstream (exit 1).
pub(crate) fn run(config: Config, addr: SocketAddr) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let outcome = runtime.block_on(serve(config, addr));
    runtime.shutdown_timeout(Duration::from_secs(1));
    outcome
}

async fn serve(mut config: Config, addr: SocketAddr) -> anyhow::Result<ExitCode> {
    // Ctrl-C is caught from the start: the gateway's servers may take long
    // to start, and a process started with SIGINT ignored (`cmd &` in a
    // script) would otherwise ignore it until then.
    let interrupted = CancellationToken::new();
    let on_interrupt = interrupted.clone();
    let mut interrupt = ctrl_c()?;
    tokio::spawn(async move {
        if interrupt.recv().await.is_some() {
            on_interrupt.cancel();
        }
    });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let gateway_tasks = TaskGroup::default();
    if let Some((server, entries)) = config.gateway.take() {
        tokio::select! {
            () = mcp_bridge::gateway::start(&server, entries, &gateway_tasks) => {}
            () = interrupted.cancelled() => {
                tracing::info!("interrupted while the servers start");
                gateway_tasks.stop(Duration::from_secs(1)).await;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    let local = listener.local_addr()?;
    // Before the default cap is read from it.
    mcp_bridge_sdk::server::http::raise_open_files_limit();
    let mut http = HttpOptions::default();
    if let Some(max) = config.max_connections {
        http.connections = http.connections.with_max_connections(max);
    }
    if !local.ip().is_loopback() {
        tracing::warn!("serving beyond this machine at {local}: anyone who reaches it can use the MCP server");
        http.allowed_hosts.push(host_name(&local));
    }
    // The sessions' own client info and capabilities go with each request;
    // these are the upstream client's defaults.
    let identity = Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION"));
    // Log messages of a child belong to no request: every session gets
    // them, at its own level.
    let fanout = Arc::new(Fanout::default());
    let to_sessions = fanout.clone();
    let on_unrouted = Arc::new(move |n: &mcp_bridge_protocol::JsonRpcNotification| to_sessions.deliver(n));
    // A 2025-11-25 upstream hears of one client at its initialize: one that
    // may be asked anything. Over HTTP its requests come on the stream of a
    // session's request and go to that session's client (which refuses
    // what it did not declare); others belong to no session and are
    // refused (no hooks here).
    let may_be_asked = ClientCapabilities::builder().form_elicitation().url_elicitation().sampling().roots().build();
    let speaker = Speaker {
        era: config.frontend.upstream_era,
        era_cache: config.frontend.era_cache.clone(),
        ..Speaker::new(identity, may_be_asked)
    };
    let upstream = Upstream::connect(&config.upstream, speaker, on_unrouted)?;
    tracing::info!("serving 2025-11-25 clients at http://{local}/mcp");
    let lost = upstream.clone();
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel();
    let stop = async move {
        tokio::select! {
            () = interrupted.cancelled() => {}
            status = lost.lost() => {
                tracing::warn!("the MCP server stopped with {}", describe_exit(status));
                let _ = lost_tx.send(());
            }
        }
    };
    let legacy = LegacyHttpOptions::default().with_frontend(config.frontend);
    serve_legacy_http(UpstreamConfig::Shared(upstream.clone(), fanout), listener, http, legacy, stop).await?;
    upstream.close().await;
    gateway_tasks.stop(Duration::from_secs(1)).await;
    Ok(if lost_rx.await.is_ok() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Ctrl-C (SIGINT), its handler in place when this returns.
#[cfg(unix)]
fn ctrl_c() -> std::io::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
}

/// Ctrl-C (SIGINT), its handler in place when this returns.
#[cfg(windows)]
fn ctrl_c() -> std::io::Result<tokio::signal::windows::CtrlC> {
    tokio::signal::windows::ctrl_c()
}

/// The host name a client puts in `Host` for this address.
fn host_name(addr: &SocketAddr) -> String {
    match addr {
        SocketAddr::V4(v4) => v4.ip().to_string(),
        SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
    }
}
