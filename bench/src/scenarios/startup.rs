//! Scenarios 2 and 6: spawn to the first answer and idle memory, of the
//! programs built here and of the installed ones, and a 2025-11-25
//! server's start through the bridge (probe, cache, forced).

use std::io;
use std::path::PathBuf;

use super::{Route, bridge_route, direct_route, ratio, startups, verdict};
use crate::chart::{Chart, Group};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stdio_peer::Dialect;

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
