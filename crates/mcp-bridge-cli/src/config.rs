//! The validated configuration of one run, made from [`crate::args::Args`].

use std::sync::Arc;
use std::time::Duration;

use mcp_bridge::connectors::{FilteredTools, HttpUpstream, StdioUpstream};
use mcp_bridge::signin::{Gate, SignIn, SignInOptions};
use mcp_bridge_sdk::auth::{
    ClientAuthMethod, ClientKey, EnterpriseIdp, Grant, OAuthClient, OAuthConfig, PreRegistered, SigningAlgorithm,
    TokenSource,
};
use mcp_bridge_sdk::client::Era;
use mcp_bridge_sdk::limits::ServerLimits;
use mcp_bridge_sdk::server::http::{Quotas, Rate};
use mcp_bridge_sdk::server::legacy::{FrontendOptions, UpstreamConfig, profile};
use mcp_bridge_sdk::toolset::exposure::NameFilter;
use mcp_bridge_sdk::transport::TlsClientOptions;
use mcp_bridge_sdk::transport::http::{HttpConfig, ProxyConfig};
use mcp_bridge_sdk::transport::stdio::StdioCommand;

use crate::args::{Action, Args, Connection, EnterpriseSignIn, StaticClient};

/// The log levels `--log-level` accepts.
const LOG_LEVELS: [&str; 5] = ["error", "warning", "info", "debug", "trace"];

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Job {
    /// Bridge a client to a server.
    Bridge(Box<Config>),
    /// Forget the stored sign-in of a URL, or all of them.
    Logout {
        /// The server URL; `None` with `--all`.
        url: Option<String>,
    },
    /// Check a server and report.
    Doctor {
        /// JSON instead of text.
        json: bool,
        /// The server.
        target: crate::doctor::Target,
    },
    /// Serve this client from the daemon of a configuration file.
    Attach {
        /// The configuration file.
        config: std::path::PathBuf,
        /// The servers' names; every one for `None`.
        servers: Option<Vec<String>>,
    },
    /// Run, ask or stop the daemon of a configuration file.
    Daemon(crate::daemon::DaemonJob),
}

/// The configuration file `--config` names, else `servers.json` in
/// mcp-bridge's configuration folder (see [`crate::dirs::config_dir`]).
fn daemon_config(file: Option<std::path::PathBuf>) -> Result<std::path::PathBuf, String> {
    match file {
        Some(file) => Ok(file),
        None => Ok(crate::dirs::config_dir().map_err(|e| e.to_string())?.join("servers.json")),
    }
}

/// What the bridge runs with.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) log_level: String,
    /// `--log-format`.
    pub(crate) log_format: mcp_bridge::log::LogFormat,
    pub(crate) upstream: UpstreamConfig,
    pub(crate) frontend: FrontendOptions,
    /// The sign-in gate of the URL form, told when the client is initialized.
    pub(crate) gate: Option<Arc<Gate>>,
    /// `--listen`: the HTTP endpoint for legacy clients, and who may use it.
    pub(crate) listen: Option<crate::listen::ListenOn>,
    /// `--max-connections`: the cap on the `--listen` endpoint's connections.
    pub(crate) max_connections: Option<usize>,
    /// `--listen-rate-limit` and `--listen-max-in-flight`: each caller's quotas.
    pub(crate) quotas: Quotas,
    /// `--listen-max-sessions`: each caller's 2025-11-25 sessions at once.
    pub(crate) max_sessions_per_caller: Option<usize>,
    /// `--listen-no-telemetry` not given: metrics, OTLP export.
    pub(crate) telemetry: bool,
    /// `--listen-access-log`: a line per request answered.
    pub(crate) access_log: bool,
    /// `--config`: the gateway's server (the upstream, in memory), the
    /// servers whose tools it serves, and the file they come from.
    pub(crate) gateway: Option<crate::reload::GatewayJob>,
}

/// The headers of the command line, and the names of the variables they
/// came from (kept from a browser's environment).
struct Headers {
    pairs: Vec<(String, String)>,
    variables: Vec<String>,
}

