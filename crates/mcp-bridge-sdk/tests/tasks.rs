//! The Tasks extension end to end through the SDK's client and server:
//! task creation and the fall-through for clients without the extension,
//! polling, input through `tasks/update`, failure, cancellation, time
//! limits, status notifications, and the routing header on HTTP.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CallToolResult, ContentBlock, ElicitResult, Implementation, InputRequests, InputResponse, InputResponses,
    SubscriptionFilter, TaskStatus, Tool,
};
use mcp_bridge_sdk::client::{Diagnostics, TaskRecord, TaskStore, ToolOutcome, task_of_notification, task_result};
use mcp_bridge_sdk::server::{TaskOptions, TaskSupport, ToolCall};
use mcp_bridge_sdk::store::{RecordStore, StoreError};
use mcp_bridge_sdk::{Client, ClientOptions, Error, HandlerError, Reply, RequestOptions, Server, transport};
use serde_json::{Value, json};

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

fn text(text: impl Into<String>) -> Result<CallToolResult, HandlerError> {
    Ok(serde_json::from_value(json!({"content": [{"type": "text", "text": text.into()}]})).unwrap())
}

fn text_of(result: &CallToolResult) -> &str {
    match &result.content[0] {
        ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

fn form(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message,
        "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}})
}

fn answer_of(responses: &InputResponses, key: &str) -> String {
    match responses.get(key) {
        Some(InputResponse::Elicit(a)) => a.content.as_ref().and_then(|c| c["answer"].as_str()).unwrap_or("?").into(),
        _ => "none".into(),
    }
}

/// A server with task tools: `sleep` (ms), `ask` (one question), `ask_two`
/// (two at once), `fail`, `tool_error`, `panic`, `only_task` (required),
/// and `ask_then_task` (a multi round-trip round, then a task).
fn server() -> Server {
    let sleep = |call: ToolCall, _ctx| async move {
        let ms = call.arguments.get("ms").and_then(Value::as_u64).unwrap_or(100);
        Ok(Reply::task(move |task| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            text(format!("slept {ms} ms in {}", task.task_id().unwrap_or("no task")))
        }))
    };
    Server::builder(Implementation::new("tasks", "1"))
        .tasks(TaskOptions::default().with_poll_interval(Duration::from_millis(20)))
        .tool(tool("sleep"), sleep)
        .tool(tool("ask"), |_call, _ctx| async move {
            Ok(Reply::task(|task| async move {
                let asked: InputRequests = serde_json::from_value(json!({"q1": form("First?")})).unwrap();
                let answers = task.input(asked).await?;
                text(format!("answered {}", answer_of(&answers, "q1")))
            }))
        })
        .tool(tool("ask_two"), |_call, _ctx| async move {
            Ok(Reply::task(|task| async move {
                let asked: InputRequests = serde_json::from_value(json!({"a": form("A?"), "b": form("B?")})).unwrap();
                let answers = task.input(asked).await?;
                text(format!("{} and {}", answer_of(&answers, "a"), answer_of(&answers, "b")))
            }))
        })
        .tool(tool("fail"), |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move { Err::<CallToolResult, _>(HandlerError::internal("the disk is full")) }))
        })
        .tool(tool("tool_error"), |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move {
                Ok(serde_json::from_value(json!({"content": [{"type": "text", "text": "bad input"}], "isError": true}))
                    .unwrap())
            }))
        })
        .tool(tool("panic"), |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move {
                if std::hint::black_box(true) {
                    panic!("the worker broke");
                }
                text("unreachable")
            }))
        })
        .task_tool(tool("only_task"), TaskSupport::Required, |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move { text("done as a task") }))
        })
        .tool(tool("ask_then_task"), |call: ToolCall, _ctx| async move {
            if let Some(InputResponse::Elicit(a)) = call.input_responses.get("name") {
                let name = a.content.as_ref().and_then(|c| c["answer"].as_str()).unwrap_or("?").to_owned();
                return Ok(Reply::task(move |_task| async move { text(format!("Hello, {name}!")) }));
            }
            let requests: InputRequests = serde_json::from_value(json!({"name": form("Name?")})).unwrap();
            Ok(Reply::InputRequired { requests, state: None })
        })
        .build()
}

