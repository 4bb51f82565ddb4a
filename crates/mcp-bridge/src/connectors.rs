//! The upstreams a session reaches on its own: a command started as a
//! child on stdio, and a server at a URL with the sign-in in front of it.

use std::sync::Arc;

use mcp_bridge_protocol::ErrorObject;
use mcp_bridge_sdk::auth::OAuthClient;
use mcp_bridge_sdk::toolset::exposure::NameFilter;
use mcp_bridge_sdk::transport::Transport;
use mcp_bridge_sdk::transport::http::HttpConfig;
use mcp_bridge_sdk::transport::stdio::StdioCommand;

use crate::signin::{SignIn, SignInProblem};
use mcp_bridge_sdk::server::legacy::translate::Origin;
use mcp_bridge_sdk::server::legacy::upstream::{Connect, UpstreamConfig};

/// A command started as a child process for each session, spoken to on
/// stdio.
#[derive(Debug, Clone)]
pub struct StdioUpstream(pub StdioCommand);

impl Connect for StdioUpstream {
    fn transport(&self) -> Result<Transport, mcp_bridge_sdk::Error> {
        mcp_bridge_sdk::transport::stdio::spawn(self.0.clone())
    }

    fn origin(&self) -> Origin {
        Origin::Local
    }
}

/// A server at a URL: the HTTP transport, and the sign-in behind its
/// OAuth client (whose failures become the errors of the requests). A
/// failed request fails alone; the upstream is never lost.
#[derive(Debug, Clone)]
pub struct HttpUpstream {
    /// The transport, its `auth` the OAuth client when there is one.
    pub config: HttpConfig,
    /// The OAuth client, for the cause of a failed sign-in.
    pub oauth: Option<OAuthClient>,
    /// The sign-in hook, for the cause of a failed sign-in.
    pub sign_in: Option<Arc<SignIn>>,
}

impl HttpUpstream {
    /// Why the last sign-in failed: the user's part first, then the OAuth
    /// exchange.
    fn sign_in_problem(&self) -> Option<SignInProblem> {
        self.sign_in.as_ref().and_then(|s| s.last_failure()).map(SignInProblem::User).or_else(|| {
            self.oauth.as_ref().and_then(|o| {
                let redirect_uri = o.redirect_uri().to_owned();
                o.last_problem().map(|error| SignInProblem::Protocol { error, redirect_uri })
            })
        })
    }
}

impl Connect for HttpUpstream {
    fn transport(&self) -> Result<Transport, mcp_bridge_sdk::Error> {
        mcp_bridge_sdk::transport::http::connect(self.config.clone())
    }

    fn origin(&self) -> Origin {
        Origin::Remote
    }

    fn sign_in_error(&self) -> Option<ErrorObject> {
        self.sign_in_problem().map(|problem| problem.error())
    }

    fn tokens_obtained(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.oauth.as_ref().map(|o| o.tokens_obtained())
    }
}

impl From<StdioUpstream> for UpstreamConfig {
    fn from(upstream: StdioUpstream) -> Self {
        UpstreamConfig::Connect(Arc::new(upstream))
    }
}

impl From<HttpUpstream> for UpstreamConfig {
    fn from(upstream: HttpUpstream) -> Self {
        UpstreamConfig::Connect(Arc::new(upstream))
    }
}

/// An upstream whose tools clients see only as `filter` admits them
/// (`--tools-allow`, `--tools-deny`); the rest is `inner`'s.
#[derive(Debug)]
pub struct FilteredTools {
    /// The upstream.
    pub inner: Arc<dyn Connect>,
    /// Which of its tools clients see and call.
    pub filter: NameFilter,
}

impl Connect for FilteredTools {
    fn transport(&self) -> Result<Transport, mcp_bridge_sdk::Error> {
        self.inner.transport()
    }

    fn origin(&self) -> Origin {
        self.inner.origin()
    }

    fn sign_in_error(&self) -> Option<ErrorObject> {
        self.inner.sign_in_error()
    }

    fn tokens_obtained(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.inner.tokens_obtained()
    }

    fn admits_tool(&self, name: &str) -> bool {
        self.filter.admits(name) && self.inner.admits_tool(name)
    }
}