/// The headers of `--header NAME:VALUE` and `--header-env NAME=VAR`.
fn headers(args: &Connection) -> Result<Headers, String> {
    let is_token = |name: &str| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    };
    let mut headers = Vec::new();
    for header in &args.headers {
        let (name, value) = header.split_once(':').ok_or_else(|| format!("--header {header:?} needs NAME:VALUE"))?;
        let name = name.trim();
        if !is_token(name) {
            return Err(format!("--header: {name:?} is not a header name"));
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    let mut variables = Vec::new();
    for pair in &args.header_env {
        let (name, var) = pair.split_once('=').ok_or_else(|| format!("--header-env {pair:?} needs NAME=VAR"))?;
        if !is_token(name) {
            return Err(format!("--header-env: {name:?} is not a header name"));
        }
        let value = std::env::var(var).map_err(|_| format!("--header-env: the variable {var} is not set"))?;
        headers.push((name.to_owned(), value));
        variables.push(var.to_owned());
    }
    Ok(Headers { pairs: headers, variables })
}

/// Whether `url` starts with `http://` or `https://` (in any case).
pub(crate) fn is_http_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
}

/// The HTTP transport's settings for `url` from the connection options
/// and the environment's proxy; also the variables of `--header-env`.
pub(crate) fn http_config(connection: &Connection, url: &str) -> Result<(HttpConfig, Vec<String>), String> {
    if !is_http_url(url) {
        return Err(format!("{url:?} is not an http(s) URL; to start a server program, put it after --"));
    }
    if connection.max_response_bytes < 1024 {
        return Err("--max-response-bytes must be at least 1024".into());
    }
    let Headers { pairs: headers, variables } = headers(connection)?;
    let mut http = HttpConfig::new(url);
    http.max_response_bytes = connection.max_response_bytes;
    http.proxy = ProxyConfig::from_environment(url, |name| std::env::var(name).ok());
    http.tls = TlsClientOptions::default()
        .with_only_ca_file(connection.ca_file_only)
        .with_crl_files(connection.crl_files.clone());
    http.tls.ca_file = connection.ca_file.clone();
    http.headers = headers;
    http.check().map_err(|e| format!("{e}"))?;
    Ok((http, variables))
}

/// Whether the headers carry credentials (the sign-in is then off).
pub(crate) fn has_authorization(http: &HttpConfig) -> bool {
    http.headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
}

/// The client of `--client-id` and its credentials; `env` reads the
/// variable of `--client-secret-env`. Errors name the option, never the
/// secret or the key.
fn static_client(args: &StaticClient, env: impl Fn(&str) -> Option<String>) -> Result<Option<PreRegistered>, String> {
    let Some(id) = &args.client_id else { return Ok(None) };
    if id.trim().is_empty() {
        return Err("--client-id is empty".into());
    }
    let mut client = PreRegistered::new(id);
    if let Some(variable) = &args.client_secret_env {
        let secret = env(variable).filter(|s| !s.is_empty());
        let secret =
            secret.ok_or_else(|| format!("--client-secret-env {variable}: the variable is not set or empty"))?;
        client = client.with_client_secret(secret);
    }
    if let Some(file) = &args.client_key_file {
        let name = args.client_key_algorithm.as_deref().unwrap_or("ES256");
        let algorithm = SigningAlgorithm::from_name(name)
            .ok_or_else(|| format!("--client-key-algorithm must be ES256 or RS256, not {name:?}"))?;
        let pem = std::fs::read_to_string(file)
            .map_err(|e| format!("--client-key-file {}: cannot be read ({e})", file.display()))?;
        let key =
            ClientKey::from_pem(&pem, algorithm).map_err(|e| format!("--client-key-file {}: {e}", file.display()))?;
        client = client.with_private_key(key);
    }
    if let Some(name) = &args.client_auth_method {
        let method = ClientAuthMethod::from_name(name).ok_or_else(|| {
            format!("--client-auth-method must be none, client_secret_basic, client_secret_post or private_key_jwt, not {name:?}")
        })?;
        let secret_method = matches!(method, ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost);
        if secret_method && client.client_secret.is_none() {
            return Err(format!("--client-auth-method {name} needs the secret: give --client-secret-env"));
        }
        if method == ClientAuthMethod::PrivateKeyJwt && client.private_key.is_none() {
            return Err("--client-auth-method private_key_jwt needs the key: give --client-key-file".into());
        }
        client = client.with_auth_method(method);
    }
    Ok(Some(client))
}

