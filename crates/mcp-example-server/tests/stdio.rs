//! The example server over real stdio pipes: the server loop's answers to
//! bad input, and the SDK's child-process client against it and against
//! small misbehaving servers.

use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CompletionArgument, CompletionReference, ContentBlock, ElicitResult, ResourceContents, SubscriptionFilter,
};
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::{Map, Value, json};
use test_support::{RawPeer, request_meta};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn meta_params(extra: Value) -> Value {
    let mut params = extra;
    params["_meta"] = request_meta(json!({}));
    params
}

#[tokio::test]
async fn bad_lines_are_answered_and_the_connection_goes_on() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    peer.send("this is not json").await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32700);
    assert!(reply.get("id").is_none());

    peer.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\"}\n").await;
    assert_eq!(peer.recv().await["error"]["code"], -32700);

    peer.send(&request(3, "no/such/method", meta_params(json!({})))).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(3), json!(-32601)));

    peer.send(&request(4, "tools/list", json!({}))).await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32602);
    assert!(reply["error"]["message"].as_str().unwrap().contains("protocolVersion"));

    let mut old = meta_params(json!({}));
    old["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    peer.send(&request(5, "tools/list", old)).await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32022);
    assert_eq!(reply["error"]["data"], json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}));

    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"x":{}{}}}}}"#,
        "[".repeat(80),
        "]".repeat(80)
    );
    peer.send(&deep).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(6), json!(-32600)));
    assert_eq!(reply["error"]["data"]["cause"], "too_deep");

    peer.send(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#).await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);

    peer.send(&request(7, "tools/list", meta_params(json!({})))).await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 7);
    assert!(reply["result"]["tools"].as_array().unwrap().len() >= 9);
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn oversized_line_is_answered_with_its_trailing_id() {
    let mut peer = RawPeer::spawn(SERVER, &["--max-line-bytes", "1024"]);
    let mut params = meta_params(json!({"name": "echo", "arguments": {"text": "x".repeat(5000)}}));
    params["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] = json!("typescript-style");
    // The TypeScript SDK writes the id as the last member.
    let line = format!(r#"{{"method":"tools/call","params":{params},"jsonrpc":"2.0","id":"big-1"}}"#);
    peer.send(&line).await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], "big-1");
    assert_eq!(reply["error"]["code"], -32600);
    assert_eq!(reply["error"]["data"], json!({"cause": "line_too_long", "detail": 1024}));
    peer.send(&request(2, "tools/call", meta_params(json!({"name": "echo", "arguments": {"text": "ok"}})))).await;
    assert_eq!(peer.recv().await["result"]["content"][0]["text"], "ok");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn end_of_input_completes_open_streams_and_exits_zero() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    peer.send(&request(1, "subscriptions/listen", meta_params(json!({"notifications": {"toolsListChanged": true}}))))
        .await;
    assert_eq!(peer.recv().await["method"], "notifications/subscriptions/acknowledged");
    peer.close_stdin();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        let done = peer.recv().await;
        assert_eq!(done["id"], 1);
        assert_eq!(done["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
        peer.finish().await
    });
    assert_eq!(ended.await.expect("the stream ends with the input"), Some(0));
}

#[tokio::test]
async fn a_request_over_the_in_flight_limit_is_refused_without_blocking_the_reader() {
    let mut peer = RawPeer::spawn(SERVER, &["--max-in-flight", "1"]);
    peer.send(&request(
        1,
        "tools/call",
        meta_params(json!({"name": "slow", "arguments": {"steps": 2, "step_ms": 300}})),
    ))
    .await;
    peer.send(&request(2, "tools/call", meta_params(json!({"name": "echo", "arguments": {"text": "x"}})))).await;
    let first = peer.recv().await;
    assert_eq!((first["id"].clone(), first["error"]["code"].clone()), (json!(2), json!(-32603)));
    // Cancelling the slow request: it gets no response at all.
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).await;
    peer.send(&request(3, "tools/call", meta_params(json!({"name": "echo", "arguments": {"text": "after"}})))).await;
    let next = peer.recv().await;
    assert_eq!(next["id"], 3, "request 1 was cancelled and gets no response: {next}");
    assert_eq!(peer.finish().await, Some(0));
}

/// The fake servers below are scripted 2026-07-28 servers that answer only
/// the lines they expect: no era probe before the first request.
fn client_options() -> ClientOptions {
    let mut options = ClientOptions::new("stdio-test", "1");
    options.era = mcp_bridge_sdk::client::Era::Modern;
    options.capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}, "roots": {}})).unwrap();
    options.hooks.elicit_form = Some(Arc::new(|_p| {
        Box::pin(async {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {"name": "Grace"}}))
                .unwrap())
        })
    }));
    options.hooks.list_roots = Some(Arc::new(|()| {
        Box::pin(async { Ok(vec![serde_json::from_value(json!({"uri": "file:///work", "name": "work"})).unwrap()]) })
    }));
    options
}

