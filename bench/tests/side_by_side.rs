//! The side-by-side scenarios run end to end in their quick form against
//! the debug builds and the installed peers (Python `mcp`, mcp-remote,
//! oidc-provider, the daemon scenario's servers): every figure is measured
//! (none zero), every table is complete, every chart is written. The rmcp
//! peer takes minutes to build, so it is left to `scripts/bench`; its
//! server runs through the same code as Python's.

use mcp_bench::programs::{FILESYSTEM_SERVER, MEMORY_SERVER, Programs, TIME_SERVER, Timing, ts_server_under};
use mcp_bench::report::{self, Section};
use mcp_bench::scenarios;
use test_support::{python_peer, workspace_binary, workspace_root};

fn programs() -> Programs {
    let root = workspace_root();
    let mcp_remote = root.join(".peers/bench/node_modules/mcp-remote/dist/proxy.js");
    assert!(mcp_remote.is_file(), "mcp-remote is not installed at {}: run scripts/test", mcp_remote.display());
    Programs {
        bridge: workspace_binary("mcp-bridge-cli", "mcp-bridge"),
        example_server: workspace_binary("mcp-example-server", "mcp-example-server"),
        null_relay: workspace_binary("mcp-bench", "null-relay"),
        python: python_peer(),
        python_server: root.join("crates/mcp-example-server/tests/python/python_server.py"),
        node: "node".into(),
        mcp_remote: Some(mcp_remote),
        rmcp_server: None,
        ts_server: Some(
            ts_server_under(&root).expect("the TypeScript SDK 2.x is not installed in .peers/bench: run scripts/test"),
        ),
        server_everything: Some(test_support::server_everything()),
        supergateway: Some(installed(&root, ".peers/bench/node_modules/supergateway/dist/index.js")),
        mcp_proxy: Some(installed(&root, ".peers/mcp-proxy/bin/mcp-proxy")),
        filesystem_server: Some(installed(&root, FILESYSTEM_SERVER)),
        memory_server: Some(installed(&root, MEMORY_SERVER)),
        time_server: Some(installed(&root, TIME_SERVER)),
        node_loopback: root.join("bench/peers/node/loopback.cjs"),
        // Built by scripts/package after the tests: scripts/bench measures them.
        installed_bridges: Vec::new(),
        scratch: std::env::temp_dir().join(format!("mcp-bench-{}", std::process::id())),
    }
}

/// A peer `scripts/test` installs under the root.
fn installed(root: &std::path::Path, path: &str) -> std::path::PathBuf {
    let path = root.join(path);
    assert!(path.exists(), "{} is not installed: run scripts/test", path.display());
    path
}

