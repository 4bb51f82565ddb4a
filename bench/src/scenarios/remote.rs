//! Scenario 3: the bridge against mcp-remote in front of a Streamable HTTP
//! server.

use std::io;

use super::{
    REMOTE_LARGE, Route, big, by_p50, close_all, closed_loop, echo_small, in_turns, mib, ms_cell, ratio, sequential,
    start_all, startups, verdict,
};
use crate::chart::{Chart, Group};
use crate::http_load;
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, ms};
use crate::stdio_peer::{Dialect, StdioPeer};

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
