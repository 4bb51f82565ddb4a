//! The scenarios of a side-by-side run. Each measures its programs in the
//! same run and returns its part of the report: tables with the median of
//! several runs and the ratio to the baseline, the targets, a chart.

use std::ffi::OsStr;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::chart::{Chart, Group};
use crate::http_load;
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, median, median_by, ms};
use crate::stdio_peer::{Dialect, StdioPeer};

mod protected;
mod replicas;
pub use protected::protected;
pub use replicas::replicas;

/// The text of a small call: 100 bytes.
const SMALL_TEXT: &str =
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";
/// The large result of the mcp-remote scenario.
const REMOTE_LARGE: u64 = 4 << 20;
/// In-flight counts of the stdio throughput figures.
const IN_FLIGHT: [usize; 2] = [16, 256];
/// Concurrency levels of the servers scenario.
const SERVER_CONCURRENCY: [usize; 2] = [1, 64];

/// A way of reaching a server: a program, its arguments, the client's dialect.
struct Route {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    envs: Vec<(&'static str, PathBuf)>,
    dialect: Dialect,
}

impl Route {
    async fn start(&self) -> io::Result<StdioPeer> {
        let envs: Vec<(&str, &OsStr)> = self.envs.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
        StdioPeer::start(&self.program, &self.args, &envs, self.dialect).await
    }
}

fn bridge_route(p: &Programs) -> Route {
    Route {
        name: "through mcp-bridge (2025-11-25 client)".into(),
        program: p.bridge.clone(),
        args: vec!["--".into(), p.example_server.display().to_string()],
        envs: Vec::new(),
        dialect: Dialect::Legacy,
    }
}

fn direct_route(p: &Programs) -> Route {
    Route {
        name: "direct (2026-07-28 client)".into(),
        program: p.example_server.clone(),
        args: Vec::new(),
        envs: Vec::new(),
        dialect: Dialect::Modern,
    }
}

fn echo_small(peer: &mut StdioPeer) -> (u64, Vec<u8>) {
    peer.request("tools/call", json!({"name": "echo", "arguments": {"text": SMALL_TEXT}}))
}

fn add(peer: &mut StdioPeer) -> (u64, Vec<u8>) {
    peer.request("tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}))
}

fn big(bytes: u64) -> Value {
    json!({"name": "big", "arguments": {"bytes": bytes}})
}

/// One measured run of a peer.
type Measure = dyn for<'p> Fn(&'p mut StdioPeer) -> std::pin::Pin<Box<dyn Future<Output = io::Result<Run>> + 'p>>;

/// `t.runs` runs of `measure` on each peer, taken in turns (one run of
/// each, then the next round) so that a change in the machine's load
/// reaches every peer alike; the median run of each peer by `key`.
async fn in_turns(
    peers: &mut [StdioPeer],
    t: &Timing,
    measure: &Measure,
    key: fn(&Run) -> f64,
) -> io::Result<Vec<Run>> {
    let mut runs: Vec<Vec<Run>> = peers.iter().map(|_| Vec::with_capacity(t.runs)).collect();
    for _ in 0..t.runs {
        for (peer, runs) in peers.iter_mut().zip(&mut runs) {
            runs.push(measure(peer).await?);
        }
    }
    Ok(runs.into_iter().map(|r| median_by(r, key).unwrap_or_default()).collect())
}

/// Closed-loop runs of `make` with `in_flight` requests outstanding.
fn closed_loop(make: fn(&mut StdioPeer) -> (u64, Vec<u8>), in_flight: usize, t: &Timing) -> Box<Measure> {
    let (warm_up, window) = (t.warm_up, t.window);
    Box::new(move |peer| Box::pin(async move { peer.closed_loop(&make, in_flight, warm_up, window).await }))
}

/// Runs of `count` calls of `params` one after another.
fn sequential(params: Value, count: usize) -> Box<Measure> {
    Box::new(move |peer| {
        let params = params.clone();
        Box::pin(async move { peer.sequential("tools/call", &params, count).await })
    })
}

/// Runs of whole calls of `params` (input rounds answered) for the window.
fn whole_calls(params: Value, t: &Timing) -> Box<Measure> {
    let (warm_up, window) = (t.warm_up, t.window);
    Box::new(move |peer| {
        let params = params.clone();
        Box::pin(async move { peer.timed_calls("tools/call", &params, warm_up, window).await })
    })
}

fn by_p50(run: &Run) -> f64 {
    ms(run.p50())
}

fn by_rate(run: &Run) -> f64 {
    run.per_second
}

/// Starts every route's program.
async fn start_all(routes: &[&Route]) -> io::Result<Vec<StdioPeer>> {
    let mut peers = Vec::with_capacity(routes.len());
    for route in routes {
        peers.push(route.start().await.map_err(|e| io::Error::other(format!("{}: {e}", route.name)))?);
    }
    Ok(peers)
}

async fn close_all(peers: Vec<StdioPeer>) {
    for peer in peers {
        peer.close().await;
    }
}

/// Each route started `t.startups` times, in turns: the median time from
/// the spawn to the first answer (ms) and the median peak RSS after
/// `t.idle` (KiB).
async fn startups(routes: &[&Route], t: &Timing) -> io::Result<Vec<(f64, f64)>> {
    let (mut starts, mut idle) = (vec![Vec::new(); routes.len()], vec![Vec::new(); routes.len()]);
    for _ in 0..t.startups {
        for (index, route) in routes.iter().enumerate() {
            let started = Instant::now();
            let peer = route.start().await?;
            starts[index].push(ms(started.elapsed()));
            tokio::time::sleep(t.idle).await;
            idle[index].push(peer.peak_rss_kib() as f64);
            peer.close().await;
        }
    }
    Ok(starts.iter().zip(&idle).map(|(s, i)| (median(s), median(i))).collect())
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 { format!("{:.2}x", a / b) } else { "—".into() }
}

fn ms_cell(d: Duration) -> String {
    format!("{:.3} ms", ms(d))
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The chart groups of one concurrency level: calls/s and p99 of each route.
fn rate_and_p99(clients: usize, medians: &[Run]) -> [Group; 2] {
    [
        Group {
            label: format!("{clients} client{}", if clients == 1 { "" } else { "s" }),
            unit: "/s",
            values: medians.iter().map(|r| Some(r.per_second)).collect(),
        },
        Group {
            label: format!("p99, {clients}"),
            unit: "ms",
            values: medians.iter().map(|r| Some(ms(r.p99()))).collect(),
        },
    ]
}

/// How the figures of a load scenario were taken, for its introduction.
fn medians_note(t: &Timing) -> String {
    format!("Median of {} runs of {} s after {} ms warm-up.", t.runs, t.window.as_secs_f64(), t.warm_up.as_millis())
}

/// "met" or "missed", for the target lines.
fn verdict(met: bool) -> &'static str {
    if met { "**met**" } else { "**missed**" }
}

/// The figures of one route in the stdio scenario.
#[derive(Default)]
struct StdioFigures {
    one: Run,
    loaded: Vec<Run>,
    large: Vec<(Run, u64)>,
}

/// One figure of a route, read from its figures.
type Figure = dyn Fn(&StdioFigures) -> f64;

/// The stdio figures of each route, measured in turns.
async fn stdio_figures(routes: &[&Route], t: &Timing) -> io::Result<Vec<StdioFigures>> {
    let mut figures: Vec<StdioFigures> = routes.iter().map(|_| StdioFigures::default()).collect();
    let mut peers = start_all(routes).await?;
    for (f, run) in figures.iter_mut().zip(in_turns(&mut peers, t, &*closed_loop(echo_small, 1, t), by_p50).await?) {
        f.one = run;
    }
    for in_flight in IN_FLIGHT {
        let runs = in_turns(&mut peers, t, &*closed_loop(echo_small, in_flight, t), by_rate).await?;
        for (f, run) in figures.iter_mut().zip(runs) {
            f.loaded.push(run);
        }
    }
    close_all(peers).await;
    for (_, bytes) in &t.large_results {
        // Fresh processes per size: their peak memory is that size's.
        let mut peers = start_all(routes).await?;
        let runs = in_turns(&mut peers, t, &*sequential(big(*bytes), t.large_calls(*bytes)), by_p50).await?;
        for ((f, run), peer) in figures.iter_mut().zip(runs).zip(&peers) {
            f.large.push((run, peer.peak_rss_kib()));
        }
        close_all(peers).await;
    }
    Ok(figures)
}

/// Scenario 1: the bridge on a stdio upstream against a direct connection.
pub async fn stdio_overhead(p: &Programs, t: &Timing) -> io::Result<Section> {
    let embedded = Route {
        name: "embedded bridge (2025-11-25 client to mcp-example-server)".into(),
        dialect: Dialect::Legacy,
        ..direct_route(p)
    };
    let null_relay = Route {
        name: "null relay (2026-07-28 client, bytes copied)".into(),
        program: p.null_relay.clone(),
        args: vec!["--".into(), p.example_server.display().to_string()],
        ..direct_route(p)
    };
    let routes = [bridge_route(p), embedded, null_relay, direct_route(p)];
    let figures = stdio_figures(&routes.iter().collect::<Vec<_>>(), t).await?;
    let (relay, direct) = (2, figures.len() - 1);
    // Each figure: its label, unit and value; the ratios are to the direct route's.
    let mut measures: Vec<(String, &str, Box<Figure>)> = vec![
        ("tools/call p50, 100 B, 1 in flight".into(), "ms", Box::new(|f| ms(f.one.p50()))),
        ("tools/call p99, 100 B, 1 in flight".into(), "ms", Box::new(|f| ms(f.one.p99()))),
    ];
    for (index, in_flight) in IN_FLIGHT.iter().enumerate() {
        measures.push((
            format!("calls/s, 100 B, {in_flight} in flight"),
            "/s",
            Box::new(move |f| f.loaded.get(index).map_or(0.0, |r| r.per_second)),
        ));
    }
    for (index, (name, _)) in t.large_results.iter().enumerate() {
        measures.push((
            format!("tools/call p50, {name} result"),
            "ms",
            Box::new(move |f| f.large.get(index).map_or(0.0, |(r, _)| ms(r.p50()))),
        ));
    }
    let mut header = vec!["measure".to_owned()];
    header.extend(routes.iter().map(|r| r.name.clone()));
    header.extend(routes[..direct].iter().map(|r| format!("{} ÷ direct", short(&r.name))));
    let mut calls = Table { header, rows: Vec::new() };
    let mut groups = Vec::new();
    for (label, unit, value) in &measures {
        let values: Vec<f64> = figures.iter().map(value).collect();
        let mut row = vec![label.clone()];
        row.extend(values.iter().map(|v| if *unit == "ms" { format!("{v:.3} ms") } else { format!("{v:.0}") }));
        row.extend(values[..direct].iter().map(|v| ratio(*v, values[direct])));
        calls.row(row);
        groups.push(Group {
            label: label.replace("tools/call ", ""),
            unit,
            values: values.into_iter().map(Some).collect(),
        });
    }
    let mut memory = Table::new(&["result", "bridge peak RSS", "bridge peak RSS ÷ result", "server peak RSS (direct)"]);
    for (index, (name, bytes)) in t.large_results.iter().enumerate() {
        let kib = |f: &StdioFigures| f.large.get(index).map_or(0, |(_, kib)| *kib);
        let (bridge_kib, server_kib) = (kib(&figures[0]), kib(&figures[direct]));
        memory.row(vec![
            (*name).to_owned(),
            format!("{:.1} MiB", mib(bridge_kib)),
            ratio(bridge_kib as f64 * 1024.0, *bytes as f64),
            format!("{:.1} MiB", mib(server_kib)),
        ]);
        groups.push(Group {
            label: format!("peak RSS, {name}"),
            unit: "MiB",
            values: figures.iter().map(|f| Some(mib(kib(f)))).collect(),
        });
    }
    let ratio_to = |route: usize, base: usize, value: &Figure| {
        value(&figures[route]) / value(&figures[base]).max(f64::MIN_POSITIVE)
    };
    let p50: &Figure = &|f| ms(f.one.p50());
    let (to_relay, embedded_one) = (ratio_to(0, relay, p50), ratio_to(1, direct, p50));
    let mut targets = vec![
        format!(
            "per-call overhead at 1 in flight (p50): `mcp-bridge` {to_relay:.2}x the null relay; target ≤ 1.10x: {}",
            verdict(to_relay <= 1.1)
        ),
        format!(
            "per-call overhead at 1 in flight (p50): the embedded bridge {embedded_one:.2}x direct; target ≤ 1.10x: {}",
            verdict(embedded_one <= 1.1)
        ),
    ];
    let loaded = ratio_to(0, direct, &|f| f.loaded.last().map_or(0.0, |r| r.per_second));
    targets
        .push(format!("throughput at 256 in flight: {loaded:.2}x direct; target ≥ 0.90x: {}", verdict(loaded >= 0.9)));
    if let (Some((name, bytes)), Some((_, kib))) = (t.large_results.last(), figures[0].large.last()) {
        let r = *kib as f64 * 1024.0 / *bytes as f64;
        targets.push(format!(
            "bridge peak RSS relaying a {name} result: {r:.2}x the result; target ≤ 3x: {}",
            verdict(r <= 3.0)
        ));
    }
    Ok(Section {
        name: "stdio-overhead",
        title: "1. The bridge on a stdio upstream".into(),
        intro: format!(
            "`tools/call` sent as lines over pipes: a 2025-11-25 client driving `mcp-bridge -- mcp-example-server`; \
             the same client driving `mcp-example-server` itself, which serves it through its embedded bridge; a \
             2026-07-28 client through the null relay (`null-relay -- mcp-example-server`, a process that copies bytes \
             both ways and parses nothing: the floor of any separate bridge process); and a 2026-07-28 client driving \
             `mcp-example-server` directly, the baseline. Small calls are `echo` of {} bytes: \
             latency with one call in flight, throughput with 16 and 256 kept in flight; large results are `big`, one \
             call after another, each size in fresh processes whose peak RSS (`VmHWM`) is shown. The routes are measured \
             in turns; median of {} runs ({} s measured after {} ms warm-up for the small calls).",
            SMALL_TEXT.len(),
            t.runs,
            t.window.as_secs_f64(),
            t.warm_up.as_millis()
        ),
        tables: vec![calls, memory],
        targets,
        chart: Chart {
            title: "Bridge on a stdio upstream vs direct".into(),
            series: routes.iter().map(|r| r.name.clone()).collect(),
            groups,
        },
    })
}

/// Scenario 2: spawn to the first answer, and idle memory.
pub async fn startup(p: &Programs, t: &Timing) -> io::Result<Section> {
    let (bridge, direct) = (bridge_route(p), direct_route(p));
    let starts = startups(&[&bridge, &direct], t).await?;
    let ((b_ms, b_kib), (s_ms, s_kib)) = (starts[0], starts[1]);
    let mut table = Table::new(&[
        &format!("measure (median of {})", t.startups),
        "mcp-bridge -- mcp-example-server",
        "mcp-example-server alone",
        "difference",
        "ratio",
    ]);
    table.row(vec![
        "spawn to first answer (initialize / server/discover)".into(),
        format!("{b_ms:.2} ms"),
        format!("{s_ms:.2} ms"),
        format!("{:+.2} ms", b_ms - s_ms),
        ratio(b_ms, s_ms),
    ]);
    table.row(vec![
        format!("peak RSS after {} ms idle (the bridge process / the server process)", t.idle.as_millis()),
        format!("{:.1} MiB", b_kib / 1024.0),
        format!("{:.1} MiB", s_kib / 1024.0),
        format!("{:+.1} MiB", (b_kib - s_kib) / 1024.0),
        ratio(b_kib, s_kib),
    ]);
    let idle_bytes = b_kib * 1024.0;
    let targets = vec![
        format!(
            "bridge start-up beyond the upstream's own discover: {:.2} ms; target ≤ 10 ms: {}",
            b_ms - s_ms,
            verdict(b_ms - s_ms <= 10.0)
        ),
        format!("bridge idle peak RSS: {:.2} MB; target ≤ 8 MB: {}", idle_bytes / 1e6, verdict(idle_bytes <= 8e6)),
    ];
    Ok(Section {
        name: "startup",
        title: "2. Start-up and idle memory".into(),
        intro: "Time from spawning `mcp-bridge -- mcp-example-server` to its `initialize` response (the bridge \
                spawns the server and discovers it first), beside the time from spawning `mcp-example-server` to \
                its `server/discover` response: the upstream's own share. Then the peak RSS of each process alone \
                after it has been idle."
            .into(),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "Start-up and idle memory".into(),
            series: vec!["mcp-bridge -- mcp-example-server".into(), "mcp-example-server alone".into()],
            groups: vec![
                Group { label: "spawn to first answer".into(), unit: "ms", values: vec![Some(b_ms), Some(s_ms)] },
                Group {
                    label: "peak RSS idle".into(),
                    unit: "MiB",
                    values: vec![Some(b_kib / 1024.0), Some(s_kib / 1024.0)],
                },
            ],
        },
    })
}

