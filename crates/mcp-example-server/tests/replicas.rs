//! Three replicas of `mcp-example-server --http --redis --state-key-file`
//! behind HAProxy (round robin, no stickiness), with a real Redis: input
//! rounds whose retries land on other replicas, listen streams hearing
//! changes made through the others, tasks followed, answered and cancelled
//! through replicas other than their own, a task's replica killed, a
//! replica killed under its listener, Redis restarted, and a replica with
//! another key ring.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{ContentBlock, ElicitResult, InputResponses, SubscriptionFilter, Task, TaskStatus};
use mcp_bridge_sdk::client::{GapCause, ListenGap, ListenRecovery, ToolOutcome};
use mcp_bridge_sdk::limits::ServerLimits;
use mcp_bridge_sdk::server::{BuildError, RedisTaskStore};
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions, Server};
use mcp_example_server::example_builder;
use serde_json::{Map, Value, json};
use test_support::scale::{Haproxy, Redis, ScratchDir};
use test_support::{ExampleServer, until};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");
const KEYS: &str = "# the replicas' ring\nk1 q0Jm1Ck8Pq3zkGm3yN7m1rWw3XlH8oQb7K9v2bT5eEc=\n";
/// Short, so a task whose replica died fails soon.
const TASK_LEASE: Duration = Duration::from_secs(1);
const OTHER_KEYS: &str = "k2 fZ2x0c7w1pX8Yd4nB6qV3mL9sK2jH5gT8rE1uW4oI0A=\n";

/// Redis, three replicas and HAProxy in front of them.
struct Cluster {
    dir: ScratchDir,
    redis: Redis,
    replicas: Vec<ExampleServer>,
    haproxy: Haproxy,
}

impl Cluster {
    async fn start() -> Self {
        let dir = ScratchDir::new("replicas");
        std::fs::write(dir.path().join("keys"), KEYS).unwrap();
        let redis = Redis::start().await;
        let mut replicas = Vec::new();
        for _ in 0..3 {
            replicas.push(replica(&dir, &redis, "keys").await);
        }
        let backends: Vec<String> = replicas.iter().map(|r| host_port(&r.url)).collect();
        let haproxy = Haproxy::start(&backends).await;
        Cluster { dir, redis, replicas, haproxy }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.haproxy.base)
    }

    /// How many listen streams each replica has opened so far.
    fn streams(&self) -> Vec<usize> {
        self.replicas.iter().map(streams_opened).collect()
    }

    /// The replica (0-based) that opened a listen stream since `before`
    /// (a [`Cluster::streams`]).
    async fn new_stream_since(&self, before: &[usize]) -> usize {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(replica) = self.streams().iter().zip(before).position(|(now, then)| now > then) {
                return replica;
            }
            assert!(tokio::time::Instant::now() < deadline, "no replica opened a listen stream");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn streams_opened(replica: &ExampleServer) -> usize {
    lines_with(replica, "a listen stream opened")
}

fn host_port(url: &str) -> String {
    url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned()
}

async fn replica(dir: &ScratchDir, redis: &Redis, keys: &str) -> ExampleServer {
    let mut command = tokio::process::Command::new(SERVER);
    command
        .args(["--redis", &redis.url(), "--task-lease", &TASK_LEASE.as_secs_f64().to_string(), "--state-key-file"])
        .arg(dir.path().join(keys))
        .env("RUST_LOG", "mcp_bridge_sdk::server=debug,mcp_bridge_sdk::server::tasks=trace");
    test_support::example_server_http(command).await
}

fn client(url: &str) -> Client {
    let mut options = ClientOptions::new("replicas-test", "1");
    options.capabilities =
        serde_json::from_value(json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}))
            .unwrap();
    options.hooks.elicit_form = Some(Arc::new(|params| {
        let answer = if params.message.contains("colour") { json!({"colour": "teal"}) } else { json!({"name": "Ada"}) };
        Box::pin(async move {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": answer})).unwrap())
        })
    }));
    Client::new(options, connect(HttpConfig::new(url)).unwrap())
}

fn text(result: &mcp_bridge_protocol::types::CallToolResult) -> &str {
    match &result.content[0] {
        ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

fn notes_filter() -> SubscriptionFilter {
    SubscriptionFilter { resources_list_changed: Some(true), ..Default::default() }
}

/// The `notifications/resources/list_changed` a stream heard.
type Heard = Arc<Mutex<usize>>;

fn counting() -> (Heard, RequestOptions) {
    let heard: Heard = Arc::default();
    let counted = heard.clone();
    let options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
        if n.method == "notifications/resources/list_changed" {
            *counted.lock().unwrap() += 1;
        }
    }));
    (heard, options)
}

