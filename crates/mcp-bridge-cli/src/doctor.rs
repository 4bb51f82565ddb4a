//! `mcp-bridge doctor [URL | -- CMD]`: checks a server the way the bridge
//! would use it and reports what a person needs to know (see
//! [`report::Report`]). It never signs in and never prints a token: a
//! stored sign-in is used (and refreshed) as the bridge would.

mod report;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcp_bridge_protocol::method::{Method, Ping, ServerDiscover};
use mcp_bridge_sdk::auth::discovery::{resource_metadata_urls, server_metadata_urls};
use mcp_bridge_sdk::auth::store::tokens_key;
use mcp_bridge_sdk::auth::{
    AuthorizationRequest, AuthorizationResponse, Challenge, OAuthClient, OAuthConfig, ResourceMetadata, ServerMetadata,
    TokenRecord,
};
use mcp_bridge_sdk::client::{CacheMode, Era, Spoken};
use mcp_bridge_sdk::store::RecordStore;
use mcp_bridge_sdk::transport::http::{HttpConfig, ProxyConfig};
use mcp_bridge_sdk::transport::stdio::StdioCommand;
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use reqwest::Url;
use serde_json::json;

use report::{Auth, AuthorizationServer, Mcp, Reach, Report, StoredSignIn, Tls};

/// The server examined.
#[derive(Debug)]
pub(crate) enum Target {
    /// At a URL.
    Url(Box<HttpConfig>),
    /// A program on stdio.
    Command(Box<StdioCommand>),
}

/// How long each step may take: a doctor that hangs is no help.
const STEP_LIMIT: Duration = Duration::from_secs(15);

/// Round trips timed for the median.
const ROUND_TRIPS: usize = 5;

/// Examines `target` and prints the report; exits 0 when it is usable.
pub(crate) fn run(target: Target, json: bool) -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-bridge: cannot start the runtime: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let report = runtime.block_on(examine(target));
    let text = if json {
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    } else {
        report.to_text()
    };
    println!("{}", text.trim_end());
    std::process::ExitCode::from(if report.usable { 0 } else { 1 })
}

async fn examine(target: Target) -> Report {
    let mut report = Report::default();
    match target {
        Target::Url(http) => examine_url(&mut report, *http).await,
        Target::Command(command) => examine_command(&mut report, *command).await,
    }
    report.conclude(report.transport.as_deref() != Some("stdio"));
    report
}

async fn examine_command(report: &mut Report, command: StdioCommand) {
    report.target = command.command_line();
    report.transport = Some("stdio".into());
    let started = Instant::now();
    let transport = match mcp_bridge_sdk::transport::stdio::spawn(command) {
        Ok(transport) => transport,
        Err(e) => {
            report.reach.error = Some(mcp_bridge_sdk::error::report(&e));
            return;
        }
    };
    let client = Client::new(doctor_options(), transport);
    let connected = tokio::time::timeout(STEP_LIMIT, client.connect(&RequestOptions::default())).await;
    report.reach = Reach { ok: true, first_answer_ms: Some(millis(started.elapsed())), ..Default::default() };
    match connected {
        Ok(Ok(_)) => report.mcp = Some(session(&client).await),
        Ok(Err(e)) => report.mcp_error = Some(mcp_bridge_sdk::error::report(&e)),
        Err(_) => report.mcp_error = Some(format!("no answer within {} s", STEP_LIMIT.as_secs())),
    }
    client.close().await;
}

