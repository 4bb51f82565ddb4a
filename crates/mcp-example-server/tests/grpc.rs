//! MCP over gRPC on Google's reference proto: our client against the
//! example server's gRPC service, Google's generated Python stubs (with
//! grpcio) against it, our client against a grpcio server written on those
//! stubs, and the faults: a message over the limit, a server gone mid-call,
//! a status without details.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::types::{ContentBlock, ElicitResult, SubscriptionFilter};
use mcp_bridge_protocol::{error_code, types::CompletionReference};
use mcp_bridge_sdk::client::Diagnostics;
use mcp_bridge_sdk::grpc::DEFAULT_MAX_MESSAGE_BYTES;
use mcp_bridge_sdk::grpc::client::{GrpcConfig, connect};
use mcp_bridge_sdk::grpc::service::{GrpcServeOptions, serve};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

/// The example server's gRPC service on a free loopback port, with
/// messages up to `max` bytes.
async fn example_over_grpc(max: usize) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = mcp_example_server::build_server();
    let options = GrpcServeOptions::default().with_max_message_bytes(max);
    tokio::spawn(async move { serve(&server, listener, options, std::future::pending()).await });
    addr
}

/// A client that answers form elicitations with the name `name`.
fn client(config: GrpcConfig, name: &'static str) -> Client {
    let mut options = ClientOptions::new("grpc-test", "1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
    options.hooks = options.hooks.on_form(move |_params| async move {
        serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {"name": name}}))
    });
    Client::new(options, connect(config).unwrap())
}

fn text_of(content: &[ContentBlock]) -> &str {
    match content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

fn rpc_code(result: Result<impl std::fmt::Debug, Error>) -> i64 {
    match result {
        Err(Error::Rpc { error }) => error.code,
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

#[tokio::test]
async fn our_client_uses_the_example_server_over_grpc() {
    let addr = example_over_grpc(DEFAULT_MAX_MESSAGE_BYTES).await;
    let client = client(GrpcConfig::new(format!("http://{addr}")), "Grpc");
    let o = RequestOptions::default();
    assert!(client.discover(&o).await.unwrap().capabilities.tools.is_some());

    let tools = client.list_all_tools(&o).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "ask_name"), "{tools:?}");
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(add.output_schema.is_some(), "the output schema came through");

    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    let sum = client
        .call_tool("add", json!({"a": 19, "b": 23}), &o.clone().with_diagnostics(diagnostics.clone()))
        .await
        .unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 42})));
    assert_eq!(diagnostics.lock().unwrap().http_status, Some(200));

    // An input round: the InputRequiredResult over gRPC, the hook's answer
    // and the sealed state back on the retry.
    let hello = client.call_tool("ask_name", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&hello.content), "Hello, Grpc!");

    let prompt = client
        .get_prompt("greet", serde_json::from_value(json!({"name": "Ada", "style": "formal"})).unwrap(), &o)
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&prompt.messages[0].content).unwrap()["text"],
        "Please write a formal greeting for Ada."
    );
    let readme = client.read_resource("example://readme", &o).await.unwrap();
    assert!(!serde_json::to_value(&readme.contents).unwrap().to_string().is_empty());
    let logo = client.read_resource("example://logo.png", &o).await.unwrap();
    assert_eq!(serde_json::to_value(&logo.contents[0]).unwrap()["mimeType"], "image/png");
    let templates = client.list_all_resource_templates(&o).await.unwrap();
    assert_eq!(templates[0].uri_template, "note://{name}");
    let reference: CompletionReference =
        serde_json::from_value(json!({"type": "ref/resource", "uri": "note://{name}"})).unwrap();
    let argument = serde_json::from_value(json!({"name": "name", "value": "sh"})).unwrap();
    let completion = client.complete(reference, argument, None, &o).await.unwrap();
    assert_eq!(completion.completion.values, ["shopping"]);

    // Refusals come back as the server's JSON-RPC errors, their gRPC status
    // mapped to an HTTP one.
    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    let unknown = client.call_tool("nope", json!({}), &o.clone().with_diagnostics(diagnostics.clone())).await;
    assert_eq!(rpc_code(unknown), error_code::INVALID_PARAMS);
    assert_eq!(diagnostics.lock().unwrap().http_status, Some(400));
    assert_eq!(rpc_code(client.read_resource("note://none", &o).await), error_code::INVALID_PARAMS);

    // What the proto has no RPC for fails at once, naming it.
    let listen = client.listen(SubscriptionFilter::default(), &o).await;
    match listen {
        Err(Error::Rpc { error }) => {
            assert_eq!(error.code, error_code::METHOD_NOT_FOUND);
            assert!(error.message.contains("subscriptions/listen"), "{}", error.message);
        }
        other => panic!("listen over gRPC: {other:?}"),
    }
    client.close().await;
}

