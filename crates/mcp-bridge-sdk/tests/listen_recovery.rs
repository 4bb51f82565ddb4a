//! `listen_with_recovery`'s deadline and cancellation: both stop the
//! stream on the server too.

mod common;

use std::time::Duration;

use mcp_bridge_protocol::types::SubscriptionFilter;
use mcp_bridge_sdk::client::ListenRecovery;
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions, transport};
use tokio_util::sync::CancellationToken;

fn filter() -> SubscriptionFilter {
    SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() }
}

async fn streams_closed(server: &mcp_bridge_sdk::Server) {
    common::until("the server to close its stream", || server.open_subscriptions() == 0).await;
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_the_stream_with_a_timeout() {
    let server = common::ping_server();
    let client = Client::new(ClientOptions::new("c", "1"), transport::memory::connect(&server));
    let recovery = ListenRecovery::default().with_deadline(Duration::from_millis(200));
    let outcome = client.listen_with_recovery(filter(), &recovery, &RequestOptions::default()).await;
    assert!(matches!(outcome, Err(Error::Timeout { timeout_ms: 200, .. })), "{outcome:?}");
    streams_closed(&server).await;
}

#[tokio::test(start_paused = true)]
async fn cancelling_ends_the_stream() {
    let server = common::ping_server();
    let client = Client::new(ClientOptions::new("c", "1"), transport::memory::connect(&server));
    let cancel = CancellationToken::new();
    let options = RequestOptions::default().with_cancel(cancel.clone());
    let listening = {
        let client = client.clone();
        tokio::spawn(async move { client.listen_with_recovery(filter(), &ListenRecovery::default(), &options).await })
    };
    common::until("the stream to open", || server.open_subscriptions() == 1).await;
    cancel.cancel();
    let outcome = listening.await.unwrap();
    assert!(matches!(outcome, Err(Error::Cancelled { .. })), "{outcome:?}");
    streams_closed(&server).await;
}
