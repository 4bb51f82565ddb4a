//! Round-trip latency of one small `tools/call` (echo), each beside the bare
//! cost of its medium in the same run:
//!
//! - `memory/tools_call` vs `memory/channel_echo`: the SDK client and server
//!   over the in-memory link, against a message bounced through two tokio
//!   channels and a task (the link's own mechanics without the SDK).
//! - `stdio/tools_call` vs `stdio/cat_echo`: the SDK client and the release
//!   `mcp-example-server` over pipes, against the same request line echoed
//!   by `cat` (two pipe hops and a process wake-up, without the SDK).
//! - `network/grpc_tools_call` vs `network/http_tools_call`: the SDK client
//!   and the example server over gRPC (Google's proto) and over Streamable
//!   HTTP, both on loopback in this process: the ratio is gRPC's cost.
//!
//! Needs `cargo build --release -p mcp-example-server` first.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions, transport};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn example_server() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/mcp-example-server");
    assert!(path.is_file(), "build it first: cargo build --release -p mcp-example-server");
    path
}

fn memory(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("memory");
    group.bench_function("channel_echo", |b| {
        let (to_task, mut task_rx) = mpsc::channel::<serde_json::Value>(16);
        let (to_caller, caller_rx) = mpsc::channel::<serde_json::Value>(16);
        rt.spawn(async move {
            while let Some(v) = task_rx.recv().await {
                if to_caller.send(v).await.is_err() {
                    break;
                }
            }
        });
        let caller_rx = std::sync::Arc::new(tokio::sync::Mutex::new(caller_rx));
        b.to_async(&rt).iter(|| {
            let to_task = to_task.clone();
            let caller_rx = caller_rx.clone();
            async move {
                to_task.send(json!({"text": "hello"})).await.unwrap();
                caller_rx.lock().await.recv().await.unwrap()
            }
        })
    });
    let server = mcp_example_server::build_server();
    let client =
        rt.block_on(async { Client::new(ClientOptions::new("bench", "1"), transport::memory::connect(&server)) });
    let options = RequestOptions::default();
    group.bench_function("tools_call", |b| {
        b.to_async(&rt).iter(|| async { client.call_tool("echo", json!({"text": "hello"}), &options).await.unwrap() })
    });
    group.finish();
}

fn stdio(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("stdio");
    let line =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
    bench_lines(&mut group, "cat_echo", &[PathBuf::from("cat")], &[], line);
    let client = rt.block_on(async {
        Client::new(ClientOptions::new("bench", "1"), spawn(StdioCommand::new(example_server())).unwrap())
    });
    let options = RequestOptions::default();
    group.bench_function("tools_call", |b| {
        b.to_async(&rt).iter(|| async { client.call_tool("echo", json!({"text": "hello"}), &options).await.unwrap() })
    });
    rt.block_on(client.close());
    group.finish();
}

fn release_binary(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release").join(name);
    assert!(path.is_file(), "build it first: cargo build --release -p mcp-bridge-cli -p mcp-example-server");
    path
}

/// Starts a program with piped stdin and stdout.
fn spawn_pipes(
    rt: &tokio::runtime::Runtime,
    program: &std::path::Path,
    args: &[std::ffi::OsString],
) -> (tokio::process::ChildStdin, BufReader<tokio::process::ChildStdout>, tokio::process::Child) {
    rt.block_on(async {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()), child)
    })
}

/// Sends one line at a time to a stdio program and reads the answer.
fn bench_lines(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    program: &[PathBuf],
    setup: &[&str],
    line: &str,
) {
    let rt = runtime();
    let args: Vec<std::ffi::OsString> = program[1..].iter().map(|p| p.clone().into_os_string()).collect();
    let (mut stdin, mut stdout, _child) = spawn_pipes(&rt, &program[0], &args);
    rt.block_on(async {
        for l in setup {
            stdin.write_all(format!("{l}\n").as_bytes()).await.unwrap();
            let mut back = String::new();
            if l.contains("\"id\"") {
                stdout.read_line(&mut back).await.unwrap();
            }
        }
    });
    let line = format!("{line}\n");
    c.bench_function(name, |b| {
        b.iter(|| {
            rt.block_on(async {
                stdin.write_all(line.as_bytes()).await.unwrap();
                stdin.flush().await.unwrap();
                let mut back = String::new();
                stdout.read_line(&mut back).await.unwrap();
                back
            })
        })
    });
}

