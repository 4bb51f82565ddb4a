//! Who may reach `mcp-bridge --listen`: loopback admits every account of
//! the machine, so a TCP endpoint requires an access token (the user's,
//! from a variable, or one generated into a file only the user can read),
//! unless `--listen-no-auth` says otherwise; a Unix domain socket admits
//! whoever may enter its folder, which must be the user's alone.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use mcp_bridge_sdk::server::legacy::embed::http::AccessToken;

/// Where the endpoint listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix domain socket at this path.
    Unix(PathBuf),
}

/// What a request must show to be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Access {
    /// The token the user gave (`--listen-token-env`).
    Token(AccessToken),
    /// A token generated at start, written to a file only the user reads.
    Generated,
    /// Nothing: `--listen-no-auth` on TCP, or a socket without a token.
    Open,
    /// An access token of an OAuth authorization server for this endpoint
    /// (`--listen-auth-issuer`): the endpoint is a protected resource.
    OAuth(OAuthAccess),
}

/// The authorization server whose access tokens `--listen` takes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct OAuthAccess {
    /// Its issuer identifier (URL); its metadata is read at start.
    pub(crate) issuer: String,
    /// The audience tokens must name; `None`: the endpoint's URL.
    pub(crate) audience: Option<String>,
    /// The client id and secret the bridge introspects opaque tokens as;
    /// `None`: tokens are JWTs, checked against the issuer's keys.
    pub(crate) introspection: Option<(String, String)>,
}

impl std::fmt::Debug for OAuthAccess {
    /// The introspection client's secret stays out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthAccess")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("introspection_client", &self.introspection.as_ref().map(|(id, _)| id))
            .finish()
    }
}

/// The variables holding the client id and secret of
/// `--listen-auth-introspection`.
pub(crate) const INTROSPECTION_VARIABLES: [&str; 2] =
    ["MCP_BRIDGE_INTROSPECTION_CLIENT_ID", "MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET"];

impl OAuthAccess {
    /// The access of `--listen-auth-issuer`, `--listen-auth-audience` and
    /// `--listen-auth-introspection` (its client read with `env`).
    ///
    /// # Errors
    /// A message naming the variable that is missing, never a secret.
    pub(crate) fn from_options(
        issuer: &str,
        audience: Option<&str>,
        introspection: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<OAuthAccess, String> {
        let introspection = if introspection {
            let [id, secret] = INTROSPECTION_VARIABLES
                .map(|name| env(name).ok_or_else(|| format!("--listen-auth-introspection needs the variable {name}")));
            Some((id?, secret?))
        } else {
            None
        };
        Ok(OAuthAccess { issuer: issuer.to_owned(), audience: audience.map(str::to_owned), introspection })
    }
}

/// The `--listen` endpoint: where, and who may use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListenOn {
    pub(crate) place: Place,
    pub(crate) access: Access,
}

impl ListenOn {
    /// The endpoint of `--listen addr`, `--listen-token-env` (its variable
    /// read with `env`) and `--listen-no-auth`.
    ///
    /// # Errors
    /// A message naming the bad option, never a secret.
    pub(crate) fn from_options(
        addr: &str,
        token_env: Option<&str>,
        no_auth: bool,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<ListenOn, String> {
        let place = match addr.strip_prefix("unix:") {
            Some("") => return Err("--listen unix: needs the socket's path (unix:PATH)".into()),
            Some(path) => Place::Unix(PathBuf::from(path)),
            None => Place::Tcp(addr.parse().map_err(|_| {
                format!(
                    "--listen {addr:?} is not an address such as 127.0.0.1:8931 (an IP address and a port) or unix:PATH"
                )
            })?),
        };
        let access = match (token_env, no_auth, &place) {
            (Some(variable), _, _) => {
                let secret = env(variable)
                    .ok_or_else(|| format!("--listen-token-env {variable}: the variable is not set or empty"))?;
                Access::Token(AccessToken::new(&secret).map_err(|e| format!("--listen-token-env {variable}: {e}"))?)
            }
            (None, true, _) | (None, false, Place::Unix(_)) => Access::Open,
            (None, false, Place::Tcp(_)) => Access::Generated,
        };
        Ok(ListenOn { place, access })
    }
}

/// The file a generated token of the endpoint at `addr` is written to, in
/// `state_dir`.
pub(crate) fn token_file(state_dir: &Path, addr: &SocketAddr) -> PathBuf {
    let host = addr.ip().to_string().replace(':', "_");
    state_dir.join("listen").join(format!("{host}-{}.token", addr.port()))
}

/// Writes `secret` to `file` so that only this user can read it: its
/// folder is created 0700, the file 0600, replaced whole (a reader never
/// sees half a token).
///
/// # Errors
/// The I/O error, for the caller to name the file.
pub(crate) fn write_private(file: &Path, secret: &str) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    crate::dirs::create_private_dir(dir)?;
    let temporary = dir.join(format!(".{}.tmp", std::process::id()));
    // A leftover keeps its old mode: the new one is created.
    let _ = std::fs::remove_file(&temporary);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(&temporary)?, secret.as_bytes())?;
    std::fs::rename(&temporary, file)
}

