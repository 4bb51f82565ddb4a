//! `mcp-bridge URL` in front of `mcp-example-server --auth-issuer`, with a
//! real authorization server (node's `oidc-provider`, opaque tokens checked
//! by introspection) and a real browser (headless Chromium as `$BROWSER`,
//! on the provider's login and consent pages, redirected to the bridge's
//! loopback receiver). A legacy client's session goes through the sign-in,
//! a step-up to `notes:write` with a second consent, a refresh after its
//! access token is revoked, and a new sign-in after its grant is revoked;
//! no code or token reaches the bridge's stderr or its token files. A
//! client the administrator registered signs in without registering, and
//! a user without a browser signs in with a device code.

use serde_json::{Value, json};
use test_support::oauth::TestPki;
use test_support::oidc::{Browser, INTROSPECTION_CLIENT, OidcProvider, TokenFormat};
use test_support::{ExampleServer, RawPeer, bridge_signing_in, legacy_initialize, workspace_binary};
use tokio::io::AsyncReadExt;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// Calls tool `name` as a client that shows URLs would: a URL elicitation
/// (the bridge's sign-in once the session runs) is accepted and its URL
/// opened in `browser`. The response, and how many sign-ins were asked.
async fn call(peer: &mut RawPeer, browser: &Browser, id: i64, name: &str, arguments: Value) -> (Value, usize) {
    let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    peer.send(&request.to_string()).await;
    let mut signing_in: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    loop {
        let message = peer.recv().await;
        if message["id"] == id && message.get("method").is_none() {
            let asked = signing_in.len();
            for sign_in in signing_in {
                tokio::time::timeout(std::time::Duration::from_secs(60), sign_in).await.unwrap().unwrap();
            }
            return (message, asked);
        }
        if message["method"] == "elicitation/create" && message["params"]["mode"] == "url" {
            let url = message["params"]["url"].as_str().unwrap().to_owned();
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}});
            peer.send(&answer.to_string()).await;
            let browser = browser.clone();
            signing_in.push(tokio::spawn(async move { browser.sign_in(&url).await }));
        }
    }
}

/// The pages of each sign-in, once there are `count`.
async fn pages(browser: &Browser, count: usize) -> Vec<Value> {
    browser.sign_ins_when(count).await.iter().map(|s| s["pages"].clone()).collect()
}

fn files_under(dir: &std::path::Path) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push(bytes);
        }
    }
    found
}

