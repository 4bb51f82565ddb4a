//! `mcp-bridge --listen ADDR`: the bridge as a Streamable HTTP server for
//! clients of both revisions, many at once: each 2025-11-25 client a
//! session, 2026-07-28 requests forwarded ([`mcp_bridge::front`]), all in
//! front of the one upstream (one child process, one HTTP client with one sign-in, or the
//! gateway of `--config`), on a TCP port behind an access token or on a
//! Unix domain socket in the user's own folder ([`boundary`]).

mod boundary;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_protocol::types::{ClientCapabilities, Implementation};
use mcp_bridge_sdk::server::http::{HttpOptions, Listener, Readiness, ReadinessProbe, ReadyStatus};
use mcp_bridge_sdk::server::legacy::embed::http::{AccessToken, LegacyHttpOptions, serve_dual_http};
use mcp_bridge_sdk::server::legacy::upstream::{Fanout, Speaker, Upstream, UpstreamConfig, describe_exit};
use mcp_bridge_sdk::server::protect::introspection::{IntrospectionConfig, IntrospectionValidator};
use mcp_bridge_sdk::server::protect::jwt::{JwtConfig, JwtValidator, KeysError};
use mcp_bridge_sdk::server::protect::{ProtectedResource, Protection};
use mcp_bridge_sdk::task_group::TaskGroup;
use mcp_bridge_sdk::toolset::authorize::ToolScopes;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::telemetry::Telemetry;

/// The one server behind `--listen` without `--config`, as metrics and
/// spans name it.
const UPSTREAM: &str = "upstream";

use self::boundary::Place;
pub(crate) use self::boundary::{Access, INTROSPECTION_VARIABLES, ListenOn, OAuthAccess};

/// Serves until Ctrl-C (exit 0) or the loss of the upstream (exit 1).
pub(crate) fn run(config: Config, on: ListenOn) -> anyhow::Result<ExitCode> {
    #[cfg(unix)]
    if let Place::Unix(path) = &on.place
        && let Err(message) = boundary::prepare_socket_folder(path)
    {
        eprintln!("mcp-bridge: {message}");
        return Ok(ExitCode::from(2));
    }
    // Made and ended outside the runtime: OTLP export has a blocking
    // HTTP client of its own.
    let transport = if matches!(on.place, Place::Unix(_)) { "unix" } else { "tcp" };
    let telemetry = config.telemetry.then(|| Telemetry::from_environment(transport, config.access_log));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let outcome = runtime.block_on(serve(config, on, telemetry.clone()));
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    outcome
}

