//! A client of a protected server that signs in with OAuth (discovery,
//! registration, PKCE, the code exchange, refresh): `cargo run --example
//! oauth_client -- URL`. It prints the address to open; after signing in,
//! paste the address the browser ended on (`http://127.0.0.1/callback?...`).
//! A real application would open the browser and catch the redirect on
//! that loopback address itself, as `mcp-bridge` does.

use std::sync::Arc;

use mcp_bridge_sdk::BoxError;
use mcp_bridge_sdk::auth::{AuthorizationRequest, AuthorizationResponse, OAuthClient, OAuthConfig, authorize};
use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::store::MemoryStore;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: oauth_client URL")?;

    // The person at the keyboard is the browser.
    let sign_in = authorize(|request: AuthorizationRequest| async move {
        eprintln!("Open this address to sign in:\n{}\nthen paste the address you end on:", request.url);
        let mut line = String::new();
        BufReader::new(tokio::io::stdin()).read_line(&mut line).await?;
        Ok::<_, BoxError>(AuthorizationResponse::from_redirect(line.trim())?)
    });
    let config = OAuthConfig::new(url.clone(), "http://127.0.0.1/callback", "oauth-example")
        .with_connection(HttpConfig::new(&url));
    // Tokens for this run only; `auth::FileStore` or the keychain keep them.
    let oauth = OAuthClient::new(config, sign_in, Arc::new(MemoryStore::default()))?;

    let transport = connect(HttpConfig::new(&url).with_auth(Arc::new(oauth)))?;
    let client = Client::new(ClientOptions::new("oauth-example", "1.0"), transport);
    for tool in client.list_tools(None, &RequestOptions::default()).await?.tools {
        println!("tool {}", tool.name);
    }
    Ok(())
}
