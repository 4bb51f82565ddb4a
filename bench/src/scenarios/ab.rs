//! The A/B of a change to the bridge: this build's `mcp-bridge` against an
//! earlier build (`--baseline PATH`), with the null relay beside them, in
//! turns in the same minute. Not part of `BENCHMARKS.md`: it is what a
//! change's note quotes.

use std::io;
use std::path::Path;

use super::{IN_FLIGHT, Route, big, bridge_route, by_p50, by_rate, close_all, closed_loop, direct_route, echo_small};
use super::{in_turns, ratio, sequential, start_all};
use crate::chart::{Chart, Group};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::ms;

/// The result size of the large figure.
const LARGE: u64 = 1 << 20;

/// This build's bridge against `baseline`, on a stdio upstream.
pub async fn ab(p: &Programs, t: &Timing, baseline: &Path) -> io::Result<Section> {
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
    Ok(Section {
        name: "ab",
        title: "A/B: this build against a baseline".into(),
        intro: format!(
            "A 2025-11-25 client through each `mcp-bridge -- mcp-example-server`, and a 2026-07-28 client through \
             the null relay, in turns; median of {} runs.",
            t.runs
        ),
        tables: vec![table],
        targets: Vec::new(),
        chart: Chart { title: "A/B".into(), series: routes.iter().map(|r| r.name.clone()).collect(), groups },
    })
}