/// Scenario 7: the bridge's start-up in front of a 2025-11-25 server
/// (server-everything on stdio): the `server/discover` probe at every
/// start, the era taken from the cache file instead, and the era forced
/// with `--protocol 2025-11-25` (no probe by flag), the baseline.
pub async fn legacy_startup(p: &Programs, t: &Timing, everything: &std::path::Path) -> io::Result<Section> {
    let cache = p.scratch.join("eras.json");
    std::fs::create_dir_all(&p.scratch)?;
    let _ = std::fs::remove_file(&cache);
    let route = |name: &str, flags: &[&str], cache: PathBuf| Route {
        name: name.into(),
        program: p.bridge.clone(),
        args: flags
            .iter()
            .map(|f| (*f).to_owned())
            .chain(["--".into(), "node".into(), everything.display().to_string(), "stdio".into()])
            .collect(),
        envs: vec![("MCP_BRIDGE_ERA_CACHE", cache)],
        dialect: Dialect::Legacy,
    };
    let probed = route("probe at every start", &[], "off".into());
    let cached = route("era from the cache", &[], cache.clone());
    let forced = route("--protocol 2025-11-25", &["--protocol", "2025-11-25"], "off".into());
    // One start fills the cache file.
    cached.start().await?.close().await;
    let starts = startups(&[&probed, &cached, &forced], t).await?;
    let (probe_ms, cached_ms, forced_ms) = (starts[0].0, starts[1].0, starts[2].0);
    let mut table = Table::new(&[
        &format!("measure (median of {})", t.startups),
        &probed.name,
        &cached.name,
        &forced.name,
        "probe cost (probe − cache)",
    ]);
    table.row(vec![
        "spawn to initialize result".into(),
        format!("{probe_ms:.2} ms"),
        format!("{cached_ms:.2} ms"),
        format!("{forced_ms:.2} ms"),
        format!("{:+.2} ms", probe_ms - cached_ms),
    ]);
    Ok(Section {
        name: "legacy-startup",
        title: "7. Start-up in front of a 2025-11-25 server".into(),
        intro: "Time from spawning `mcp-bridge -- node server-everything stdio` to its `initialize` response: \
                with the `server/discover` probe at every start (`MCP_BRIDGE_ERA_CACHE=off`), with the era taken \
                from the cache file a first start wrote, and with the era forced by `--protocol 2025-11-25` (no \
                probe). The difference is the probe's round trip; Node's own start-up dominates all three."
            .into(),
        tables: vec![table],
        targets: Vec::new(),
        chart: Chart {
            title: "Start-up in front of a 2025-11-25 server".into(),
            series: vec![probed.name.clone(), cached.name.clone(), forced.name.clone()],
            groups: vec![Group {
                label: "spawn to initialize result".into(),
                unit: "ms",
                values: vec![Some(probe_ms), Some(cached_ms), Some(forced_ms)],
            }],
        },
    })
}

