//! One server's life in a toolset: its client and lists while it is
//! available, and the task that connects to it, follows its list changes,
//! and connects again after a back-off when it is lost, until the server is
//! removed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::method::{
    Method, PromptsListChanged, ResourcesListChanged, SubscriptionsAcknowledged, ToolsListChanged,
};
use mcp_bridge_protocol::reopen::Backoff;
use mcp_bridge_protocol::types::SubscriptionFilter;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::catalog::Lists;
use super::exposure::Exposure;
use super::{ConnectFn, Shared, lock};
use crate::error::{Error, Result};
use crate::{Client, RequestOptions};

/// A server of a toolset.
pub(super) struct Member {
    pub(super) name: String,
    connect: Arc<ConnectFn>,
    pub(super) exposure: Mutex<Exposure>,
    pub(super) slot: Mutex<Slot>,
    /// Fires when the server leaves the toolset: its life ends.
    pub(super) removed: CancellationToken,
}

impl Member {
    pub(super) fn new(name: String, exposure: Exposure, connect: Arc<ConnectFn>) -> Arc<Member> {
        let (exposure, slot) = (Mutex::new(exposure), Mutex::new(Slot::default()));
        Arc::new(Member { name, connect, exposure, slot, removed: CancellationToken::new() })
    }

    /// Ends the server's life in the toolset and closes its client.
    pub(super) async fn retire(&self) {
        let client = {
            // Under the slot's lock: a client installed now is taken too.
            let mut slot = lock(&self.slot);
            self.removed.cancel();
            slot.client.take()
        };
        if let Some(client) = client {
            client.close().await;
        }
    }
}

/// A server's client and lists while it is available.
#[derive(Default)]
pub(super) struct Slot {
    pub(super) client: Option<Client>,
    pub(super) lists: Lists,
    pub(super) problem: Option<String>,
    /// Fires when a call finds the server gone: the server is connected again.
    lost: CancellationToken,
}

/// Whether an error means the server is gone (not that it refused).
fn is_lost(error: &Error) -> bool {
    matches!(error, Error::Closed | Error::Transport { .. } | Error::Connect { .. })
}

/// A request's outcome at `member`; a server found gone is left out
/// (until it is back).
pub(super) fn check<T>(member: &Member, outcome: Result<T>) -> Result<T> {
    if let Err(error) = &outcome
        && is_lost(error)
    {
        lock(&member.slot).lost.cancel();
    }
    outcome
}

/// A server's lists, of what its capabilities offer.
async fn list_all(client: &Client) -> Result<Lists> {
    let o = RequestOptions::default();
    let offers = client.discover(&o).await?.capabilities;
    let mut lists = Lists::default();
    if offers.tools.is_some() {
        lists.tools = client.list_all_tools(&o).await?;
    }
    if offers.prompts.is_some() {
        lists.prompts = client.list_all_prompts(&o).await?;
    }
    if offers.resources.is_some() {
        lists.resources = client.list_all_resources(&o).await?;
    }
    Ok(lists)
}

/// One server's life in the toolset, until it is removed: connect, list,
/// follow its changes until it is lost, then again after a back-off. Tells
/// `settled` once, after the first attempt.
pub(super) async fn run_member(shared: Arc<Shared>, member: Arc<Member>, settled: tokio::sync::mpsc::Sender<()>) {
    tokio::select! {
        () = live(&shared, &member, settled) => {}
        () = member.removed.cancelled() => {}
    }
}

async fn live(shared: &Shared, member: &Member, settled: tokio::sync::mpsc::Sender<()>) {
    let mut settled = Some(settled);
    // Reset by every connection that worked (a stable time of zero), doubled
    // by every one that failed.
    let mut backoff = Backoff::new(shared.options.first_retry, shared.options.max_retry, Duration::ZERO);
    loop {
        let connected = async {
            let client = (member.connect)().await?;
            let lists = list_all(&client).await?;
            Ok::<_, Error>((client, lists))
        };
        let (problem, lived) = match connected.await {
            Ok((client, lists)) => {
                let lost = CancellationToken::new();
                lock(&member.slot).lost = lost.clone();
                tracing::info!(target: "mcp_toolset", server = %member.name, tools = lists.tools.len(), "server available");
                shared.install(member, Some(client.clone()), lists, None);
                if let Some(settled) = settled.take() {
                    let _ = settled.send(()).await;
                }
                let since = tokio::time::Instant::now();
                (follow(shared, member, &client, lost).await, Some(since.elapsed()))
            }
            Err(error) => (error, None),
        };
        let delay = backoff.wait_after(lived);
        tracing::warn!(target: "mcp_toolset", server = %member.name, "server not available: {problem}; again in {delay:?}");
        shared.install(member, None, Lists::default(), Some(problem.to_string()));
        if let Some(settled) = settled.take() {
            let _ = settled.send(()).await;
        }
        tokio::time::sleep(delay).await;
    }
}

/// Follows a server's list changes (refreshing its part) until it is
/// lost; why it was lost.
async fn follow(shared: &Shared, member: &Member, client: &Client, lost: CancellationToken) -> Error {
    let changed = Arc::new(Notify::new());
    let heard = changed.clone();
    let options = RequestOptions::default().with_cancel(lost.clone()).with_on_notification(Arc::new(move |n| {
        // The acknowledgment too: a change between the first lists and the
        // stream's opening was announced to nobody, so the lists are read
        // again once the stream is open.
        let changes = [ToolsListChanged::NAME, PromptsListChanged::NAME, ResourcesListChanged::NAME];
        if changes.contains(&n.method.as_str()) || n.method == SubscriptionsAcknowledged::NAME {
            heard.notify_one();
        }
    }));
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        prompts_list_changed: Some(true),
        resources_list_changed: Some(true),
        ..Default::default()
    };
    let listen = client.listen(filter, &options);
    let mut listen = std::pin::pin!(listen);
    let mut listening = true;
    loop {
        tokio::select! {
            ended = &mut listen, if listening => match ended {
                // A server without change streams: it is followed by its calls only.
                Err(Error::Rpc { .. }) | Ok(_) => listening = false,
                Err(Error::Cancelled { .. }) => return Error::Closed,
                Err(error) => return error,
            },
            () = changed.notified() => match list_all(client).await {
                Ok(lists) => shared.install(member, Some(client.clone()), lists, None),
                Err(error) => return error,
            },
            () = lost.cancelled() => return Error::Closed,
        }
    }
}