fn text_of(content: &[ContentBlock]) -> String {
    match content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn client_runs_a_full_session_against_the_example_server() {
    let client = Client::new(client_options(), spawn(StdioCommand::new(SERVER)).unwrap());
    let o = RequestOptions::default();
    let discover = client.discover(&o).await.unwrap();
    assert_eq!(discover.meta.unwrap().server_info.unwrap().name, "mcp-example-server");
    let tools = client.list_all_tools(&o).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "add"));
    let sum = client.call_tool("add", json!({"a": 2, "b": 3}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let hello = client.call_tool("ask_name", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&hello.content), "Hello, Grace!");
    let roots = client.call_tool("list_roots", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&roots.content), "roots: file:///work");
    let mut args = Map::new();
    args.insert("name".into(), json!("Ada"));
    let prompt = client.get_prompt("greet", args, &o).await.unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let readme = client.read_resource("example://readme", &o).await.unwrap();
    assert!(matches!(&readme.contents[0], ResourceContents::Text(t) if t.text.contains("mcp-example-server")));
    let logo = client.read_resource("example://logo.png", &o).await.unwrap();
    assert!(matches!(&logo.contents[0], ResourceContents::Blob(b) if b.mime_type.as_deref() == Some("image/png")));
    let note = client.read_resource("note://welcome", &o).await.unwrap();
    assert!(matches!(&note.contents[0], ResourceContents::Text(_)));
    let reference: CompletionReference =
        serde_json::from_value(json!({"type": "ref/prompt", "name": "greet"})).unwrap();
    let argument: CompletionArgument = serde_json::from_value(json!({"name": "style", "value": "fo"})).unwrap();
    let completion = client.complete(reference, argument, None, &o).await.unwrap();
    assert_eq!(completion.completion.values, vec!["formal"]);
    let status = client.close().await.unwrap();
    assert_eq!(status.code(), Some(0), "the server exits cleanly when its stdin closes");
    assert!(client.process().unwrap().has_exited());
}

