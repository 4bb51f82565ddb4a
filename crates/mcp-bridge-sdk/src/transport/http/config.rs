//! How the HTTP client reaches a server: the endpoint and its limits, the
//! proxy, the trust anchors and client certificate of HTTPS, and the
//! provider of credentials. [`build_client`] turns it into the `reqwest`
//! client every POST goes through.

use std::sync::Arc;

use crate::error::Error;
use crate::limits::HTTP_MAX_REDIRECTS;
use crate::transport::credentials::{AuthProvider, DEFAULT_MAX_RESPONSE_BYTES, without_credentials};
use crate::transport::tls::{TlsClientOptions, client_config};
use crate::transport::tool_headers::RejectedToolHook;

/// Where and how to reach a Streamable HTTP server.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint URL.
    pub url: String,
    /// The largest JSON body, and the largest SSE event (not the whole stream).
    pub max_response_bytes: usize,
    /// Headers added to every POST.
    pub headers: Vec<(String, String)>,
    /// The proxy the connections go through; none by default.
    pub proxy: ProxyConfig,
    /// The trust anchors, revocation lists and client certificate of HTTPS.
    pub tls: TlsClientOptions,
    /// Credentials of each request; told when the server refuses them.
    pub auth: Option<Arc<dyn AuthProvider>>,
    /// Requests sent at once; more wait for a free slot (listen streams
    /// are not counted).
    pub max_in_flight: usize,
    /// Told of each tool removed from a `tools/list` result because its
    /// `x-mcp-header` annotations are not valid (besides the warning logged).
    pub on_rejected_tool: Option<RejectedToolHook>,
}

crate::transport::tls::tls_file_setters!(HttpConfig);

crate::setters::with_setters! {
    HttpConfig {
        value with_max_response_bytes => max_response_bytes: usize,
        value with_headers => headers: Vec<(String, String)>,
        value with_proxy => proxy: ProxyConfig,
        value with_tls => tls: TlsClientOptions,
        some with_auth => auth: Arc<dyn AuthProvider>,
        value with_max_in_flight => max_in_flight: usize,
        some with_on_rejected_tool => on_rejected_tool: RejectedToolHook,
    }
}

impl std::fmt::Debug for HttpConfig {
    /// The configuration with header names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("url", &self.url)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("headers", &names)
            .field("proxy", &self.proxy)
            .field("tls", &self.tls)
            .field("auth", &self.auth)
            .field("max_in_flight", &self.max_in_flight)
            .field("on_rejected_tool", &self.on_rejected_tool.is_some())
            .finish()
    }
}

impl HttpConfig {
    /// Checks that the configuration can be used (the proxy URL, the CA and
    /// identity files) without connecting.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] saying what cannot be used.
    pub fn check(&self) -> Result<(), Error> {
        build_client(self).map(|_| ())
    }

    /// The HTTP client builder the transport starts from: this
    /// configuration's proxy, CA file and client identity, no redirects
    /// followed. For a tool that makes requests of its own to the same
    /// server with the same trust, such as `mcp-bridge doctor`.
    ///
    /// # Errors
    /// As [`HttpConfig::check`].
    pub fn client_builder(&self) -> Result<reqwest::ClientBuilder, Error> {
        builder(self, reqwest::redirect::Policy::none(), None)
    }

    /// A configuration with the default limits, no proxy and no credentials.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            headers: Vec::new(),
            proxy: ProxyConfig::None,
            tls: TlsClientOptions::default(),
            auth: None,
            max_in_flight: crate::limits::HTTP_MAX_IN_FLIGHT,
            on_rejected_tool: None,
        }
    }
}

/// The HTTP proxy of a client.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum ProxyConfig {
    /// Connect directly.
    #[default]
    None,
    /// Go through the proxy at `url` (`http://[user:password@]host:port`;
    /// the credentials go to the proxy only), except for the hosts of
    /// `no_proxy` (names, suffixes such as `.example.com`, IP addresses and
    /// CIDR ranges).
    Explicit {
        /// The proxy's URL.
        url: String,
        /// Hosts reached directly.
        no_proxy: Vec<String>,
    },
}

impl std::fmt::Debug for ProxyConfig {
    /// The proxy without the credentials its URL may carry.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxyConfig::None => f.write_str("None"),
            ProxyConfig::Explicit { url, no_proxy } => {
                f.debug_struct("Explicit").field("url", &without_credentials(url)).field("no_proxy", no_proxy).finish()
            }
        }
    }
}

/// Hosts a proxy taken from the environment never gets.
const LOOPBACK_HOSTS: [&str; 4] = ["localhost", "127.0.0.0/8", "::1", ".localhost"];

