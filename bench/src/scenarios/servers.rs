//! Scenario 4: this SDK's server against others on Streamable HTTP and
//! stdio, in each era.

use std::io;

use serde_json::json;

use super::{
    Route, SERVER_CONCURRENCY, SMALL_TEXT, add, by_rate, close_all, closed_loop, in_turns, medians_note, ms_cell,
    rate_and_p99, ratio, start_all, verdict,
};
use crate::chart::{Chart, Group};
use crate::http_load;
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, median_by, ms};
use crate::stdio_peer::Dialect;

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
        // Issue 41's targets: (transport, level, how many times rmcp's calls/s).
        let wanted = [("HTTP", 1, 1.1), ("HTTP", 64, 1.5), ("stdio", 1, 1.0), ("stdio", 64, 2.0)];
        for (transport, level, target) in wanted {
            let theirs = results.iter().find(|(i, tr, c, _)| *i == rmcp && *tr == transport && *c == level);
            if let (Some(ours), Some((_, _, _, theirs))) = (ours(transport, level), theirs) {
                let r = ours / theirs.per_second.max(f64::MIN_POSITIVE);
                let at = if transport == "HTTP" { "clients at once" } else { "in flight" };
                targets.push(format!(
                    "{transport} server, {level} {at}: this SDK {r:.2}x rmcp's calls/s; target ≥ {target:.1}x: {}",
                    verdict(r >= target)
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