/// Scenario 8: the `mcp-bridge` commands people install without Rust (the
/// wheel's binary, the npm launcher that runs its platform package's),
/// from spawn to the first answer, beside the release build and the
/// upstream alone.
pub async fn installed(p: &Programs, t: &Timing) -> io::Result<Section> {
    let mut routes = vec![Route { name: "target/release/mcp-bridge".into(), ..bridge_route(p) }];
    for (name, program) in &p.installed_bridges {
        routes.push(Route { name: name.clone(), program: program.clone(), ..bridge_route(p) });
    }
    routes.push(Route { name: "mcp-example-server alone".into(), ..direct_route(p) });
    let starts = startups(&routes.iter().collect::<Vec<_>>(), t).await?;
    let upstream_ms = starts.last().map_or(0.0, |s| s.0);
    let mut header = vec![format!("measure (median of {})", t.startups)];
    header.extend(routes.iter().map(|r| r.name.clone()));
    let mut table = Table::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    let mut first = vec!["spawn to first answer".to_owned()];
    first.extend(starts.iter().map(|(ms, _)| format!("{ms:.2} ms")));
    table.row(first);
    let bridges = &starts[..starts.len() - 1];
    let mut beyond = vec!["beyond the upstream's own".to_owned()];
    beyond.extend(bridges.iter().map(|(ms, _)| format!("{:+.2} ms", ms - upstream_ms)));
    beyond.push("—".into());
    table.row(beyond);
    let targets = routes
        .iter()
        .zip(bridges)
        .skip(1)
        .map(|(route, (ms, _))| {
            let extra = ms - upstream_ms;
            format!(
                "{}: {extra:.2} ms beyond the upstream's start; target < 100 ms: {}",
                route.name,
                verdict(extra < 100.0)
            )
        })
        .collect();
    Ok(Section {
        name: "installed",
        title: "8. The installed commands".into(),
        intro: "Time from spawning each `mcp-bridge -- mcp-example-server` to its `initialize` response: the release \
                build, the command the Python wheel installs (its binary, linked for glibc 2.17) and the one the npm \
                packages install (a Node launcher that starts its platform package's binary), beside \
                `mcp-example-server` alone (to its `server/discover` response). `scripts/bench` builds the packages \
                with `scripts/package` and installs them into `.peers/installed/` as `scripts/check-packages` does."
            .into(),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "The installed commands".into(),
            series: routes.iter().map(|r| r.name.clone()).collect(),
            groups: vec![Group {
                label: "spawn to first answer".into(),
                unit: "ms",
                values: starts.iter().map(|(ms, _)| Some(*ms)).collect(),
            }],
        },
    })
}

