//! `mcp-conformance-server --listen 127.0.0.1:PORT`: the server the
//! conformance suite's server scenarios drive, at `http://ADDR/mcp`, until
//! it is interrupted.

use std::process::ExitCode;

const USAGE: &str = "Usage: mcp-conformance-server --listen ADDR   (serves http://ADDR/mcp)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = match args.as_slice() {
        [flag, addr] if flag == "--listen" => addr.clone(),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-conformance-server: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        eprintln!("mcp-conformance-server: serving http://{}/mcp", listener.local_addr()?);
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        // Both eras on one endpoint (the SDK's legacy feature).
        let server = mcp_conformance::everything::build_server();
        server.serve_http(listener, Default::default(), stop).await
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}