#[tokio::test]
async fn listen_over_stdio_gets_tagged_events_from_another_request() {
    let client = Client::new(client_options(), spawn(StdioCommand::new(SERVER)).unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let sink = seen.clone();
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions::default()
        .with_on_notification(Arc::new(move |n: &mcp_bridge_protocol::JsonRpcNotification| {
            sink.lock().unwrap().push(json!({"method": n.method, "params": n.params}))
        }))
        .with_inline_notifications(true)
        .with_cancel(cancel.clone());
    let filter: SubscriptionFilter =
        serde_json::from_value(json!({"resourceSubscriptions": ["note://shopping"], "toolsListChanged": true}))
            .unwrap();
    let listener = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    for _ in 0..200 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client
        .call_tool("set_note", json!({"name": "shopping", "text": "eggs"}), &RequestOptions::default())
        .await
        .unwrap();
    let events = seen.lock().unwrap().clone();
    assert_eq!(events[0]["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(events[1]["method"], "notifications/resources/updated", "the event came before the result");
    assert_eq!(events[1]["params"]["uri"], "note://shopping");
    cancel.cancel();
    assert!(matches!(listener.await.unwrap(), Err(Error::Cancelled { .. })));
    client.close().await;
}

#[tokio::test]
async fn a_request_past_its_timeout_fails_and_is_cancelled() {
    let client = Client::new(client_options(), spawn(StdioCommand::new(SERVER)).unwrap());
    let options = RequestOptions::default().with_timeout(Duration::from_millis(300));
    // The tool takes 3 s: the time limit ends the wait well before.
    let arguments = json!({"steps": 3, "step_ms": 1000});
    let call = tokio::time::timeout(Duration::from_secs(2), client.call_tool("slow", arguments, &options));
    let err = call.await.expect("the time limit ends the wait").unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The connection is still good.
    let ok = client.call_tool("echo", json!({"text": "still here"}), &RequestOptions::default()).await.unwrap();
    assert_eq!(text_of(&ok.content), "still here");
    client.close().await;
}

/// A fake server in Python: reads one request per line and answers with the
/// lines the script prints for it.
fn fake_server(script: &str) -> Client {
    let command = StdioCommand::new("python3").args(["-u", "-c", script]);
    Client::new(client_options(), spawn(command).unwrap())
}

const READ_ID: &str = "import sys, json\nline = sys.stdin.readline()\nrid = json.loads(line)['id']\n";

#[tokio::test]
async fn a_response_for_an_unknown_id_is_dropped() {
    let client = fake_server(&format!(
        "{READ_ID}print(json.dumps({{'jsonrpc':'2.0','id':999,'result':{{}}}}))\nprint(json.dumps({{'jsonrpc':'2.0','id':rid,'result':{{'resultType':'complete','content':[{{'type':'text','text':'mine'}}]}}}}))\nsys.stdin.read()"
    ));
    let result = client.call_tool("any", json!({}), &RequestOptions::default()).await.unwrap();
    assert_eq!(text_of(&result.content), "mine");
    client.close().await;
}

#[tokio::test]
async fn an_unreadable_response_fails_its_request_at_once() {
    let client = fake_server(&format!(
        "{READ_ID}print('{{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{{' % rid)\nsys.stdin.read()"
    ));
    // At once: not at the 60 s time limit.
    let o = RequestOptions::default();
    let call = tokio::time::timeout(Duration::from_secs(5), client.call_tool("any", json!({}), &o));
    let err = call.await.expect("the request fails at once").unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err:?}");
    client.close().await;
}

#[tokio::test]
async fn a_server_that_exits_mid_request_fails_it_with_closed() {
    let client = fake_server(&format!("{READ_ID}sys.exit(3)"));
    let err = client.call_tool("any", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    let status = client.process().unwrap().wait().await.unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(matches!(client.call_tool("any", json!({}), &RequestOptions::default()).await, Err(Error::Closed)));
}

#[tokio::test]
async fn an_input_request_of_an_undeclared_kind_is_refused_by_the_client() {
    let client = fake_server(&format!(
        "{READ_ID}print(json.dumps({{'jsonrpc':'2.0','id':rid,'result':{{'resultType':'input_required','inputRequests':{{'s':{{'method':'sampling/createMessage','params':{{'messages':[],'maxTokens':5}}}}}}}}}}))\nsys.stdin.read()"
    ));
    let err = client.call_tool("any", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(&err, Error::UndeclaredInputRequest { key, capability: "sampling" } if key == "s"), "{err:?}");
    client.close().await;
}

fn process_is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie is dead; only its parent has not read its status yet.
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn grandchild_of(script_dir: &std::path::Path) -> i32 {
    let file = script_dir.join("grandchild.pid");
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the fake server did not start its grandchild");
}

#[tokio::test]
async fn no_child_or_grandchild_outlives_its_client() {
    for close_first in [true, false] {
        let dir = std::env::temp_dir().join(format!("mcp-stdio-test-{}-{close_first}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = format!("sleep 300 & echo $! > {}/grandchild.pid; exec cat > /dev/null", dir.display());
        let client =
            Client::new(client_options(), spawn(StdioCommand::new("sh").args(["-c", script.as_str()])).unwrap());
        let child = i32::try_from(client.process().unwrap().id()).unwrap();
        let grandchild = grandchild_of(&dir).await;
        assert!(!process_is_gone(grandchild));
        if close_first {
            client.close().await;
        } else {
            drop(client);
        }
        for _ in 0..300 {
            if process_is_gone(child) && process_is_gone(grandchild) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(process_is_gone(child), "child {child} survived (close_first = {close_first})");
        assert!(process_is_gone(grandchild), "grandchild {grandchild} survived (close_first = {close_first})");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn close_right_after_spawn_ends() {
    // No await between spawn and close: the supervisor task has not run yet
    // (this once waited forever on a token no child would fire).
    let client =
        Client::new(client_options(), spawn(StdioCommand::new("sh").args(["-c", "exec cat > /dev/null"])).unwrap());
    let closed = tokio::time::timeout(Duration::from_secs(15), client.close()).await;
    assert!(closed.is_ok(), "close did not end");
}

#[tokio::test]
async fn a_program_that_cannot_start_is_a_spawn_error() {
    let err = spawn(StdioCommand::new("/nonexistent/mcp-server")).unwrap_err();
    assert!(matches!(err, Error::Spawn { .. }));
}

/// A server that dies on the first request of its first life (marked by a
/// file), then answers `tools/list` and `tools/call` in later lives.
fn flapping_server(marker: &std::path::Path, max_restarts: u32) -> Client {
    let script = format!(
        r#"
import json, os, sys
marker = {marker:?}
first_life = not os.path.exists(marker)
for line in sys.stdin:
    msg = json.loads(line)
    if first_life:
        open(marker, "w").close()
        sys.exit(7)
    if msg["method"] == "tools/list":
        result = {{"resultType": "complete", "tools": []}}
    else:
        result = {{"resultType": "complete", "content": [{{"type": "text", "text": "pid %d" % os.getpid()}}]}}
    print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
"#,
        marker = marker.display().to_string()
    );
    let command = StdioCommand::new("python3").args(["-u", "-c", script.as_str()]).max_restarts(max_restarts);
    Client::new(client_options(), spawn(command).unwrap())
}

fn marker(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-flap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

#[tokio::test]
async fn a_forced_retry_reaches_the_restarted_child() {
    let marker = marker("force");
    let client = flapping_server(&marker, 1);
    let options = RequestOptions::default().with_retry(mcp_bridge_sdk::client::RetryPolicy::Force);
    let result = client.call_tool("any", json!({}), &options).await.unwrap();
    assert!(text_of(&result.content).starts_with("pid "));
    let process = client.process().unwrap();
    assert_eq!(process.restarts(), 1);
    client.close().await;
    let _ = std::fs::remove_file(&marker);
}

#[tokio::test]
async fn the_default_retry_resends_reads_but_not_tool_calls() {
    let marker = marker("auto");
    let client = flapping_server(&marker, 1);
    let err = client.call_tool("any", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "a tool call is not sent twice by default: {err:?}");
    let process = client.process().unwrap();
    for _ in 0..500 {
        if process.exit_status().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(process.exit_status().and_then(|s| s.code()), Some(7));
    // The child was started again; a list is idempotent and goes through.
    assert!(client.list_tools(None, &RequestOptions::default()).await.unwrap().tools.is_empty());
    assert_eq!(process.restarts(), 1);
    client.close().await;
    let _ = std::fs::remove_file(&marker);
}

#[tokio::test]
async fn without_restarts_a_forced_retry_still_fails_with_closed() {
    let marker = marker("none");
    let client = flapping_server(&marker, 0);
    let options = RequestOptions::default().with_retry(mcp_bridge_sdk::client::RetryPolicy::Force);
    assert!(matches!(client.call_tool("any", json!({}), &options).await, Err(Error::Closed)));
    assert_eq!(client.process().unwrap().restarts(), 0);
    let _ = std::fs::remove_file(&marker);
}

/// The server's stdin and stdout as a Node.js client hands them over (one
/// socket of a pair for both) and as a shell does with `< file`: the same
/// answers as over pipes.
#[cfg(unix)]
#[test]
fn stdin_and_stdout_may_be_a_socket_pair_or_a_file() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};

    let lines = format!(
        "{}\n{}\n",
        request(1, "server/discover", meta_params(json!({}))),
        request(2, "tools/call", meta_params(json!({"name": "echo", "arguments": {"text": "over a socket"}})))
    );
    let answers = |text: &str| -> Vec<Value> { text.lines().map(|l| serde_json::from_str(l).unwrap()).collect() };
    let check = |answers: Vec<Value>| {
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert!(answers[0]["result"]["supportedVersions"].is_array(), "{}", answers[0]);
        assert_eq!(answers[1]["result"]["content"][0]["text"], "over a socket");
    };

    let (ours, theirs) = UnixStream::pair().unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut child = Command::new(SERVER)
        .stdin(Stdio::from(OwnedFd::from(theirs.try_clone().unwrap())))
        .stdout(Stdio::from(OwnedFd::from(theirs)))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (&ours).write_all(lines.as_bytes()).unwrap();
    let mut reader = BufReader::new(&ours);
    let mut text = String::new();
    for _ in 0..2 {
        reader.read_line(&mut text).unwrap();
    }
    check(answers(&text));
    // Read by the event loop, not a blocking thread: the socket is non-blocking.
    let fdinfo = std::fs::read_to_string(format!("/proc/{}/fdinfo/0", child.id())).unwrap();
    let flags =
        fdinfo.lines().find_map(|l| l.strip_prefix("flags:")).map(|f| u32::from_str_radix(f.trim(), 8).unwrap());
    assert_eq!(flags.map(|f| f & 0o4000), Some(0o4000), "{fdinfo}");
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(child.wait().unwrap().success());

    let file = std::env::temp_dir().join(format!("mcp-example-stdin-{}", std::process::id()));
    std::fs::write(&file, &lines).unwrap();
    let output =
        Command::new(SERVER).stdin(std::fs::File::open(&file).unwrap()).stderr(Stdio::null()).output().unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(output.status.success());
    check(answers(&String::from_utf8(output.stdout).unwrap()));
}