/// The figures of one proxy in the mcp-remote scenario.
struct RemoteFigures {
    start_ms: f64,
    idle_kib: f64,
    small: Run,
    large: Run,
    peak_kib: u64,
}

/// The figures of each proxy, measured in turns.
async fn remote_figures(routes: &[&Route], t: &Timing) -> io::Result<Vec<RemoteFigures>> {
    let starts = startups(routes, t).await?;
    let mut peers = start_all(routes).await?;
    let small = in_turns(&mut peers, t, &*closed_loop(echo_small, 1, t), by_p50).await?;
    let large = in_turns(&mut peers, t, &*sequential(big(REMOTE_LARGE), t.large_calls(REMOTE_LARGE)), by_p50).await?;
    let peaks: Vec<u64> = peers.iter().map(StdioPeer::peak_rss_kib).collect();
    close_all(peers).await;
    Ok((0..routes.len())
        .zip(small.into_iter().zip(large))
        .map(|(index, (small, large))| RemoteFigures {
            start_ms: starts[index].0,
            idle_kib: starts[index].1,
            small,
            large,
            peak_kib: peaks[index],
        })
        .collect())
}

/// Scenario 3: what users run today (mcp-remote) against `mcp-bridge URL`,
/// both in front of `mcp-example-server --http`.
pub async fn remote(p: &Programs, t: &Timing, proxy_js: &std::path::Path) -> io::Result<Section> {
    let port = http_load::free_port()?;
    let _server = http_load::serve(&p.example_server, &["--http".into(), format!("127.0.0.1:{port}")], &[], port)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let ours = Route {
        name: "mcp-bridge URL".into(),
        program: p.bridge.clone(),
        args: vec![url.clone()],
        envs: Vec::new(),
        dialect: Dialect::Legacy,
    };
    let mut args = vec![proxy_js.display().to_string(), url.clone()];
    args.extend(["--protocol", "auto", "--allow-http", "--transport", "http-only"].map(String::from));
    let theirs = Route {
        name: "mcp-remote 0.15.1".into(),
        program: p.node.clone(),
        args,
        envs: vec![("MCP_REMOTE_CONFIG_DIR", p.scratch.join("mcp-remote"))],
        dialect: Dialect::Legacy,
    };
    let mut figures = remote_figures(&[&ours, &theirs], t).await?.into_iter();
    let (Some(a), Some(b)) = (figures.next(), figures.next()) else {
        return Err(io::Error::other("no figures"));
    };
    let large_name = format!("{} MiB", REMOTE_LARGE >> 20);
    let mut table = Table::new(&["measure", &ours.name, &theirs.name, "mcp-remote ÷ mcp-bridge"]);
    table.row(vec![
        format!("spawn to initialize result (median of {})", t.startups),
        format!("{:.1} ms", a.start_ms),
        format!("{:.1} ms", b.start_ms),
        ratio(b.start_ms, a.start_ms),
    ]);
    table.row(vec![
        "peak RSS after start-up, idle".into(),
        format!("{:.1} MiB", a.idle_kib / 1024.0),
        format!("{:.1} MiB", b.idle_kib / 1024.0),
        ratio(b.idle_kib, a.idle_kib),
    ]);
    for (label, q) in [("p50", 0.5), ("p99", 0.99)] {
        let (x, y) = (a.small.percentile(q), b.small.percentile(q));
        table.row(vec![format!("tools/call {label}, 100 B"), ms_cell(x), ms_cell(y), ratio(ms(y), ms(x))]);
    }
    table.row(vec![
        format!("tools/call p50, {large_name} result"),
        ms_cell(a.large.p50()),
        ms_cell(b.large.p50()),
        ratio(ms(b.large.p50()), ms(a.large.p50())),
    ]);
    table.row(vec![
        format!("peak RSS after the {large_name} calls"),
        format!("{:.1} MiB", mib(a.peak_kib)),
        format!("{:.1} MiB", mib(b.peak_kib)),
        ratio(b.peak_kib as f64, a.peak_kib as f64),
    ]);
    let (start_x, idle_x, peak_x) = (
        b.start_ms / a.start_ms.max(f64::MIN_POSITIVE),
        b.idle_kib / a.idle_kib.max(f64::MIN_POSITIVE),
        b.peak_kib as f64 / (a.peak_kib as f64).max(f64::MIN_POSITIVE),
    );
    let targets = vec![
        format!(
            "start-up: mcp-bridge {start_x:.1}x faster than mcp-remote; target ≥ 30x: {}",
            verdict(start_x >= 30.0)
        ),
        format!(
            "memory: mcp-bridge {idle_x:.1}x less idle RSS and {peak_x:.1}x less peak RSS than mcp-remote; target ≥ 30x: {}",
            verdict(idle_x >= 30.0 && peak_x >= 30.0)
        ),
    ];
    Ok(Section {
        name: "mcp-remote",
        title: "3. mcp-bridge URL against mcp-remote".into(),
        intro: format!(
            "A 2025-11-25 client through each proxy to the same local Streamable HTTP server, `mcp-example-server --http` \
             on loopback: `mcp-bridge {url}` and `node proxy.js {url} --protocol auto --allow-http --transport http-only` \
             (mcp-remote's own Node process, no `npx` wrapper). Start-up is spawn to the `initialize` result; calls \
             are `echo` of 100 B with one in flight for {} s, and `big` of {large_name} one after another.",
            t.window.as_secs_f64()
        )
        .replace(&url, "URL"),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "mcp-bridge URL vs mcp-remote".into(),
            series: vec![ours.name.clone(), theirs.name.clone()],
            groups: vec![
                Group { label: "start-up".into(), unit: "ms", values: vec![Some(a.start_ms), Some(b.start_ms)] },
                Group { label: "idle RSS".into(), unit: "MiB", values: vec![Some(a.idle_kib / 1024.0), Some(b.idle_kib / 1024.0)] },
                Group { label: "p50, 100 B".into(), unit: "ms", values: vec![Some(ms(a.small.p50())), Some(ms(b.small.p50()))] },
                Group { label: format!("p50, {large_name}"), unit: "ms", values: vec![Some(ms(a.large.p50())), Some(ms(b.large.p50()))] },
                Group { label: "peak RSS".into(), unit: "MiB", values: vec![Some(mib(a.peak_kib)), Some(mib(b.peak_kib))] },
            ],
        },
    })
}