/// A client that declares the extension (when `tasks`) and form
/// elicitation, answering every question with `reply`; counts its answers.
fn client(server: &Server, tasks: bool, asked: Arc<AtomicUsize>) -> Client {
    stored_client(server, tasks, asked, None)
}

/// [`client`] with a task store.
fn stored_client(server: &Server, tasks: bool, asked: Arc<AtomicUsize>, store: Option<TaskStore>) -> Client {
    let mut options = ClientOptions::new("tasks-client", "1");
    options.task_store = store;
    let mut capabilities = json!({"elicitation": {}});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    options.capabilities = serde_json::from_value(capabilities).unwrap();
    options.hooks.elicit_form = Some(Arc::new(move |params| {
        asked.fetch_add(1, Ordering::SeqCst);
        let reply = format!("re: {}", params.message);
        Box::pin(async move {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {"answer": reply}}))
                .unwrap())
        })
    }));
    Client::new(options, transport::memory::connect(server))
}

fn code(result: Result<impl std::fmt::Debug, Error>) -> i64 {
    match result {
        Err(Error::Rpc { error }) => error.code,
        other => panic!("an RPC error was expected, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_is_created_for_a_declaring_client_and_followed_to_its_result() {
    let server = server();
    let client = client(&server, true, Arc::default());
    let o = RequestOptions::default();
    let ToolOutcome::Task(task) = client.call_tool_or_task("sleep", json!({"ms": 200}), &o).await.unwrap() else {
        panic!("a task was expected")
    };
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(task.poll_interval_ms, Some(20));
    assert_eq!(task.ttl_ms, Some(3_600_000));
    // Created before the answer: it can be read at once.
    assert_eq!(client.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working);
    let done = client.await_task(&task.task_id, &o).await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(text_of(&task_result(&done).unwrap()), format!("slept 200 ms in {}", task.task_id));
    // call_tool hides the task.
    let result = client.call_tool("sleep", json!({"ms": 10}), &o).await.unwrap();
    assert!(text_of(&result).starts_with("slept 10 ms in "));
    // A tool error is a completed task; the result says isError.
    let tool_error = client.call_tool("tool_error", json!({}), &o).await.unwrap();
    assert_eq!(tool_error.is_error, Some(true));
}

#[tokio::test(start_paused = true)]
async fn a_client_that_did_not_declare_the_extension_declares_it_when_its_caller_uses_tasks() {
    let server = server();
    let client = client(&server, false, Arc::default());
    let o = RequestOptions::default();
    // call_tool declares what the client declares: a result, or -32021 for
    // what cannot run without a task.
    let result = client.call_tool("sleep", json!({"ms": 10}), &o).await.unwrap();
    assert_eq!(text_of(&result), "slept 10 ms in no task");
    assert_eq!(code(client.call_tool("only_task", json!({}), &o).await), -32021);
    assert_eq!(code(client.call_tool("ask", json!({}), &o).await), -32021);

    // The methods of tasks declare the extension for their own requests.
    let ToolOutcome::Task(task) = client.call_tool_or_task("sleep", json!({"ms": 300}), &o).await.unwrap() else {
        panic!("call_tool_or_task asks for a task")
    };
    let completed = Arc::new(tokio::sync::Notify::new());
    let on_completed = completed.clone();
    let listen_options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
        if task_of_notification(n).is_some_and(|t| t.status == TaskStatus::Completed) {
            on_completed.notify_one();
        }
    }));
    let filter = SubscriptionFilter { task_ids: Some(vec![task.task_id.clone()]), ..Default::default() };
    let listener = client.clone();
    let listening = tokio::spawn(async move { listener.listen(filter, &listen_options).await });
    let done = client.await_task(&task.task_id, &o).await.unwrap();
    assert_eq!(text_of(&task_result(&done).unwrap()), format!("slept 300 ms in {}", task.task_id));
    tokio::time::timeout(Duration::from_secs(10), completed.notified())
        .await
        .expect("a listen for task ids declares it");
    assert!(!listening.is_finished(), "the listen stream was not refused: {listening:?}");
    assert_eq!(code(client.get_task("no-such-task", &o).await), -32602, "unknown, not undeclared");
    let ToolOutcome::Task(only) = client.call_tool_or_task("only_task", json!({}), &o).await.unwrap() else { panic!() };
    client.cancel_task(&only.task_id, &o).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn input_requests_are_answered_once_each_through_tasks_update() {
    let server = server();
    let asked = Arc::new(AtomicUsize::new(0));
    let client = client(&server, true, asked.clone());
    let o = RequestOptions::default();
    let result = client.call_tool("ask", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&result), "answered re: First?");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the question is answered once, however often it is polled");

    // Two questions at once, answered one at a time by hand.
    let ToolOutcome::Task(task) = client.call_tool_or_task("ask_two", json!({}), &o).await.unwrap() else { panic!() };
    let id = task.task_id;
    input_required(&client, &id).await;
    let pending = client.get_task(&id, &o).await.unwrap().input_requests.unwrap();
    assert_eq!(pending.keys().collect::<Vec<_>>(), ["a", "b"]);
    let accept = |answer: &str| -> InputResponse {
        serde_json::from_value(json!({"action": "accept", "content": {"answer": answer}})).unwrap()
    };
    let first = InputResponses::from([("a".to_owned(), accept("alpha")), ("zzz".to_owned(), accept("ignored"))]);
    client.update_task(&id, first, &o).await.unwrap();
    let after = client.get_task(&id, &o).await.unwrap();
    assert_eq!(after.status, TaskStatus::InputRequired);
    assert_eq!(after.input_requests.unwrap().keys().collect::<Vec<_>>(), ["b"]);
    client.update_task(&id, InputResponses::from([("b".to_owned(), accept("beta"))]), &o).await.unwrap();
    let done = client.await_task(&id, &o).await.unwrap();
    assert_eq!(text_of(&task_result(&done).unwrap()), "alpha and beta");
}

