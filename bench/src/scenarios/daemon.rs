//! Scenario 12: one daemon for every client (`mcp-bridge attach`) against
//! one `mcp-bridge -- CMD` per client and server: the processes, their
//! resident memory, and the cost of a call.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Route, SMALL_TEXT, bridge_route, by_p50, close_all, echo_small, mib, ms_cell, ratio, verdict};
use crate::chart::{Chart, Group};
use crate::proc_status;
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, median_by, ms};
use crate::stdio_peer::{Dialect, StdioPeer};

/// The clients of each setup.
pub const CLIENTS: usize = 4;
/// The server-filesystem release `scripts/bench` installs.
pub const FILESYSTEM_VERSION: &str = "2026.8.31";
/// The server-memory release `scripts/bench` installs.
pub const MEMORY_VERSION: &str = "2026.8.31";
/// The mcp-server-time release `scripts/bench` installs.
pub const TIME_VERSION: &str = "2026.10.19";

/// The example server's name in the daemon's configuration: its tools are
/// `example__…` there.
const EXAMPLE: &str = "example";
/// Setup A, in tables and charts.
const STDIO_FORM: &str = "stdio form: 4 clients × 5 mcp-bridge -- CMD";
/// Setup B, in tables and charts.
const ATTACH: &str = "attach: 4 mcp-bridge attach, 1 daemon";
/// The most `daemon stop` may leave running, for a while: none, after this.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// One of the servers every client uses.
struct Server {
    /// Its name in the daemon's configuration.
    name: &'static str,
    /// The program and its arguments.
    command: PathBuf,
    args: Vec<String>,
    /// The environment it needs.
    envs: Vec<(&'static str, PathBuf)>,
    /// The tool each client calls once, with its arguments.
    tool: &'static str,
    arguments: Value,
}

/// The processes of a setup and their resident memory (`VmRSS`) once
/// every client has called every server.
#[derive(Clone, Copy, Debug, Default)]
struct Footprint {
    /// Every process: the relays and all below them.
    processes: usize,
    /// The relays: the bridges, or the `attach` shims and the daemon.
    relays: usize,
    /// The resident memory of every process, in KiB.
    rss_kib: u64,
    /// That of the relays alone, in KiB.
    relays_rss_kib: u64,
}

impl Footprint {
    /// The footprint of the `relays` (those living) and every process
    /// descending from them.
    fn of(relays: &[u32]) -> Footprint {
        let all = proc_status::trees(relays);
        let mut footprint = Footprint { processes: all.len(), ..Footprint::default() };
        for pid in all {
            let kib = proc_status::kib(pid, "VmRSS").unwrap_or(0);
            footprint.rss_kib += kib;
            if relays.contains(&pid) {
                footprint.relays += 1;
                footprint.relays_rss_kib += kib;
            }
        }
        footprint
    }

    /// The processes below the relays: the servers.
    fn servers(&self) -> usize {
        self.processes - self.relays
    }

    /// The resident memory of the servers, in KiB.
    fn servers_rss_kib(&self) -> u64 {
        self.rss_kib - self.relays_rss_kib
    }
}

/// The scenario's files: the daemon's configuration, the filesystem
/// server's folder, the memory server's file, and the private folder the
/// daemon's socket is in (`XDG_RUNTIME_DIR` of every `mcp-bridge`). When
/// dropped, the daemon is stopped (should the scenario end early) and the
/// folders are removed.
struct Place {
    bridge: PathBuf,
    dir: PathBuf,
    config: PathBuf,
    files: PathBuf,
    memory: PathBuf,
    runtime: PathBuf,
}

impl Place {
    /// Makes the folders under the programs' scratch folder, and the
    /// private one in the temporary folder (short: a socket's path has at
    /// most 107 bytes).
    fn new(p: &Programs) -> io::Result<Place> {
        let dir = absolute(&p.scratch.join("daemon"));
        let files = dir.join("files");
        std::fs::create_dir_all(&files)?;
        let runtime = std::env::temp_dir().join(format!("mcp-bench-daemon-{}", std::process::id()));
        private_dir(&runtime)?;
        Ok(Place {
            bridge: p.bridge.clone(),
            config: dir.join("servers.json"),
            memory: dir.join("memory.jsonl"),
            files,
            runtime,
            dir,
        })
    }

