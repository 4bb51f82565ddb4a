//! `mcp-bridge --listen`'s telemetry with the real parts: Debian's
//! Prometheus scrapes `/metrics` (with the endpoint's token) and its query
//! API returns the gateway's call counts; an OTLP receiver built on the
//! OpenTelemetry project's protobuf definitions gets the spans, named and
//! attributed by the conventions for MCP, with the client's trace id
//! carried to the server behind; `--log-format json` writes an access line
//! per call.

use std::process::Stdio;
use std::time::Duration;

use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::client::Era;
use mcp_bridge_sdk::transport::http::{BearerToken, HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{Value, json};
use test_support::{
    ScratchDir, bridge_on_loopback, python_tool_server, spare_port, stderr_line_and_log, workspace_binary,
};
use tokio::sync::mpsc;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");
const TOKEN: &str = "telemetry-test-token-0123456789";
const PROMETHEUS: &str = "/usr/bin/prometheus";
/// How long Prometheus and the exporter get to show what the test waits for.
const DEADLINE: Duration = Duration::from_secs(60);

fn client(url: &str, era: Era) -> Client {
    let config = HttpConfig::new(url).with_auth(std::sync::Arc::new(BearerToken::new(TOKEN)));
    Client::new(ClientOptions::new("telemetry-test", "1").with_era(era), connect(config).unwrap())
}

fn gateway_config(dir: &ScratchDir, servers: Value) -> String {
    let file = dir.path().join("config.json");
    std::fs::write(&file, json!({"mcpServers": servers}).to_string()).unwrap();
    file.to_str().unwrap().to_owned()
}

fn bridge_command(envs: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(BRIDGE);
    command.env("TELEMETRY_TOKEN", TOKEN).envs(envs.iter().copied());
    command
}

async fn metrics(base: &str, token: Option<&str>) -> (u16, String) {
    let mut request = reqwest::Client::new().get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_the_call_counts_of_each_server_and_tool() {
    assert!(
        std::path::Path::new(PROMETHEUS).exists(),
        "{PROMETHEUS} is missing: scripts/test installs Debian's prometheus"
    );
    let dir = ScratchDir::new("listen-telemetry-prometheus");
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let traced = json!({"command": "python3", "args": ["-c", traced_upstream()]});
    let config = gateway_config(&dir, json!({"notes": {"command": example}, "traced": traced}));
    let args = ["--listen-token-env", "TELEMETRY_TOKEN", "--config", &config];
    let (mut bridge, url) = bridge_on_loopback(bridge_command(&[]), &args).await;
    let base = url.trim_end_matches("/mcp").to_owned();

    // Three calls of 2026-07-28, two of a 2025-11-25 session, one that fails.
    for era in [Era::Modern, Era::Modern, Era::Modern, Era::Legacy, Era::Legacy] {
        let result =
            client(&url, era).call_tool("notes__echo", json!({"text": "hi"}), &RequestOptions::default()).await;
        assert_eq!(result.unwrap().is_error, None);
    }
    let modern = client(&url, Era::Modern);
    let failed = modern.call_tool("traced__fail", json!({}), &RequestOptions::default()).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    let unknown = modern.call_tool("notes__nope", json!({}), &RequestOptions::default()).await;
    assert!(unknown.is_err());

    assert_eq!(metrics(&base, None).await.0, 401, "the metrics need the endpoint's token");
    let (status, text) = metrics(&base, Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert!(text.contains(r#"mcp_bridge_tool_calls_total{server="notes",tool="echo"} 5"#), "{text}");
    assert!(text.contains(r#"mcp_bridge_tool_calls_total{server="traced",tool="fail"} 1"#), "{text}");
    assert!(
        text.contains(r#"mcp_bridge_tool_call_errors_total{server="traced",tool="fail",error_type="tool_error"} 1"#),
        "{text}"
    );
    assert!(!text.contains(r#"mcp_bridge_tool_call_errors_total{server="notes""#), "{text}");
    // A name no tool has is no label: a client could invent any number.
    let unknown = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="",error_type="-32602"} 1"#;
    assert!(text.contains(unknown), "{text}");
    assert!(!text.contains("notes__nope"), "{text}");
    assert!(text.contains("mcp_bridge_requests_in_flight 0"), "{text}");
    assert!(text.contains(r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="notes__echo",error_type=""} 5"#), "{text}");

    // The real scraper, with the token from a file as its docs advise.
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let target = base.trim_start_matches("http://");
    let prometheus_config = dir.path().join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: mcp-bridge\n    authorization:\n      credentials_file: {}\n    static_configs:\n      - targets: ['{target}']\n",
            token_file.display()
        ),
    )
    .unwrap();
    let port = spare_port();
    let mut prometheus = tokio::process::Command::new(PROMETHEUS)
        .arg(format!("--config.file={}", prometheus_config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let query = r#"mcp_bridge_tool_calls_total{server="notes",tool="echo"}"#;
    let api = format!("http://127.0.0.1:{port}/api/v1/query");
    let value = tokio::time::timeout(DEADLINE, async {
        loop {
            if let Ok(response) = reqwest::Client::new().get(&api).query(&[("query", query)]).send().await
                && let Ok(answer) = response.json::<Value>().await
                && let Some(value) = answer["data"]["result"][0]["value"][1].as_str()
            {
                return value.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("Prometheus scraped the bridge in time");
    assert_eq!(value, "5");
    prometheus.start_kill().unwrap();
    bridge.start_kill().unwrap();
    let _ = (prometheus.wait().await, bridge.wait().await);
}

/// A 2026-07-28 stdio server whose `echo` answers with the trace context
/// its request's `_meta` carried, and whose `fail` fails.
fn traced_upstream() -> String {
    python_tool_server(
        &["echo", "fail"],
        r#"msg["params"]["_meta"].get("traceparent", "")"#,
        r#"msg["params"]["name"] == "fail""#,
    )
}

/// The OTLP/HTTP receiver: every span the bridge exports, decoded.
async fn otlp_receiver() -> (String, mpsc::UnboundedReceiver<Span>) {
    let (spans, received) = mpsc::unbounded_channel();
    let traces = move |body: axum::body::Bytes| {
        let spans = spans.clone();
        async move {
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
            for span in request.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans) {
                let _ = spans.send(span);
            }
            axum::http::StatusCode::OK
        }
    };
    let router = axum::Router::new()
        .route("/v1/traces", axum::routing::post(traces))
        .route("/v1/metrics", axum::routing::post(|| async { axum::http::StatusCode::OK }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{address}"), received)
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| match a.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(text) => Some(text.clone()),
        other => Some(format!("{other:?}")),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_carry_the_clients_trace_through_the_gateway_to_the_server() {
    let dir = ScratchDir::new("listen-telemetry-otlp");
    let config = gateway_config(&dir, json!({"traced": {"command": "python3", "args": ["-c", traced_upstream()]}}));
    let (endpoint, mut spans) = otlp_receiver().await;
    let envs = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "bridge-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--listen-token-env",
        "TELEMETRY_TOKEN",
        "--listen-access-log",
        "--log-format",
        "json",
    ];
    let mut bridge = bridge_command(&envs)
        .args(args)
        .args(["--config", &config])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (url, log) = stderr_line_and_log(&mut bridge, "mcp-bridge", |line| {
        let line: Value = serde_json::from_str(line).expect("every line is JSON");
        let message = line["message"].as_str()?;
        message.split("serving MCP clients of both revisions at ").nth(1).map(str::to_owned)
    })
    .await;

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let parent = format!("00-{trace_id}-00f067aa0ba902b7-01");
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), json!(parent));
    let options = RequestOptions::default().with_meta(meta);
    let result = client(&url, Era::Modern).call_tool("traced__echo", json!({}), &options).await.unwrap();
    let ContentBlock::Text(seen) = &result.content[0] else { panic!("{result:?}") };
    let seen = seen.text.clone();
    assert!(seen.starts_with(&format!("00-{trace_id}-")), "the server behind got the client's trace: {seen}");
    assert!(!seen.contains("00f067aa0ba902b7"), "under the bridge's own span: {seen}");

    let (mut front, mut sent) = (None, None);
    tokio::time::timeout(DEADLINE, async {
        while front.is_none() || sent.is_none() {
            let span = spans.recv().await.unwrap();
            match span.name.as_str() {
                "tools/call traced__echo" => front = Some(span),
                "tools/call echo" => sent = Some(span),
                _ => {}
            }
        }
    })
    .await
    .expect("both spans exported in time");
    let (front, sent) = (front.unwrap(), sent.unwrap());
    assert_eq!(hex(&front.trace_id), trace_id);
    assert_eq!(hex(&front.parent_span_id), "00f067aa0ba902b7", "the front span's parent is the client's");
    assert_eq!(front.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(attribute(&front, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(attribute(&front, "gen_ai.tool.name").as_deref(), Some("traced__echo"));
    assert_eq!(attribute(&front, "mcp.protocol.version").as_deref(), Some("2026-07-28"));
    assert!(attribute(&front, "jsonrpc.request.id").is_some());
    assert_eq!(hex(&sent.trace_id), trace_id);
    assert_eq!(sent.parent_span_id, front.span_id, "the upstream call is a child of the front span");
    assert_eq!(sent.kind, 3, "SPAN_KIND_CLIENT");
    assert_eq!(attribute(&sent, "server.address").as_deref(), Some("traced"));
    assert_eq!(attribute(&sent, "gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(seen, format!("00-{trace_id}-{}-01", hex(&sent.span_id)), "the server's parent is the bridge's call");

    // The access log: one JSON object per call.
    let access = tokio::time::timeout(DEADLINE, async {
        loop {
            let text = log.lock().unwrap().clone();
            let line = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .find(|line| line["target"] == "mcp_bridge::access" && line["method"] == "tools/call");
            if let Some(line) = line {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the access line was written in time");
    assert_eq!(access["name"], "traced__echo", "{access}");
    assert_eq!(access["outcome"], "ok", "{access}");
    assert_eq!(access["trace_id"], trace_id, "{access}");
    assert!(access["duration_ms"].as_f64().is_some(), "{access}");
    assert_eq!(access["client"], "telemetry-test", "{access}");
    assert!(access["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{access}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_telemetry_there_is_no_metrics_endpoint() {
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let args = ["--listen-token-env", "TELEMETRY_TOKEN", "--listen-no-telemetry", "--", example.to_str().unwrap()];
    let (mut bridge, url) = bridge_on_loopback(bridge_command(&[]), &args).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let result = client(&url, Era::Modern).call_tool("echo", json!({"text": "hi"}), &RequestOptions::default()).await;
    assert_eq!(result.unwrap().is_error, None);
    assert_eq!(metrics(&base, Some(TOKEN)).await.0, 404);
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_front_of_one_server_is_observed_and_its_trace_goes_on() {
    let script = traced_upstream();
    let args = ["--listen-token-env", "TELEMETRY_TOKEN", "--", "python3", "-c", &script];
    let (mut bridge, url) = bridge_on_loopback(bridge_command(&[]), &args).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let trace_id = "0af7651916cd43dd8448eb211c80319c";
    let mut meta = serde_json::Map::new();
    meta.insert("traceparent".into(), json!(format!("00-{trace_id}-b7ad6b7169203331-01")));
    let options = RequestOptions::default().with_meta(meta);
    let session = client(&url, Era::Legacy);
    let result = session.call_tool("echo", json!({}), &options).await.unwrap();
    let ContentBlock::Text(seen) = &result.content[0] else { panic!("{result:?}") };
    assert!(seen.text.starts_with(&format!("00-{trace_id}-")), "the server got the client's trace: {}", seen.text);
    assert!(!seen.text.contains("b7ad6b7169203331"), "under the bridge's spans: {}", seen.text);

    let (_, text) = metrics(&base, Some(TOKEN)).await;
    let front = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="echo",error_type=""} 1"#;
    assert!(text.contains(front), "{text}");
    let sent = r#"mcp_bridge_tool_calls_total{server="upstream",tool="echo"} 1"#;
    assert!(text.contains(sent), "{text}");
    assert!(text.contains("mcp_bridge_sessions 1"), "{text}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}
