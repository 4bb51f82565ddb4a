//! Scenario 8: replicas sharing state on Redis, behind HAProxy. The cost of
//! the Redis bus on calls that publish nothing (`echo`) and on calls that
//! publish (`set_note`: a resource change per call) against one process
//! with its in-process hub, and calls/s through HAProxy with one and three
//! replicas.

use std::io;
use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::scale::{Haproxy, Redis};

use super::{SERVER_CONCURRENCY, SMALL_TEXT, by_rate, ms_cell, ratio};
use crate::chart::Chart;
use crate::http_load::{self, Endpoint, Served};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stats::{Run, median_by};
use crate::stdio_peer::Dialect;

/// One way of serving: its name, and how many replicas on Redis behind
/// HAProxy (0: one process on its own, without Redis).
struct Setup {
    name: &'static str,
    replicas: usize,
    through_haproxy: bool,
}

const SETUPS: [Setup; 4] = [
    Setup { name: "1 process, in-process hub", replicas: 0, through_haproxy: false },
    Setup { name: "1 replica, Redis bus", replicas: 1, through_haproxy: false },
    Setup { name: "HAProxy → 1 replica", replicas: 1, through_haproxy: true },
    Setup { name: "HAProxy → 3 replicas", replicas: 3, through_haproxy: true },
];

/// The calls measured: one that publishes nothing, one that publishes.
const CALLS: [(&str, &str); 2] = [("echo", "echo (publishes nothing)"), ("set_note", "set_note (publishes a change)")];

fn arguments(tool: &str) -> Value {
    match tool {
        "echo" => json!({"text": SMALL_TEXT}),
        _ => json!({"name": "bench", "text": SMALL_TEXT}),
    }
}

/// The running parts of one setup: its processes, and where the load goes.
struct Deployment {
    _replicas: Vec<Served>,
    _haproxy: Option<Haproxy>,
    endpoint: Endpoint,
}

async fn deploy(p: &Programs, setup: &Setup, redis: &Redis, keys: &std::path::Path) -> io::Result<Deployment> {
    let mut replicas = Vec::new();
    let mut backends = Vec::new();
    for _ in 0..setup.replicas.max(1) {
        let port = http_load::free_port()?;
        let mut args = vec!["--http".to_owned(), format!("127.0.0.1:{port}")];
        if setup.replicas > 0 {
            args.extend(["--redis".to_owned(), redis.url(), "--state-key-file".to_owned(), keys.display().to_string()]);
        }
        replicas.push(http_load::serve(&p.example_server, &args, &[], port)?);
        backends.push(format!("127.0.0.1:{port}"));
    }
    let (haproxy, url) = if setup.through_haproxy {
        let haproxy = Haproxy::start(&backends).await;
        let url = format!("{}/mcp", haproxy.base);
        (Some(haproxy), url)
    } else {
        (None, format!("http://{}/mcp", backends[0]))
    };
    Ok(Deployment { _replicas: replicas, _haproxy: haproxy, endpoint: Endpoint::new(url, Dialect::Modern) })
}

/// Scenario 8: `tools/call` of `echo` and `set_note` on one process and on
/// replicas sharing Redis, direct and through HAProxy.
pub async fn replicas(p: &Programs, t: &Timing) -> io::Result<Section> {
    let redis = Redis::start().await;
    let keys: PathBuf = p.scratch.join("state-keys");
    std::fs::write(&keys, "bench q0Jm1Ck8Pq3zkGm3yN7m1rWw3XlH8oQb7K9v2bT5eEc=\n")?;
    let mut deployments = Vec::new();
    for setup in &SETUPS {
        deployments.push(deploy(p, setup, &redis, &keys).await?);
    }

    let mut table = Table::new(&["call", "setup", "clients", "calls/s", "p50", "p99", "÷ in-process"]);
    let mut groups = Vec::new();
    let mut targets = Vec::new();
    for (tool, call) in CALLS {
        for clients in SERVER_CONCURRENCY {
            let mut runs: Vec<Vec<Run>> = SETUPS.iter().map(|_| Vec::new()).collect();
            for _ in 0..t.runs {
                for ((setup, deployment), runs) in SETUPS.iter().zip(&deployments).zip(&mut runs) {
                    let run =
                        http_load::measure(&deployment.endpoint, tool, arguments(tool), clients, t.warm_up, t.window)
                            .await
                            .map_err(|e| io::Error::other(format!("{} ({tool}): {e}", setup.name)))?;
                    runs.push(run);
                }
            }
            let medians: Vec<Run> = runs.into_iter().map(|r| median_by(r, by_rate).unwrap_or_default()).collect();
            let alone = medians[0].per_second;
            for (setup, run) in SETUPS.iter().zip(&medians) {
                table.row(vec![
                    call.to_owned(),
                    setup.name.to_owned(),
                    clients.to_string(),
                    format!("{:.0}", run.per_second),
                    ms_cell(run.p50()),
                    ms_cell(run.p99()),
                    ratio(run.per_second, alone),
                ]);
            }
            if tool == "echo" {
                // The cost of a call is the inverse of the rate.
                let cost = alone / medians[1].per_second.max(f64::MIN_POSITIVE);
                targets.push(format!(
                    "{clients} client{}: a call that publishes nothing costs {cost:.2}x on the Redis bus what it \
                     costs in-process; target ≤ 1.20x: {}",
                    if clients == 1 { "" } else { "s" },
                    super::verdict(cost <= 1.2)
                ));
                groups.extend(super::rate_and_p99(clients, &medians));
            }
        }
    }
    drop(deployments);
    Ok(Section {
        name: "replicas",
        title: "8. Replicas on Redis behind HAProxy".into(),
        intro: format!(
            "`tools/call` from 2026-07-28 clients, each with its own keep-alive connection, to \
             `mcp-example-server --http`: one process on its own (its change events stay in the process), one \
             replica with `--redis` (Debian's redis-server on a Unix socket) and `--state-key-file`, and HAProxy \
             2.6 (round robin) in front of one and of three such replicas. `echo` ({} B) publishes nothing; \
             `set_note` publishes a resource change per call, which the Redis bus sends to the other replicas \
             (no listener is open: the cost measured is the publisher's). Everything shares the machine's 2 \
             cores: three replicas cannot be faster than one here, and the HAProxy rows show the cost of the \
             extra hop, not the gain of scaling out; on separate machines each replica adds its own cores. {}",
            SMALL_TEXT.len(),
            super::medians_note(t)
        ),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "Replicas: calls/s and p99 of echo".into(),
            series: SETUPS.iter().map(|s| s.name.to_owned()).collect(),
            groups,
        },
    })
}
