//! Sign-ins of other kinds: enterprise single sign-on (no browser),
//! DPoP-bound tokens, and the answers that are refused (denied, another
//! issuer).

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn the_enterprise_single_sign_on_vouches_for_the_user_without_a_browser() {
    let w = world("enterprise").await;
    // The enterprise identity provider: a second authorization server,
    // whose token exchange answers identity assertion grants.
    let idp: Shared = Arc::new(Mutex::new(Issued { expires_in: 300, ..Issued::default() }));
    let idp_issuer = authorization_server(idp.clone(), Some(&w.pki)).await;
    let id_token_file = w.dir.join("id_token");
    std::fs::write(&id_token_file, "id-token-of-alice\n").unwrap();
    w.issued.lock().unwrap().without_refresh_tokens = true;
    let args = [
        "--client-id",
        "chat-at-mcp",
        "--client-secret-env",
        "STATIC_SECRET",
        "--idp-issuer",
        &idp_issuer,
        "--idp-client-id",
        "chat-at-idp",
        "--idp-id-token-file",
        id_token_file.to_str().unwrap(),
    ];
    let mut peer = bridge_with(&w, &w.dir.join("browser.py"), &[("STATIC_SECRET", "static-s3cret")], &args);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert!(!stderr.contains("static-s3cret") && !stderr.contains("id-token-of-alice"), "{stderr}");
    assert!(!stderr.contains("jag-1"), "the grant is not logged:\n{stderr}");
    assert_no_secrets(&stderr);

    // At the identity provider: the ID token exchanged for a grant to the
    // server's authorization server, for the server, by the bridge's
    // client there.
    {
        let idp = idp.lock().unwrap();
        let exchange = &idp.forms[0];
        assert_eq!(idp.grants, [test_support::oauth::TOKEN_EXCHANGE]);
        assert_eq!(exchange["subject_token"], "id-token-of-alice");
        assert_eq!(exchange["subject_token_type"], "urn:ietf:params:oauth:token-type:id_token");
        assert_eq!(exchange["requested_token_type"], "urn:ietf:params:oauth:token-type:id-jag");
        assert_eq!(exchange["resource"], w.url);
        assert_eq!(exchange["audience"], w.issuer, "the audience is the server's authorization server");
        assert_eq!(idp.client_auth, ["none chat-at-idp"]);
        // At the server's authorization server: the grant, by the given client.
        let issued = w.issued.lock().unwrap();
        assert_eq!(issued.grants, ["urn:ietf:params:oauth:grant-type:jwt-bearer"]);
        assert_eq!(issued.assertions, ["jag-1"]);
        assert_eq!(issued.client_auth, ["basic chat-at-mcp:static-s3cret"]);
        assert_eq!((issued.authorizations, issued.registrations), (0, 0), "no browser, no registration");
    }
    assert!(!w.dir.join("browser.log").exists(), "no browser was opened");

    // A missing ID token is a clear error naming the file, never a token.
    std::fs::remove_file(&id_token_file).unwrap();
    let _ = std::fs::remove_dir_all(w.dir.join("home/.local/state"));
    let mut peer = bridge_with(&w, &w.dir.join("browser.py"), &[("STATIC_SECRET", "static-s3cret")], &args);
    let init = legacy_initialize(&mut peer, json!({})).await;
    let message = init["error"].to_string();
    assert!(message.contains("ID token") && message.contains("id_token"), "{init}");
    finish(peer).await;

    // --idp-issuer needs the rest, and the bridge's client at the server.
    for args in [
        vec!["--idp-issuer", "https://idp.example", "--idp-client-id", "x", "--client-id", "c"],
        vec!["--idp-issuer", "https://idp.example", "--idp-id-token-file", "/t", "--idp-client-id", "x"],
        vec!["--idp-client-id", "x"],
    ] {
        let out = std::process::Command::new(BRIDGE).args(&args).arg(&w.url).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// The header and claims of a compact JWS, unverified.
fn jws_parts(jws: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine;
    let part = |i: usize| {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(jws.split('.').nth(i).unwrap()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    (part(0), part(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn with_dpop_the_tokens_are_bound_to_a_key_kept_sealed_between_runs() {
    use base64::Engine;
    let w = world("dpop").await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &["--dpop"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#)
        .await;
    assert_eq!(peer.recv_response(2).await["result"]["content"][0]["text"], "hi");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    assert!(!stderr.contains("DPoP at-"), "{stderr}");

    // A second run: the stored token, proved with the stored key.
    let mut peer = bridge(&w, Path::new("/bin/false"), &["--dpop"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    finish(peer).await;

    let issued = w.issued.lock().unwrap();
    assert_eq!((issued.authorizations, issued.token_proofs.len()), (1, 1), "one sign-in, with a proof");
    assert_eq!(issued.dpop_bound, ["at-1"]);
    let (token_header, token_claims) = jws_parts(&issued.token_proofs[0]);
    assert_eq!((token_claims["htm"].as_str(), token_claims["ath"].as_str()), (Some("POST"), None));
    assert!(token_claims["htu"].as_str().unwrap().ends_with("/token"), "{token_claims}");
    assert!(issued.resource_proofs.len() >= 4, "each request to the server carries a proof");
    let mut jtis = std::collections::HashSet::new();
    let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"at-1"));
    for proof in &issued.resource_proofs {
        let (header, claims) = jws_parts(proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["jwk"], token_header["jwk"], "one key, also after the restart");
        assert_eq!((claims["htm"].as_str(), claims["htu"].as_str()), (Some("POST"), Some(w.url.as_str())));
        assert_eq!(claims["ath"], ath.as_str(), "bound to the token");
        assert!(jtis.insert(claims["jti"].to_string()), "a fresh proof per request");
    }
    drop(issued);
    // The key is kept sealed with the tokens: no file shows it.
    let x = token_header["jwk"]["x"].as_str().unwrap().to_owned();
    let tokens = w.dir.join("home/.local/state/mcp-bridge/tokens");
    for entry in std::fs::read_dir(&tokens).unwrap() {
        let text = String::from_utf8_lossy(&std::fs::read(entry.unwrap().path()).unwrap()).into_owned();
        assert!(!text.contains("pkcs8") && !text.contains(&x) && !text.contains("at-1"), "{text}");
    }
    // Logout forgets the key with the tokens.
    logout(&w, &w.url);
    let left = record_files(&w);
    assert!(left.len() <= 2, "the client registration and the index may be left: {left:?}");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_sign_in_fails_the_initialize_and_the_bridge_stays() {
    let w = world("denied").await;
    w.issued.lock().unwrap().deny = true;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_denied", "{init}");
    assert_eq!(init["error"]["data"]["detail"]["http_status"], 401, "{init}");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_from_another_issuer_is_refused_before_the_code_is_used() {
    let w = world("wrong-iss").await;
    w.issued.lock().unwrap().iss_override = Some("https://evil.example.com".into());
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &[]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["error"]["data"]["cause"], "sign_in_error", "{init}");
    let reason = init["error"]["data"]["detail"]["reason"].as_str().unwrap();
    assert!(reason.contains("another issuer"), "{reason}");
    assert!(!w.issued.lock().unwrap().grants.iter().any(|g| g == "authorization_code"), "the code was not exchanged");
    let (_, stderr) = finish(peer).await;
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}