/// The identity provider of `--idp-issuer`; `env` reads the variable of
/// `--idp-client-secret-env`. Errors name the option, never the secret.
fn enterprise_idp(
    args: &EnterpriseSignIn,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<EnterpriseIdp>, String> {
    let (Some(issuer), Some(client_id), Some(id_token_file)) =
        (&args.idp_issuer, &args.idp_client_id, &args.idp_id_token_file)
    else {
        return Ok(None);
    };
    if !is_http_url(issuer) {
        return Err(format!("--idp-issuer {issuer:?} is not an http(s) URL"));
    }
    let mut client = PreRegistered::new(client_id);
    if let Some(variable) = &args.idp_client_secret_env {
        let secret = env(variable)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("--idp-client-secret-env {variable}: the variable is not set or empty"))?;
        client = client.with_client_secret(secret);
    }
    Ok(Some(EnterpriseIdp::new(issuer, client, TokenSource::file(id_token_file))))
}

/// The upstream of the URL form: the HTTP transport with the sign-in.
/// The upstream with only the tools `allow` and `deny` admit shown, when
/// they name any.
fn with_tool_filter(upstream: UpstreamConfig, allow: &[String], deny: &[String]) -> Result<UpstreamConfig, String> {
    if allow.is_empty() && deny.is_empty() {
        return Ok(upstream);
    }
    let filter = NameFilter::new(allow, deny).map_err(|e| format!("--tools-allow/--tools-deny: {e}"))?;
    match upstream {
        UpstreamConfig::Connect(inner) => Ok(UpstreamConfig::Connect(Arc::new(FilteredTools { inner, filter }))),
        // --config has its own filters beside each server (clap keeps the flags apart).
        other => Ok(other),
    }
}

fn http_upstream(args: &Args, url: &str) -> Result<(UpstreamConfig, Option<Arc<Gate>>), String> {
    if args.sign_in_timeout == 0 {
        return Err("--sign-in-timeout must be at least 1 second".into());
    }
    let (mut http, mut variables) = http_config(&args.connection, url)?;
    if has_authorization(&http) {
        // The user gave the credentials; no sign-in.
        return Ok((HttpUpstream { config: http, oauth: None, sign_in: None }.into(), None));
    }
    // Every variable the bridge was told holds a secret stays out of the
    // browser's environment, whatever its name.
    variables.extend(args.static_client.client_secret_env.iter().cloned());
    variables.extend(args.enterprise.idp_client_secret_env.iter().cloned());
    let opener = crate::sign_ins::browser_opener(args.no_browser, variables);
    let gate = Arc::new(Gate::new(opener));
    let options = SignInOptions::new(args.redirect_port, Duration::from_secs(args.sign_in_timeout));
    // Written whatever the log level: it is how the user signs in.
    let announce = Arc::new(|url: &str| eprintln!("mcp-bridge: sign in at {url}"));
    let sign_in = SignIn::new(options, gate.clone(), announce);
    let store = crate::token_store::open()?;
    // The revocation lists are for the server: an identity provider whose
    // issuer has none among them is not refused for that alone.
    let mut sign_in_connection = http.clone();
    sign_in_connection.tls.allow_unknown_revocation_status = true;
    let mut config = OAuthConfig::new(url, sign_in.redirect_uri(), "mcp-bridge").with_connection(sign_in_connection);
    config.client_metadata_url = args.client_metadata_url.clone();
    config.dpop = args.dpop;
    config.pre_registered = static_client(&args.static_client, |name| std::env::var(name).ok())?;
    if let Some(idp) = enterprise_idp(&args.enterprise, |name| std::env::var(name).ok())? {
        config.grant = Grant::EnterpriseManaged(idp);
    }
    if args.device_code {
        config.grant = Grant::DeviceCode(sign_in.device_prompt());
    }
    let oauth = OAuthClient::new(config, sign_in.authorize(), Arc::new(store)).map_err(|e| e.to_string())?;
    http.auth = Some(Arc::new(oauth.clone()));
    Ok((HttpUpstream { config: http, oauth: Some(oauth), sign_in: Some(sign_in) }.into(), Some(gate)))
}