/// Scenario 4: the SDK's server against rmcp's and Python's, over
/// Streamable HTTP and stdio, the same `add` tool.
pub async fn servers(p: &Programs, t: &Timing) -> io::Result<Section> {
    let servers = p.servers();
    // (server index, transport, concurrency) → the median run
    let mut results: Vec<(usize, &'static str, usize, Run)> = Vec::new();
    let mut served = Vec::new();
    let mut urls = Vec::new();
    for server in &servers {
        let port = http_load::free_port()?;
        served.push(http_load::serve(&server.program, &server.http_args(port), &server.envs, port)?);
        urls.push(format!("http://127.0.0.1:{port}/mcp"));
    }
    for clients in SERVER_CONCURRENCY {
        // In turns, as for the stdio peers.
        let mut runs: Vec<Vec<Run>> = servers.iter().map(|_| Vec::new()).collect();
        for _ in 0..t.runs {
            for ((server, url), runs) in servers.iter().zip(&urls).zip(&mut runs) {
                let run = http_load::measure(
                    &http_load::Endpoint::new(url.as_str(), Dialect::Modern),
                    "add",
                    json!({"a": 1, "b": 2}),
                    clients,
                    t.warm_up,
                    t.window,
                )
                .await
                .map_err(|e| io::Error::other(format!("{}: {e}", server.name)))?;
                runs.push(run);
            }
        }
        for (index, runs) in runs.into_iter().enumerate() {
            results.push((index, "HTTP", clients, median_by(runs, by_rate).unwrap_or_default()));
        }
    }
    drop(served);
    let routes: Vec<Route> = servers
        .iter()
        .map(|server| Route {
            name: server.name.clone(),
            program: server.program.clone(),
            args: server.stdio_args.clone(),
            envs: Vec::new(),
            dialect: Dialect::Modern,
        })
        .collect();
    let mut peers = start_all(&routes.iter().collect::<Vec<_>>()).await?;
    for in_flight in SERVER_CONCURRENCY {
        let runs = in_turns(&mut peers, t, &*closed_loop(add, in_flight, t), by_rate).await?;
        results.extend(runs.into_iter().enumerate().map(|(index, run)| (index, "stdio", in_flight, run)));
    }
    close_all(peers).await;
    results.sort_by_key(|(index, transport, level, _)| (*index, *transport, *level));
    let ours = |transport: &str, level: usize| {
        results.iter().find(|(i, tr, c, _)| *i == 0 && *tr == transport && *c == level).map(|r| r.3.per_second)
    };
    let mut table =
        Table::new(&["server", "transport", "concurrency", "calls/s", "p50", "p99", "÷ this SDK (calls/s)"]);
    for (index, transport, level, run) in &results {
        let unit = match (*transport, *level) {
            ("HTTP", 1) => "connection",
            ("HTTP", _) => "connections",
            _ => "in flight",
        };
        table.row(vec![
            servers[*index].name.clone(),
            (*transport).to_owned(),
            format!("{level} {unit}"),
            format!("{:.0}", run.per_second),
            ms_cell(run.p50()),
            ms_cell(run.p99()),
            ratio(run.per_second, ours(transport, *level).unwrap_or(0.0)),
        ]);
    }
    let mut targets = Vec::new();
    if let Some(rmcp) = servers.iter().position(|s| s.name.starts_with("rmcp")) {
        for level in SERVER_CONCURRENCY {
            let theirs = results.iter().find(|(i, tr, c, _)| *i == rmcp && *tr == "HTTP" && *c == level);
            if let (Some(ours), Some((_, _, _, theirs))) = (ours("HTTP", level), theirs) {
                let r = ours / theirs.per_second.max(f64::MIN_POSITIVE);
                targets.push(format!(
                    "HTTP server, {level} clients at once: this SDK {r:.2}x rmcp's calls/s; target ≥ 1x: {}",
                    verdict(r >= 1.0)
                ));
            }
        }
    }
    let mut groups = Vec::new();
    for (transport, unit) in [("HTTP", "connections"), ("stdio", "in flight")] {
        for level in SERVER_CONCURRENCY {
            let pick = |f: fn(&Run) -> f64| {
                (0..servers.len())
                    .map(|i| {
                        results.iter().find(|(j, tr, c, _)| *j == i && *tr == transport && *c == level).map(|r| f(&r.3))
                    })
                    .collect::<Vec<_>>()
            };
            groups.push(Group {
                label: format!("{transport}, {level} {unit}"),
                unit: "/s",
                values: pick(|r| r.per_second),
            });
            groups.push(Group {
                label: format!("p99, {transport}, {level}"),
                unit: "ms",
                values: pick(|r| ms(r.p99())),
            });
        }
    }
    Ok(Section {
        name: "servers",
        title: "4. The SDK's server against rmcp and Python".into(),
        intro: format!(
            "`tools/call` of `add` (the same tool on each server, 2026-07-28 requests). Streamable HTTP: each of 1 or 64 \
             clients holds its own keep-alive connection to the server on loopback and sends one request after another. \
             stdio: one 2026-07-28 client keeps 1 or 64 requests in flight over the pipes. The load generator shares the \
             machine's cores with the server. {}",
            medians_note(t)
        ),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "tools/call: calls/s and p99 by server".into(),
            series: servers.iter().map(|s| s.name.clone()).collect(),
            groups,
        },
    })
}

