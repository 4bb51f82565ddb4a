//! Scenario 10: the gateway (`mcp-bridge --listen --config`) in front of
//! two `mcp-example-server`s, with its telemetry off and on (Prometheus
//! metrics, an access line per call, and OTLP export of every span and
//! duration to a receiver on loopback), against one server's own HTTP
//! endpoint; and the size of `tools/list` when the gateway lists every
//! tool and under progressive discovery.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{SERVER_CONCURRENCY, SMALL_TEXT};
use crate::chart::Chart;
use crate::http_load::{self, Endpoint};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stdio_peer::Dialect;

/// One way of serving the two servers.
struct Setup {
    name: &'static str,
    /// The program and its arguments after `--listen 127.0.0.1:PORT`
    /// (`--http 127.0.0.1:PORT` for the direct server).
    bridge: bool,
    args: Vec<String>,
    envs: Vec<(&'static str, PathBuf)>,
    tool: &'static str,
}

/// Scenario 10: `tools/call` of `echo` through the gateway, telemetry off
/// and on, and the server alone.
pub async fn gateway(p: &Programs, t: &Timing) -> io::Result<Section> {
    let dir = std::env::temp_dir().join(format!("mcp-bench-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let server = json!({"command": p.example_server});
    let full = write_config(&dir, "full.json", json!({"mcpServers": {"a": server, "b": server}}))?;
    let progressive = write_config(
        &dir,
        "progressive.json",
        json!({"discovery": "progressive", "mcpServers": {"a": server, "b": server}}),
    )?;
    let otlp = otlp_sink().await?;
    let config = |file: &Path| vec!["--listen-no-auth".to_owned(), "--config".to_owned(), file.display().to_string()];
    let mut off = config(&full);
    off.push("--listen-no-telemetry".into());
    let setups = [
        Setup { name: "gateway, telemetry off", bridge: true, args: off, envs: Vec::new(), tool: "a__echo" },
        Setup {
            name: "gateway, telemetry on (metrics, OTLP)",
            bridge: true,
            args: config(&full),
            envs: vec![("OTEL_EXPORTER_OTLP_ENDPOINT", PathBuf::from(&otlp))],
            tool: "a__echo",
        },
        Setup {
            name: "gateway, telemetry on and --listen-access-log",
            bridge: true,
            args: [config(&full), vec!["--listen-access-log".to_owned()]].concat(),
            envs: vec![("OTEL_EXPORTER_OTLP_ENDPOINT", PathBuf::from(&otlp))],
            tool: "a__echo",
        },
        Setup { name: "the server alone (--http)", bridge: false, args: Vec::new(), envs: Vec::new(), tool: "echo" },
    ];
    let mut served = Vec::new();
    let mut endpoints = Vec::new();
    for setup in &setups {
        let port = http_load::free_port()?;
        let (program, flag) = if setup.bridge { (&p.bridge, "--listen") } else { (&p.example_server, "--http") };
        let mut args = vec![flag.to_owned(), format!("127.0.0.1:{port}")];
        args.extend(setup.args.iter().cloned());
        served.push(http_load::serve(program, &args, &setup.envs, port)?);
        endpoints.push(Endpoint::new(format!("http://127.0.0.1:{port}/mcp"), Dialect::Modern));
    }
    // The gateway's servers start after its port opens: a first call waits for them.
    for (setup, endpoint) in setups.iter().zip(&endpoints) {
        let ready =
            http_load::measure(endpoint, setup.tool, json!({"text": "ready"}), 1, Default::default(), t.warm_up);
        ready.await.map_err(|e| io::Error::other(format!("{}: {e}", setup.name)))?;
    }

    let mut table = Table::new(&["route", "clients", "calls/s", "p50", "p99", "÷ telemetry off"]);
    let mut groups = Vec::new();
    let mut targets = Vec::new();
    for clients in SERVER_CONCURRENCY {
        let routes: Vec<_> = setups.iter().zip(&endpoints).map(|(s, e)| (s.name, e, s.tool)).collect();
        let medians = super::medians_over_http(&routes, clients, t).await?;
        let off = medians[0].per_second;
        for (setup, run) in setups.iter().zip(&medians) {
            table.row(super::http_row(setup.name, clients, run, off));
        }
        let r = medians[1].per_second / off.max(f64::MIN_POSITIVE);
        targets.push(format!(
            "{clients} client{}: telemetry on (metrics, OTLP) {r:.2}x the calls/s of telemetry off; target ≥ 0.90x: {}",
            if clients == 1 { "" } else { "s" },
            super::verdict(r >= 0.9)
        ));
        groups.extend(super::rate_and_p99(clients, &medians));
    }
    drop(served);

    let mut sizes = Table::new(&["tools/list", "tools listed", "bytes", "≈ tokens (bytes ÷ 4)"]);
    for (mode, file) in [("every tool (the default)", &full), ("progressive discovery", &progressive)] {
        let port = http_load::free_port()?;
        let mut args = vec!["--listen".to_owned(), format!("127.0.0.1:{port}")];
        args.extend(config(file));
        args.push("--listen-no-telemetry".into());
        let bridge = http_load::serve(&p.bridge, &args, &[], port)?;
        let (tools, bytes) = tools_list(&format!("http://127.0.0.1:{port}/mcp"), 2).await?;
        drop(bridge);
        sizes.row(vec![mode.to_owned(), tools.to_string(), bytes.to_string(), (bytes / 4).to_string()]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Section {
        name: "gateway",
        title: "10. The gateway: telemetry off and on, and the size of its tool list".into(),
        intro: format!(
            "`tools/call` of `a__echo` ({} B) through `mcp-bridge --listen --config` in front of two \
             `mcp-example-server`s (`a` and `b`, on stdio), 2026-07-28 clients each with its own keep-alive \
             connection: with `--listen-no-telemetry`; with its telemetry on (Prometheus metrics kept, every \
             span and duration exported over OTLP/HTTP to a receiver on loopback that answers 200); the same \
             with an access line per call written to stderr (`--listen-access-log`, its stderr discarded); and \
             the same call of `echo` at one server's own endpoint \
             (`mcp-example-server --http`). Then the bytes of `tools/list` when the gateway lists every tool \
             of the two servers and under `\"discovery\": \"progressive\"` (its own `search_tools` and \
             `call_tool` only). {}",
            SMALL_TEXT.len(),
            super::medians_note(t)
        ),
        tables: vec![table, sizes],
        targets,
        chart: Chart {
            title: "Gateway: calls/s and p99".into(),
            series: setups.iter().map(|s| s.name.to_owned()).collect(),
            groups,
        },
    })
}

fn write_config(dir: &Path, name: &str, config: serde_json::Value) -> io::Result<PathBuf> {
    let file = dir.join(name);
    std::fs::write(&file, config.to_string())?;
    Ok(file)
}

/// The tools `tools/list` returns at `url` and the bytes of its answer,
/// once the gateway's `servers` servers have started (its list grows as
/// they do; under progressive discovery it is the gateway's own at once).
async fn tools_list(url: &str, servers: usize) -> io::Result<(usize, usize)> {
    let http = reqwest::Client::builder().no_proxy().build().map_err(io::Error::other)?;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let response = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(body.to_string())
            .send()
            .await
            .map_err(io::Error::other)?;
        let text = response.text().await.map_err(io::Error::other)?;
        let answer: serde_json::Value = serde_json::from_str(&text).map_err(io::Error::other)?;
        let tools = answer["result"]["tools"].as_array().map_or(0, Vec::len);
        let ready = http.get(url.replace("/mcp", "/readyz")).send().await.map_err(io::Error::other)?;
        let ready: serde_json::Value = ready.json().await.map_err(io::Error::other)?;
        let up = ready["servers"].as_array().map_or(0, |s| s.iter().filter(|s| s["available"] == true).count());
        if up >= servers || std::time::Instant::now() > deadline {
            return Ok((tools, text.len()));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// An OTLP/HTTP receiver on loopback that reads each export and answers
/// 200 with an empty body; its base URL.
async fn otlp_sink() -> io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 64 * 1024];
                loop {
                    let Ok(n) = stream.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    // Every complete request (head and body) gets its answer.
                    while let Some(length) = complete_request(&buffer) {
                        buffer.drain(..length);
                        let answer =
                            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                        if stream.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    Ok(format!("http://{address}"))
}

/// The length of the first complete HTTP request in `buffer` (head and a
/// `content-length` body), if it holds one.
fn complete_request(buffer: &[u8]) -> Option<usize> {
    let head_end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (buffer.len() >= head_end + length).then_some(head_end + length)
}