impl Job {
    /// Checks the arguments.
    ///
    /// # Errors
    /// A message for the user naming the bad argument.
    pub(crate) fn from_args(mut args: Args) -> Result<Job, String> {
        match args.action.take() {
            Some(Action::Logout { url, all }) => return Ok(Job::Logout { url: if all { None } else { url } }),
            Some(Action::Doctor { json, connection, url, command }) => {
                let target = match (url, command.is_empty()) {
                    (Some(_), false) => return Err("give a URL or a command after --, not both".into()),
                    (None, true) => return Err("give the server's URL, or its command after --".into()),
                    (Some(url), true) => crate::doctor::Target::Url(Box::new(http_config(&connection, &url)?.0)),
                    (None, false) => {
                        let mut words = command.into_iter();
                        let program = words.next().ok_or("give the server command after --")?;
                        crate::doctor::Target::Command(Box::new(StdioCommand::new(program).args(words)))
                    }
                };
                return Ok(Job::Doctor { json, target });
            }
            Some(Action::Attach { config, all, servers }) => {
                return Ok(Job::Attach { config: daemon_config(config)?, servers: (!all).then_some(servers) });
            }
            Some(Action::Daemon { action }) => {
                use crate::args::DaemonAction;
                use crate::daemon::DaemonJob;
                return Ok(Job::Daemon(match action {
                    DaemonAction::Run { config, log_level, redirect_port, sign_in_timeout, no_browser } => {
                        if !LOG_LEVELS.contains(&log_level.as_str()) {
                            return Err(format!(
                                "unknown --log-level {log_level:?}; use one of {}",
                                LOG_LEVELS.join(", ")
                            ));
                        }
                        if sign_in_timeout == 0 {
                            return Err("--sign-in-timeout must be at least 1 second".into());
                        }
                        let sign_in = crate::daemon::SignInChoices {
                            redirect_port,
                            timeout: Duration::from_secs(sign_in_timeout),
                            no_browser,
                        };
                        DaemonJob::Run { config: daemon_config(config)?, log_level, sign_in }
                    }
                    DaemonAction::Status { config, json } => DaemonJob::Status { config: daemon_config(config)?, json },
                    DaemonAction::Stop { config } => DaemonJob::Stop { config: daemon_config(config)? },
                }));
            }
            None => {}
        }
        let profile = profile::by_name(&args.profile).ok_or_else(|| {
            let known: Vec<&str> = profile::PROFILES.iter().map(|p| p.name).collect();
            format!("unknown --profile {:?}; known profiles: {}", args.profile, known.join(", "))
        })?;
        if !LOG_LEVELS.contains(&args.log_level.as_str()) {
            return Err(format!("unknown --log-level {:?}; use one of {}", args.log_level, LOG_LEVELS.join(", ")));
        }
        if args.discover_timeout == 0 {
            return Err("--discover-timeout must be at least 1 second".into());
        }
        if args.input_timeout == 0 {
            return Err("--input-timeout must be at least 1 second".into());
        }
        let upstream_era = match args.protocol.as_str() {
            "auto" => Era::Auto,
            "2026-07-28" => Era::Modern,
            "2025-11-25" => Era::Legacy,
            other => return Err(format!("unknown --protocol {other:?}; use auto, 2026-07-28 or 2025-11-25")),
        };
        if args.max_line_bytes < 1024 {
            return Err("--max-line-bytes must be at least 1024".into());
        }
        let mut frontend = FrontendOptions::default()
            .with_profile(profile)
            .with_limits(ServerLimits::default().with_max_line_bytes(args.max_line_bytes))
            .with_discover_timeout(Duration::from_secs(args.discover_timeout))
            .with_input_timeout(Duration::from_secs(args.input_timeout))
            .with_upstream_era(upstream_era);
        frontend.era_cache = (upstream_era == Era::Auto).then(era_cache).flatten();
        let mut gateway = None;
        let (upstream, gate) = match (&args.url, args.command.is_empty(), &args.config) {
            (None, true, Some(file)) => {
                if args.sign_in_timeout == 0 {
                    return Err("--sign-in-timeout must be at least 1 second".into());
                }
                // Behind --listen the clients are not the user at this computer.
                let sign_ins = args.listen.is_none().then(|| {
                    let timeout = Duration::from_secs(args.sign_in_timeout);
                    crate::sign_ins::SignIns::new(args.redirect_port, timeout, args.no_browser)
                });
                let config = crate::reload::read(file, sign_ins.as_ref())?;
                let server = mcp_bridge::gateway::server();
                let upstream = UpstreamConfig::memory(&server);
                gateway = Some(crate::reload::GatewayJob { server, config, file: file.clone(), sign_ins });
                (upstream, None)
            }
            (Some(_), false, _) => return Err("give a URL or a command after --, not both".into()),
            (None, true, None) => return Err("give the server's URL, or its command after --".into()),
            (Some(url), true, _) => {
                // A sign-in may happen inside the first discover.
                frontend.discover_timeout += Duration::from_secs(args.sign_in_timeout);
                http_upstream(&args, url)?
            }
            (None, false, _) => {
                let mut words = args.command.into_iter();
                let program = words.next().ok_or("give the server command after --")?;
                let mut command = StdioCommand::new(program).args(words);
                command.max_line_bytes = args.max_line_bytes;
                (StdioUpstream(command).into(), None)
            }
        };
        let upstream = with_tool_filter(upstream, &args.tools_allow, &args.tools_deny)?;
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let listen = match &args.listen {
            None => None,
            Some(addr) => {
                let token_env = args.listen_token_env.as_deref();
                let mut on = crate::listen::ListenOn::from_options(addr, token_env, args.listen_no_auth, env)?;
                if let Some(issuer) = &args.listen_auth_issuer {
                    let audience = args.listen_auth_audience.as_deref();
                    let introspection = args.listen_auth_introspection;
                    on.access = crate::listen::Access::OAuth(crate::listen::OAuthAccess::from_options(
                        issuer,
                        audience,
                        introspection,
                        env,
                    )?);
                }
                Some(on)
            }
        };
        let max_connections = args.max_connections.map(|n| n as usize);
        let mut quotas = Quotas::new();
        if let Some(rate) = &args.listen_rate_limit {
            quotas = quotas.with_rate(rate_limit(rate)?);
        }
        if let Some(max) = args.listen_max_in_flight {
            quotas = quotas.with_max_in_flight(max as usize);
        }
        let max_sessions_per_caller = args.listen_max_sessions.map(|n| n as usize);
        Ok(Job::Bridge(Box::new(Config {
            log_level: args.log_level,
            log_format: args.log_format.into(),
            upstream,
            frontend,
            gate,
            listen,
            max_connections,
            quotas,
            max_sessions_per_caller,
            telemetry: !args.listen_no_telemetry,
            access_log: args.listen_access_log,
            gateway,
        })))
    }
}

