//! `mcp-example-server`: a 2026-07-28 MCP server on stdio, for trying
//! clients and bridges against something real. Logs go to stderr
//! (`RUST_LOG=debug` for more).

use mcp_example_server::build_server;

fn main() -> std::process::ExitCode {
    let arg = std::env::args().nth(1);
    match arg.as_deref() {
        Some("--version" | "-V") => {
            println!("mcp-example-server {}", env!("CARGO_PKG_VERSION"));
            return std::process::ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            println!("mcp-example-server: an MCP 2026-07-28 server on stdin/stdout\n\nUsage: mcp-example-server");
            return std::process::ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("mcp-example-server: unknown argument {other:?} (try --help)");
            return std::process::ExitCode::from(2);
        }
        None => {}
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-example-server: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(build_server().serve_stdio()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-example-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