async fn examine_url(report: &mut Report, mut http: HttpConfig) {
    report.target = shown_url(&http.url);
    report.proxy = match &http.proxy {
        ProxyConfig::Explicit { url, no_proxy } if no_proxy.is_empty() => Some(shown_url(url)),
        ProxyConfig::Explicit { url, no_proxy } => {
            Some(format!("{} (not for {})", shown_url(url), no_proxy.join(", ")))
        }
        ProxyConfig::None => None,
    };
    let probe = match probe_client(&http) {
        Ok(client) => client,
        Err(e) => {
            report.reach.error = Some(e);
            return;
        }
    };
    let first = first_post(&probe, &http).await;
    report.reach = first.reach;
    report.tls = first.tls.map(|mut tls| {
        tls.trusted_by = http.tls.trusted_by();
        tls
    });
    report.clock_skew_s = first.skew;
    if !report.reach.ok {
        return;
    }
    let header_credentials = crate::config::has_authorization(&http);
    let auth = protection(&probe, &http.url, first.challenge.as_deref(), report.reach.http_status).await;
    let stored = auth.stored_sign_in.is_some();
    if auth.required || auth.resource.is_some() || header_credentials {
        report.auth = Some(Auth { header_credentials, ..auth });
    }
    if stored && !header_credentials {
        match stored_sign_in(&http) {
            Ok(oauth) => http.auth = Some(Arc::new(oauth)),
            Err(e) => report.mcp_error = Some(e),
        }
    }
    let transport = match mcp_bridge_sdk::transport::http::connect(http) {
        Ok(transport) => transport,
        Err(e) => {
            report.mcp_error = Some(mcp_bridge_sdk::error::report(&e));
            return;
        }
    };
    let client = Client::new(doctor_options(), transport);
    match tokio::time::timeout(STEP_LIMIT, client.connect(&RequestOptions::default())).await {
        Ok(Ok(spoken)) => {
            // The transport tried HTTP+SSE after the same refusal of its POST.
            let http_sse = spoken.is_legacy()
                && report.reach.http_status.is_some_and(mcp_bridge_sdk::transport::http::may_be_http_sse);
            let transport = match (spoken.is_legacy(), http_sse) {
                (_, true) => "http+sse (2024-11-05)",
                (true, false) => "streamable-http, a 2025-11-25 session",
                (false, false) => "streamable-http",
            };
            report.transport = Some(transport.into());
            report.mcp = Some(session(&client).await);
        }
        Ok(Err(e)) => report.mcp_error = Some(mcp_bridge_sdk::error::report(&e)),
        Err(_) => report.mcp_error = Some(format!("no answer within {} s", STEP_LIMIT.as_secs())),
    }
    client.close().await;
}

/// A client that settles the era itself (no cache: the doctor wants the
/// truth) and answers no input request.
fn doctor_options() -> ClientOptions {
    let mut options = ClientOptions::new("mcp-bridge-doctor", env!("CARGO_PKG_VERSION"));
    options.era = Era::Auto;
    options.request_timeout = STEP_LIMIT;
    options
}

/// What the MCP session shows: the era, the server, what it offers, the
/// round trip.
async fn session(client: &Client) -> Mcp {
    let o = RequestOptions::default();
    let mut mcp = Mcp::default();
    match client.spoken() {
        Some(Spoken::Legacy(initialized)) => {
            mcp.era = initialized.protocol_version.clone();
            mcp.legacy = true;
        }
        _ => mcp.era = mcp_bridge_protocol::PROTOCOL_VERSION.to_owned(),
    }
    let Ok(found) = client.discover(&o).await else { return mcp };
    mcp.versions_offered = found.supported_versions.clone();
    mcp.server = found.meta.as_ref().and_then(|m| m.server_info.as_ref()).map(|i| format!("{} {}", i.name, i.version));
    let capabilities = serde_json::to_value(&found.capabilities).unwrap_or_default();
    mcp.capabilities = capabilities.as_object().map(|c| c.keys().cloned().collect()).unwrap_or_default();
    let offered = &found.capabilities;
    let mut failed = None;
    let mut count = |result: mcp_bridge_sdk::Result<usize>| match result {
        Ok(n) => Some(n),
        Err(e) => {
            failed.get_or_insert(mcp_bridge_sdk::error::report(&e));
            None
        }
    };
    if offered.tools.is_some() {
        mcp.tools = count(client.list_all_tools(&o).await.map(|l| l.len()));
    }
    if offered.prompts.is_some() {
        mcp.prompts = count(client.list_all_prompts(&o).await.map(|l| l.len()));
    }
    if offered.resources.is_some() {
        mcp.resources = count(client.list_all_resources(&o).await.map(|l| l.len()));
    }
    mcp.list_error = failed;
    mcp.round_trip_ms = round_trip(client, mcp.legacy).await;
    mcp
}

