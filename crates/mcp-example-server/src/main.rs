//! `mcp-example-server`: a 2026-07-28 MCP server on stdio, for trying
//! clients and bridges against something real. On stdio it also serves
//! 2025-11-25 clients (VS Code and the like) through the embedded bridge:
//! the client's first request chooses. Logs go to stderr (`RUST_LOG=debug`
//! for more).

use std::process::ExitCode;

use mcp_bridge_sdk::limits::ServerLimits;
use mcp_example_server::build_server_with;

const USAGE: &str = "mcp-example-server: an MCP 2026-07-28 server on stdin/stdout, which 2025-11-25
clients (VS Code, Claude Desktop, Cursor) can use directly too

Usage: mcp-example-server [--http ADDR] [--max-line-bytes N] [--max-in-flight N]

Options:
  --http ADDR          serve Streamable HTTP at http://ADDR/mcp (for example
                       127.0.0.1:8080) instead of stdio, to 2026-07-28 and
                       2025-11-25 clients alike; stops on Ctrl-C
  --max-line-bytes N   longest accepted request line (default 67108864)
  --max-in-flight N    requests handled at once (default 256)
  -h, --help           this text
  -V, --version        the version";

/// What the command line asks for.
struct Settings {
    limits: ServerLimits,
    http: Option<String>,
}

/// Reads the command line, or says what is wrong; `None` after --help.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Settings>, String> {
    let mut limits = ServerLimits::default();
    let mut http = None;
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            value.parse().map_err(|_| format!("{name} needs a positive number, not {value:?}"))
        };
        match arg.as_str() {
            "--http" => http = Some(args.next().ok_or("--http needs an address such as 127.0.0.1:8080")?),
            "--max-line-bytes" => limits.max_line_bytes = number("--max-line-bytes")?,
            "--max-in-flight" => limits.max_in_flight = number("--max-in-flight")?,
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
    Ok(Some(Settings { limits, http }))
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
    let server = build_server_with(settings.limits);
    let served = runtime.block_on(async move {
        match settings.http {
            None => mcp_bridge::embed::serve_stdio_vscode(&server).await.map(|_path| ()),
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(&addr).await?;
                eprintln!("mcp-example-server: serving http://{}/mcp", listener.local_addr()?);
                let stop = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                // Both eras on one endpoint: 2025-11-25 clients get a legacy
                // session through the embedded bridge.
                let (http, legacy) = (Default::default(), Default::default());
                mcp_bridge::embed::http::serve_http(&server, listener, http, legacy, stop).await
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