#[tokio::test(start_paused = true)]
async fn failures_cancellation_and_time_limits() {
    let server = server();
    let client = client(&server, true, Arc::default());
    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    let o = RequestOptions::default().with_diagnostics(diagnostics.clone());
    let failed = client.call_tool("fail", json!({}), &o).await.unwrap_err();
    assert!(matches!(&failed, Error::Rpc { error } if error.code == -32603 && error.message == "the disk is full"));
    assert_eq!(diagnostics.lock().unwrap().rpc_error.as_ref().map(|e| e.code), Some(-32603));
    let panicked = client.call_tool("panic", json!({}), &o).await.unwrap_err();
    assert!(matches!(&panicked, Error::Rpc { error } if error.message.contains("panicked")), "{panicked:?}");

    let ToolOutcome::Task(long) = client.call_tool_or_task("sleep", json!({"ms": 60_000}), &o).await.unwrap() else {
        panic!()
    };
    client.cancel_task(&long.task_id, &o).await.unwrap();
    assert_eq!(client.get_task(&long.task_id, &o).await.unwrap().status, TaskStatus::Cancelled);
    let cancelled = client.await_task(&long.task_id, &o).await.unwrap_err();
    assert!(matches!(cancelled, Error::TaskCancelled { .. }), "{cancelled:?}");
    // Cancelling an ended task is acknowledged the same; an unknown one is -32602.
    client.cancel_task(&long.task_id, &o).await.unwrap();
    assert_eq!(code(client.get_task("no-such-task", &o).await), -32602);
    assert_eq!(code(client.cancel_task("no-such-task", &o).await), -32602);

    // A time limit cancels the task on the server too.
    let short = RequestOptions::default().with_timeout(Duration::from_millis(200));
    let ToolOutcome::Task(slow) = client.call_tool_or_task("sleep", json!({"ms": 60_000}), &o).await.unwrap() else {
        panic!()
    };
    let timed_out = client.await_task(&slow.task_id, &short).await.unwrap_err();
    assert!(matches!(timed_out, Error::Timeout { .. }), "{timed_out:?}");
    assert_eq!(client.get_task(&slow.task_id, &o).await.unwrap().status, TaskStatus::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn a_task_polled_as_often_as_the_budget_allows_is_cancelled() {
    let server = server();
    let capabilities = serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})).unwrap();
    let options = ClientOptions::new("tasks-client", "1").with_capabilities(capabilities).with_max_task_polls(3);
    let client = Client::new(options, transport::memory::connect(&server));
    let o = RequestOptions::default();
    let ToolOutcome::Task(slow) = client.call_tool_or_task("sleep", json!({"ms": 60_000}), &o).await.unwrap() else {
        panic!()
    };
    // Long before the ten-minute deadline: three polls 20 ms apart.
    let over = client.await_task(&slow.task_id, &o).await.unwrap_err();
    assert!(matches!(&over, Error::TaskPollBudget { polls: 3, task_id } if *task_id == slow.task_id), "{over:?}");
    assert_eq!(client.get_task(&slow.task_id, &o).await.unwrap().status, TaskStatus::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn input_rounds_then_a_task_and_status_notifications_on_a_listen_stream() {
    let server = server();
    let asked = Arc::new(AtomicUsize::new(0));
    let client = client(&server, true, asked.clone());
    let o = RequestOptions::default();
    let result = client.call_tool("ask_then_task", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&result), "Hello, re: Name?!");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    let ToolOutcome::Task(task) = client.call_tool_or_task("sleep", json!({"ms": 300}), &o).await.unwrap() else {
        panic!()
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (record, ended) = (seen.clone(), Arc::new(tokio::sync::Notify::new()));
    let on_end = ended.clone();
    let listen_options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
        if let Some(task) = task_of_notification(n) {
            let done = task.status == TaskStatus::Completed;
            record.lock().unwrap().push(task);
            if done {
                on_end.notify_one();
            }
        }
    }));
    let filter =
        SubscriptionFilter { task_ids: Some(vec![task.task_id.clone(), "unknown".into()]), ..Default::default() };
    let listener = client.clone();
    tokio::spawn(async move { listener.listen(filter, &listen_options).await });
    client.await_task(&task.task_id, &o).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), ended.notified()).await.expect("the completion reaches the stream");
    let seen = seen.lock().unwrap();
    let last = seen.last().expect("a notifications/tasks event");
    assert_eq!((last.task_id.as_str(), last.status), (task.task_id.as_str(), TaskStatus::Completed));
    assert!(last.result.is_some(), "the event carries the whole task");
}

