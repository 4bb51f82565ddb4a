//! Every connection to the endpoint through an explicit proxy as a CONNECT
//! tunnel, `http://` endpoints included (the client guide's rule: many
//! corporate proxies only tunnel, and a tunnel keeps the request, its
//! headers and its credentials away from the proxy). `reqwest` tunnels
//! only `https`, so the transport's client talks to a private Unix socket
//! instead, and each connection to it becomes one tunnel made here, whose
//! refusal is named with the proxy's status.

use std::path::PathBuf;
use std::time::Duration;

use crate::task_group::TaskGroup;
use base64::Engine;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::http_head::{HeadError, parse_status, read_head};
use crate::transport::credentials::without_credentials;

/// Time the proxy gets to answer a CONNECT.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response head a proxy may send to a CONNECT.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Where a tunnel goes: the proxy, its credentials, the endpoint.
#[derive(Clone)]
struct Route {
    /// `host:port` of the proxy.
    proxy: String,
    /// The proxy's URL without credentials, for messages.
    proxy_shown: String,
    /// `Proxy-Authorization` when the proxy URL has user information.
    authorization: Option<String>,
    /// `host:port` of the endpoint.
    target: String,
}

/// A private Unix socket whose connections are tunnelled to one endpoint.
/// Dropping it stops taking connections and removes the socket; tunnels
/// already open go on until their connection ends.
#[derive(Debug)]
pub(crate) struct Tunnel {
    dir: PathBuf,
    /// The accept loop and each tunnel it carries.
    tasks: TaskGroup,
}

impl Tunnel {
    /// Starts the socket for tunnels to `target` (`host:port`) through the
    /// `http://` proxy at `proxy_url`.
    ///
    /// # Errors
    /// A proxy URL without a host, or the socket cannot be made.
    pub(crate) fn start(proxy_url: &str, target: String) -> std::io::Result<Tunnel> {
        let route = route(proxy_url, target)?;
        let dir = private_dir()?;
        let listener = UnixListener::bind(dir.join("tunnel"))?;
        let tasks = TaskGroup::default();
        let carriers = tasks.clone();
        tasks.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let route = route.clone();
                carriers.spawn(async move { carry(client, &route).await });
            }
        });
        Ok(Tunnel { dir, tasks })
    }

    /// The socket the HTTP client connects to.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.join("tunnel")
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.tasks.cancel();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A new folder only this user can enter, under the temporary folder.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| std::io::Error::other(e.to_string()))?;
    let name = hex::encode(random);
    let dir = std::env::temp_dir().join(format!("mcp-sdk-tunnel-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

fn route(proxy_url: &str, target: String) -> std::io::Result<Route> {
    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "the proxy URL has no host");
    let url = reqwest::Url::parse(proxy_url).map_err(|_| invalid())?;
    let host = url.host_str().ok_or_else(invalid)?;
    let proxy = format!("{host}:{}", url.port_or_known_default().unwrap_or(80));
    let authorization = (!url.username().is_empty()).then(|| {
        let decode = |s: &str| percent_decode(s);
        let pair = format!("{}:{}", decode(url.username()), decode(url.password().unwrap_or("")));
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
    });
    Ok(Route { proxy, proxy_shown: without_credentials(proxy_url), authorization, target })
}

/// `%XX` sequences of URL user information decoded (the rest as it is).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One connection of the HTTP client: a tunnel through the proxy, then
/// bytes both ways until either side ends.
async fn carry(mut client: UnixStream, route: &Route) {
    match tokio::time::timeout(CONNECT_TIMEOUT, open(route)).await {
        Ok(Ok(mut upstream)) => {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
        Ok(Err(refusal)) => {
            tracing::warn!(target: "mcp_proxy", proxy = %route.proxy_shown, target = %route.target, "no tunnel through the proxy: {refusal}");
        }
        Err(_) => {
            tracing::warn!(target: "mcp_proxy", proxy = %route.proxy_shown, target = %route.target, "the proxy did not answer the CONNECT within {CONNECT_TIMEOUT:?}");
        }
    }
}

/// Asks the proxy for a tunnel to the target.
async fn open(route: &Route) -> Result<TcpStream, String> {
    let mut proxy = TcpStream::connect(&route.proxy).await.map_err(|e| format!("cannot connect to the proxy: {e}"))?;
    let mut request = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", route.target);
    if let Some(authorization) = &route.authorization {
        request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    proxy.write_all(request.as_bytes()).await.map_err(|e| format!("the proxy closed the connection: {e}"))?;
    // Byte by byte: nothing of the tunnel after the head is taken.
    let read = read_head(&mut proxy, 1, MAX_HEAD_BYTES, parse_status).await;
    match read.map_err(|_| "the proxy closed the connection".to_owned())? {
        Ok((status, _)) if (200..300).contains(&status) => Ok(proxy),
        Ok((status, _)) => Err(format!("the proxy answered HTTP {status}")),
        Err(HeadError::Malformed) => Err("the proxy's answer is not HTTP".into()),
        Err(HeadError::TooLong) => Err(format!("the proxy's answer is longer than {MAX_HEAD_BYTES} bytes")),
        Err(HeadError::Ended) => Err("the proxy closed the connection".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credentials_are_read_as_sent() {
        let with_user = route("http://us%40er:p%3Ass@proxy.example:3128", "mcp.example:80".into()).unwrap();
        assert_eq!(with_user.proxy, "proxy.example:3128");
        assert_eq!(with_user.proxy_shown, "http://***@proxy.example:3128");
        let encoded = with_user.authorization.unwrap();
        let decoded =
            base64::engine::general_purpose::STANDARD.decode(encoded.strip_prefix("Basic ").unwrap()).unwrap();
        assert_eq!(decoded, b"us@er:p:ss");
        assert_eq!(route("http://proxy", "x:1".into()).unwrap().proxy, "proxy:80");
    }

    #[tokio::test]
    async fn the_socket_is_private_and_removed_with_the_tunnel() {
        use std::os::unix::fs::PermissionsExt;
        let tunnel = Tunnel::start("http://127.0.0.1:9", "example:80".into()).unwrap();
        let socket = tunnel.socket();
        assert!(socket.file_name().is_some_and(|n| n == "tunnel"));
        let dir = socket.parent().unwrap().to_owned();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        drop(tunnel);
        assert!(!dir.exists());
    }
}