/// Why a socket at `path` would admit others, or `None`: its folder must
/// be this user's and closed to group and others. A missing folder is
/// created so.
///
/// # Errors
/// A message for the user naming the folder and the fix.
#[cfg(unix)]
pub(crate) fn prepare_socket_folder(path: &Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    crate::dirs::private_folder(dir).map_err(|why| format!("--listen unix:{}: {why}", path.display()))?;
    remove_stale_socket(path)
}

/// Removes a socket file nothing listens on (left by a bridge that was
/// killed); refuses a live one or a file that is no socket.
#[cfg(unix)]
fn remove_stale_socket(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(metadata) = std::fs::symlink_metadata(path) else { return Ok(()) };
    if !metadata.file_type().is_socket() {
        return Err(format!("--listen unix:{}: a file that is not a socket is there", path.display()));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(format!("--listen unix:{}: another process listens there", path.display()));
    }
    std::fs::remove_file(path).map_err(|e| format!("--listen unix:{}: the old socket stays ({e})", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_owned())
    }

    #[test]
    fn tcp_needs_a_token_unless_told_otherwise() {
        let tcp = Place::Tcp("127.0.0.1:8931".parse().unwrap());
        let on = |token, no_auth| ListenOn::from_options("127.0.0.1:8931", token, no_auth, env);
        assert_eq!(on(None, false), Ok(ListenOn { place: tcp.clone(), access: Access::Generated }));
        assert_eq!(on(None, true), Ok(ListenOn { place: tcp.clone(), access: Access::Open }));
        let given = AccessToken::new("s3cret").unwrap();
        assert_eq!(on(Some("TOKEN"), false), Ok(ListenOn { place: tcp, access: Access::Token(given) }));
        let missing = on(Some("OTHER"), false).unwrap_err();
        assert!(missing.contains("--listen-token-env OTHER") && !missing.contains("s3cret"), "{missing}");
    }

    #[test]
    fn a_socket_is_open_to_who_may_enter_its_folder() {
        let on = ListenOn::from_options("unix:/run/x/mcp.sock", None, false, env).unwrap();
        assert_eq!(on, ListenOn { place: Place::Unix("/run/x/mcp.sock".into()), access: Access::Open });
        let with_token = ListenOn::from_options("unix:/run/x/mcp.sock", Some("TOKEN"), false, env).unwrap();
        assert!(matches!(with_token.access, Access::Token(_)));
        assert!(ListenOn::from_options("unix:", None, false, env).unwrap_err().contains("unix:PATH"));
        assert!(ListenOn::from_options("localhost", None, false, env).unwrap_err().contains("unix:PATH"));
    }

    #[test]
    fn token_files_are_named_by_address() {
        let dir = Path::new("/state");
        assert_eq!(token_file(dir, &"127.0.0.1:8931".parse().unwrap()), dir.join("listen/127.0.0.1-8931.token"));
        assert_eq!(token_file(dir, &"[::1]:80".parse().unwrap()), dir.join("listen/__1-80.token"));
    }
}
