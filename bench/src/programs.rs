//! The programs a benchmark run measures and how long it measures them.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the programs under test are.
#[derive(Clone, Debug)]
pub struct Programs {
    /// `mcp-bridge`.
    pub bridge: PathBuf,
    /// `mcp-example-server`.
    pub example_server: PathBuf,
    /// The null relay (`null-relay -- PROGRAM`): the floor of a relay process.
    pub null_relay: PathBuf,
    /// The Python interpreter with the `mcp` SDK.
    pub python: PathBuf,
    /// The Python server script (`add` on stdio, or HTTP with `--http PORT`).
    pub python_server: PathBuf,
    /// The Node.js interpreter that runs mcp-remote.
    pub node: PathBuf,
    /// mcp-remote's `proxy.js`; its scenario is left out without it.
    pub mcp_remote: Option<PathBuf>,
    /// The rmcp 3.x server of `bench/peers/rmcp-server`; left out without it.
    pub rmcp_server: Option<PathBuf>,
    /// The TypeScript SDK 2.x server: its script and the `node_modules`
    /// holding `@modelcontextprotocol/server` and `/node`; left out without.
    pub ts_server: Option<(PathBuf, PathBuf)>,
    /// server-everything's entry script (a 2025-11-25 server); the legacy
    /// start-up scenario is left out without it.
    pub server_everything: Option<PathBuf>,
    /// supergateway's entry script, run by `node` with
    /// [`Programs::node_loopback`] preloaded; the gateways comparison
    /// leaves it out without it.
    pub supergateway: Option<PathBuf>,
    /// The `mcp-proxy` command (Python); left out without it.
    pub mcp_proxy: Option<PathBuf>,
    /// server-filesystem's entry script (a 2025-11-25 server, run by
    /// `node`), one of the daemon scenario's servers; the scenario is left
    /// out without it.
    pub filesystem_server: Option<PathBuf>,
    /// server-memory's entry script (a 2025-11-25 server, run by `node`),
    /// one of the daemon scenario's servers; left out without it.
    pub memory_server: Option<PathBuf>,
    /// The `mcp-server-time` command (a Python server in a venv of its
    /// own), one of the daemon scenario's servers; left out without it.
    pub time_server: Option<PathBuf>,
    /// A preload that keeps a Node peer's servers on 127.0.0.1.
    pub node_loopback: PathBuf,
    /// The `mcp-bridge` commands installed from the packages, by how they
    /// were installed; their scenario is left out without them.
    pub installed_bridges: Vec<(String, PathBuf)>,
    /// A directory for the programs' own files (mcp-remote's config).
    pub scratch: PathBuf,
}

