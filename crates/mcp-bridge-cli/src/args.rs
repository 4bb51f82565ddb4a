//! The raw command line, as clap reads it. [`crate::config`] turns it into
//! the validated configuration.

use std::ffi::OsString;

use clap::Parser;

const EXAMPLES: &str = "\
Examples:
  mcp-bridge -- mcp-example-server
  mcp-bridge --log-level debug -- python3 -m my_server --flag
  mcp-bridge --discover-timeout 120 -- npx -y some-2026-server

In VS Code's mcp.json:
  {\"servers\": {\"example\": {\"command\": \"mcp-bridge\", \"args\": [\"--\", \"mcp-example-server\"]}}}

Exit codes: 0 at the end of the input, 1 when the server stopped or on an
internal error, 2 for invalid arguments.";

/// Lets an MCP client of revision 2025-11-25 (VS Code, Claude Desktop,
/// Cursor) use a server of revision 2026-07-28: the client starts
/// mcp-bridge as its stdio server, and mcp-bridge starts the real server.
#[derive(Debug, Parser)]
#[command(name = "mcp-bridge", version, after_help = EXAMPLES)]
pub(crate) struct Args {
    /// The client family to serve.
    #[arg(long, default_value = "vscode", value_name = "NAME")]
    pub(crate) profile: String,

    /// The level of the log on stderr: error, warning, info, debug or trace.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub(crate) log_level: String,

    /// Seconds the server gets to answer server/discover at initialize.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub(crate) discover_timeout: u64,

    /// Seconds the client gets to answer one round of the server's input
    /// requests (elicitation, sampling, roots).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub(crate) input_timeout: u64,

    /// The longest line accepted from the client or the server, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    pub(crate) max_line_bytes: usize,

    /// The 2026-07-28 server to start, after `--`: the program and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}