/// Every table cell after the first column holds a figure other than zero,
/// but for a signed difference (`+0.02 ms`, `-0.0 MiB`): two equal figures
/// make it zero.
fn assert_measured(section: &Section) {
    for table in &section.tables {
        assert!(!table.rows.is_empty(), "{}: empty table", section.name);
        for row in &table.rows {
            assert_eq!(row.len(), table.header.len(), "{}: {row:?}", section.name);
            for cell in row.iter().skip(1).filter(|cell| !cell.starts_with(['+', '-'])) {
                let number: String = cell.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
                if let Ok(value) = number.trim_matches('.').parse::<f64>() {
                    assert!(value > 0.0, "{}: a zero figure in {row:?}", section.name);
                }
            }
        }
    }
    for group in &section.chart.groups {
        assert_eq!(group.values.len(), section.chart.series.len(), "{}: {}", section.name, group.label);
        assert!(group.values.iter().all(|v| v.is_some_and(|v| v > 0.0)), "{}: {group:?}", section.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_measures_every_figure() {
    let programs = programs();
    let timing = Timing::quick();
    let proxy = programs.mcp_remote.clone().unwrap_or_default();
    let sections = vec![
        scenarios::stdio_overhead(&programs, &timing).await.unwrap(),
        scenarios::startup(&programs, &timing).await.unwrap(),
        scenarios::remote(&programs, &timing, &proxy).await.unwrap(),
        scenarios::servers(&programs, &timing).await.unwrap(),
        scenarios::input_round(&programs, &timing).await.unwrap(),
        scenarios::legacy_http(&programs, &timing).await.unwrap(),
        scenarios::legacy_startup(&programs, &timing, &test_support::server_everything()).await.unwrap(),
        scenarios::protected(&programs, &timing).await.unwrap(),
        scenarios::replicas(&programs, &timing).await.unwrap(),
        scenarios::gateway(&programs, &timing).await.unwrap(),
        scenarios::gateways(&programs, &timing).await.unwrap(),
    ];
    for section in &sections {
        assert_measured(section);
    }
    let servers = &sections[3];
    assert_eq!(servers.chart.series, ["mcp-example-server (this SDK)", "Python mcp 2.3.0"]);
    assert_eq!(servers.tables[0].rows.len(), 8, "2 servers × (HTTP, stdio) × 2 levels");
    let legacy = &sections[5];
    assert_eq!(
        legacy.chart.series,
        [
            "mcp-example-server (this SDK) 2026-07-28",
            "mcp-example-server (this SDK) 2025-11-25",
            "TypeScript SDK 2.4.0 2025-11-25"
        ]
    );
    assert_eq!(legacy.tables[0].rows.len(), 6, "3 routes × 2 levels");
    assert_eq!(sections[0].chart.series.len(), 4, "bridge, embedded, null relay, direct");
    assert_eq!(sections[6].chart.series.len(), 3, "probe, cache, forced");
    assert_eq!(sections[7].tables[0].rows.len(), 8, "authorization off, JWT, 2 introspections × 2 levels");
    assert_eq!(sections[8].tables[0].rows.len(), 16, "2 calls × 4 setups × 2 levels");
    let gateway = &sections[9];
    assert_eq!(gateway.tables[0].rows.len(), 8, "telemetry off, on, with the access log, the server alone × 2 levels");
    let listed: Vec<usize> = gateway.tables[1].rows.iter().map(|row| row[1].parse().unwrap()).collect();
    assert!(listed[0] > 20 && listed[1] == 2, "every tool of two servers, then the gateway's own two: {listed:?}");

    let gateways = &sections[10];
    assert_eq!(gateways.tables[0].rows.len(), 8, "mcp-bridge, supergateway, mcp-proxy, the server alone × 2 levels");

    let charts = programs.scratch.join("charts");
    let text = report::write("# run", &sections, &charts, "charts").unwrap();
    for section in &sections {
        let svg = std::fs::read_to_string(charts.join(format!("{}.svg", section.name))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains(&section.chart.series[0]), "{}", section.name);
        assert!(text.contains(&format!("(charts/{}.svg)", section.name)));
    }
    let _ = std::fs::remove_dir_all(&programs.scratch);
}

/// `side-by-side --baseline … --baseline-server … ab`: this build against
/// itself as the baseline, the bridge's table and the servers' both full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ab_scenario_measures_the_bridge_and_the_server() {
    let programs = programs();
    let timing = Timing::quick();
    let section = scenarios::ab(&programs, &timing, &programs.bridge, Some(&programs.example_server)).await.unwrap();
    assert_eq!(section.tables.len(), 2, "the bridge's table and the servers'");
    assert_eq!(section.tables[1].rows.len(), 4, "stdio and HTTP, each at two loads");
    assert_measured(&section);
}

/// The figure of the row `label` in `section`'s first table, column
/// `column` (1: the stdio form, 2: attach), as a count.
fn count(section: &Section, label: &str, column: usize) -> usize {
    let row = section.tables[0].rows.iter().find(|row| row[0] == label);
    let row = row.unwrap_or_else(|| panic!("no row {label}: {:?}", section.tables[0].rows));
    row[column].parse().unwrap_or_else(|_| panic!("{label}: {row:?}"))
}

/// The daemon scenario (alone: `cargo test -p mcp-bench --test
/// side_by_side daemon`): four clients of five servers run 20 bridges and
/// 20 servers in the stdio form, and 4 shims, one daemon and one process
/// per server with `attach`; every figure measured, the daemon stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_scenario_shares_one_process_per_server() {
    // A scratch folder of its own: the other tests of this process share theirs.
    let scratch = std::env::temp_dir().join(format!("mcp-bench-daemon-test-{}", std::process::id()));
    let programs = Programs { scratch, ..programs() };
    let section = scenarios::daemon(&programs, &Timing::quick()).await.unwrap();
    assert_measured(&section);
    let clients = scenarios::CLIENTS;
    assert_eq!(clients, 4);
    assert_eq!(count(&section, "of them servers", 1), clients * 5, "a server per client and server");
    assert_eq!(count(&section, "of them relays (bridges; shims and the daemon)", 1), clients * 5);
    assert_eq!(count(&section, "processes", 1), clients * 5 * 2, "nothing else below the bridges");
    assert_eq!(count(&section, "of them servers", 2), 5, "one process per server, shared");
    assert_eq!(count(&section, "of them relays (bridges; shims and the daemon)", 2), clients + 1);
    assert_eq!(count(&section, "processes", 2), clients + 1 + 5);
    assert_eq!(section.tables[1].rows.len(), 2, "p50 and p99 of a call each way");
    assert!(section.targets[0].ends_with("**met**"), "{}", section.targets[0]);
    let config = programs.scratch.join("daemon/servers.json").display().to_string();
    let left: Vec<u32> = mcp_bench::proc_status::parents()
        .into_iter()
        .map(|(pid, _)| pid)
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains(&config)))
        .collect();
    assert!(left.is_empty(), "the daemon of {config} is stopped: {left:?} left");
    let runtime = std::env::temp_dir().join(format!("mcp-bench-daemon-{}", std::process::id()));
    assert!(!runtime.exists(), "the daemon's folder is removed: {}", runtime.display());
    let charts = programs.scratch.join("charts");
    let text = report::write("# run", std::slice::from_ref(&section), &charts, "charts").unwrap();
    assert!(text.contains("(charts/daemon.svg)") && text.contains("12. One daemon"), "{text}");
    assert!(std::fs::read_to_string(charts.join("daemon.svg")).unwrap().contains("attach"));
    let _ = std::fs::remove_dir_all(&programs.scratch);
}