/// Scenario 6: 2025-11-25 clients over Streamable HTTP against servers that
/// serve both revisions on one endpoint; our modern path is the baseline.
pub async fn legacy_http(p: &Programs, t: &Timing) -> io::Result<Section> {
    let servers = p.dual_era_servers();
    let mut served = Vec::new();
    // (name, url, dialect): our modern path first, then each legacy path.
    let mut routes = Vec::new();
    for (index, server) in servers.iter().enumerate() {
        let port = http_load::free_port()?;
        served.push(
            http_load::serve(&server.program, &server.http_args(port), &server.envs, port)
                .map_err(|e| io::Error::other(format!("{}: {e}", server.name)))?,
        );
        let url = format!("http://127.0.0.1:{port}/mcp");
        if index == 0 {
            routes.push((format!("{} 2026-07-28", server.name), url.clone(), Dialect::Modern));
        }
        routes.push((format!("{} 2025-11-25", server.name), url, Dialect::Legacy));
    }
    let mut table = Table::new(&["server and revision", "clients", "calls/s", "p50", "p99", "÷ our 2026-07-28 path"]);
    let mut groups = Vec::new();
    let mut targets = Vec::new();
    for clients in SERVER_CONCURRENCY {
        let mut runs: Vec<Vec<Run>> = routes.iter().map(|_| Vec::new()).collect();
        for _ in 0..t.runs {
            for ((name, url, dialect), runs) in routes.iter().zip(&mut runs) {
                let run = http_load::measure(
                    &http_load::Endpoint::new(url.as_str(), *dialect),
                    "echo",
                    json!({"text": SMALL_TEXT}),
                    clients,
                    t.warm_up,
                    t.window,
                )
                .await
                .map_err(|e| io::Error::other(format!("{name}: {e}")))?;
                runs.push(run);
            }
        }
        let medians: Vec<Run> = runs.into_iter().map(|r| median_by(r, by_rate).unwrap_or_default()).collect();
        let modern = medians[0].per_second;
        for ((name, _, _), run) in routes.iter().zip(&medians) {
            table.row(vec![
                name.clone(),
                clients.to_string(),
                format!("{:.0}", run.per_second),
                ms_cell(run.p50()),
                ms_cell(run.p99()),
                ratio(run.per_second, modern),
            ]);
        }
        let ours = medians[1].per_second;
        let to_modern = ours / modern.max(f64::MIN_POSITIVE);
        targets.push(format!(
            "{clients} clients: our 2025-11-25 path {to_modern:.2}x our 2026-07-28 path; target ≥ 0.80x: {}",
            verdict(to_modern >= 0.8)
        ));
        for ((name, _, _), run) in routes.iter().zip(&medians).skip(2) {
            let r = ours / run.per_second.max(f64::MIN_POSITIVE);
            targets.push(format!(
                "{clients} clients: our 2025-11-25 path {r:.2}x {}'s; target ≥ 1x: {}",
                name.trim_end_matches(" 2025-11-25"),
                verdict(r >= 1.0)
            ));
        }
        groups.extend(rate_and_p99(clients, &medians));
    }
    drop(served);
    Ok(Section {
        name: "legacy-http",
        title: "6. Legacy clients over Streamable HTTP".into(),
        intro: format!(
            "`tools/call` of `echo` ({} B) by 2025-11-25 clients, each with its own keep-alive connection: an \
             `initialize` handshake, then calls one after another with the session's id (when the server gives one) \
             and version. Each server serves both revisions on one endpoint: this SDK's (`mcp-example-server --http`, \
             sessions of the embedded bridge), rmcp's (its default sessionful legacy mode) and the TypeScript SDK \
             2.x's (`createMcpHandler`, stateless legacy leg, behind `toNodeHandler` on `node:http`). The baseline is \
             this SDK's 2026-07-28 path on the same server. {}",
            SMALL_TEXT.len(),
            medians_note(t)
        ),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "Legacy clients over HTTP: calls/s and p99".into(),
            series: routes.iter().map(|(name, _, _)| name.clone()).collect(),
            groups,
        },
    })
}