/// A new note through HAProxy: a resource-list change on whichever
/// replica serves it.
async fn new_note(client: &Client, name: &str) {
    let saved = client.call_tool("set_note", json!({"name": name, "text": "x"}), &RequestOptions::default()).await;
    assert!(text(&saved.unwrap()).ends_with("saved"));
}

#[tokio::test]
async fn input_rounds_finish_on_whichever_replica_the_retry_reaches() {
    let cluster = Cluster::start().await;
    let client = client(&cluster.url());
    for _ in 0..4 {
        let done = client.call_tool("ask_twice", json!({}), &RequestOptions::default()).await.unwrap();
        assert_eq!(text(&done), "Ada likes teal");
    }
    let served = cluster.haproxy.served_by();
    // Each call is three requests (two rounds and the answer), spread round robin.
    let mut replicas = served.clone();
    replicas.sort();
    replicas.dedup();
    assert_eq!(replicas, ["r1", "r2", "r3"], "every replica served rounds: {served:?}");
    assert!(served.windows(2).any(|w| w[0] != w[1]), "consecutive rounds on different replicas: {served:?}");
}

#[tokio::test]
async fn a_stream_on_one_replica_hears_changes_made_through_the_others() {
    let cluster = Cluster::start().await;
    let (heard, options) = counting();
    let listener = client(&cluster.url());
    let before = cluster.streams();
    let stream = tokio::spawn(async move { listener.listen(notes_filter(), &options).await });
    cluster.new_stream_since(&before).await;
    let writer = client(&cluster.url());
    for n in 0..6 {
        new_note(&writer, &format!("n{n}")).await;
    }
    until("six list changes", || *heard.lock().unwrap() == 6).await;
    let served = cluster.haproxy.served_by();
    let mut replicas = served.clone();
    replicas.sort();
    replicas.dedup();
    assert_eq!(replicas.len(), 3, "the changes were made on every replica: {served:?}");
    stream.abort();
}

/// The gaps `listen_with_recovery` reported.
type Gaps = Arc<Mutex<Vec<ListenGap>>>;

/// A `listen_with_recovery` through `url`: the changes it heard, its gaps.
fn recovering(url: &str) -> (Heard, Gaps, tokio::task::JoinHandle<Result<Value, Error>>) {
    let (heard, options) = counting();
    let gaps: Gaps = Arc::default();
    let seen = gaps.clone();
    let recovery = ListenRecovery::default()
        .with_delay(Duration::from_millis(100))
        .with_on_gap(Arc::new(move |gap| seen.lock().unwrap().push(*gap)));
    let listener = client(url);
    let task = tokio::spawn(async move {
        listener.listen_with_recovery(notes_filter(), &recovery, &options).await.map(|r| json!(r.meta))
    });
    (heard, gaps, task)
}

#[tokio::test]
async fn a_listener_whose_replica_dies_reconnects_through_haproxy_with_a_gap() {
    let mut cluster = Cluster::start().await;
    let before = cluster.streams();
    let (heard, gaps, stream) = recovering(&cluster.url());
    let holder = cluster.new_stream_since(&before).await;
    let writer = client(&cluster.url());
    new_note(&writer, "before").await;
    until("the change before the kill", || *heard.lock().unwrap() == 1).await;
    let before = cluster.streams();
    cluster.replicas[holder].child.kill().await.unwrap();
    until("a gap", || !gaps.lock().unwrap().is_empty()).await;
    assert_eq!(gaps.lock().unwrap()[0].cause, GapCause::StreamLost);
    // The new stream is on a live replica; every change acknowledged from now on reaches it.
    let new_holder = cluster.new_stream_since(&before).await;
    assert_ne!(new_holder, holder);
    for n in 0..4 {
        new_note(&writer, &format!("after{n}")).await;
    }
    until("the four changes after the kill", || *heard.lock().unwrap() == 5).await;
    stream.abort();
}

