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

use mcp_bridge::signin::{Gate, Opener, SignIn, SignInOptions};
use mcp_bridge_sdk::auth::{OAuthClient, OAuthConfig};
use mcp_bridge_sdk::store::RecordStore;
use mcp_bridge_sdk::toolset::config::ConfigFile;
use mcp_bridge_sdk::transport::http::{AuthProvider, HttpConfig};

/// The OAuth clients of one process, by URL, and how they reach the user.
pub(crate) struct SignIns {
    options: SignInOptions,
    /// Opens the token store, when a server first needs it.
    open_store: fn() -> Result<Arc<dyn RecordStore>, String>,
    /// Opens the browser; `None` with `--no-browser`.
    opener: Option<Opener>,
    made: Mutex<Made>,
}

/// The OAuth clients made so far, and the token store once one needed it.
#[derive(Default)]
struct Made {
    /// The same `Arc` for a URL each time: a file read again keeps its
    /// servers' connections (their entries compare equal).
    clients: HashMap<String, Arc<dyn AuthProvider>>,
    store: Option<Arc<dyn RecordStore>>,
}

impl std::fmt::Debug for SignIns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIns").field("options", &self.options).finish_non_exhaustive()
    }
}

/// The opener of `$BROWSER`, else of the system's browser; `None` with
/// `no_browser`. The variables named in `secrets` stay out of its
/// environment, besides those whose names say they hold one.
pub(crate) fn browser_opener(no_browser: bool, secrets: Vec<String>) -> Option<Opener> {
    let browser = std::env::var_os("BROWSER").filter(|b| !b.to_string_lossy().trim().is_empty());
    (!no_browser).then(|| mcp_bridge::signin::system_opener(browser, secrets))
}

impl SignIns {
    /// Sign-ins redirected to `redirect_port` (taking turns at it), each of
    /// at most `timeout`, opening `$BROWSER` or the system's browser unless
    /// `no_browser`; the tokens in the store the environment picks, opened
    /// when a server first needs it.
    pub(crate) fn new(redirect_port: u16, timeout: Duration, no_browser: bool) -> SignIns {
        let opener = browser_opener(no_browser, Vec::new());
        SignIns {
            options: SignInOptions::new(redirect_port, timeout),
            open_store: || Ok(Arc::new(crate::token_store::open()?)),
            opener,
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
            entry.set_auth(client);
        }
        Ok(())
    }

    /// The OAuth client of `url`, made at its first use.
    fn client(&self, url: &str) -> Result<Arc<dyn AuthProvider>, String> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = made.clients.get(url) {
            return Ok(client.clone());
        }
        let store = match &made.store {
            Some(store) => store.clone(),
            None => made.store.insert((self.open_store)()?).clone(),
        };
        // Written whatever the log level: it is how the user signs in.
        let announce = Arc::new(|url: &str| eprintln!("mcp-bridge: sign in at {url}"));
        // A gate of its own: a sign-in declined at one server does not
        // hold back the others'.
        let gate = Arc::new(Gate::per_request(self.opener.clone()));
        let sign_in = SignIn::new(self.options.clone(), gate, announce);
        let config = OAuthConfig::new(url, sign_in.redirect_uri(), "mcp-bridge").with_connection(HttpConfig::new(url));
        let client: Arc<dyn AuthProvider> =
            Arc::new(OAuthClient::new(config, sign_in.authorize(), store).map_err(|e| e.to_string())?);
        made.clients.insert(url.to_owned(), client.clone());
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_again_gives_its_servers_the_same_sign_in() {
        let mut sign_ins = SignIns::new(33418, Duration::from_secs(1), true);
        sign_ins.open_store = || Ok(Arc::new(mcp_bridge_sdk::store::MemoryStore::default()));
        let text = r#"{"mcpServers": {
            "signed": {"url": "https://mcp.example.com/mcp"},
            "given": {"url": "https://other.example.com/mcp", "headers": {"Authorization": "Bearer x"}},
            "local": {"command": "server"}}}"#;
        let read = || {
            let mut config = mcp_bridge_sdk::toolset::config::parse_file(text, |_| None).unwrap();
            sign_ins.give(&mut config).unwrap();
            config
        };
        let (first, again) = (read(), read());
        assert_eq!(first, again, "equal entries: a reload keeps the connections");
        let signed = |config: &ConfigFile, name: &str| {
            let entry = config.servers.iter().find(|e| e.name == name).unwrap();
            entry.url_to_sign_in().is_none() && format!("{:?}", entry.kind).contains("Url")
        };
        assert!(signed(&first, "signed"), "the URL without credentials got a sign-in");
        let given = first.servers.iter().find(|e| e.name == "given").unwrap();
        assert_ne!(given.kind, first.servers.iter().find(|e| e.name == "signed").unwrap().kind);
    }
}