#[tokio::test]
async fn a_message_over_the_limit_is_refused_with_a_clear_error() {
    let addr = example_over_grpc(64 * 1024).await;
    let client = client(GrpcConfig::new(format!("http://{addr}")), "Grpc");
    let o = RequestOptions::default();
    let big = "x".repeat(100 * 1024);
    let refused = client.call_tool("echo", json!({"text": big}), &o).await;
    match refused {
        Err(Error::Rpc { error }) => assert!(
            error.message.contains("ResourceExhausted") || error.message.contains("too large"),
            "{}",
            error.message
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The connection still serves.
    let sum = client.call_tool("add", json!({"a": 1, "b": 1}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 2})));
    // A client's own limit: a request over it is refused before it is
    // sent, naming the sizes; an answer over it is refused when it comes.
    let small = client_with_limit(addr, 2048);
    match small.call_tool("echo", json!({"text": "y".repeat(4000)}), &o).await {
        Err(Error::InvalidRequest { reason }) => assert!(reason.contains("over the limit of 2048 bytes"), "{reason}"),
        other => panic!("expected a refusal before sending, got {other:?}"),
    }
    match small.list_all_tools(&o).await {
        Err(Error::Rpc { error }) => assert!(error.message.contains("too large"), "{}", error.message),
        other => panic!("expected the answer refused, got {other:?}"),
    }
}

fn client_with_limit(addr: SocketAddr, max: usize) -> Client {
    client(GrpcConfig::new(format!("http://{addr}")).with_max_message_bytes(max), "Grpc")
}

/// Google's generated Python stubs, with grpcio, against the example
/// server started with `--grpc`.
#[tokio::test]
async fn googles_python_stubs_use_the_example_server() {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-example-server"))
        .args(["--grpc", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = test_support::stderr_line(&mut server, "mcp-example-server", |line| {
        line.split("serving gRPC at ").nth(1).map(|a| a.trim().to_owned())
    })
    .await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc/python_client.py");
    let output =
        tokio::process::Command::new(test_support::grpc_python()).arg(script).arg(&addr).output().await.unwrap();
    assert!(output.status.success(), "the Python client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(seen["tools"].as_array().unwrap().contains(&json!("add")), "{seen}");
    assert_eq!(seen["sum"], json!({"sum": 42.0}));
    assert_eq!(seen["firstRound"], "RESULT_TYPE_INPUT_REQUIRED");
    assert_eq!(seen["asked"], "What is your name?");
    assert_eq!(seen["greeting"], "Hello, Python!");
    assert_eq!(seen["unknownTool"]["grpc"], "INVALID_ARGUMENT");
    assert_eq!(seen["unknownTool"]["code"], json!(error_code::INVALID_PARAMS as f64));
    assert_eq!(seen["wrongVersion"]["grpc"], "FAILED_PRECONDITION");
    assert_eq!(seen["wrongVersion"]["code"], json!(error_code::UNSUPPORTED_PROTOCOL_VERSION as f64));
    assert_eq!(seen["wrongRoute"]["grpc"], "INVALID_ARGUMENT");
    assert_eq!(seen["wrongRoute"]["code"], json!(error_code::HEADER_MISMATCH as f64));
    assert_eq!(seen["noVersion"], "INVALID_ARGUMENT");
    server.start_kill().unwrap();
}

/// A grpcio server written on Google's stubs (`tests/grpc/python_server.py`)
/// answering our client; then it dies mid-call.
#[tokio::test]
async fn our_client_uses_a_grpcio_server_on_googles_stubs() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/grpc/python_server.py");
    let mut server = tokio::process::Command::new(test_support::grpc_python())
        .arg(script)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
    let port = lines.next_line().await.unwrap().expect("the server printed its port");
    let client =
        client(GrpcConfig::new(format!("http://127.0.0.1:{}", port.trim())).with_bearer_token("t0ken".into()), "Rust");
    let o = RequestOptions::default();
    let tools = client.list_all_tools(&o).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["shout", "ask", "plain_error", "hang"]);
    let shouted = client.call_tool("shout", json!({"text": "grpc"}), &o).await.unwrap();
    assert_eq!(text_of(&shouted.content), "GRPC (version 2026-07-28, tool shout, Bearer t0ken)");
    let asked = client.call_tool("ask", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&asked.content), "Hi, Rust!");
    // A status without details: an error made from its code and message.
    let plain = client.call_tool("plain_error", json!({}), &o).await;
    match plain {
        Err(Error::Rpc { error }) => {
            assert_eq!(error.code, error_code::INTERNAL_ERROR);
            assert!(error.message.contains("Internal") && error.message.contains("it broke"), "{}", error.message);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    // The server dies during a call: the call fails as the connection's loss.
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("hang", json!({}), &RequestOptions::default()).await }
    });
    let started = lines.next_line().await.unwrap();
    assert_eq!(started.as_deref(), Some("hanging"));
    server.start_kill().unwrap();
    let lost = pending.await.unwrap();
    assert!(matches!(lost, Err(Error::Transport { .. }) | Err(Error::Closed)), "{lost:?}");
}

