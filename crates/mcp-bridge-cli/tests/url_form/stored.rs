//! What is kept between runs: the automatic store, its index (damaged or
//! shared by bridges signing in at once), logout, and a 2025-11-25
//! upstream's refresh.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_upstream_gets_the_sign_in_and_the_refresh_too() {
    // The example server's endpoint serves 2025-11-25 sessions; the bridge
    // is told to speak that revision to it.
    let dual_era = mcp_bridge_sdk::server::legacy::embed::http::http_router(
        &mcp_example_server::build_server(),
        Default::default(),
        Default::default(),
    );
    let w = world_serving("legacy-signin", dual_era).await;
    let mut peer = bridge(&w, &w.dir.join("browser.py"), &["--protocol", "2025-11-25"]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let call = |id: i64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}})
            .to_string()
    };
    peer.send(&call(2, "in the session")).await;
    assert_eq!(peer.recv_response(2).await["result"]["content"][0]["text"], "in the session");
    // The access token is revoked: the refresh token gets a new one, and
    // the session's next POST goes through with it.
    w.issued.lock().unwrap().valid.clear();
    peer.send(&call(3, "after the refresh")).await;
    let answer = peer.recv_response(3).await;
    assert_eq!(answer["result"]["content"][0]["text"], "after the refresh", "{answer}");
    let grants = w.issued.lock().unwrap().grants.clone();
    assert_eq!(grants, ["authorization_code", "refresh_token"], "one sign-in, one refresh");
    let (code, stderr) = finish(peer).await;
    assert_eq!(code, Some(0));
    assert_no_secrets(&stderr);
    let _ = std::fs::remove_dir_all(&w.dir);
}

/// The file of the sign-in index (named by the digest of its key).
fn index_file(w: &World) -> PathBuf {
    let name: String = sha2::Sha256::digest(b"index").iter().map(|b| format!("{b:02x}")).collect();
    w.dir.join(format!("home/.local/state/mcp-bridge/tokens/{name}.record"))
}

/// A bridge run that needs no sign-in (its browser fails): the stored
/// tokens are there and open.
async fn runs_on_stored_tokens(w: &World) -> bool {
    let mut peer = bridge(w, Path::new("/bin/false"), &[]);
    let init = tokio::time::timeout(std::time::Duration::from_secs(10), legacy_initialize(&mut peer, json!({}))).await;
    let ok = init.is_ok_and(|init| init["result"]["serverInfo"]["name"] == "mcp-example-server");
    let (_, stderr) = finish(peer).await;
    ok && !stderr.contains("sign in at")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_sign_in_index_neither_stops_sign_ins_nor_logout() {
    let w = world("damaged-index").await;
    let browser = w.dir.join("browser.py");
    let sign_in = || async {
        let mut peer = bridge(&w, &browser, &[]);
        let init = legacy_initialize(&mut peer, json!({})).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
        finish(peer).await
    };
    sign_in().await;
    let good = std::fs::read(index_file(&w)).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x10;
    for damage in [flipped, good[..good.len() / 2].to_vec()] {
        // Forgetting one server and signing in again both write the index.
        std::fs::write(index_file(&w), &damage).unwrap();
        assert!(logout(&w, &w.url).contains("forgot 1"));
        std::fs::write(index_file(&w), &damage).unwrap();
        let (code, stderr) = sign_in().await;
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(stderr.matches("index of the stored records").count(), 1, "said once: {stderr}");
        assert_no_secrets(&stderr);
        assert!(runs_on_stored_tokens(&w).await, "the new sign-in is stored");
    }
    std::fs::write(index_file(&w), b"\x00damaged").unwrap();
    logout(&w, "--all");
    assert_eq!(record_files(&w), Vec::<PathBuf>::new(), "logout --all leaves no record");
    assert!(!runs_on_stored_tokens(&w).await, "after logout --all a run signs in again");
    let _ = std::fs::remove_dir_all(&w.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn six_bridges_signing_in_at_once_keep_one_key_and_logout_all_leaves_nothing() {
    let w = world("six-at-once").await;
    let browser = w.dir.join("browser.py");
    let signing_in: Vec<_> = (0..6)
        .map(|_| {
            let mut peer = bridge(&w, &browser, &[]);
            tokio::spawn(async move {
                let init = legacy_initialize(&mut peer, json!({})).await;
                assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server", "{init}");
                peer
            })
        })
        .collect();
    for peer in signing_in {
        let peer = peer.await.unwrap();
        let (code, stderr) = finish(peer).await;
        assert_eq!(code, Some(0), "{stderr}");
        assert!(!stderr.contains("cannot be opened") && !stderr.contains("damaged"), "{stderr}");
    }
    let keys: Vec<_> =
        std::fs::read_dir(w.dir.join("home/.config/mcp-bridge")).unwrap().filter_map(Result::ok).collect();
    let key_files: Vec<_> = keys.iter().filter(|e| e.file_name() == "token.key").collect();
    assert_eq!(key_files.len(), 1);
    assert!(runs_on_stored_tokens(&w).await, "the last sign-in's record opens with the one key");
    logout(&w, "--all");
    assert_eq!(record_files(&w), Vec::<PathBuf>::new(), "logout --all leaves no record");
    assert!(!runs_on_stored_tokens(&w).await, "after logout --all a run signs in again");
    let _ = std::fs::remove_dir_all(&w.dir);
}