/// One `tools/call` through the bridge against the same call sent to the
/// server directly, both as raw lines over pipes. The bridge is initialized
/// but not told `notifications/initialized`, so no change events (the gap
/// events of its listen stream) mix with the answers being timed.
fn bridge(c: &mut Criterion) {
    let server = release_binary("mcp-example-server");
    let bridge = release_binary("mcp-bridge");
    let mut group = c.benchmark_group("bridge");
    let direct = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    bench_lines(&mut group, "direct", std::slice::from_ref(&server), &[], direct);
    let legacy =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    bench_lines(&mut group, "through_bridge", &[bridge.clone(), "--".into(), server.clone()], &[init], legacy);
    // The embedded bridge: the same server process, chosen by initialize.
    bench_lines(&mut group, "embedded_legacy", std::slice::from_ref(&server), &[init], legacy);
    elicitation_round(&mut group, &bridge, &server);
    group.finish();
}

/// One `tools/call` of `ask_name` through the bridge: the call, the
/// bridge's `elicitation/create` to the client, the client's answer, the
/// retry upstream, and the result.
fn elicitation_round(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    bridge: &std::path::Path,
    server: &std::path::Path,
) {
    let rt = runtime();
    let (mut stdin, mut stdout, _child) = spawn_pipes(&rt, bridge, &["--".into(), server.as_os_str().to_owned()]);
    rt.block_on(async {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}"#;
        stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).await.unwrap();
    });
    let call = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"ask_name\",\"arguments\":{}}}\n";
    group.bench_function("elicitation_round", |b| {
        b.iter(|| {
            rt.block_on(async {
                stdin.write_all(call.as_bytes()).await.unwrap();
                stdin.flush().await.unwrap();
                let mut ask = String::new();
                stdout.read_line(&mut ask).await.unwrap();
                let ask: serde_json::Value = serde_json::from_str(&ask).unwrap();
                let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
                stdin.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
                stdin.flush().await.unwrap();
                let mut result = String::new();
                stdout.read_line(&mut result).await.unwrap();
                result
            })
        })
    });
}

fn network(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("network");
    let server = mcp_example_server::build_server();
    let (http, grpc) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http_addr = listener.local_addr().unwrap();
        let router = server.http_router(mcp_bridge_sdk::server::http::HttpOptions::default());
        tokio::spawn(async move { axum::serve(listener, router).await });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc_addr = listener.local_addr().unwrap();
        let served = server.clone();
        tokio::spawn(async move {
            let options = mcp_bridge_sdk::grpc::service::GrpcServeOptions::default();
            mcp_bridge_sdk::grpc::service::serve(&served, listener, options, std::future::pending()).await
        });
        let http_config = mcp_bridge_sdk::transport::http::HttpConfig::new(format!("http://{http_addr}/mcp"));
        let http = Client::new(ClientOptions::new("bench", "1"), transport::http::connect(http_config).unwrap());
        let grpc_config = mcp_bridge_sdk::grpc::client::GrpcConfig::new(format!("http://{grpc_addr}"));
        let grpc =
            Client::new(ClientOptions::new("bench", "1"), mcp_bridge_sdk::grpc::client::connect(grpc_config).unwrap());
        (http, grpc)
    });
    let options = RequestOptions::default();
    for (name, client) in [("http_tools_call", &http), ("grpc_tools_call", &grpc)] {
        group.bench_function(name, |b| {
            b.to_async(&rt)
                .iter(|| async { client.call_tool("echo", json!({"text": "hello"}), &options).await.unwrap() })
        });
    }
    rt.block_on(async {
        http.close().await;
        grpc.close().await;
    });
    group.finish();
}

criterion_group!(benches, memory, stdio, bridge, network);
criterion_main!(benches);
