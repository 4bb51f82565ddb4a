//! Scenario 11: `mcp-bridge --listen` serving a stdio server over
//! Streamable HTTP, against the gateways people use for the same job
//! (supergateway, mcp-proxy) and against the server's own endpoint.

use std::io;

use super::{SERVER_CONCURRENCY, SMALL_TEXT};
use crate::chart::Chart;
use crate::http_load::{self, Endpoint, Served};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stdio_peer::Dialect;

/// The supergateway release the bench installs.
pub const SUPERGATEWAY_VERSION: &str = "4.0.0";
/// The mcp-proxy release the bench installs.
pub const MCP_PROXY_VERSION: &str = "0.13.0";

/// One way of serving `mcp-example-server` at `http://127.0.0.1:PORT/mcp`.
struct Gateway {
    name: String,
    start: Box<dyn Fn(u16) -> io::Result<Served>>,
}

/// Scenario 11: `tools/call` of `echo` from 2025-11-25 sessions through
/// each gateway, and at the server's own endpoint.
pub async fn gateways(p: &Programs, t: &Timing) -> io::Result<Section> {
    let server = p.example_server.display().to_string();
    let bridge = p.bridge.clone();
    let served_by_bridge = server.clone();
    let mut gateways = vec![Gateway {
        name: "mcp-bridge --listen".into(),
        start: Box::new(move |port| {
            let args = ["--listen", &format!("127.0.0.1:{port}"), "--listen-no-auth", "--", &served_by_bridge];
            http_load::serve(&bridge, &args.map(str::to_owned), &[], port)
        }),
    }];
    if let Some(script) = p.supergateway.clone() {
        let (node, preload, server) = (p.node.clone(), p.node_loopback.clone(), server.clone());
        gateways.push(Gateway {
            name: format!("supergateway {SUPERGATEWAY_VERSION} (--stateful)"),
            start: Box::new(move |port| {
                let args = [
                    "-r",
                    &preload.display().to_string(),
                    &script.display().to_string(),
                    "--stdio",
                    &server,
                    "--outputTransport",
                    "streamableHttp",
                    "--stateful",
                    "--port",
                    &port.to_string(),
                    "--logLevel",
                    "none",
                ]
                .map(str::to_owned);
                http_load::serve(&node, &args, &[], port)
            }),
        });
    }
    if let Some(proxy) = p.mcp_proxy.clone() {
        let server = server.clone();
        gateways.push(Gateway {
            name: format!("mcp-proxy {MCP_PROXY_VERSION}"),
            start: Box::new(move |port| {
                let args = ["--host", "127.0.0.1", "--port", &port.to_string(), "--log-level", "WARNING", &server]
                    .map(str::to_owned);
                http_load::serve(&proxy, &args, &[], port)
            }),
        });
    }
    let example = p.example_server.clone();
    gateways.push(Gateway {
        name: "the server alone (--http)".into(),
        start: Box::new(move |port| {
            http_load::serve(&example, &["--http".to_owned(), format!("127.0.0.1:{port}")], &[], port)
        }),
    });

    let mut served = Vec::new();
    let mut endpoints = Vec::new();
    for gateway in &gateways {
        let port = http_load::free_port()?;
        served.push((gateway.start)(port).map_err(|e| io::Error::other(format!("{}: {e}", gateway.name)))?);
        endpoints.push(Endpoint::new(format!("http://127.0.0.1:{port}/mcp"), Dialect::Legacy));
    }
    let mut table = Table::new(&["gateway", "clients", "calls/s", "p50", "p99", "÷ the server alone"]);
    let mut groups = Vec::new();
    let mut targets = Vec::new();
    let (ours, direct) = (0, gateways.len() - 1);
    for clients in SERVER_CONCURRENCY {
        let routes: Vec<_> = gateways.iter().zip(&endpoints).map(|(g, e)| (g.name.as_str(), e, "echo")).collect();
        let medians = super::medians_over_http(&routes, clients, t).await?;
        let baseline = medians[direct].per_second;
        for (gateway, run) in gateways.iter().zip(&medians) {
            table.row(super::http_row(&gateway.name, clients, run, baseline));
        }
        let to_direct = medians[ours].per_second / baseline.max(f64::MIN_POSITIVE);
        if clients == 1 {
            let extra = crate::stats::ms(medians[ours].p50()) - crate::stats::ms(medians[direct].p50());
            targets.push(format!(
                "1 client: mcp-bridge's p50 is the server's + {extra:.3} ms; target ≤ + 0.1 ms: {}",
                super::verdict(extra <= 0.1)
            ));
        } else {
            targets.push(format!(
                "{clients} clients: mcp-bridge {to_direct:.2}x the calls/s of the server alone; target ≥ 0.95x: {}",
                super::verdict(to_direct >= 0.95)
            ));
            for (gateway, run) in gateways.iter().zip(&medians).skip(1).take(gateways.len() - 2) {
                let times = medians[ours].per_second / run.per_second.max(f64::MIN_POSITIVE);
                targets.push(format!(
                    "{clients} clients: mcp-bridge {times:.1}x the calls/s of {}; target ≥ 10x: {}",
                    gateway.name,
                    super::verdict(times >= 10.0)
                ));
            }
        }
        groups.extend(super::rate_and_p99(clients, &medians));
    }
    drop(served);
    Ok(Section {
        name: "gateways",
        title: "11. The gateway against supergateway and mcp-proxy".into(),
        intro: format!(
            "`mcp-example-server` (stdio) served over Streamable HTTP by `mcp-bridge --listen -- mcp-example-server`, \
             by supergateway (`--stdio … --outputTransport streamableHttp --stateful`, on Node.js) and by \
             mcp-proxy (Python), and the server's own endpoint (`--http`, its embedded bridge); 2025-11-25 \
             clients, each with its own session and keep-alive connection, call `echo` ({} B) one call after \
             another. {}",
            SMALL_TEXT.len(),
            super::medians_note(t)
        ),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "Gateways: calls/s and p99".into(),
            series: gateways.iter().map(|g| g.name.clone()).collect(),
            groups,
        },
    })
}