/// Scenario 5: a call with one input round against a plain call.
pub async fn input_round(p: &Programs, t: &Timing) -> io::Result<Section> {
    let plain = json!({"name": "echo", "arguments": {"text": SMALL_TEXT}});
    let asking = json!({"name": "ask_name", "arguments": {}});
    let mut table =
        Table::new(&["route", "plain call p50", "with an input round p50", "ratio", "plain p99", "with a round p99"]);
    let mut groups = Vec::new();
    let routes = [bridge_route(p), direct_route(p)];
    let mut peers = start_all(&[&routes[0], &routes[1]]).await?;
    let plain_runs = in_turns(&mut peers, t, &*whole_calls(plain, t), by_p50).await?;
    let asking_runs = in_turns(&mut peers, t, &*whole_calls(asking, t), by_p50).await?;
    close_all(peers).await;
    for ((route, a), b) in routes.iter().zip(plain_runs).zip(asking_runs) {
        table.row(vec![
            route.name.clone(),
            ms_cell(a.p50()),
            ms_cell(b.p50()),
            ratio(ms(b.p50()), ms(a.p50())),
            ms_cell(a.p99()),
            ms_cell(b.p99()),
        ]);
        groups.push(Group {
            label: format!("p50, {}", short(&route.name)),
            unit: "ms",
            values: vec![Some(ms(a.p50())), Some(ms(b.p50()))],
        });
        groups.push(Group {
            label: format!("p99, {}", short(&route.name)),
            unit: "ms",
            values: vec![Some(ms(a.p99())), Some(ms(b.p99()))],
        });
    }
    Ok(Section {
        name: "input-round",
        title: "5. An input round".into(),
        intro: format!(
            "`tools/call` of `ask_name`, which needs one form elicitation, against a plain `echo` call, one after \
             another. Through the bridge the client answers the bridge's `elicitation/create` and the bridge retries \
             upstream with the answer and the sealed request state; directly, the 2026-07-28 client gets the \
             `InputRequiredResult` and retries itself. Median of {} runs of {} s.",
            t.runs,
            t.window.as_secs_f64()
        ),
        tables: vec![table],
        targets: Vec::new(),
        chart: Chart {
            title: "Input round vs plain call".into(),
            series: vec!["plain call".into(), "with an input round".into()],
            groups,
        },
    })
}

/// The first words of a route's name, for chart labels.
fn short(name: &str) -> &str {
    name.split(" (").next().unwrap_or(name)
}
