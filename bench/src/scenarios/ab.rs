//! The A/B of a change to the bridge: this build's `mcp-bridge` against an
//! earlier build (`--baseline PATH`), with the null relay beside them, in
//! turns in the same minute; with `--baseline-server PATH`, this build's
//! `mcp-example-server` against an earlier one too, on stdio and HTTP. Not
//! part of `BENCHMARKS.md`: it is what a change's note quotes.

use std::io;
use std::path::Path;

use super::{IN_FLIGHT, Route, big, bridge_route, by_p50, by_rate, close_all, closed_loop, direct_route, echo_small};
use super::{SERVER_CONCURRENCY, add, in_turns, medians_over_http, ratio, sequential, start_all};
use crate::chart::{Chart, Group};
use crate::http_load;
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::Run;
use crate::stats::ms;
use crate::stdio_peer::Dialect;

/// The result size of the large figure.
const LARGE: u64 = 1 << 20;

/// This build's bridge against `baseline`, on a stdio upstream; and this
/// build's server against `baseline_server`, when given.
pub async fn ab(p: &Programs, t: &Timing, baseline: &Path, baseline_server: Option<&Path>) -> io::Result<Section> {
    let this = Route { name: "this build".into(), ..bridge_route(p) };
    let before =
        Route { name: format!("baseline ({})", baseline.display()), program: baseline.into(), ..bridge_route(p) };
    let relay = Route {
        name: "null relay".into(),
        program: p.null_relay.clone(),
        args: vec!["--".into(), p.example_server.display().to_string()],
        ..direct_route(p)
    };
    let routes = [&before, &this, &relay];
    let mut peers = start_all(&routes).await?;
    let one = in_turns(&mut peers, t, &*closed_loop(echo_small, 1, t), by_p50).await?;
    let many = IN_FLIGHT[IN_FLIGHT.len() - 1];
    let loaded = in_turns(&mut peers, t, &*closed_loop(echo_small, many, t), by_rate).await?;
    let large = in_turns(&mut peers, t, &*sequential(big(LARGE), t.large_calls(LARGE)), by_p50).await?;
    close_all(peers).await;

    let mut table = Table::new(&["measure", &before.name, &this.name, &relay.name, "this ÷ baseline", "this ÷ relay"]);
    let rows: [(&str, &str, Vec<f64>); 3] = [
        ("tools/call p50, 100 B, 1 in flight", "ms", one.iter().map(|r| ms(r.p50())).collect()),
        ("calls/s, 100 B, 256 in flight", "/s", loaded.iter().map(|r| r.per_second).collect()),
        ("tools/call p50, 1 MiB result", "ms", large.iter().map(|r| ms(r.p50())).collect()),
    ];
    let mut groups = Vec::new();
    for (label, unit, values) in rows {
        let mut row = vec![label.to_owned()];
        row.extend(values.iter().map(|v| if unit == "ms" { format!("{v:.3} ms") } else { format!("{v:.0}") }));
        row.push(ratio(values[1], values[0]));
        row.push(ratio(values[1], values[2]));
        table.row(row);
        groups.push(Group { label: label.into(), unit, values: values.into_iter().map(Some).collect() });
    }
    let mut tables = vec![table];
    if let Some(server) = baseline_server {
        tables.push(servers_ab(p, t, server).await?);
    }
    Ok(Section {
        name: "ab",
        title: "A/B: this build against a baseline".into(),
        intro: format!(
            "A 2025-11-25 client through each `mcp-bridge -- mcp-example-server`, and a 2026-07-28 client through \
             the null relay, in turns; median of {} runs.",
            t.runs
        ),
        tables,
        targets: Vec::new(),
        chart: Chart { title: "A/B".into(), series: routes.iter().map(|r| r.name.clone()).collect(), groups },
    })
}

/// This build's `mcp-example-server` against `baseline`: a 2026-07-28
/// client calling `add` on stdio at 1 and 64 in flight, and `echo` (100 B)
/// on HTTP with 1 and 64 clients, in turns.
async fn servers_ab(p: &Programs, t: &Timing, baseline: &Path) -> io::Result<Table> {
    let stdio = |name: &str, program: &Path| Route {
        name: name.into(),
        program: program.into(),
        args: Vec::new(),
        envs: Vec::new(),
        dialect: Dialect::Modern,
    };
    let (before, this) = (stdio("baseline server", baseline), stdio("this server", &p.example_server));
    let mut table = Table::new(&["measure", "baseline server", "this server", "this ÷ baseline"]);
    let mut row = |label: String, runs: &[Run]| {
        let mut cells = vec![label];
        cells.extend(runs.iter().map(|r| format!("{:.0}", r.per_second)));
        cells.push(ratio(runs[1].per_second, runs[0].per_second));
        table.row(cells);
    };
    let mut peers = start_all(&[&before, &this]).await?;
    for in_flight in SERVER_CONCURRENCY {
        let runs = in_turns(&mut peers, t, &*closed_loop(add, in_flight, t), by_rate).await?;
        row(format!("stdio calls/s, {in_flight} in flight"), &runs);
    }
    close_all(peers).await;
    let mut served = Vec::new();
    let mut urls = Vec::new();
    for program in [baseline, p.example_server.as_path()] {
        let port = http_load::free_port()?;
        let args = ["--http".to_owned(), format!("127.0.0.1:{port}")];
        served.push(http_load::serve(program, &args, &[], port)?);
        urls.push(format!("http://127.0.0.1:{port}/mcp"));
    }
    let endpoints: Vec<http_load::Endpoint> =
        urls.iter().map(|url| http_load::Endpoint::new(url.as_str(), Dialect::Modern)).collect();
    let targets = [("baseline server", &endpoints[0], "echo"), ("this server", &endpoints[1], "echo")];
    for clients in SERVER_CONCURRENCY {
        let medians = medians_over_http(&targets, clients, t).await?;
        let unit = if clients == 1 { "client" } else { "clients" };
        row(format!("HTTP calls/s, {clients} {unit}"), &medians);
    }
    drop(served);
    Ok(table)
}
