//! `mcp-example-server`: a 2026-07-28 MCP server on stdio, for trying
//! clients and bridges against something real. On stdio it also serves
//! 2025-11-25 clients (VS Code and the like) through the embedded bridge:
//! the client's first request chooses. Logs go to stderr (`RUST_LOG=debug`
//! for more).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_sdk::Server;
use mcp_bridge_sdk::limits::ServerLimits;
use mcp_bridge_sdk::server::bus::redis::RedisBus;
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::protect::introspection::{IntrospectionConfig, IntrospectionValidator};
use mcp_bridge_sdk::server::protect::jwt::{JwtConfig, JwtValidator};
use mcp_bridge_sdk::server::protect::{ProtectedResource, Protection, TokenValidator};
use mcp_bridge_sdk::server::{RedisTaskStore, StateKeys};
use mcp_example_server::{NOTES_READ, NOTES_WRITE, example_builder};

const USAGE: &str = "mcp-example-server: an MCP 2026-07-28 server on stdin/stdout, which 2025-11-25
clients (VS Code, Claude Desktop, Cursor) can use directly too

Usage: mcp-example-server [--http ADDR [--auth-issuer URL [--auth-audience URL]
                                         [--auth-introspection [--auth-introspection-cache SECONDS]]]
                                        [--redis URL --state-key-file FILE [--task-lease SECONDS]]]
                          [--grpc ADDR] [--max-line-bytes N] [--max-in-flight N]
                          [--max-connections N]