#[tokio::test]
async fn tasks_over_http_carry_the_task_id_in_mcp_name() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = server();
    tokio::spawn(async move { served.serve_http(listener, Default::default(), std::future::pending()).await });
    let mut options = ClientOptions::new("tasks-http", "1");
    options.capabilities =
        serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})).unwrap();
    let config = transport::http::HttpConfig::new(format!("http://{addr}/mcp"));
    let client = Client::new(options, transport::http::connect(config).unwrap());
    let o = RequestOptions::default();
    let result = client.call_tool("sleep", json!({"ms": 50}), &o).await.unwrap();
    assert!(text_of(&result).starts_with("slept 50 ms"));
    // A tasks/get whose Mcp-Name disagrees with its taskId is refused.
    let raw = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tasks/get")
        .header("mcp-name", "another-task")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t1",
                "_meta": test_support::request_meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    assert_eq!(raw.json::<Value>().await.unwrap()["error"]["code"], -32020);
}

/// Waits until the task asks for input, polling as a client would (at
/// most 10 s of the test's clock).
async fn input_required(client: &Client, id: &str) {
    let polled = tokio::time::timeout(Duration::from_secs(10), async {
        while client.get_task(id, &RequestOptions::default()).await.unwrap().status != TaskStatus::InputRequired {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    polled.await.expect("the task asks for input within 10 s");
}

#[tokio::test(start_paused = true)]
async fn recorded_tasks_survive_a_restart_and_saved_answers_are_not_asked_again() {
    let dir = std::env::temp_dir().join(format!("mcp-sdk-task-store-{}", std::process::id()));
    let key_file = dir.join("key");
    let records = dir.join("records");
    let server = server();
    let o = RequestOptions::default();
    // The first process: two tasks wait for input when it stops.
    let (saved_answer, unanswered) = {
        let store = TaskStore::files(&records, &key_file).unwrap();
        let before = stored_client(&server, true, Arc::default(), Some(store.clone()));
        let ToolOutcome::Task(a) = before.call_tool_or_task("ask", json!({}), &o).await.unwrap() else { panic!() };
        let ToolOutcome::Task(b) = before.call_tool_or_task("ask", json!({}), &o).await.unwrap() else { panic!() };
        let ids: Vec<String> = store.tasks().unwrap().into_iter().map(|r| r.task_id).collect();
        assert_eq!(ids, [a.task_id.clone(), b.task_id.clone()], "tasks are recorded as they are created");
        input_required(&before, &a.task_id).await;
        input_required(&before, &b.task_id).await;
        // It had saved its answer to task a, and stopped before sending it.
        let answer: InputResponse =
            serde_json::from_value(json!({"action": "accept", "content": {"answer": "saved before the crash"}}))
                .unwrap();
        let mut tasks = store.tasks().unwrap();
        tasks[0].pending_input.insert("q1".into(), answer);
        let raw = mcp_bridge_sdk::store::FileStore::open(&records, &key_file).unwrap();
        raw.save("tasks", &serde_json::to_string(&tasks).unwrap()).unwrap();
        (a.task_id, b.task_id)
    };
    // Owner-only (on Unix), and nothing readable in the file.
    for entry in std::fs::read_dir(&records).unwrap() {
        let path = entry.unwrap().path();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(!String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains("saved before the crash"));
    }
    // The second process resumes both.
    let asked = Arc::new(AtomicUsize::new(0));
    let store = TaskStore::files(&records, &key_file).unwrap();
    let after = stored_client(&server, true, asked.clone(), Some(store.clone()));
    let resumed = after.resume_tasks(&o).await.unwrap();
    assert_eq!(resumed.len(), 2);
    let result_of = |id: &str| {
        let task = resumed.iter().find(|r| r.record.task_id == id).unwrap();
        text_of(&task_result(task.outcome.as_ref().unwrap()).unwrap()).to_owned()
    };
    assert_eq!(result_of(&saved_answer), "answered saved before the crash");
    assert_eq!(result_of(&unanswered), "answered re: First?");
    assert_eq!(asked.load(Ordering::SeqCst), 1, "only the unanswered question is asked");
    assert!(store.tasks().unwrap().is_empty(), "ended tasks are forgotten");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store that cannot be written; it keeps what it was asked to save.
#[derive(Debug, Default)]
struct BrokenStore(Mutex<Vec<String>>);

impl RecordStore for BrokenStore {
    fn load(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    fn save(&self, _key: &str, value: &str) -> Result<(), StoreError> {
        self.0.lock().unwrap().push(value.to_owned());
        Err(StoreError::Other { reason: "the disk is full".into() })
    }
    fn remove(&self, _key: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_task_that_cannot_be_recorded_is_cancelled_and_unknown_tasks_are_dropped() {
    let server = server();
    let o = RequestOptions::default();
    let broken = Arc::new(BrokenStore::default());
    let recording = stored_client(&server, true, Arc::default(), Some(TaskStore::new(broken.clone(), "tasks")));
    let err = recording.call_tool_or_task("sleep", json!({"ms": 60_000}), &o).await.unwrap_err();
    assert!(matches!(&err, Error::TaskStore(reason) if reason.to_string().contains("disk is full")), "{err:?}");
    // The server was told: no task is left running for nobody.
    let attempted: Vec<TaskRecord> = serde_json::from_str(&broken.0.lock().unwrap()[0]).unwrap();
    let observer = client(&server, true, Arc::default());
    assert_eq!(observer.get_task(&attempted[0].task_id, &o).await.unwrap().status, TaskStatus::Cancelled);

    // A recorded task the server does not know (expired) is forgotten.
    let records = Arc::new(mcp_bridge_sdk::store::MemoryStore::default());
    records.save("tasks", &json!([{"taskId": "not-a-task", "tool": "sleep"}]).to_string()).unwrap();
    let store = TaskStore::new(records, "tasks");
    let resuming = stored_client(&server, true, Arc::default(), Some(store.clone()));
    let resumed = resuming.resume_tasks(&o).await.unwrap();
    assert!(matches!(&resumed[0].outcome, Err(Error::Rpc { error }) if error.code == -32602));
    assert!(store.tasks().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_work_of_a_task_ends_when_its_server_is_gone() {
    // The work holds `held` until it is dropped; its receiver hears of that.
    let (held, released) = tokio::sync::oneshot::channel::<()>();
    let held = Arc::new(Mutex::new(Some(held)));
    let server = Server::builder(Implementation::new("tasks", "1"))
        .tasks(TaskOptions::default())
        .tool(tool("hold"), move |_call, _ctx| {
            let held = held.lock().unwrap().take();
            async move {
                Ok(Reply::task(move |_task| async move {
                    let _held = held;
                    std::future::pending::<()>().await;
                    text("never")
                }))
            }
        })
        .build();
    let client = client(&server, true, Arc::default());
    let o = RequestOptions::default();
    let ToolOutcome::Task(task) = client.call_tool_or_task("hold", json!({}), &o).await.unwrap() else { panic!() };
    assert_eq!(client.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working);
    client.close().await;
    drop((client, server));
    let ended = tokio::time::timeout(Duration::from_secs(10), released).await;
    assert!(matches!(ended, Ok(Err(_))), "the work still holds its guard: {ended:?}");
}

/// On a protected endpoint a task is its creator's: another subject's
/// `tasks/get`, `tasks/cancel` and listen stream find no such task, even
/// with its id.
#[tokio::test(start_paused = true)]
async fn a_task_is_reachable_by_the_subject_that_created_it_only() {
    use mcp_bridge_sdk::server::protect::{Caller, CallerSlot};
    let server = server();
    let as_subject = |subject: &str| {
        let mut options = ClientOptions::new("tasks-client", "1");
        options.capabilities =
            serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})).unwrap();
        let caller = CallerSlot::new(Some(std::sync::Arc::new(Caller::new(subject, Vec::<String>::new()))));
        Client::new(options, transport::memory::connect_as(&server, caller))
    };
    let (alice, bob) = (as_subject("alice"), as_subject("bob"));
    let o = RequestOptions::default();
    let ToolOutcome::Task(task) = alice.call_tool_or_task("sleep", json!({"ms": 60_000}), &o).await.unwrap() else {
        panic!("a task was expected")
    };
    assert_eq!(alice.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working);
    let stolen = bob.get_task(&task.task_id, &o).await.unwrap_err();
    assert!(stolen.to_string().to_lowercase().contains("task"), "{stolen}");
    assert!(bob.cancel_task(&task.task_id, &o).await.is_err(), "bob cannot cancel alice's task");
    assert_eq!(alice.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working, "still running");
    alice.cancel_task(&task.task_id, &o).await.unwrap();
    assert_eq!(alice.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Cancelled);
}
