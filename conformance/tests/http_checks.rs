//! The HTTP endpoint's checks that the conformance suite scores, exercised
//! here directly so a regression shows up in `cargo test` with its cause:
//! envelope faults answered with 400, -32021 with 400, `Mcp-Param-*`
//! headers checked against the arguments, and a missing resource named in
//! the error's data.

use std::net::SocketAddr;

use serde_json::{Value, json};

async fn start() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = mcp_conformance::everything::build_server();
    tokio::spawn(async move { server.serve_http(listener, Default::default(), std::future::pending()).await });
    addr
}

fn meta(version: &str, capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": capabilities})
}

/// POSTs one request with the standard headers and the extra ones given;
/// returns the status and the JSON body.
async fn call(addr: SocketAddr, method: &str, params: Value, extra: &[(&str, &str)]) -> (u16, Value) {
    let version = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str().unwrap_or("2026-07-28");
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
        request = request.header("mcp-name", name);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let response = request.body(body.to_string()).send().await.unwrap();
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
}

#[tokio::test]
async fn envelope_faults_and_missing_capabilities_are_400_with_the_request_id() {
    let addr = start().await;
    let (status, reply) = call(addr, "server/discover", json!({}), &[]).await;
    assert_eq!((status, reply["error"]["code"].clone(), reply["id"].clone()), (400, json!(-32602), json!(7)));
    let (status, reply) = call(addr, "tools/list", json!({"_meta": meta("1999-01-01", json!({}))}), &[]).await;
    assert_eq!((status, reply["error"]["code"].clone()), (400, json!(-32022)));
    assert_eq!(reply["error"]["data"]["requested"], "1999-01-01");
    let needs_sampling =
        json!({"name": "test_missing_capability", "arguments": {}, "_meta": meta("2026-07-28", json!({}))});
    let (status, reply) = call(addr, "tools/call", needs_sampling, &[]).await;
    assert_eq!((status, reply["error"]["code"].clone()), (400, json!(-32021)));
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
}

#[tokio::test]
async fn mcp_param_headers_must_say_what_the_arguments_say() {
    let addr = start().await;
    let params = |region: &str| {
        json!({"name": "test_custom_headers", "arguments": {"region": region, "priority": 3},
            "_meta": meta("2026-07-28", json!({}))})
    };
    let ok = call(
        addr,
        "tools/call",
        params("Zürich"),
        &[("mcp-param-region", "=?base64?WsO8cmljaA==?="), ("mcp-param-priority", "3")],
    )
    .await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("mcp-param-priority", "3")], "header is required"),
        (&[("mcp-param-region", "=?base64?WsO8cmljaA?="), ("mcp-param-priority", "3")], "invalid Base64"),
        (&[("mcp-param-region", "Bern"), ("mcp-param-priority", "3")], "does not match"),
        (
            &[
                ("mcp-param-region", "=?base64?WsO8cmljaA==?="),
                ("mcp-param-priority", "3"),
                ("mcp-param-verbose", "true"),
            ],
            "no value in the body",
        ),
    ];
    for (headers, why) in cases {
        let (status, reply) = call(addr, "tools/call", params("Zürich"), headers).await;
        assert_eq!((status, reply["error"]["code"].clone()), (400, json!(-32020)), "{headers:?}");
        assert!(reply["error"]["message"].as_str().unwrap().contains(why), "{reply}");
    }
}

#[tokio::test]
async fn a_missing_resource_is_named_in_the_error() {
    let addr = start().await;
    let params = json!({"uri": "test://nowhere", "_meta": meta("2026-07-28", json!({}))});
    let (status, reply) = call(addr, "resources/read", params, &[]).await;
    assert_eq!((status, reply["error"]["code"].clone()), (200, json!(-32602)));
    assert_eq!(reply["error"]["data"]["uri"], "test://nowhere");
}
