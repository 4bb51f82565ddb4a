//! The scenarios of a side-by-side run. Each measures its programs in the
//! same run and returns its part of the report: tables with the median of
//! several runs and the ratio to the baseline, the targets, a chart.

use std::ffi::OsStr;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::chart::Group;
use crate::programs::{Programs, Timing};
use crate::stats::{Run, median, median_by, ms};
use crate::stdio_peer::{Dialect, StdioPeer};

mod ab;
mod daemon;
mod gateway;
mod gateways;
mod input_round;
mod protected;
mod remote;
mod replicas;
mod servers;
mod startup;
mod stdio;
pub use ab::ab;
pub use daemon::{CLIENTS, FILESYSTEM_VERSION, MEMORY_VERSION, TIME_VERSION, daemon};
pub use gateway::gateway;
pub use gateways::{MCP_PROXY_VERSION, SUPERGATEWAY_VERSION, gateways};
pub use input_round::input_round;
pub use protected::protected;
pub use remote::remote;
pub use replicas::replicas;
pub use servers::{legacy_http, servers};
pub use startup::{installed, legacy_startup, startup};
pub use stdio::stdio_overhead;

/// The text of a small call: 100 bytes.
const SMALL_TEXT: &str =
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";
/// The large result of the mcp-remote scenario.
const REMOTE_LARGE: u64 = 4 << 20;
/// In-flight counts of the stdio throughput figures.
const IN_FLIGHT: [usize; 2] = [16, 256];
/// Concurrency levels of the servers scenario.
const SERVER_CONCURRENCY: [usize; 2] = [1, 64];

/// The median run (by calls/s) of `clients` clients calling at each of
/// `targets` (a name for errors, the endpoint, the tool), `t.runs` times,
/// the targets taking turns; the median of each target.
async fn medians_over_http(
    targets: &[(&str, &crate::http_load::Endpoint, &str)],
    clients: usize,
    t: &Timing,
) -> io::Result<Vec<Run>> {
    let mut runs: Vec<Vec<Run>> = targets.iter().map(|_| Vec::new()).collect();
    for _ in 0..t.runs {
        for ((name, endpoint, tool), runs) in targets.iter().zip(&mut runs) {
            let arguments = json!({"text": SMALL_TEXT});
            let run = crate::http_load::measure(endpoint, tool, arguments, clients, t.warm_up, t.window)
                .await
                .map_err(|e| io::Error::other(format!("{name}: {e}")))?;
            runs.push(run);
        }
    }
    Ok(runs.into_iter().map(|r| median_by(r, by_rate).unwrap_or_default()).collect())
}

/// The row of a table of HTTP runs: name, clients, calls/s, p50, p99 and
/// the ratio of its calls/s to `baseline`'s.
fn http_row(name: &str, clients: usize, run: &Run, baseline: f64) -> Vec<String> {
    vec![
        name.to_owned(),
        clients.to_string(),
        format!("{:.0}", run.per_second),
        ms_cell(run.p50()),
        ms_cell(run.p99()),
        ratio(run.per_second, baseline),
    ]
}

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

/// The first words of a route's name, for chart labels.
fn short(name: &str) -> &str {
    name.split(" (").next().unwrap_or(name)
}
