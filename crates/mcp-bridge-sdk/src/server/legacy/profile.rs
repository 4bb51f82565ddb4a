//! A profile: what one family of legacy clients needs from the bridge. The
//! bridge's behaviour is the same for all; a profile holds the values that
//! differ (the protocol version it answers with, the prefix of its own
//! request ids, the `_meta` keys it passes on).

/// The values that tailor the bridge to a family of clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile's name on the command line.
    pub name: &'static str,
    /// The `protocolVersion` of the initialize result.
    pub protocol_version: &'static str,
    /// The prefix of the ids of the bridge's own requests to the client
    /// (`b-1`, ...), so they never equal a numeric id of the client.
    pub request_id_prefix: &'static str,
    /// The server name of the initialize result when the upstream gives none.
    pub fallback_name: &'static str,
    /// Request `_meta` keys of the client passed on to the upstream
    /// (trace context); every other key is removed.
    pub forwarded_meta_keys: &'static [&'static str],
}

/// The profile for Visual Studio Code and the clients built like it
/// (Claude Desktop, Cursor, the TypeScript SDK 1.x).
pub const VSCODE: Profile = Profile {
    name: "vscode",
    protocol_version: mcp_bridge_protocol::legacy::PROTOCOL_VERSION,
    request_id_prefix: "b-",
    fallback_name: "mcp-bridge",
    forwarded_meta_keys: &["traceparent", "tracestate", "baggage"],
};

/// Every profile, for the command line.
pub const PROFILES: [&Profile; 1] = [&VSCODE];

/// The profile with this name.
pub fn by_name(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().copied().find(|p| p.name == name)
}