impl ProxyConfig {
    /// The proxy the environment gives a client of `target_url`: for https
    /// the first set of `https_proxy`, `HTTPS_PROXY`, `all_proxy`,
    /// `ALL_PROXY`; for http the first of `http_proxy`, `HTTP_PROXY`,
    /// `all_proxy`, `ALL_PROXY` (the `http_` ones ignored when
    /// `REQUEST_METHOD` is set, as in a CGI program); `no_proxy` or
    /// `NO_PROXY` lists the hosts reached directly. Loopback hosts are
    /// always reached directly. `var` reads one variable, so a caller can
    /// pass its own environment; `std::env::var(name).ok()` reads the
    /// process's.
    pub fn from_environment(target_url: &str, var: impl Fn(&str) -> Option<String>) -> ProxyConfig {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let https = target_url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
        let cgi = set("REQUEST_METHOD").is_some();
        let names: &[&str] = match (https, cgi) {
            (true, _) => &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
            (false, false) => &["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"],
            (false, true) => &["all_proxy", "ALL_PROXY"],
        };
        let Some(url) = names.iter().find_map(|n| set(n)) else { return ProxyConfig::None };
        let mut no_proxy: Vec<String> = set("no_proxy")
            .or_else(|| set("NO_PROXY"))
            .map(|list| list.split(',').map(|h| h.trim().to_owned()).filter(|h| !h.is_empty()).collect())
            .unwrap_or_default();
        no_proxy.extend(LOOPBACK_HOSTS.iter().map(|h| (*h).to_owned()));
        ProxyConfig::Explicit { url: url.trim().to_owned(), no_proxy }
    }
}

/// The `reqwest` client of a configuration.
///
/// # Errors
/// [`Error::InvalidRequest`] for a proxy that is not `http://`, or a CA or
/// identity file that cannot be read or parsed.
pub(crate) fn build_client(config: &HttpConfig) -> Result<reqwest::Client, Error> {
    build_client_with(config, same_origin_redirects())
}

/// The redirect policy of the transport: a redirect is followed only on
/// the origin (scheme, host and port) of the request it answers, so never
/// from https to http, and at most [`HTTP_MAX_REDIRECTS`] times; any other
/// is an error naming the redirect's origin (not its URL, whose query may
/// hold a secret). The configured headers, the credentials and, on 307 and
/// 308, the body never reach another origin.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let to = attempt.url().origin();
        let from = attempt.previous().first().map(reqwest::Url::origin);
        if from.as_ref() != Some(&to) {
            let reason = format!(
                "the server redirected to {}, another origin; only redirects on the server's own origin are followed",
                to.ascii_serialization()
            );
            attempt.error(reason)
        } else if attempt.previous().len() > HTTP_MAX_REDIRECTS {
            attempt.error(format!("the server redirected more than {HTTP_MAX_REDIRECTS} times"))
        } else {
            attempt.follow()
        }
    })
}

/// [`build_client`] with its own redirect policy.
///
/// # Errors
/// As [`build_client`].
pub(crate) fn build_client_with(
    config: &HttpConfig,
    redirects: reqwest::redirect::Policy,
) -> Result<reqwest::Client, Error> {
    build(config, redirects, None)
}

/// The client of the transport when its connections go through a tunnel
/// (see `tunnel`): every connection to `socket`; redirects followed only
/// on the endpoint's own origin (the one the tunnel reaches), as always.
///
/// # Errors
/// As [`build_client`].
#[cfg(unix)]
pub(crate) fn build_tunnelled_client(config: &HttpConfig, socket: &std::path::Path) -> Result<reqwest::Client, Error> {
    build(config, same_origin_redirects(), Some(socket))
}

/// Whether `host` is reached without the proxy: it is listed in
/// `no_proxy` as itself, as a parent domain (`example.com` and
/// `.example.com` cover `a.example.com`), as an IP address or in a listed
/// network (`10.0.0.0/8`), or `*` is listed.
#[cfg(any(unix, test))]
pub(crate) fn bypasses_proxy(host: &str, no_proxy: &[String]) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    let address: Option<std::net::IpAddr> = host.parse().ok();
    no_proxy.iter().map(|entry| entry.trim().to_ascii_lowercase()).any(|entry| {
        if entry == "*" {
            return true;
        }
        if let Some(address) = address {
            return in_network(address, &entry);
        }
        let domain = entry.trim_start_matches('.');
        !domain.is_empty() && (host == domain || host.ends_with(&format!(".{domain}")))
    })
}

/// Whether `address` is `entry` (an address) or in it (`address/bits`).
#[cfg(any(unix, test))]
fn in_network(address: std::net::IpAddr, entry: &str) -> bool {
    use std::net::IpAddr;
    let entry = entry.trim_start_matches('[').trim_end_matches(']');
    let (network, bits) = match entry.split_once('/') {
        Some((network, bits)) => (network, bits.parse::<u32>().ok()),
        None => (entry, None),
    };
    let Ok(network) = network.parse::<IpAddr>() else { return false };
    let prefix = |a: u128, b: u128, width: u32| {
        let bits = bits.unwrap_or(width).min(width);
        let shift = width - bits;
        bits == 0 || (a >> shift) == (b >> shift)
    };
    match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => prefix(u32::from(a).into(), u32::from(n).into(), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => prefix(u128::from(a), u128::from(n), 128),
        _ => false,
    }
}