/// The rate of `--listen-rate-limit N/s` or `N/m`: N at once, then N a
/// second (a minute).
fn rate_limit(text: &str) -> Result<Rate, String> {
    let bad =
        || format!("--listen-rate-limit {text:?}: give a number of requests per second or minute, as 10/s or 600/m");
    let (count, unit) = text.split_once('/').ok_or_else(bad)?;
    let count: u32 = count.trim().parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
    let seconds = match unit.trim() {
        "s" => 1.0,
        "m" => 60.0,
        _ => return Err(bad()),
    };
    Ok(Rate::new(f64::from(count) / seconds, count))
}

/// Where `--protocol auto` remembers the era of each upstream between
/// runs: `MCP_BRIDGE_ERA_CACHE` (a file, or `off`), else `eras.json` in the
/// bridge's state directory; none when there is no such directory.
fn era_cache() -> Option<mcp_bridge_sdk::client::EraCache> {
    let path = match std::env::var_os("MCP_BRIDGE_ERA_CACHE").filter(|v| !v.is_empty()) {
        Some(off) if off == "off" => return None,
        Some(path) => std::path::PathBuf::from(path),
        None => match crate::dirs::state_dir() {
            Ok(dir) => dir.join("eras.json"),
            Err(why) => {
                tracing::debug!("no era cache: {why}");
                return None;
            }
        },
    };
    Some(mcp_bridge_sdk::client::EraCache::in_file(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limit_is_a_count_per_second_or_minute() {
        assert_eq!(rate_limit("10/s"), Ok(Rate::new(10.0, 10)));
        assert_eq!(rate_limit("600/m"), Ok(Rate::new(10.0, 600)));
        for bad in ["10", "0/s", "10/h", "x/s", "-1/m"] {
            let refused = rate_limit(bad).unwrap_err();
            assert!(refused.starts_with("--listen-rate-limit") && refused.contains("10/s"), "{bad}: {refused}");
        }
    }
}