/// A server compared in the servers scenario.
#[derive(Clone, Debug)]
pub struct ServerUnderTest {
    /// Name in tables and charts.
    pub name: String,
    /// The program.
    pub program: PathBuf,
    /// Arguments that serve on stdio.
    pub stdio_args: Vec<String>,
    /// Arguments that serve Streamable HTTP; `{port}` is replaced by the port.
    pub http_args: Vec<String>,
    /// Environment the program needs.
    pub envs: Vec<(&'static str, PathBuf)>,
}

impl ServerUnderTest {
    /// The HTTP arguments for `port`.
    pub fn http_args(&self, port: u16) -> Vec<String> {
        self.http_args.iter().map(|a| a.replace("{port}", &port.to_string())).collect()
    }
}

impl Programs {
    /// The programs where `scripts/bench` puts them under `root`: release
    /// builds in `target/`, peers in `.peers/`.
    pub fn installed(root: &Path) -> Programs {
        let optional = |path: PathBuf| path.is_file().then_some(path);
        Programs {
            bridge: root.join("target/release/mcp-bridge"),
            example_server: root.join("target/release/mcp-example-server"),
            null_relay: root.join("target/release/null-relay"),
            python: root.join(".peers/py/bin/python"),
            python_server: root.join("crates/mcp-example-server/tests/python/python_server.py"),
            node: PathBuf::from("node"),
            mcp_remote: optional(root.join(".peers/bench/node_modules/mcp-remote/dist/proxy.js")),
            rmcp_server: optional(root.join("target/peers/release/rmcp-bench-server")),
            ts_server: ts_server_under(root),
            server_everything: optional(
                root.join(".peers/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
            ),
            supergateway: optional(root.join(".peers/bench/node_modules/supergateway/dist/index.js")),
            mcp_proxy: optional(root.join(".peers/mcp-proxy/bin/mcp-proxy")),
            filesystem_server: optional(root.join(FILESYSTEM_SERVER)),
            memory_server: optional(root.join(MEMORY_SERVER)),
            time_server: optional(root.join(TIME_SERVER)),
            node_loopback: root.join("bench/peers/node/loopback.cjs"),
            installed_bridges: [("pip (wheel)", "venv/bin/mcp-bridge"), ("npm (tarballs)", "npm/bin/mcp-bridge")]
                .into_iter()
                .filter_map(|(how, path)| optional(root.join(".peers/installed").join(path)).map(|p| (how.into(), p)))
                .collect(),
            scratch: root.join("target/bench"),
        }
    }

    /// Whether the daemon scenario's third-party servers are all installed.
    pub fn has_daemon_peers(&self) -> bool {
        self.filesystem_server.is_some() && self.memory_server.is_some() && self.time_server.is_some()
    }

    /// `mcp-example-server` over HTTP, in both scenarios.
    fn ours(&self) -> ServerUnderTest {
        ServerUnderTest {
            name: "mcp-example-server (this SDK)".into(),
            program: self.example_server.clone(),
            stdio_args: Vec::new(),
            http_args: vec!["--http".into(), "127.0.0.1:{port}".into()],
            envs: Vec::new(),
        }
    }

    /// The rmcp peer when built, serving HTTP with `http_flag`.
    fn rmcp(&self, http_flag: &str) -> Option<ServerUnderTest> {
        self.rmcp_server.as_ref().map(|rmcp| ServerUnderTest {
            name: "rmcp 3.11.0".into(),
            program: rmcp.clone(),
            stdio_args: Vec::new(),
            http_args: vec![http_flag.into(), "127.0.0.1:{port}".into()],
            envs: Vec::new(),
        })
    }

    /// The servers of the legacy HTTP scenario: each serving both revisions
    /// on one endpoint, asked by 2025-11-25 clients (ours is also asked by
    /// 2026-07-28 clients, the baseline).
    pub fn dual_era_servers(&self) -> Vec<ServerUnderTest> {
        let mut servers: Vec<ServerUnderTest> =
            [Some(self.ours()), self.rmcp("--http-legacy")].into_iter().flatten().collect();
        if let Some((script, modules)) = &self.ts_server {
            servers.push(ServerUnderTest {
                name: format!("TypeScript SDK {TS_SERVER_VERSION}"),
                program: self.node.clone(),
                stdio_args: Vec::new(),
                http_args: vec![script.display().to_string(), "{port}".into()],
                envs: vec![("TS_MODULES", modules.clone())],
            });
        }
        servers
    }

    /// The servers of the servers scenario: ours, rmcp's when built, Python's.
    pub fn servers(&self) -> Vec<ServerUnderTest> {
        let mut servers: Vec<ServerUnderTest> =
            [Some(self.ours()), self.rmcp("--http")].into_iter().flatten().collect();
        let script = self.python_server.display().to_string();
        servers.push(ServerUnderTest {
            name: "Python mcp 2.3.0".into(),
            program: self.python.clone(),
            stdio_args: vec![script.clone()],
            http_args: vec![script, "--http".into(), "{port}".into()],
            envs: Vec::new(),
        });
        servers
    }
}

/// Where `scripts/bench` (and `scripts/test`) install server-filesystem's
/// entry script, under the root.
pub const FILESYSTEM_SERVER: &str = ".peers/daemon/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
/// Where they install server-memory's entry script, under the root.
pub const MEMORY_SERVER: &str = ".peers/daemon/node_modules/@modelcontextprotocol/server-memory/dist/index.js";
/// Where they install the `mcp-server-time` command, under the root.
pub const TIME_SERVER: &str = ".peers/time/bin/mcp-server-time";

/// The version of `@modelcontextprotocol/server` the benchmarks install.
pub const TS_SERVER_VERSION: &str = "2.4.0";

/// The TypeScript SDK 2.x server's script and modules under `root`, when
/// `scripts/bench` (or `scripts/test`) installed them.
pub fn ts_server_under(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let modules = root.join(".peers/bench/node_modules");
    let installed = modules.join("@modelcontextprotocol/server/package.json").is_file()
        && modules.join("@modelcontextprotocol/node/package.json").is_file();
    installed.then(|| (root.join("bench/peers/ts-server/server.mjs"), modules))
}

/// How long and how often each figure is measured.
#[derive(Clone, Debug)]
pub struct Timing {
    /// Runs per figure; the median run is reported.
    pub runs: usize,
    /// Calls before a run's window, not measured.
    pub warm_up: Duration,
    /// A run's measured window.
    pub window: Duration,
    /// Start-ups measured per program.
    pub startups: usize,
    /// Idle time before an idle memory figure.
    pub idle: Duration,
    /// Calls per run with a large result: this many MiB of results in all
    /// (at least one call).
    pub large_mib_per_run: u64,
    /// The large results relayed in the stdio scenario: name and size.
    pub large_results: Vec<(&'static str, u64)>,
}

impl Timing {
    /// The figures of `BENCHMARKS.md`.
    pub fn full() -> Timing {
        Timing {
            runs: 5,
            warm_up: Duration::from_millis(500),
            window: Duration::from_secs(2),
            startups: 11,
            idle: Duration::from_secs(1),
            large_mib_per_run: 256,
            // 64 MiB less 4 KiB: the whole answer line must fit the 64 MiB limit.
            large_results: vec![("1 MiB", 1 << 20), ("16 MiB", 16 << 20), ("64 MiB", (64 << 20) - 4096)],
        }
    }

    /// A run of every code path in seconds, for the tests.
    pub fn quick() -> Timing {
        Timing {
            runs: 1,
            // Long enough for a slow peer (Python under 64 clients) to
            // answer within the window on a loaded CI machine.
            warm_up: Duration::from_millis(100),
            window: Duration::from_millis(300),
            startups: 1,
            idle: Duration::from_millis(50),
            large_mib_per_run: 1,
            large_results: vec![("1 MiB", 1 << 20)],
        }
    }

    /// Calls per run for results of `bytes`.
    pub fn large_calls(&self, bytes: u64) -> usize {
        ((self.large_mib_per_run * 1024 * 1024 / bytes.max(1)) as usize).clamp(1, 200)
    }
}
