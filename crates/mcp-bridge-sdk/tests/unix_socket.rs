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
    let listening = tokio::spawn(async move { a.listen(filter, &RequestOptions::default()).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
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
