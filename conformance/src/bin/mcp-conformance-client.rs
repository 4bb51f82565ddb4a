//! `mcp-conformance-client URL`: plays the client scenario named by
//! `MCP_CONFORMANCE_SCENARIO` against the scenario server at `URL`, as the
//! conformance suite runs it; exits 0 when every request it made worked.

use std::process::ExitCode;

use mcp_conformance::player::{Depth, Revision, ScenarioContext, play};

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("Usage: MCP_CONFORMANCE_SCENARIO=NAME mcp-conformance-client URL");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // The suite names the revision a scenario runs at: 2026-07-28, or a
    // 2025-11-25-era one whose server knows only `initialize`.
    let revision = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        Err(_) => Revision::Negotiated,
        Ok(version) if version == mcp_bridge_protocol::PROTOCOL_VERSION => Revision::Modern,
        Ok(version) if mcp_bridge_protocol::legacy::is_known_version(&version) => Revision::Legacy(version),
        Ok(version) => {
            eprintln!("mcp-conformance-client: this client does not speak {version}");
            return ExitCode::from(2);
        }
    };
    let mut context: ScenarioContext = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(json) => match serde_json::from_str(&json) {
            Ok(context) => context,
            Err(e) => {
                eprintln!("mcp-conformance-client: MCP_CONFORMANCE_CONTEXT is not valid: {e}");
                return ExitCode::from(2);
            }
        },
        Err(_) => ScenarioContext::default(),
    };
    // Not every scenario names itself in its context.
    context.name.get_or_insert_with(|| scenario.clone());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-conformance-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let sign_in = scenario.starts_with("auth/");
    let failures = runtime.block_on(play(&url, Depth::of(&scenario), sign_in, &context, &revision));
    for failure in &failures {
        eprintln!("mcp-conformance-client: {failure}");
    }
    if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