/// The median time of a small request: `ping` in a 2025-11-25 session,
/// `server/discover` (past any cache) in 2026-07-28.
async fn round_trip(client: &Client, legacy: bool) -> Option<f64> {
    let (method, o) = if legacy {
        (Ping::NAME, RequestOptions::default())
    } else {
        (ServerDiscover::NAME, RequestOptions::default().with_cache_mode(CacheMode::Bypass))
    };
    let mut times = Vec::new();
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        client.request_raw(method, serde_json::Map::new(), &o).await.ok()?;
        times.push(millis(started.elapsed()));
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// A URL as shown: without credentials, query or fragment (a session id
/// or a key may ride there).
fn shown_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => "(not a valid URL)".into(),
    }
}

fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1000.0
}

/// The HTTP client of the doctor's own requests: the transport's trust,
/// identity and proxy, the certificate kept for the report, no redirects
/// followed.
fn probe_client(http: &HttpConfig) -> Result<reqwest::Client, String> {
    let builder = http.client_builder().map_err(|e| e.to_string())?;
    builder.tls_info(true).timeout(STEP_LIMIT).build().map_err(|e| format!("the HTTP client cannot be built: {e}"))
}

/// What the first POST shows.
struct FirstPost {
    reach: Reach,
    tls: Option<Tls>,
    skew: Option<i64>,
    challenge: Option<String>,
}

/// POSTs a `server/discover` as a 2026-07-28 client would, to see whether
/// the server answers, with which status, certificate and clock.
async fn first_post(probe: &reqwest::Client, http: &HttpConfig) -> FirstPost {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": ServerDiscover::NAME, "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": mcp_bridge_protocol::PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-bridge-doctor", "version": env!("CARGO_PKG_VERSION")},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut request = probe
        .post(&http.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", ServerDiscover::NAME)
        .header("mcp-protocol-version", mcp_bridge_protocol::PROTOCOL_VERSION)
        .body(body.to_string());
    for (name, value) in &http.headers {
        request = request.header(name, value);
    }
    let started = Instant::now();
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => {
            let reach = Reach { error: Some(error_chain(&e)), ..Default::default() };
            return FirstPost { reach, tls: None, skew: None, challenge: None };
        }
    };
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    let skew = response
        .headers()
        .get("date")
        .and_then(|d| d.to_str().ok())
        .and_then(|d| httpdate::parse_http_date(d).ok())
        .map(|server| seconds_between(SystemTime::now() - elapsed / 2, server));
    let challenge = response.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let tls = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|info| info.peer_certificate())
        .and_then(certificate);
    let reach = Reach { ok: true, http_status: Some(status), error: None, first_answer_ms: Some(millis(elapsed)) };
    FirstPost { reach, tls, skew, challenge }
}