Options:
  --http ADDR          serve Streamable HTTP at http://ADDR/mcp (for example
                       127.0.0.1:8080) instead of stdio, to 2026-07-28 and
                       2025-11-25 clients alike; stops on Ctrl-C
  --grpc ADDR          serve gRPC (Google's MCP proto, service
                       model_context_protocol.Mcp, HTTP/2 without TLS) at
                       ADDR instead of stdio; stops on Ctrl-C
  --auth-issuer URL    with --http: every request needs a JWT access token
                       (RFC 9068) of this issuer, checked against its keys,
                       with the scope notes:read; set_note also needs the
                       scope notes:write
  --auth-audience URL  the audience tokens must name (default: the
                       endpoint's URL, http://ADDR/mcp)
  --auth-introspection opaque tokens, checked at the issuer's introspection
                       endpoint (RFC 7662) as the client named by the
                       variables MCP_AUTH_CLIENT_ID and MCP_AUTH_CLIENT_SECRET
  --auth-introspection-cache SECONDS
                       how long an introspection answer is kept (default
                       30; 0 asks every time, so a revocation counts at once)
  --redis URL          with --http: one replica of several behind a load
                       balancer; change events go to every replica's listen
                       streams through Redis pub/sub, and tasks are kept in
                       Redis so any replica answers for them
                       (redis://host:port)
  --state-key-file FILE
                       the keys that seal requestState, the same file on
                       every replica (needed with --redis): one `ID SECRET`
                       line per key, SECRET 32 bytes of base64
                       (`openssl rand -base64 32`); the first line seals,
                       every line opens
  --task-lease SECONDS with --redis: how long a task whose replica stopped
                       stays working before it fails (default 10)
  --max-line-bytes N   longest accepted request line (default 67108864)
  --max-in-flight N    requests handled at once (default 256)
  --max-connections N  with --http or --grpc: connections open at once (default: half
                       the limit of open files, which the server raises to
                       its hard limit, within 1024 and 65536); at the cap a
                       newcomer takes the place of a connection still
                       sending its request head, or of the idlest one of
                       the address holding the most
  -h, --help           this text
  -V, --version        the version";

/// What the command line asks for.
struct Settings {
    limits: ServerLimits,
    http: Option<String>,
    grpc: Option<String>,
    auth_issuer: Option<String>,
    auth_audience: Option<String>,
    introspection: bool,
    introspection_cache: Option<Duration>,
    redis: Option<String>,
    state_key_file: Option<String>,
    task_lease: Option<Duration>,
    max_connections: Option<usize>,
}

/// Reads the command line, or says what is wrong; `None` after --help.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Settings>, String> {
    let mut limits = ServerLimits::default();
    let (mut http, mut auth_issuer, mut auth_audience, mut introspection) = (None, None, None, false);
    let (mut introspection_cache, mut redis, mut state_key_file, mut task_lease) = (None, None, None, None);
    let (mut grpc, mut max_connections) = (None, None);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            value.parse().map_err(|_| format!("{name} needs a positive number, not {value:?}"))
        };
        match arg.as_str() {
            "--http" => http = Some(args.next().ok_or("--http needs an address such as 127.0.0.1:8080")?),
            "--grpc" => grpc = Some(args.next().ok_or("--grpc needs an address such as 127.0.0.1:50051")?),
            "--auth-issuer" => auth_issuer = Some(args.next().ok_or("--auth-issuer needs the issuer's URL")?),
            "--auth-audience" => auth_audience = Some(args.next().ok_or("--auth-audience needs a URL")?),
            "--auth-introspection" => introspection = true,
            "--auth-introspection-cache" => {
                introspection_cache = Some(Duration::from_secs(number("--auth-introspection-cache")? as u64));
            }
            "--redis" => redis = Some(args.next().ok_or("--redis needs a URL such as redis://127.0.0.1:6379")?),
            "--state-key-file" => state_key_file = Some(args.next().ok_or("--state-key-file needs a file")?),
            "--task-lease" => {
                let value = args.next().ok_or("--task-lease needs a number of seconds")?;
                let seconds = value.parse::<f64>().ok().filter(|s| s.is_finite() && *s > 0.0);
                let seconds = seconds.ok_or_else(|| format!("--task-lease needs a positive number, not {value:?}"))?;
                task_lease = Some(Duration::from_secs_f64(seconds));
            }
            "--max-line-bytes" => limits.max_line_bytes = number("--max-line-bytes")?,
            "--max-in-flight" => limits.max_in_flight = number("--max-in-flight")?,
            "--max-connections" => match number("--max-connections")? {
                0 => return Err("--max-connections needs a positive number, not 0".into()),
                n => max_connections = Some(n),
            },
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(None);
            }
            "--version" | "-V" => {
                println!("mcp-example-server {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if http.is_some() && grpc.is_some() {
        return Err("give --http or --grpc, not both".into());
    }
    if http.is_none() && (auth_issuer.is_some() || auth_audience.is_some()) {
        return Err("--auth-issuer and --auth-audience protect the HTTP endpoint: give --http too".into());
    }
    if (auth_audience.is_some() || introspection) && auth_issuer.is_none() {
        return Err("--auth-audience and --auth-introspection need --auth-issuer".into());
    }
    if introspection_cache.is_some() && !introspection {
        return Err("--auth-introspection-cache needs --auth-introspection".into());
    }
    if http.is_none() && redis.is_some() {
        return Err("--redis links replicas of the HTTP endpoint: give --http too".into());
    }
    if max_connections.is_some() && http.is_none() && grpc.is_none() {
        return Err("--max-connections caps the HTTP or gRPC endpoint's connections: give --http or --grpc too".into());
    }
    if task_lease.is_some() && redis.is_none() {
        return Err("--task-lease is the lease of tasks kept in Redis: give --redis too".into());
    }
    Ok(Some(Settings {
        limits,
        http,
        grpc,
        auth_issuer,
        auth_audience,
        introspection,
        introspection_cache,
        redis,
        state_key_file,
        task_lease,
        max_connections,
    }))
}

fn main() -> ExitCode {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(Some(settings)) => settings,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-example-server: {message}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-example-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async move {
        let server = replica(&settings).await?;
        if let Some(addr) = settings.grpc {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            eprintln!("mcp-example-server: serving gRPC at {}", listener.local_addr()?);
            let stop = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            // Before the default cap is read from it.
            mcp_bridge_sdk::limits::raise_open_files_limit();
            let mut options = mcp_bridge_sdk::grpc::service::GrpcServeOptions::default();
            if let Some(max) = settings.max_connections {
                options.max_connections = max;
            }
            return mcp_bridge_sdk::grpc::service::serve(&server, listener, options, stop)
                .await
                .map_err(std::io::Error::other);
        }
        match settings.http {
            None => server.serve_stdio().await,
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(&addr).await?;
                let endpoint = format!("http://{}/mcp", listener.local_addr()?);
                // Before the default cap is read from it.
                mcp_bridge_sdk::limits::raise_open_files_limit();
                let mut http = HttpOptions::default();
                if let Some(max) = settings.max_connections {
                    http.connections = http.connections.with_max_connections(max);
                }
                if let Some(issuer) = settings.auth_issuer {
                    let audience = settings.auth_audience.unwrap_or_else(|| endpoint.clone());
                    let (introspection, cache) = (settings.introspection, settings.introspection_cache);
                    http.protection = Some(protection(&endpoint, issuer, audience, introspection, cache).await?);
                }
                eprintln!("mcp-example-server: serving {endpoint}");
                let stop = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                // Both eras on one endpoint: 2025-11-25 clients get a legacy
                // session (the SDK's legacy feature).
                server.serve_http(listener, http, stop).await
            }
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-example-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The example server, as one replica of several when `--redis` is given
/// (its change events and tasks shared there, its `requestState` sealed
/// with the keys of `--state-key-file`).
async fn replica(settings: &Settings) -> std::io::Result<Server> {
    let mut builder = example_builder(settings.limits.clone());
    if let Some(file) = &settings.state_key_file {
        builder = builder.state_keys(StateKeys::from_file(file).map_err(std::io::Error::other)?);
    }
    if let Some(url) = &settings.redis {
        let redis_error = |e: &dyn std::fmt::Display| std::io::Error::other(format!("--redis: {e}"));
        let bus = RedisBus::connect(url, "mcp-example-server:changes").await.map_err(|e| redis_error(&e))?;
        let mut tasks = RedisTaskStore::connect(url, "mcp-example-server").await.map_err(|e| redis_error(&e))?;
        if let Some(lease) = settings.task_lease {
            tasks = tasks.with_lease(lease);
        }
        builder = builder.change_bus(Arc::new(bus)).task_store(tasks);
    }
    builder.try_build().map_err(|e| std::io::Error::other(format!("{e} (--state-key-file)")))
}

/// The protection of the endpoint at `endpoint`: tokens of `issuer` for
/// `audience`, JWTs checked against the issuer's keys or opaque ones by
/// introspection (an answer kept `cache` when given; the issuer's metadata
/// read now, so a wrong issuer is an error at start). Every request needs
/// `notes:read`: the 401 names it, so clients sign in for it alone and step
/// up to `notes:write` when `set_note` asks.
async fn protection(
    endpoint: &str,
    issuer: String,
    audience: String,
    introspection: bool,
    cache: Option<Duration>,
) -> std::io::Result<Protection> {
    let failed = |e: mcp_bridge_sdk::server::protect::jwt::KeysError| {
        std::io::Error::other(format!("--auth-issuer {issuer}: {e}"))
    };
    let resource = ProtectedResource::new(endpoint, issuer.clone()).with_scopes_supported([NOTES_READ, NOTES_WRITE]);
    if introspection {
        let variable = |name: &str| {
            std::env::var(name).map_err(|_| std::io::Error::other(format!("--auth-introspection needs {name}")))
        };
        let (id, secret) = (variable("MCP_AUTH_CLIENT_ID")?, variable("MCP_AUTH_CLIENT_SECRET")?);
        let mut config = IntrospectionConfig::new(&issuer, &audience, id, secret);
        if let Some(lifetime) = cache {
            config = config.with_cache_lifetime(lifetime);
        }
        let validator = IntrospectionValidator::discover(config).await.map_err(failed)?;
        return Ok(protected_by(resource, validator));
    }
    let validator = JwtValidator::discover(JwtConfig::new(&issuer, &audience)).await.map_err(failed)?;
    Ok(protected_by(resource, validator))
}

/// `resource` behind `validator`, every request needing `notes:read`.
fn protected_by(resource: ProtectedResource, validator: impl TokenValidator) -> Protection {
    Protection::new(resource, validator).with_required_scopes([NOTES_READ])
}
