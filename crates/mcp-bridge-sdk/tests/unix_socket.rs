//! The Unix domain socket transport: the SDK's server accepting clients on a
//! socket file and the SDK's client connecting to it, framed as on stdio.
#![cfg(unix)]

mod common;

use std::time::Duration;

use mcp_bridge_protocol::types::{ContentBlock, SubscriptionFilter};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn socket_path(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-sdk-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The ping server on a fresh socket `name`: its path, the token that
/// shuts it down, and the task serving it.
fn serve(name: &str) -> (std::path::PathBuf, CancellationToken, tokio::task::JoinHandle<std::io::Result<()>>) {
    let path = socket_path(name);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let server = common::ping_server();
    let serving = tokio::spawn(async move { server.serve_unix(listener, stopped.cancelled_owned()).await });
    (path, stop, serving)
}

async fn client(path: &std::path::Path) -> Client {
    Client::new(ClientOptions::new("unix-test", "1"), mcp_bridge_sdk::transport::unix::connect(path).await.unwrap())
}

#[tokio::test]
async fn clients_on_a_socket_are_served_each_on_its_own_connection() {
    let (path, stop, serving) = serve("serve");
    let (a, b) = (client(&path).await, client(&path).await);
    let o = RequestOptions::default();
    let (ra, rb) = tokio::join!(a.call_tool("ping", json!({}), &o), b.call_tool("ping", json!({}), &o));
    for result in [ra.unwrap(), rb.unwrap()] {
        assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    }
    // A listen stream ends with its result when the server shuts down.
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listening = common::listening(a, filter).await;
    stop.cancel();
    serving.await.unwrap().unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), listening).await.unwrap().unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error_and_a_closed_socket_fails_the_requests() {
    let path = socket_path("missing");
    let err = mcp_bridge_sdk::transport::unix::connect(&path).await.unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    // A "server" that accepts, then closes the connection at once.
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    let client = client(&path).await;
    let err = client.discover(&RequestOptions::default().with_retry(mcp_bridge_sdk::client::RetryPolicy::Never)).await;
    assert!(matches!(err, Err(Error::Closed)), "{err:?}");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_server_that_shuts_down_ends_its_open_connections() {
    let (path, stop, serving) = serve("shutdown");
    let idle = client(&path).await;
    let o = RequestOptions::default();
    assert!(idle.call_tool("ping", json!({}), &o).await.is_ok());
    stop.cancel();
    // serve_unix returns only once its connections have ended.
    tokio::time::timeout(Duration::from_secs(30), serving).await.unwrap().unwrap().unwrap();
    let after = idle.call_tool("ping", json!({}), &o).await.unwrap_err();
    assert!(matches!(after, Error::Closed | Error::Transport { .. }), "{after:?}");
    let _ = std::fs::remove_file(&path);
}

/// How the scripted server answers one request, given its method, how many
/// of that method came before it and its params: after `delay`, the
/// `result` or the `error` object; `None` never answers.
type Script = Box<
    dyn Fn(&str, usize, &serde_json::Value) -> Option<(Duration, Result<serde_json::Value, serde_json::Value>)>
        + Send
        + Sync,
>;

/// A server on a fresh socket `name` that answers each request as `script`
/// says.
fn scripted(name: &str, script: Script) -> std::path::PathBuf {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let path = socket_path(name);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let script = std::sync::Arc::new(script);
    tokio::spawn(async move {
        let Ok((stream, _)) = listener.accept().await else { return };
        let (read, mut write) = stream.into_split();
        let (answers, mut to_write) = tokio::sync::mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = to_write.recv().await {
                if write.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        let mut seen = std::collections::HashMap::<String, usize>::new();
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            let (Some(id), Some(method)) = (message.get("id").cloned(), message["method"].as_str()) else { continue };
            let count = seen.entry(method.to_owned()).or_default();
            let answer = script(method, *count, &message["params"]);
            *count += 1;
            let Some((delay, outcome)) = answer else { continue };
            let answers = answers.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let message = match outcome {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
                };
                let _ = answers.send(message.to_string());
            });
        }
    });
    path
}

async fn modern_client(path: &std::path::Path, timeout: Duration) -> Client {
    let options = ClientOptions::new("unix-test", "1")
        .with_era(mcp_bridge_sdk::client::Era::Modern)
        .with_request_timeout(timeout);
    Client::new(options, mcp_bridge_sdk::transport::unix::connect(path).await.unwrap())
}

fn header_mismatch() -> Result<serde_json::Value, serde_json::Value> {
    Err(json!({"code": -32020, "message": "the headers do not match the tool's annotations"}))
}