/// Over TLS: the server's certificate checked against the CA given to the
/// client; a client without that CA is refused at the handshake.
#[tokio::test]
async fn calls_go_over_tls_to_a_server_the_client_trusts() {
    let dir = std::env::temp_dir().join(format!("mcp-grpc-tls-{}", std::process::id()));
    let pki = test_support::oauth::TestPki::new(&dir);
    let (cert, key) = (
        std::fs::read_to_string(&pki.server_cert_file).unwrap(),
        std::fs::read_to_string(&pki.server_key_file).unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = mcp_example_server::build_server();
    let options = GrpcServeOptions::default().with_tls((cert, key));
    tokio::spawn(async move { serve(&server, listener, options, std::future::pending()).await });
    let ca = std::fs::read_to_string(&pki.ca_file).unwrap();
    let trusted =
        client(GrpcConfig::new(format!("https://localhost:{}", addr.port())).with_ca_certificate_pem(ca), "Tls");
    let o = RequestOptions::default();
    let hello = trusted.call_tool("ask_name", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&hello.content), "Hello, Tls!");
    let stranger = client(GrpcConfig::new(format!("https://localhost:{}", addr.port())), "Tls");
    let refused = stranger.call_tool("echo", json!({"text": "x"}), &o).await;
    assert!(matches!(refused, Err(Error::Transport { .. })), "{refused:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The HTTP status and the message of a refused request.
fn status_of<T: std::fmt::Debug>(
    result: Result<T, Error>,
    diagnostics: &Arc<Mutex<Diagnostics>>,
) -> (Option<u16>, String) {
    let message = match result {
        Err(Error::Rpc { error }) => error.message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    (diagnostics.lock().unwrap().http_status, message)
}

/// Tokens as a test's issuer would vouch for them: `reader` may read
/// notes, `writer` may also write them; any other is refused.
struct FixedTokens;

impl mcp_bridge_sdk::server::protect::TokenValidator for FixedTokens {
    fn validate(
        &self,
        token: &str,
    ) -> mcp_bridge_sdk::BoxFuture<
        Result<mcp_bridge_sdk::server::protect::Caller, mcp_bridge_sdk::server::protect::Refusal>,
    > {
        use mcp_bridge_sdk::server::protect::{Caller, Refusal};
        let scopes: &[&str] = match token {
            "reader" => &[mcp_example_server::NOTES_READ],
            "writer" => &[mcp_example_server::NOTES_READ, mcp_example_server::NOTES_WRITE],
            _ => return Box::pin(async { Err(Refusal::InvalidToken { description: "unknown token" }) }),
        };
        let caller = Caller::new(token.to_owned(), scopes.iter().copied());
        Box::pin(async move { Ok(caller) })
    }
}

/// A protected service: the bearer token from the client's metadata checked
/// as on the HTTP endpoint, each refusal a status with its HTTP status and
/// the challenge; a tool's own scope asked for (a step-up).
#[tokio::test]
async fn a_protected_service_checks_each_calls_bearer_token_and_scopes() {
    use mcp_bridge_sdk::server::protect::{ProtectedResource, Protection};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}");
    let resource = ProtectedResource::new(&url, "https://issuer.test");
    let protection = Protection::new(resource, FixedTokens).with_required_scopes([mcp_example_server::NOTES_READ]);
    let server = mcp_example_server::build_server();
    let options = GrpcServeOptions::default().with_protection(protection);
    tokio::spawn(async move { serve(&server, listener, options, std::future::pending()).await });

    let o = RequestOptions::default();
    for (token, wanted) in [(None, 401), (Some("forged-secret-token"), 401)] {
        let mut config = GrpcConfig::new(&url);
        if let Some(token) = token {
            config = config.with_bearer_token(token.into());
        }
        let d = Arc::new(Mutex::new(Diagnostics::default()));
        let (status, message) =
            status_of(client(config, "x").list_all_tools(&o.clone().with_diagnostics(d.clone())).await, &d);
        assert_eq!(status, Some(wanted), "{token:?}: {message}");
        assert!(!message.contains("forged-secret-token"), "the token never shows: {message}");
    }

    let reader = client(GrpcConfig::new(&url).with_bearer_token("reader".into()), "x");
    assert!(!reader.list_all_tools(&o).await.unwrap().is_empty());
    let d = Arc::new(Mutex::new(Diagnostics::default()));
    let write = json!({"name": "grpc", "text": "protected"});
    let (status, message) =
        status_of(reader.call_tool("set_note", write.clone(), &o.clone().with_diagnostics(d.clone())).await, &d);
    assert_eq!(status, Some(403), "{message}");
    assert!(message.contains(mcp_example_server::NOTES_WRITE), "the step-up names the scope: {message}");

    let writer = client(GrpcConfig::new(&url).with_bearer_token("writer".into()), "x");
    let saved = writer.call_tool("set_note", write, &o).await.unwrap();
    assert_eq!(text_of(&saved.content), "note://grpc saved");
}

#[tokio::test]
async fn a_tools_annotated_parameters_go_in_the_calls_metadata() {
    use mcp_bridge_protocol::types::{CallToolResult, Implementation, Tool};
    use mcp_bridge_sdk::{Reply, RequestContext, Server};
    let tool: Tool = serde_json::from_value(json!({"name": "where", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}))
    .unwrap();
    let server = Server::builder(Implementation::new("annotated", "1"))
        .tool(tool, |_call, ctx: RequestContext| async move {
            let headers = ctx.http_headers.as_ref();
            let region = headers.and_then(|h| h.get("mcp-param-region")).and_then(|v| v.to_str().ok());
            Ok(Reply::Complete(CallToolResult::text(region.unwrap_or("none"))))
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { serve(&server, listener, GrpcServeOptions::default(), std::future::pending()).await });
    let client = client(GrpcConfig::new(format!("http://{addr}")), "Grpc");
    let o = RequestOptions::default();
    assert_eq!(client.list_all_tools(&o).await.unwrap().len(), 1);
    let answer = client.call_tool("where", json!({"region": "eu-west"}), &o).await.unwrap();
    assert_eq!(text_of(&answer.content), "eu-west", "the parameter went along as mcp-param-region");
}

/// Whether the server closed `socket` (a read ends or fails) before the
/// hang guard.
async fn closed_by_server(socket: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 64];
    let read = async {
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(test_support::hostile::DEADLINE, read).await.unwrap_or(false)
}

#[tokio::test]
async fn the_connection_cap_keeps_one_client_from_locking_others_out_of_grpc() {
    use test_support::hostile::{HOSTILE, connect_from};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = mcp_example_server::build_server();
    let options = GrpcServeOptions::default().with_max_connections(2);
    tokio::spawn(async move { serve(&server, listener, options, std::future::pending()).await });

    // One address holds the cap; its next connection is closed, not served.
    let mut first = connect_from(HOSTILE, addr).await;
    let _second = connect_from(HOSTILE, addr).await;
    let mut third = connect_from(HOSTILE, addr).await;
    assert!(closed_by_server(&mut third).await, "a connection over the cap was kept");

    // Another client's call gets a place: the holder's idlest gives way.
    let client = client(GrpcConfig::new(format!("http://{addr}")), "Grpc");
    let o = RequestOptions::default();
    let sum = client.call_tool("add", json!({"a": 2, "b": 3}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    assert!(closed_by_server(&mut first).await, "the holder's idlest connection was not given up");
}

#[tokio::test]
async fn a_cancelled_call_ends_its_rpc_and_the_handler() {
    use mcp_bridge_protocol::types::{Implementation, Tool};
    use mcp_bridge_sdk::{Reply, RequestContext, Server};
    /// Tells the test when the handler is over, however it ends.
    struct Ended(Option<tokio::sync::oneshot::Sender<()>>);
    impl Drop for Ended {
        fn drop(&mut self) {
            if let Some(ended) = self.0.take() {
                let _ = ended.send(());
            }
        }
    }
    let (ended, handler_ended) = tokio::sync::oneshot::channel();
    let ended = Arc::new(Mutex::new(Some(ended)));
    let server = Server::builder(Implementation::new("waiting", "1"))
        .tool(Tool::new("wait"), move |_call, ctx: RequestContext| {
            let ended = Ended(ended.lock().unwrap().take());
            async move {
                let _ended = ended;
                ctx.cancelled().await;
                Ok(Reply::Complete(mcp_bridge_protocol::types::CallToolResult::text("cancelled")))
            }
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { serve(&server, listener, GrpcServeOptions::default(), std::future::pending()).await });
    let client = client(GrpcConfig::new(format!("http://{addr}")), "Grpc");
    let options = RequestOptions::default().with_timeout(std::time::Duration::from_millis(300));
    let err = client.call_tool("wait", json!({}), &options).await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The time limit cancels the request: its RPC ends, and with it the handler.
    tokio::time::timeout(test_support::hostile::DEADLINE, handler_ended)
        .await
        .expect("the handler ended after the cancellation")
        .unwrap();
}
