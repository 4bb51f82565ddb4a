//! Scenario 5: a call with one input round against a plain call.

use std::io;

use serde_json::json;

use super::{
    SMALL_TEXT, bridge_route, by_p50, close_all, direct_route, in_turns, ms_cell, ratio, short, start_all, whole_calls,
};
use crate::chart::{Chart, Group};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::ms;

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