#[tokio::test(start_paused = true)]
async fn the_re_read_and_retry_after_a_header_mismatch_share_the_calls_one_time_limit() {
    // -32020 after 0.6 s, the re-read list after 0.6 s more, then a retry never answered.
    let path = scripted(
        "one-limit",
        Box::new(|method, count, _| match (method, count) {
            ("tools/call", 0) => Some((Duration::from_millis(600), header_mismatch())),
            ("tools/list", _) => Some((Duration::from_millis(600), Ok(json!({"tools": []})))),
            _ => None,
        }),
    );
    let client = modern_client(&path, Duration::from_secs(1)).await;
    let started = tokio::time::Instant::now();
    let err = client.call_tool("echo", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(&err, Error::Timeout { method, timeout_ms: 1000 } if method == "tools/call"), "{err:?}");
    // On the paused clock: the whole call took its one second, not a second per attempt.
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(1) && took < Duration::from_millis(1100), "{took:?}");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_call_also_cancels_its_re_read_of_the_tool_list() {
    let path = scripted(
        "relist-cancel",
        Box::new(|method, _, _| (method == "tools/call").then(|| (Duration::ZERO, header_mismatch()))),
    );
    let client = modern_client(&path, Duration::from_secs(60)).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = tokio::time::Instant::now();
    let options = RequestOptions::default().with_cancel(cancel);
    let err = client.call_tool("echo", json!({}), &options).await.unwrap_err();
    assert!(matches!(&err, Error::Cancelled { method } if method == "tools/call"), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    let _ = std::fs::remove_file(&path);
}

/// A listener that takes one connection and tells when its client has
/// closed it (the end of its input).
fn until_the_client_hangs_up(name: &str) -> (std::path::PathBuf, tokio::sync::oneshot::Receiver<()>) {
    use tokio::io::AsyncReadExt;
    let path = socket_path(name);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let (hung_up, heard) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        let mut sink = Vec::new();
        if stream.read_to_end(&mut sink).await.is_ok() {
            let _ = hung_up.send(());
        }
    });
    (path, heard)
}

#[tokio::test]
async fn closing_a_client_closes_its_socket_and_fails_later_requests() {
    let (path, heard) = until_the_client_hangs_up("close");
    let client = client(&path).await;
    assert_eq!(client.close().await, None);
    tokio::time::timeout(Duration::from_secs(10), heard).await.unwrap().unwrap();
    let err = client.discover(&RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn dropping_the_last_clone_of_a_client_closes_its_socket() {
    let (path, heard) = until_the_client_hangs_up("drop");
    let client = client(&path).await;
    let clone = client.clone();
    drop(client);
    drop(clone);
    tokio::time::timeout(Duration::from_secs(10), heard).await.unwrap().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_typed_request_sends_its_params_and_the_clients_own_meta() {
    use mcp_bridge_protocol::method::ToolsList;
    use mcp_bridge_protocol::types::PaginatedRequestParams;
    // The server answers with one tool named after what it was sent.
    let path = scripted(
        "typed",
        Box::new(|method, _, params| {
            let meta = &params["_meta"];
            let seen = format!(
                "{}|{}|{}",
                params["cursor"].as_str().unwrap_or("-"),
                meta["io.modelcontextprotocol/clientInfo"]["name"].as_str().unwrap_or("-"),
                meta["example.com/trace"].as_str().unwrap_or("-"),
            );
            let tool = json!({"name": seen, "inputSchema": {"type": "object"}});
            (method == "tools/list").then(|| (Duration::ZERO, Ok(json!({"tools": [tool]}))))
        }),
    );
    let client = modern_client(&path, Duration::from_secs(10)).await;
    let mut params = PaginatedRequestParams { cursor: Some("page-2".into()), ..Default::default() };
    params.meta.extra.insert("example.com/trace".into(), json!("abc"));
    // The params' own client identity is the SDK's to fill in: this one is not sent.
    params.meta.client_info = Some(mcp_bridge_protocol::types::Implementation::new("impostor", "0"));
    let page = client.request::<ToolsList>(params, &RequestOptions::default()).await.unwrap();
    assert_eq!(page.tools[0].name, "page-2|unix-test|abc");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn a_client_over_the_cap_is_closed_at_once_and_its_place_comes_back() {
    use mcp_bridge_protocol::types::Implementation;
    use mcp_bridge_sdk::Server;
    use mcp_bridge_sdk::limits::ServerLimits;
    use tokio::io::AsyncReadExt;
    let path = socket_path("cap");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = Server::builder(Implementation::new("capped", "1"))
        .limits(ServerLimits::default().with_max_connections(1))
        .build();
    let stop = CancellationToken::new();
    let serving = tokio::spawn({
        let stopped = stop.clone();
        async move { server.serve_unix(listener, stopped.cancelled_owned()).await }
    });
    let once = RequestOptions::default().with_retry(mcp_bridge_sdk::client::RetryPolicy::Never);
    let first = client(&path).await;
    first.discover(&once).await.unwrap();
    // The second is closed before a byte is read: its read ends at once.
    let mut second = tokio::net::UnixStream::connect(&path).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), second.read_to_end(&mut got)).await.unwrap().unwrap();
    assert!(got.is_empty());
    assert!(first.discover(&once).await.is_ok(), "the client holding the place is still served");
    // Once the first has gone, its place is taken by the next.
    assert_eq!(first.close().await, None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let next = client(&path).await;
        if next.discover(&once).await.is_ok() {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the place never came back");
        tokio::task::yield_now().await;
    }
    stop.cancel();
    serving.await.unwrap().unwrap();
    let _ = std::fs::remove_file(&path);
}