#[tokio::test]
async fn a_redis_restart_is_a_gap_for_every_listener_never_a_silent_loss() {
    let mut cluster = Cluster::start().await;
    let before = cluster.streams();
    let (heard, gaps, stream) = recovering(&cluster.url());
    cluster.new_stream_since(&before).await;
    let writer = client(&cluster.url());
    cluster.redis.kill().await;
    until("the bus's loss to end the stream", || !gaps.lock().unwrap().is_empty()).await;
    assert_eq!(gaps.lock().unwrap()[0].cause, GapCause::EventsLost);
    // Changes made during the outage may not reach the listener: it was told.
    new_note(&writer, "during").await;
    let gaps_in_outage = gaps.lock().unwrap().len();
    cluster.redis.restart().await;
    until("the bus to come back (another gap)", || gaps.lock().unwrap().len() > gaps_in_outage).await;
    let baseline = *heard.lock().unwrap();
    // Once every replica is back on the bus, changes through each reach the stream.
    let settled = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut delivered = 0;
    while delivered < 3 {
        let before = *heard.lock().unwrap();
        new_note(&writer, &format!("after{delivered}")).await;
        let waited =
            tokio::time::timeout(Duration::from_secs(2), until("the change", || *heard.lock().unwrap() > before));
        if waited.await.is_ok() {
            delivered += 1;
        } else {
            assert!(
                tokio::time::Instant::now() < settled,
                "changes after the restart never arrived ({baseline} before)"
            );
        }
    }
    stream.abort();
}

