//! Where sign-ins are kept between runs: the tokens of each server and the
//! client registration at each authorization server, as records in a
//! [`RecordStore`](crate::store::RecordStore).

use serde::{Deserialize, Serialize};

/// The tokens of one server, from one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The authorization server that issued them.
    pub issuer: String,
    /// The client they were issued to.
    pub client_id: String,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When it was issued, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    /// The scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The resource they were asked for, exactly as the server's protected
    /// resource metadata names it (sent again on each refresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// `DPoP` for a token bound to the client's DPoP key (RFC 9449); `None`
    /// for a Bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
}

impl std::fmt::Debug for TokenRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "***"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A client registered at one authorization server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// The authorization server it is registered at; never used with another.
    pub issuer: String,
    /// The client id.
    pub client_id: String,
    /// The client secret of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub token_endpoint_auth_method: String,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "***"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// The key of a server's tokens.
pub fn tokens_key(resource: &str) -> String {
    format!("tokens:{resource}")
}

/// The key of the DPoP key (RFC 9449) a server's tokens are bound to.
pub fn dpop_key(resource: &str) -> String {
    format!("dpop:{resource}")
}

/// The keys of everything kept of one server's sign-in: its tokens and
/// its DPoP key. Signing out removes them all.
pub fn sign_in_keys(resource: &str) -> [String; 2] {
    [tokens_key(resource), dpop_key(resource)]
}

/// The key of the client registered at an authorization server.
pub fn client_key(issuer: &str) -> String {
    format!("client:{issuer}")
}

/// The key of the client registered at an authorization server for device
/// sign-ins (registered without a redirect URI).
pub fn device_client_key(issuer: &str) -> String {
    format!("device-client:{issuer}")
}
