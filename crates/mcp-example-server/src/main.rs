//! `mcp-example-server`: a 2026-07-28 MCP server on stdio, for trying
//! clients and bridges against something real. Logs go to stderr
//! (`RUST_LOG=debug` for more).

use std::process::ExitCode;

use mcp_example_server::build_server_with;
use mcp_sdk::limits::ServerLimits;

const USAGE: &str = "mcp-example-server: an MCP 2026-07-28 server on stdin/stdout

Usage: mcp-example-server [--max-line-bytes N] [--max-in-flight N]

Options:
  --max-line-bytes N   longest accepted request line (default 67108864)
  --max-in-flight N    requests handled at once (default 256)
  -h, --help           this text
  -V, --version        the version";

/// Reads the command line into the server's limits, or says what is wrong.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<ServerLimits>, String> {
    let mut limits = ServerLimits::default();
    while let Some(arg) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
            value.parse().map_err(|_| format!("{name} needs a positive number, not {value:?}"))
        };
        match arg.as_str() {
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
    Ok(Some(limits))
}

fn main() -> ExitCode {
    let limits = match parse_args(std::env::args().skip(1)) {
        Ok(Some(limits)) => limits,
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
    match runtime.block_on(build_server_with(limits).serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-example-server: {e}");
            ExitCode::FAILURE
        }
    }
}