fn build(
    config: &HttpConfig,
    redirects: reqwest::redirect::Policy,
    tunnel: Option<&std::path::Path>,
) -> Result<reqwest::Client, Error> {
    let invalid = |reason: String| Error::InvalidRequest { reason };
    builder(config, redirects, tunnel)?.build().map_err(|e| invalid(e.without_url().to_string()))
}

fn builder(
    config: &HttpConfig,
    redirects: reqwest::redirect::Policy,
    tunnel: Option<&std::path::Path>,
) -> Result<reqwest::ClientBuilder, Error> {
    let invalid = |reason: String| Error::InvalidRequest { reason };
    let mut builder = reqwest::Client::builder().no_proxy().redirect(redirects);
    if let ProxyConfig::Explicit { url, no_proxy } = &config.proxy {
        if !url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://")) {
            return Err(invalid(format!(
                "the proxy {} is not an http:// URL (no TLS to the proxy, no SOCKS)",
                without_credentials(url)
            )));
        }
        let proxy = reqwest::Proxy::all(url)
            .map_err(|_| invalid(format!("the proxy URL {} is not valid", without_credentials(url))))?
            .no_proxy(reqwest::NoProxy::from_string(&no_proxy.join(",")));
        builder = builder.proxy(proxy);
    }
    #[cfg(unix)]
    if let Some(socket) = tunnel {
        builder = builder.unix_socket(socket);
    }
    #[cfg(not(unix))]
    let _ = tunnel;
    // One rustls configuration for every HTTPS connection: the trust,
    // revocation and identity rules the WebSocket transport uses too.
    builder = builder.use_preconfigured_tls(client_config(&config.tls, &[b"http/1.1"])?);
    Ok(builder)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_environment_picks_the_proxy_of_the_scheme_and_never_loopback() {
        let vars =
            env(&[("HTTPS_PROXY", "http://p:3128"), ("http_proxy", "http://h:80"), ("no_proxy", "a.example, .b")]);
        let ProxyConfig::Explicit { url, no_proxy } = ProxyConfig::from_environment("https://x/mcp", &vars) else {
            panic!("a proxy was expected")
        };
        assert_eq!(url, "http://p:3128");
        assert!(no_proxy.contains(&"a.example".to_owned()) && no_proxy.contains(&".b".to_owned()));
        assert!(no_proxy.contains(&"127.0.0.0/8".to_owned()) && no_proxy.contains(&"localhost".to_owned()));
        let ProxyConfig::Explicit { url, .. } = ProxyConfig::from_environment("http://x/mcp", &vars) else { panic!() };
        assert_eq!(url, "http://h:80");
        let cgi = env(&[("HTTP_PROXY", "http://attacker:1"), ("REQUEST_METHOD", "GET")]);
        assert_eq!(ProxyConfig::from_environment("http://x/mcp", cgi), ProxyConfig::None);
        assert_eq!(ProxyConfig::from_environment("https://x/mcp", env(&[("https_proxy", " ")])), ProxyConfig::None);
    }

    #[test]
    fn no_proxy_covers_names_parent_domains_addresses_and_networks() {
        let list: Vec<String> =
            ["a.example", ".b.example", "10.0.0.0/8", "::1", "192.168.1.7"].iter().map(|s| (*s).to_owned()).collect();
        assert!(bypasses_proxy("a.example", &list));
        assert!(bypasses_proxy("x.a.example", &list));
        assert!(bypasses_proxy("B.example", &list));
        assert!(!bypasses_proxy("xa.example", &list));
        assert!(!bypasses_proxy("c.example", &list));
        assert!(bypasses_proxy("10.1.2.3", &list));
        assert!(!bypasses_proxy("11.1.2.3", &list));
        assert!(bypasses_proxy("[::1]", &list));
        assert!(bypasses_proxy("192.168.1.7", &list));
        assert!(!bypasses_proxy("192.168.1.8", &list));
        assert!(bypasses_proxy("127.0.0.1", &["127.0.0.0/8".to_owned()]));
        assert!(bypasses_proxy("anything", &["*".to_owned()]));
        assert!(!bypasses_proxy("anything", &[]));
    }

    #[test]
    fn proxy_credentials_stay_out_of_messages() {
        assert_eq!(without_credentials("http://user:s3cret@proxy:3128/"), "http://***@proxy:3128/");
        assert_eq!(without_credentials("http://proxy:3128"), "http://proxy:3128");
        let config = ProxyConfig::Explicit { url: "http://u:s3cret@p:1".into(), no_proxy: vec![] };
        assert!(!format!("{config:?}").contains("s3cret"));
        let socks = HttpConfig {
            proxy: ProxyConfig::Explicit { url: "socks5://u:s3cret@p:1".into(), no_proxy: vec![] },
            ..HttpConfig::new("http://x")
        };
        let error = build_client(&socks).unwrap_err().to_string();
        assert!(error.contains("not an http:// URL") && !error.contains("s3cret"), "{error}");
        assert_eq!(format!("{:?}", crate::transport::credentials::BearerToken::new("tok-s3cret")), "BearerToken(***)");
    }
}
