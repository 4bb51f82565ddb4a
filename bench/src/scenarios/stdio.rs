//! Scenario 1: what the bridge adds on stdio, against the embedded bridge,
//! a null relay and the server reached directly.

use std::io;

use super::{
    IN_FLIGHT, Route, SMALL_TEXT, big, bridge_route, by_p50, by_rate, close_all, closed_loop, direct_route, echo_small,
    in_turns, mib, ratio, sequential, short, start_all, verdict,
};
use crate::chart::{Chart, Group};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, ms};
use crate::stdio_peer::Dialect;

/// One figure of a route, read from its figures.
type Figure = dyn Fn(&StdioFigures) -> f64;

/// The figures of one route in the stdio scenario.
#[derive(Default)]
struct StdioFigures {
    one: Run,
    loaded: Vec<Run>,
    large: Vec<(Run, u64)>,
}

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
        .push(format!("throughput at 256 in flight: {loaded:.2}x direct; target ≥ 0.95x: {}", verdict(loaded >= 0.95)));
    for (index, (name, _)) in t.large_results.iter().enumerate() {
        let large_p50: &Figure = &move |f| f.large.get(index).map_or(0.0, |(r, _)| ms(r.p50()));
        let large = ratio_to(0, relay, large_p50);
        targets.push(format!(
            "a {name} result (p50): `mcp-bridge` {large:.2}x the null relay; target ≤ 1.15x: {}",
            verdict(large <= 1.15)
        ));
    }
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
