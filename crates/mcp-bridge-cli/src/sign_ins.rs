//! One sign-in per URL for the servers of a configuration file (the
//! daemon's, `--config`'s without `--listen`): each server at a URL whose headers carry no credentials gets
//! the OAuth client of its URL, made once for the life of the process, so
//! every client attached, every instance of a per-session server and every
//! reconnection share one sign-in and one refresh. The sign-ins reach the
//! user through a [`Gate::per_request`]: the client whose call needed one
//! is asked, else the browser opens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge::signin::{Gate, SignIn, SignInOptions};
use mcp_bridge_sdk::auth::{OAuthClient, OAuthConfig};
use mcp_bridge_sdk::store::RecordStore;
use mcp_bridge_sdk::toolset::config::ConfigFile;
use mcp_bridge_sdk::transport::http::HttpConfig;

/// The OAuth clients of one process, by URL, and how they reach the user.
pub(crate) struct SignIns {
    options: SignInOptions,
    gate: Arc<Gate>,
    made: Mutex<Made>,
}

/// The OAuth clients made so far, and the token store once one needed it.
#[derive(Default)]
struct Made {
    clients: HashMap<String, OAuthClient>,
    store: Option<Arc<dyn RecordStore>>,
}

impl std::fmt::Debug for SignIns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIns").field("options", &self.options).finish_non_exhaustive()
    }
}

impl SignIns {
    /// Sign-ins redirected to `redirect_port` (taking turns at it), each of
    /// at most `timeout`, opening `$BROWSER` or the system's browser unless
    /// `no_browser`; the tokens in the store the environment picks, opened
    /// when a server first needs it.
    pub(crate) fn new(redirect_port: u16, timeout: Duration, no_browser: bool) -> SignIns {
        let browser = std::env::var_os("BROWSER").filter(|b| !b.to_string_lossy().trim().is_empty());
        let opener = (!no_browser).then(|| mcp_bridge::signin::system_opener(browser, Vec::new()));
        SignIns {
            options: SignInOptions::new(redirect_port, timeout),
            gate: Arc::new(Gate::per_request(opener)),
            made: Mutex::default(),
        }
    }

    /// Gives each server of `config` that needs one the sign-in of its URL.
    ///
    /// # Errors
    /// A URL the OAuth client refuses, naming its server; the token store
    /// does not open.
    pub(crate) fn give(&self, config: &mut ConfigFile) -> Result<(), String> {
        for entry in &mut config.servers {
            let Some(url) = entry.url_to_sign_in().map(str::to_owned) else { continue };
            let client = self.client(&url).map_err(|e| format!("server {:?}: {e}", entry.name))?;
            entry.set_auth(Arc::new(client));
        }
        Ok(())
    }

    /// The OAuth client of `url`, made at its first use.
    fn client(&self, url: &str) -> Result<OAuthClient, String> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = made.clients.get(url) {
            return Ok(client.clone());
        }
        let store = match &made.store {
            Some(store) => store.clone(),
            None => made.store.insert(Arc::new(crate::token_store::open()?)).clone(),
        };
        // Written whatever the log level: it is how the user signs in.
        let announce = Arc::new(|url: &str| eprintln!("mcp-bridge: sign in at {url}"));
        let sign_in = SignIn::new(self.options.clone(), self.gate.clone(), announce);
        let config = OAuthConfig::new(url, sign_in.redirect_uri(), "mcp-bridge").with_connection(HttpConfig::new(url));
        let client = OAuthClient::new(config, sign_in.authorize(), store).map_err(|e| e.to_string())?;
        made.clients.insert(url.to_owned(), client.clone());
        Ok(client)
    }
}