/// `later - earlier` in whole seconds, negative when `later` is earlier.
fn seconds_between(earlier: SystemTime, later: SystemTime) -> i64 {
    match later.duration_since(earlier) {
        Ok(ahead) => i64::try_from(ahead.as_secs()).unwrap_or(i64::MAX),
        Err(behind) => -i64::try_from(behind.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// A reqwest error with its causes (a certificate's refusal is only named
/// in one), never with the URL.
fn error_chain(error: &reqwest::Error) -> String {
    mcp_bridge_sdk::error::report_as(if error.is_connect() { "cannot connect" } else { "no answer" }, error)
}

/// The leaf certificate's subject, issuer and end of validity.
fn certificate(der: &[u8]) -> Option<Tls> {
    let (_, parsed) = x509_parser::parse_x509_certificate(der).ok()?;
    let not_after = parsed.validity().not_after.timestamp();
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    let days_left = (not_after - i64::try_from(now).ok()?).div_euclid(86_400);
    Some(Tls {
        subject: parsed.subject().to_string(),
        issuer: parsed.issuer().to_string(),
        not_after: http_date(u64::try_from(not_after).unwrap_or(0)),
        days_left,
        trusted_by: String::new(),
    })
}

fn http_date(unix_seconds: u64) -> String {
    httpdate::fmt_http_date(SystemTime::UNIX_EPOCH + Duration::from_secs(unix_seconds))
}

/// The server's protection: its protected resource metadata, the first
/// authorization server's metadata, the stored sign-in.
async fn protection(probe: &reqwest::Client, url: &str, challenge: Option<&str>, status: Option<u16>) -> Auth {
    let mut auth = Auth { required: status == Some(401), ..Default::default() };
    let Ok(server) = Url::parse(url) else { return auth };
    let named =
        challenge.and_then(Challenge::parse).and_then(|c| c.resource_metadata).and_then(|u| Url::parse(&u).ok());
    let candidates = named.into_iter().chain(resource_metadata_urls(&server));
    let Some(metadata) = first_json::<ResourceMetadata>(probe, candidates).await else {
        if auth.required {
            auth.error = Some("no protected resource metadata was found".into());
        }
        return auth;
    };
    auth.resource = Some(metadata.resource.clone());
    auth.authorization_servers = metadata.authorization_servers.clone();
    auth.scopes_supported = metadata.scopes_supported.clone();
    if let Some(issuer) = metadata.authorization_servers.first().and_then(|i| Url::parse(i).ok()) {
        match first_json::<ServerMetadata>(probe, server_metadata_urls(&issuer)).await {
            Some(found) => {
                let pkce =
                    found.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256"));
                auth.authorization_server = Some(AuthorizationServer {
                    issuer: found.issuer,
                    client_id_metadata_document: found.client_id_metadata_document_supported == Some(true),
                    dynamic_registration: found.registration_endpoint.is_some(),
                    pkce_s256: pkce,
                });
            }
            None => auth.error = Some("the authorization server's metadata was not found".into()),
        }
    }
    auth.stored_sign_in = stored_record(&metadata.resource);
    auth
}

/// The first of `urls` that answers 200 with JSON of type `T`.
async fn first_json<T: serde::de::DeserializeOwned>(
    probe: &reqwest::Client,
    urls: impl IntoIterator<Item = Url>,
) -> Option<T> {
    for url in urls {
        let Ok(response) = probe.get(url).header("accept", "application/json").send().await else { continue };
        if response.status().as_u16() != 200 {
            continue;
        }
        if let Ok(found) = response.json::<T>().await {
            return Some(found);
        }
    }
    None
}

/// The sign-in the bridge's token store keeps for `resource`: when it
/// expires and whether it can be refreshed, never the token.
fn stored_record(resource: &str) -> Option<StoredSignIn> {
    let store = crate::token_store::open().ok()?;
    let text = store.load(&tokens_key(resource)).ok()??;
    let record: TokenRecord = serde_json::from_str(&text).ok()?;
    Some(StoredSignIn {
        issuer: record.issuer,
        expires_at: record.expires_at.map(http_date),
        expires_in_s: record
            .expires_at
            .map(|at| seconds_between(SystemTime::now(), SystemTime::UNIX_EPOCH + Duration::from_secs(at))),
        refreshable: record.refresh_token.is_some(),
    })
}

/// The OAuth client of a stored sign-in: uses and refreshes the tokens as
/// the bridge does, and refuses to sign in anew (the doctor only looks).
fn stored_sign_in(http: &HttpConfig) -> Result<OAuthClient, String> {
    let store = crate::token_store::open()?;
    let refuse = mcp_bridge_sdk::auth::authorize(|_request: AuthorizationRequest| async {
        Err::<AuthorizationResponse, _>("the doctor does not sign in: run `mcp-bridge URL` once")
    });
    OAuthClient::new(
        OAuthConfig::new(
            http.url.clone(),
            mcp_bridge::signin::redirect_uri(mcp_bridge::signin::DEFAULT_REDIRECT_PORT),
            "mcp-bridge",
        )
        .with_connection(http.clone()),
        refuse,
        Arc::new(store),
    )
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_what_may_be_secret() {
        assert_eq!(shown_url("https://user:pw@example.test/mcp?key=s3cret#x"), "https://example.test/mcp");
        assert_eq!(shown_url("not a url"), "(not a valid URL)");
    }

    #[test]
    fn the_clock_skew_is_signed() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        assert_eq!(seconds_between(t, t + Duration::from_secs(90)), 90);
        assert_eq!(seconds_between(t + Duration::from_secs(90), t), -90);
    }
}