    /// Writes the daemon's configuration: every server, none stopped for
    /// being idle during the run.
    fn write_config(&self, servers: &[Server]) -> io::Result<()> {
        let entries: serde_json::Map<String, Value> = servers
            .iter()
            .map(|s| {
                let env: serde_json::Map<String, Value> =
                    s.envs.iter().map(|(k, v)| ((*k).to_owned(), json!(v.display().to_string()))).collect();
                let entry = json!({"command": s.command, "args": s.args, "env": env, "idle": "1h"});
                (s.name.to_owned(), entry)
            })
            .collect();
        std::fs::write(&self.config, json!({"mcpServers": entries}).to_string())
    }

    /// `mcp-bridge daemon ACTION… --config FILE`: its stdout; an error
    /// unless it exits 0.
    async fn daemon(&self, action: &[&str]) -> io::Result<String> {
        let output = tokio::process::Command::new(&self.bridge)
            .arg("daemon")
            .args(action)
            .arg("--config")
            .arg(&self.config)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .stdin(Stdio::null())
            .output()
            .await?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(io::Error::other(format!(
                "mcp-bridge daemon {}: {}: {}",
                action.join(" "),
                output.status,
                stderr.trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// `daemon stop`, then a check that none of `servers` is left.
    async fn stop_daemon(&self, servers: &[u32]) -> io::Result<()> {
        self.daemon(&["stop"]).await?;
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            let left = proc_status::trees(servers);
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!("`daemon stop` left server processes running: {left:?}")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.config.is_file() {
            // Without a daemon it says so and exits at once.
            let _ = std::process::Command::new(&self.bridge)
                .args(["daemon", "stop", "--config"])
                .arg(&self.config)
                .env("XDG_RUNTIME_DIR", &self.runtime)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.runtime);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A folder only this user may enter (mode 0700 on Unix).
fn private_dir(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// `path` made absolute (the daemon runs in the configuration's folder),
/// a bare program name (`node`) left to be looked up in `PATH`.
fn absolute(path: &Path) -> PathBuf {
    if path.components().count() > 1 {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    } else {
        path.to_path_buf()
    }
}

/// The five servers: ours, the reference filesystem, memory and time
/// servers, and the Python SDK's.
fn servers(p: &Programs, place: &Place) -> io::Result<Vec<Server>> {
    let (Some(filesystem), Some(memory), Some(time)) = (&p.filesystem_server, &p.memory_server, &p.time_server) else {
        return Err(io::Error::other(
            "server-filesystem, server-memory or mcp-server-time is not installed: run scripts/bench",
        ));
    };
    let text = |path: &Path| absolute(path).display().to_string();
    let add = json!({"a": 1, "b": 2});
    Ok(vec![
        Server {
            name: EXAMPLE,
            command: absolute(&p.example_server),
            args: Vec::new(),
            envs: Vec::new(),
            tool: "add",
            arguments: add.clone(),
        },
        Server {
            name: "filesystem",
            command: p.node.clone(),
            args: vec![text(filesystem), text(&place.files)],
            envs: Vec::new(),
            tool: "list_allowed_directories",
            arguments: json!({}),
        },
        Server {
            name: "memory",
            command: p.node.clone(),
            args: vec![text(memory)],
            envs: vec![("MEMORY_FILE_PATH", place.memory.clone())],
            tool: "read_graph",
            arguments: json!({}),
        },
        Server {
            name: "time",
            command: absolute(time),
            args: vec!["--local-timezone".into(), "UTC".into()],
            envs: Vec::new(),
            tool: "get_current_time",
            arguments: json!({"timezone": "UTC"}),
        },
        Server {
            name: "python",
            command: absolute(&p.python),
            args: vec![text(&p.python_server)],
            envs: Vec::new(),
            tool: "add",
            arguments: add,
        },
    ])
}

/// Calls the tool `name`; an error unless its result is one.
async fn call_tool(peer: &mut StdioPeer, name: &str, arguments: &Value) -> io::Result<()> {
    let result = peer.call("tools/call", json!({"name": name, "arguments": arguments})).await?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(io::Error::other(format!("{name} failed: {result}")));
    }
    Ok(())
}

/// Setup A: for each client, one `mcp-bridge -- CMD` per server, each
/// server's tool called once; the footprint after `t.idle`.
async fn stdio_form(p: &Programs, servers: &[Server], t: &Timing) -> io::Result<Footprint> {
    let mut peers = Vec::with_capacity(CLIENTS * servers.len());
    for _ in 0..CLIENTS {
        for server in servers {
            let mut args = vec!["--".to_owned(), server.command.display().to_string()];
            args.extend(server.args.iter().cloned());
            let route = Route {
                name: format!("mcp-bridge -- {}", server.name),
                program: p.bridge.clone(),
                args,
                envs: server.envs.clone(),
                dialect: Dialect::Legacy,
            };
            let mut peer = route.start().await.map_err(|e| io::Error::other(format!("{}: {e}", route.name)))?;
            call_tool(&mut peer, server.tool, &server.arguments).await?;
            peers.push(peer);
        }
    }
    tokio::time::sleep(t.idle).await;
    let footprint = Footprint::of(&peers.iter().map(StdioPeer::pid).collect::<Vec<_>>());
    close_all(peers).await;
    if footprint.relays != CLIENTS * servers.len() {
        return Err(io::Error::other(format!(
            "{} of the bridges ended early",
            CLIENTS * servers.len() - footprint.relays
        )));
    }
    Ok(footprint)
}

/// Setup B: `CLIENTS` clients of `mcp-bridge attach --all` (the first
/// starts the daemon), each calling one tool of every server.
async fn attach_clients(p: &Programs, servers: &[Server], place: &Place) -> io::Result<Vec<StdioPeer>> {
    let route = Route {
        name: "mcp-bridge attach".into(),
        program: p.bridge.clone(),
        args: vec!["attach".into(), "--config".into(), place.config.display().to_string(), "--all".into()],
        envs: vec![("XDG_RUNTIME_DIR", place.runtime.clone())],
        dialect: Dialect::Legacy,
    };
    let mut shims = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let mut shim = route.start().await.map_err(|e| io::Error::other(format!("{}: {e}", route.name)))?;
        for server in servers {
            call_tool(&mut shim, &format!("{}__{}", server.name, server.tool), &server.arguments).await?;
        }
        shims.push(shim);
    }
    Ok(shims)
}

/// The daemon's process id and its servers', from `daemon status --json`;
/// an error unless every server runs and answers.
fn daemon_pids(status: &str) -> io::Result<(u32, Vec<u32>)> {
    let status: Value = serde_json::from_str(status).map_err(|e| io::Error::other(format!("daemon status: {e}")))?;
    let pid_of = |value: &Value| value.get("pid").and_then(Value::as_u64).and_then(|pid| u32::try_from(pid).ok());
    let daemon = pid_of(&status).ok_or_else(|| io::Error::other(format!("daemon status without a pid: {status}")))?;
    let mut servers = Vec::new();
    for server in status.get("servers").and_then(Value::as_array).into_iter().flatten() {
        let answering = server.get("running") == Some(&json!(true)) && server.get("available") == Some(&json!(true));
        match pid_of(server) {
            Some(pid) if answering => servers.push(pid),
            _ => return Err(io::Error::other(format!("a server of the daemon does not answer: {server}"))),
        }
    }
    Ok((daemon, servers))
}

/// Setup B's footprint (the shims, the daemon, its servers) and the
/// servers' process ids; an error unless the daemon runs exactly
/// `servers` servers.
async fn attach_footprint(place: &Place, shims: &[StdioPeer], servers: usize) -> io::Result<(Footprint, Vec<u32>)> {
    let (daemon, server_pids) = daemon_pids(&place.daemon(&["status", "--json"]).await?)?;
    if server_pids.len() != servers {
        return Err(io::Error::other(format!("the daemon runs {} servers, not {servers}", server_pids.len())));
    }
    let mut relays: Vec<u32> = shims.iter().map(StdioPeer::pid).collect();
    relays.push(daemon);
    let footprint = Footprint::of(&relays);
    if footprint.relays != relays.len() {
        return Err(io::Error::other("a shim or the daemon ended early"));
    }
    Ok((footprint, server_pids))
}

/// `echo` of the example server, through the daemon.
fn echo_through_daemon(peer: &mut StdioPeer) -> (u64, Vec<u8>) {
    peer.request("tools/call", json!({"name": format!("{EXAMPLE}__echo"), "arguments": {"text": SMALL_TEXT}}))
}

/// `t.runs` runs of one `echo` at a time through the stdio form and
/// through the daemon, in turns: the median run of each by p50.
async fn latencies(stdio: &mut StdioPeer, attached: &mut StdioPeer, t: &Timing) -> io::Result<(Run, Run)> {
    let (mut direct, mut shared) = (Vec::with_capacity(t.runs), Vec::with_capacity(t.runs));
    for _ in 0..t.runs {
        direct.push(stdio.closed_loop(&echo_small, 1, t.warm_up, t.window).await?);
        shared.push(attached.closed_loop(&echo_through_daemon, 1, t.warm_up, t.window).await?);
    }
    Ok((median_by(direct, by_p50).unwrap_or_default(), median_by(shared, by_p50).unwrap_or_default()))
}

/// What the scenario measured.
struct Figures {
    servers: usize,
    stdio: Footprint,
    attach: Footprint,
    stdio_call: Run,
    attach_call: Run,
}

impl Figures {
    /// The resident memory of one client's set in the stdio form (its
    /// bridges and servers), in KiB.
    fn one_set_kib(&self) -> f64 {
        self.stdio.rss_kib as f64 / CLIENTS as f64
    }
}

/// Scenario 12: `CLIENTS` clients each using five servers, through one
/// `mcp-bridge -- CMD` per client and server, then through
/// `mcp-bridge attach` and one daemon; then the cost of a call each way.
pub async fn daemon(p: &Programs, t: &Timing) -> io::Result<Section> {
    let place = Place::new(p)?;
    let servers = servers(p, &place)?;
    let stdio = stdio_form(p, &servers, t).await?;
    place.write_config(&servers)?;
    let mut shims = attach_clients(p, &servers, &place).await?;
    tokio::time::sleep(t.idle).await;
    let (attach, server_pids) = attach_footprint(&place, &shims, servers.len()).await?;
    let mut stdio_peer = bridge_route(p).start().await?;
    let (stdio_call, attach_call) = latencies(&mut stdio_peer, &mut shims[0], t).await?;
    stdio_peer.close().await;
    close_all(shims).await;
    place.stop_daemon(&server_pids).await?;
    let figures = Figures { servers: servers.len(), stdio, attach, stdio_call, attach_call };
    Ok(section(&figures, &servers, t))
}

/// The table of processes and resident memory.
fn footprint_table(f: &Figures) -> Table {
    let mut table = Table::new(&["measure", STDIO_FORM, ATTACH, "attach ÷ stdio form"]);
    let counts = |label: &str, count: fn(&Footprint) -> usize| {
        let (a, b) = (count(&f.stdio), count(&f.attach));
        vec![label.to_owned(), a.to_string(), b.to_string(), ratio(b as f64, a as f64)]
    };
    table.row(counts("processes", |f| f.processes));
    table.row(counts("of them servers", Footprint::servers));
    table.row(counts("of them relays (bridges; shims and the daemon)", |f| f.relays));
    let memory = |label: &str, kib: fn(&Footprint) -> u64| {
        let (a, b) = (kib(&f.stdio), kib(&f.attach));
        vec![label.to_owned(), format!("{:.1} MiB", mib(a)), format!("{:.1} MiB", mib(b)), ratio(b as f64, a as f64)]
    };
    table.row(memory("RSS of the servers", Footprint::servers_rss_kib));
    table.row(memory("RSS of the relays", |f| f.relays_rss_kib));
    table.row(memory("total RSS", |f| f.rss_kib));
    let one_set = f.one_set_kib();
    table.row(vec![
        format!("one client's set (the stdio form ÷ {CLIENTS}) against all of attach"),
        format!("{:.1} MiB", one_set / 1024.0),
        format!("{:.1} MiB", mib(f.attach.rss_kib)),
        ratio(f.attach.rss_kib as f64, one_set),
    ]);
    table
}

/// The table of the cost of a call.
fn call_table(f: &Figures) -> Table {
    let mut table = Table::new(&[
        "measure",
        "`mcp-bridge -- mcp-example-server`",
        "`mcp-bridge attach` (the daemon's example server)",
        "attach ÷ stdio form",
    ]);
    let (a, b) = (&f.stdio_call, &f.attach_call);
    table.row(vec![
        format!("tools/call p50, {} B, 1 in flight", SMALL_TEXT.len()),
        ms_cell(a.p50()),
        ms_cell(b.p50()),
        ratio(ms(b.p50()), ms(a.p50())),
    ]);
    table.row(vec![
        format!("tools/call p99, {} B, 1 in flight", SMALL_TEXT.len()),
        ms_cell(a.p99()),
        ms_cell(b.p99()),
        ratio(ms(b.p99()), ms(a.p99())),
    ]);
    table
}

/// Where the figures stand against the targets of the daemon.
fn targets(f: &Figures) -> Vec<String> {
    let servers = f.attach.servers();
    let memory = f.attach.rss_kib as f64 / f.one_set_kib().max(f64::MIN_POSITIVE);
    let call = ms(f.attach_call.p50()) / ms(f.stdio_call.p50()).max(f64::MIN_POSITIVE);
    vec![
        format!(
            "server processes with attach: {servers} for {} servers (the stdio form: {}); target one per server: {}",
            f.servers,
            f.stdio.servers(),
            verdict(servers == f.servers)
        ),
        format!(
            "total RSS with attach: {:.1} MiB, {memory:.2}x one client's set in the stdio form ({:.1} MiB); \
             target ≤ 1.3x: {}",
            mib(f.attach.rss_kib),
            f.one_set_kib() / 1024.0,
            verdict(memory <= 1.3)
        ),
        format!(
            "per-call cost through the daemon (p50, 1 in flight): {call:.2}x the stdio form; target ≤ 1.2x: {}",
            verdict(call <= 1.2)
        ),
    ]
}

/// The chart: both setups' processes, memory and p50.
fn chart(f: &Figures) -> Chart {
    let pair = |a: f64, b: f64| vec![Some(a), Some(b)];
    Chart {
        title: "One daemon for every client vs a bridge per client and server".into(),
        series: vec![STDIO_FORM.into(), ATTACH.into()],
        groups: vec![
            Group {
                label: "processes".into(),
                unit: "",
                values: pair(f.stdio.processes as f64, f.attach.processes as f64),
            },
            Group {
                label: "server processes".into(),
                unit: "",
                values: pair(f.stdio.servers() as f64, f.attach.servers() as f64),
            },
            Group { label: "total RSS".into(), unit: "MiB", values: pair(mib(f.stdio.rss_kib), mib(f.attach.rss_kib)) },
            Group {
                label: "p50, 1 in flight".into(),
                unit: "ms",
                values: pair(ms(f.stdio_call.p50()), ms(f.attach_call.p50())),
            },
        ],
    }
}

/// The scenario's part of the report.
fn section(f: &Figures, servers: &[Server], t: &Timing) -> Section {
    let names: Vec<String> = servers.iter().map(|s| format!("`{}` ({})", s.name, s.tool)).collect();
    Section {
        name: "daemon",
        title: "12. One daemon for every client: `mcp-bridge attach`".into(),
        intro: format!(
            "{CLIENTS} clients (2025-11-25, `initialize` first) each use five servers: `mcp-example-server`, \
             server-filesystem {FILESYSTEM_VERSION} and server-memory {MEMORY_VERSION} (Node.js), mcp-server-time \
             {TIME_VERSION} and a Python `mcp` server. In the stdio form each client runs one \
             `mcp-bridge -- CMD` per server; with `attach` each runs one `mcp-bridge attach --all`, and the \
             daemon the first one starts runs one process per server for all of them. Once every client has \
             called one tool of every server ({}) and {} ms have passed, the processes under the clients' \
             programs are counted and their resident memory (`VmRSS`) added up, once. Then one `echo` ({} B) at \
             a time through `mcp-bridge -- mcp-example-server` and through the first client's `attach` (the \
             other clients still attached), in turns; median of {} runs of {} s after {} ms warm-up.",
            names.join(", "),
            t.idle.as_millis(),
            SMALL_TEXT.len(),
            t.runs,
            t.window.as_secs_f64(),
            t.warm_up.as_millis()
        ),
        tables: vec![footprint_table(f), call_table(f)],
        targets: targets(f),
        chart: chart(f),
    }
}