#[tokio::test]
async fn a_replica_with_another_key_ring_refuses_the_round_clearly() {
    let cluster = Cluster::start().await;
    std::fs::write(cluster.dir.path().join("other-keys"), OTHER_KEYS).unwrap();
    let stranger = replica(&cluster.dir, &cluster.redis, "other-keys").await;
    let asked = client(&cluster.url())
        .request_raw(
            "tools/call",
            Map::from_iter([("name".into(), json!("ask_name"))]),
            &RequestOptions::default().with_allow_input_required(true),
        )
        .await
        .unwrap();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let retry = Map::from_iter([
        ("name".into(), json!("ask_name")),
        ("requestState".into(), asked["requestState"].clone()),
        ("inputResponses".into(), json!({"name": {"action": "accept", "content": {"name": "Ada"}}})),
    ]);
    let refused = client(&stranger.url).request_raw("tools/call", retry.clone(), &RequestOptions::default()).await;
    let Err(Error::Rpc { error }) = refused else { panic!("{refused:?}") };
    assert_eq!(error.code, -32602);
    assert!(error.message.contains(r#"sealed with key "k1", which this server does not hold"#), "{}", error.message);
    let answered = client(&cluster.url()).request_raw("tools/call", retry, &RequestOptions::default()).await.unwrap();
    assert_eq!(answered["content"][0]["text"], "Hello, Ada!");
}

#[tokio::test]
async fn a_replica_on_redis_without_state_keys_does_not_start() {
    let redis = Redis::start().await;
    let output = tokio::process::Command::new(SERVER)
        .args(["--http", "127.0.0.1:0", "--redis", &redis.url()])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no state keys") && stderr.contains("--state-key-file"), "{stderr}");
    for url in ["redis+unix:///nonexistent/redis.sock", "redis://bus-user:hunter2-secret@127.0.0.1:1/0"] {
        let unreachable = tokio::process::Command::new(SERVER)
            .args(["--http", "127.0.0.1:0", "--redis", url])
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&unreachable.stderr);
        assert!(!unreachable.status.success() && stderr.contains("cannot reach Redis"), "{stderr}");
        assert!(!stderr.contains("hunter2"), "the URL's password is never shown: {stderr}");
    }
}

#[tokio::test]
async fn shared_tasks_need_the_replicas_bus_and_tasks_offered() {
    let redis = Redis::start().await;
    let url = redis.url();
    let store = || RedisTaskStore::connect(&url, "build-test");
    let without_bus = example_builder(ServerLimits::default()).task_store(store().await.unwrap()).try_build();
    assert_eq!(without_bus.err(), Some(BuildError::SharedTasksWithoutBus));
    let info = mcp_bridge_protocol::types::Implementation::new("no-tasks", "1");
    let without_tasks = Server::builder(info).task_store(store().await.unwrap()).try_build();
    assert_eq!(without_tasks.err(), Some(BuildError::TaskStoreWithoutTasks));
    let bad_url = RedisTaskStore::connect("http://not-redis", "x").await.unwrap_err();
    assert!(bad_url.to_string().starts_with("not a Redis URL"), "{bad_url}");
}

/// A task of `long_job` made through HAProxy, and the replica (0-based)
/// that runs it.
async fn long_job(cluster: &Cluster, client: &Client, arguments: Value) -> (Task, usize) {
    let outcome = client.call_tool_or_task("long_job", arguments, &RequestOptions::default()).await.unwrap();
    let ToolOutcome::Task(task) = outcome else { panic!("a task was expected: {outcome:?}") };
    let started = format!("a task started task={}", task.task_id);
    let owner = || cluster.replicas.iter().position(|r| lines_with(r, &started) == 1);
    until("the replica of the new task", || owner().is_some()).await;
    (task, owner().unwrap())
}

/// Polls `tasks/get` through `client` until the task is `status`.
async fn until_status(client: &Client, task_id: &str, status: TaskStatus) -> Task {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let task = client.get_task(task_id, &RequestOptions::default()).await.unwrap();
        if task.status == status {
            return task;
        }
        assert!(tokio::time::Instant::now() < deadline, "the task stayed {:?}, not {status:?}: {task:?}", task.status);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn lines_with(replica: &ExampleServer, needle: &str) -> usize {
    replica.log.lock().unwrap().matches(needle).count()
}

#[tokio::test]
async fn a_task_is_followed_answered_and_finished_through_replicas_other_than_its_own() {
    let cluster = Cluster::start().await;
    let balanced = client(&cluster.url());
    let (task, owner) = long_job(&cluster, &balanced, json!({"seconds": 0.1, "confirm": true})).await;
    let (second, third) =
        (client(&cluster.replicas[(owner + 1) % 3].url), client(&cluster.replicas[(owner + 2) % 3].url));

    let asking = until_status(&second, &task.task_id, TaskStatus::InputRequired).await;
    assert!(asking.input_requests.unwrap().contains_key("confirm"));
    let answer: InputResponses =
        serde_json::from_value(json!({"confirm": {"action": "accept", "content": {"run": true}}})).unwrap();
    second.update_task(&task.task_id, answer, &RequestOptions::default()).await.unwrap();

    let done = until_status(&third, &task.task_id, TaskStatus::Completed).await;
    let result = mcp_bridge_sdk::client::task_result(&done).unwrap();
    assert_eq!(text(&result), "job done after 0.1 s");
    // Through HAProxy too, whichever replica answers.
    for _ in 0..3 {
        assert_eq!(until_status(&balanced, &task.task_id, TaskStatus::Completed).await.status, TaskStatus::Completed);
    }
}

#[tokio::test]
async fn a_task_cancelled_on_another_replica_stops_on_its_own() {
    let cluster = Cluster::start().await;
    let balanced = client(&cluster.url());
    let (task, owner) = long_job(&cluster, &balanced, json!({"seconds": 60})).await;
    let other = client(&cluster.replicas[(owner + 1) % 3].url);
    other.cancel_task(&task.task_id, &RequestOptions::default()).await.unwrap();

    let cancelled = until_status(&balanced, &task.task_id, TaskStatus::Cancelled).await;
    assert_eq!(cancelled.status_message.as_deref(), Some("Cancelled by the client"));
    let stopped = format!("the task was settled elsewhere; stopping its work task={}", task.task_id);
    until("the owner to stop the cancelled work", || lines_with(&cluster.replicas[owner], &stopped) == 1).await;
    // A cancelled task stays cancelled: an answer or a second cancel changes nothing.
    other.cancel_task(&task.task_id, &RequestOptions::default()).await.unwrap();
    assert_eq!(until_status(&other, &task.task_id, TaskStatus::Cancelled).await, cancelled);
}

#[tokio::test]
async fn a_task_whose_replica_died_fails_once_its_lease_runs_out() {
    let mut cluster = Cluster::start().await;
    let balanced = client(&cluster.url());
    let (task, owner) = long_job(&cluster, &balanced, json!({"seconds": 60})).await;
    let other = client(&cluster.replicas[(owner + 1) % 3].url);

    // Renewed four times (a third of the lease apart), the lease outlived
    // its first term: the task is working still.
    let renewed = format!("renewed a running task's lease task={}", task.task_id);
    until("four renewals of the lease", || lines_with(&cluster.replicas[owner], &renewed) >= 4).await;
    assert_eq!(other.get_task(&task.task_id, &RequestOptions::default()).await.unwrap().status, TaskStatus::Working);

    cluster.replicas[owner].child.kill().await.unwrap();
    let failed = until_status(&balanced, &task.task_id, TaskStatus::Failed).await;
    let message = failed.status_message.unwrap();
    assert!(message.contains("replica running this task stopped"), "{message}");
    assert_eq!(failed.error.unwrap().code, -32603);
    // Every replica agrees.
    let last = client(&cluster.replicas[(owner + 2) % 3].url);
    assert_eq!(until_status(&last, &task.task_id, TaskStatus::Failed).await.status, TaskStatus::Failed);
}