async fn serve(mut config: Config, on: ListenOn, telemetry: Option<Telemetry>) -> anyhow::Result<ExitCode> {
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
    let bound = bind(&on.place).await?;
    let mut leftovers = Leftovers::default();
    #[cfg(unix)]
    if let Bound::Unix(_, path) = &bound {
        leftovers.0.push(path.clone());
    }
    let gateway_tasks = TaskGroup::default();
    let mut gateway = None;
    // Every scope an `authorize` rule names, for the endpoint's metadata.
    let servers = config.gateway.iter().flat_map(|job| &job.config.servers);
    let scopes = ToolScopes::union(servers.map(|e| &e.authorize));
    let protected = matches!(on.access, Access::OAuth(_));
    let mut readiness = ReadinessProbe::new(|| {
        Readiness::new(ReadyStatus::Ready, serde_json::json!({"servers": [{"name": "upstream", "available": true}]}))
    });
    if let Some(job) = config.gateway.take() {
        gateway = Some(job.server.clone());
        let observe = telemetry.clone().map(|telemetry| {
            job.server.set_observer(telemetry.front());
            Arc::new(move |name: &str| telemetry.upstream(name)) as mcp_bridge::gateway::UpstreamObserver
        });
        tokio::select! {
            started = crate::reload::start(job, protected, &gateway_tasks, observe) => {
                readiness = ReadinessProbe::new(move || started.readiness());
            }
            () = interrupted.cancelled() => {
                tracing::info!("interrupted while the servers start");
                gateway_tasks.stop(Duration::from_secs(1)).await;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    // Before the default cap is read from it.
    mcp_bridge_sdk::limits::raise_open_files_limit();
    let mut http = HttpOptions::default();
    if let Some(max) = config.max_connections {
        http.connections = http.connections.with_max_connections(max);
    }
    http.quotas = config.quotas.clone();
    http.readiness = Some(readiness);
    http.metrics = telemetry.as_ref().map(Telemetry::exposition);
    if let Bound::Tcp(_, local) = &bound
        && !local.ip().is_loopback()
    {
        tracing::warn!(
            "serving beyond this machine at {local}: anyone who reaches it and has the token can use the MCP server"
        );
        http.allowed_hosts.push(host_name(local));
    }
    if let Access::OAuth(oauth) = &on.access {
        http.protection = Some(protection(oauth, &bound, &scopes).await?);
    }
    let (access_token, token_file) = access_token(on.access, &bound)?;
    leftovers.0.extend(token_file);
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
        observer: telemetry.as_ref().map(|telemetry| telemetry.upstream(UPSTREAM)),
        ..Speaker::new(identity, may_be_asked)
    };
    let upstream = Upstream::connect(&config.upstream, speaker, on_unrouted)?;
    match &bound {
        Bound::Tcp(_, local) => tracing::info!("serving MCP clients of both revisions at http://{local}/mcp"),
        #[cfg(unix)]
        Bound::Unix(_, path) => {
            tracing::info!(
                "serving MCP clients of both revisions at http://localhost/mcp on the socket {}",
                path.display()
            );
        }
    }
    // 2026-07-28 clients: the gateway's server itself, or one that forwards
    // to the upstream the sessions share.
    let gateway_server = gateway.clone();
    let modern = gateway.unwrap_or_else(|| {
        let front = mcp_bridge::front::server(upstream.clone());
        if let Some(telemetry) = &telemetry {
            front.set_observer(telemetry.front());
        }
        front
    });
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
    // In front of one server the sessions forward to it themselves: they
    // report what they answer. The gateway's server reports its own.
    if gateway_server.is_none() {
        config.frontend.observer = telemetry.as_ref().map(Telemetry::front);
    }
    let mut legacy = LegacyHttpOptions::default().with_frontend(config.frontend);
    if let Some(max) = config.max_sessions_per_caller {
        legacy.max_sessions_per_holder = max;
    }
    legacy.access_token = access_token;
    legacy.observer = telemetry.as_ref().map(Telemetry::front);
    // The gateway's server is in this process: each session gets a link of
    // its own to it, so that its handlers (and its scope rules) see the
    // session's caller. Any other upstream is one, shared.
    let upstream_config = match &gateway_server {
        Some(server) => UpstreamConfig::memory(server),
        None => UpstreamConfig::Shared(upstream.clone(), fanout),
    };
    let served = serve_dual_http(upstream_config, &modern, bound.into_listener(), http, legacy, stop).await;
    upstream.close().await;
    gateway_tasks.stop(Duration::from_secs(1)).await;
    served?;
    Ok(if lost_rx.await.is_ok() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A bound `--listen` endpoint.
enum Bound {
    Tcp(tokio::net::TcpListener, SocketAddr),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener, PathBuf),
}

impl Bound {
    /// The listener to serve.
    fn into_listener(self) -> Listener {
        match self {
            Bound::Tcp(listener, _) => listener.into(),
            #[cfg(unix)]
            Bound::Unix(listener, _) => listener.into(),
        }
    }
}

/// Files of this run (the socket, a generated token) removed when it ends,
/// however it ends.
#[derive(Default)]
struct Leftovers(Vec<PathBuf>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for file in &self.0 {
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Binds the endpoint; a socket only in a folder that is the user's alone.
async fn bind(place: &Place) -> anyhow::Result<Bound> {
    match place {
        Place::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let local = listener.local_addr()?;
            Ok(Bound::Tcp(listener, local))
        }
        #[cfg(unix)]
        Place::Unix(path) => {
            let listener = tokio::net::UnixListener::bind(path)
                .map_err(|e| anyhow::anyhow!("--listen unix:{}: cannot listen there ({e})", path.display()))?;
            Ok(Bound::Unix(listener, path.clone()))
        }
        #[cfg(not(unix))]
        Place::Unix(path) => anyhow::bail!("--listen unix:{}: Unix domain sockets need a Unix system", path.display()),
    }
}

/// The token requests must carry, and the file a generated one was written
/// to (removed at the end). A generated token is written to a file only
/// this user can read and the file is named on stderr; the token itself is
/// shown only on a terminal, never in a log that a client may keep.
fn access_token(access: Access, bound: &Bound) -> anyhow::Result<(Option<AccessToken>, Option<PathBuf>)> {
    let local = match (access, bound) {
        (Access::Token(token), _) => return Ok((Some(token), None)),
        (Access::Open, Bound::Tcp(_, local)) => {
            tracing::warn!(
                "no access token (--listen-no-auth): every account of this machine can use the server at {local}"
            );
            return Ok((None, None));
        }
        (Access::OAuth(_), _) => return Ok((None, None)),
        (Access::Generated, Bound::Tcp(_, local)) => *local,
        #[cfg(unix)]
        (_, Bound::Unix(..)) => return Ok((None, None)),
    };
    let (token, secret) = AccessToken::generate().map_err(|e| anyhow::anyhow!("no random access token: {e}"))?;
    let state = crate::dirs::state_dir().map_err(|e| anyhow::anyhow!("no folder for the access token: {e}"))?;
    let file = boundary::token_file(&state, &local);
    boundary::write_private(&file, &secret)
        .map_err(|e| anyhow::anyhow!("the access token cannot be written to {}: {e}", file.display()))?;
    // Written whatever the log level: clients cannot connect without it.
    eprintln!("mcp-bridge: clients send the access token in {} as \"Authorization: Bearer TOKEN\"", file.display());
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!("mcp-bridge: the access token is {secret}");
    }
    Ok((Some(token), Some(file)))
}

/// The endpoint as an OAuth protected resource: tokens of `oauth`'s
/// issuer for the endpoint's URL (or the audience given), JWTs checked
/// against the issuer's keys or opaque ones by introspection; its metadata
/// lists `scopes`. The issuer's metadata is read now, so a wrong issuer
/// stops the bridge at start.
async fn protection(oauth: &OAuthAccess, bound: &Bound, scopes: &[String]) -> anyhow::Result<Protection> {
    let endpoint = match bound {
        Bound::Tcp(_, local) => format!("http://{}:{}/mcp", host_name(local), local.port()),
        #[cfg(unix)]
        Bound::Unix(..) => "http://localhost/mcp".to_owned(),
    };
    let audience = oauth.audience.clone().unwrap_or_else(|| endpoint.clone());
    let failed = |e: KeysError| anyhow::anyhow!("--listen-auth-issuer {}: {e}", oauth.issuer);
    let resource = ProtectedResource::new(&endpoint, &oauth.issuer).with_scopes_supported(scopes.iter().cloned());
    Ok(match &oauth.introspection {
        Some((id, secret)) => {
            let config = IntrospectionConfig::new(&oauth.issuer, &audience, id.clone(), secret.clone());
            Protection::new(resource, IntrospectionValidator::discover(config).await.map_err(failed)?)
        }
        None => {
            let config = JwtConfig::new(&oauth.issuer, &audience);
            Protection::new(resource, JwtValidator::discover(config).await.map_err(failed)?)
        }
    })
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