/// A folder for the test (`home` in it), the provider over https with
/// `clients` besides its own (opaque tokens), and the example server
/// protected by it, checking tokens by introspection.
async fn world(name: &str, clients: Vec<Value>) -> (test_support::ScratchDir, TestPki, OidcProvider, ExampleServer) {
    let dir = test_support::ScratchDir::new(&format!("oidc-bridge-{name}"));
    std::fs::create_dir_all(dir.join("home")).unwrap();
    // The bridge opens only https authorization URLs: the provider has a
    // certificate of a test CA, which the server (SSL_CERT_FILE, as any
    // program on rustls-native-certs) and the bridge (--ca-file) trust.
    let pki = TestPki::new(&dir.join("pki"));
    let provider = OidcProvider::start_tls_with_clients(TokenFormat::Opaque, &pki, clients).await;
    let mut server = tokio::process::Command::new(workspace_binary("mcp-example-server", "mcp-example-server"));
    server.args(["--auth-issuer", &provider.issuer, "--auth-introspection", "--auth-introspection-cache", "0"]);
    server.env("MCP_AUTH_CLIENT_ID", INTROSPECTION_CLIENT.0).env("MCP_AUTH_CLIENT_SECRET", INTROSPECTION_CLIENT.1);
    server.env("SSL_CERT_FILE", &pki.ca_file);
    let server = test_support::example_server_http(server).await;
    (dir, pki, provider, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_client_signs_in_steps_up_refreshes_and_signs_in_again_after_a_revocation() {
    let (dir, pki, provider, server) = world("revocation", Vec::new()).await;

    let browser = Browser::new(&dir.join("browser"));
    let bridge = BRIDGE.as_ref();
    let command = bridge_signing_in(bridge, &dir.join("home"), &browser.opener(), &pki.ca_file, &server.url);
    let mut peer = RawPeer::start(command);

    // The sign-in: the provider's login and consent pages, then the bridge's.
    let init = legacy_initialize(&mut peer, json!({"elicitation": {"url": {}}})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let (echoed, asked) = call(&mut peer, &browser, 2, "echo", json!({"text": "hi"})).await;
    assert_eq!(asked, 0, "signed in before the session ran");
    assert_eq!(echoed["result"]["content"][0]["text"], "hi", "{echoed}");
    assert_eq!(pages(&browser, 1).await, [json!(["login", "consent"])]);
    assert!(browser.sign_ins()[0]["text"].as_str().unwrap().contains("Signed in"), "{:?}", browser.sign_ins());
    assert_eq!(provider.count("/registrations").await, 1, "the bridge registered itself");

    // set_note needs notes:write: on the 403 the bridge asks the client to
    // open the sign-in (a URL elicitation); the provider asks for consent
    // only (its session cookie is in the browser).
    let (set, asked) =
        call(&mut peer, &browser, 3, "set_note", json!({"name": "n", "text": "through the bridge"})).await;
    assert_eq!(asked, 1);
    assert!(set.get("result").is_some_and(|r| r["isError"] != true), "{set}");
    assert_eq!(pages(&browser, 2).await, [json!(["login", "consent"]), json!(["consent"])]);

    // The access token revoked: introspection says inactive, the bridge
    // refreshes, no browser.
    provider.revoke_access_tokens().await;
    let (after_refresh, asked) = call(&mut peer, &browser, 4, "echo", json!({"text": "refreshed"})).await;
    assert_eq!(asked, 0, "a refresh needs no browser");
    assert_eq!(after_refresh["result"]["content"][0]["text"], "refreshed", "{after_refresh}");
    assert_eq!(provider.count("/grants/refresh_token").await, 1);
    assert_eq!(browser.sign_ins().len(), 2);

    // The grant revoked: the refresh fails, a new sign-in (consent again).
    provider.revoke_grants().await;
    let (signed_in_again, asked) = call(&mut peer, &browser, 5, "echo", json!({"text": "again"})).await;
    assert_eq!(asked, 1);
    assert_eq!(signed_in_again["result"]["content"][0]["text"], "again", "{signed_in_again}");
    assert_eq!(pages(&browser, 3).await[2], json!(["consent"]));
    assert_eq!(provider.count("/prompts/login").await, 1);

    let issued = provider.issued().await;
    assert!(issued.len() >= 8, "codes, access and refresh tokens: {issued:?}");
    let mut stderr = peer.child.stderr.take().unwrap();
    assert_eq!(peer.finish().await, Some(0));
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    let stored = files_under(&dir.join("home"));
    assert!(!stored.is_empty(), "the bridge keeps its tokens in files");
    for secret in &issued {
        assert!(!text.contains(secret.as_str()), "an issued code or token is in the bridge's stderr:\n{text}");
        for file in &stored {
            assert!(!file.windows(secret.len()).any(|w| w == secret.as_bytes()), "a token in a file in plain text");
        }
    }
    assert!(!text.contains("Bearer "), "{text}");
    let server_log = server.log.lock().unwrap().clone();
    assert!(issued.iter().all(|secret| !server_log.contains(secret.as_str())), "a token in the server's log");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_device_code_the_user_signs_in_elsewhere_from_stderr_then_through_the_client() {
    use tokio::io::AsyncBufReadExt;
    let (dir, pki, provider, server) = world("device", Vec::new()).await;
    let browser = Browser::new(&dir.join("browser"));
    // No browser on this machine: one that fails if it is ever started.
    let no_browser = std::path::Path::new("/bin/false");
    let mut command = bridge_signing_in(BRIDGE.as_ref(), &dir.join("home"), no_browser, &pki.ca_file, &server.url);
    command.arg("--device-code");
    let mut peer = RawPeer::start(command);
    let (lines_tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stderr = peer.child.stderr.take().unwrap();
    let reading = tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = Vec::new();

    // Before the client runs, the link and the code are on stderr; the user
    // opens the link on another device.
    let signing_in = async {
        loop {
            let line = lines.recv().await.expect("the sign-in line");
            seen.push(line.clone());
            if let Some(rest) = line.strip_prefix("mcp-bridge: sign in at ") {
                let complete = rest.split("(or open ").nth(1).unwrap().trim_end_matches(')').to_owned();
                assert!(rest.contains(" and enter the code "), "{line}");
                browser.sign_in(&complete).await;
                return;
            }
        }
    };
    let (init, ()) = tokio::join!(legacy_initialize(&mut peer, json!({"elicitation": {"url": {}}})), signing_in);
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    assert_eq!(pages(&browser, 1).await, [json!(["device", "login", "consent"])]);
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    // Once it runs, the client shows the next one (a step-up for set_note):
    // a URL elicitation with the code in its message.
    let request = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "set_note", "arguments": {"name": "n", "text": "from elsewhere"}}});
    peer.send(&request.to_string()).await;
    let elicitation = loop {
        let message = peer.recv().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    let params = &elicitation["params"];
    assert_eq!(params["mode"], "url", "{elicitation}");
    let url = params["url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&provider.issuer) && url.contains("user_code="), "{url}");
    assert!(params["message"].as_str().unwrap().contains("enter the code"), "{elicitation}");
    peer.send(&json!({"jsonrpc": "2.0", "id": elicitation["id"], "result": {"action": "accept"}}).to_string()).await;
    browser.sign_in(&url).await;
    let set = peer.recv_response(3).await;
    assert!(set.get("result").is_some_and(|r| r["isError"] != true), "{set}");
    assert_eq!(pages(&browser, 2).await[1], json!(["device", "consent"]));
    assert_eq!(provider.count("/grants/urn:ietf:params:oauth:grant-type:device_code").await, 2);

    // The grant revoked (its refresh fails), then the next code declined
    // by the user: the sign-in stops at once as declined.
    provider.revoke_grants().await;
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#)
        .await;
    let elicitation = loop {
        let message = peer.recv().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    peer.send(&json!({"jsonrpc": "2.0", "id": elicitation["id"], "result": {"action": "decline"}}).to_string()).await;
    let declined = peer.recv_response(4).await;
    assert_eq!(declined["error"]["data"]["cause"], "sign_in_denied", "{declined}");

    assert_eq!(peer.finish().await, Some(0));
    reading.await.unwrap();
    while let Ok(line) = lines.try_recv() {
        seen.push(line);
    }
    let text = seen.join("\n");
    for secret in provider.issued().await {
        assert!(!text.contains(secret.as_str()), "an issued token is in the bridge's stderr:\n{text}");
    }
    assert_eq!(text.matches("mcp-bridge: sign in at ").count(), 3, "each code on stderr:\n{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_the_administrator_registered_signs_in_at_oidc_provider_without_registering() {
    let port = test_support::spare_port();
    // The client as an administrator registers it: a confidential client
    // whose redirect URI is the bridge's receiver.
    let secret = "admin-s3cret-of-the-bridge";
    let client = json!({"client_id": "bridge-at-acme", "client_secret": secret,
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "redirect_uris": [format!("http://127.0.0.1:{port}/callback")],
        "token_endpoint_auth_method": "client_secret_basic"});
    let (dir, pki, provider, server) = world("static", vec![client]).await;
    let browser = Browser::new(&dir.join("browser"));
    let mut command = tokio::process::Command::new(BRIDGE);
    command
        .env("HOME", dir.join("home"))
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("BROWSER", browser.opener())
        .env("ACME_SECRET", secret)
        .args(["--ca-file", pki.ca_file.to_str().unwrap(), "--redirect-port", &port.to_string()])
        .args(["--client-id", "bridge-at-acme", "--client-secret-env", "ACME_SECRET", &server.url])
        .stderr(std::process::Stdio::piped());
    let mut peer = RawPeer::start(command);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    assert_eq!(pages(&browser, 1).await, [json!(["login", "consent"])]);
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let (echoed, _) = call(&mut peer, &browser, 2, "echo", json!({"text": "static"})).await;
    assert_eq!(echoed["result"]["content"][0]["text"], "static", "{echoed}");
    assert_eq!(provider.count("/registrations").await, 0, "the given client, no registration");
    assert_eq!(provider.count("/grants/authorization_code").await, 1);

    let mut stderr = peer.child.stderr.take().unwrap();
    assert_eq!(peer.finish().await, Some(0));
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    assert!(!text.contains(secret), "the client secret is in the bridge's stderr:\n{text}");
    for file in files_under(&dir.join("home")) {
        assert!(!file.windows(secret.len()).any(|w| w == secret.as_bytes()), "the secret in a file in plain text");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
