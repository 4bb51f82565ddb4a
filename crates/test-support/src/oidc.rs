//! node's `oidc-provider` (a certified OpenID provider, installed by
//! `scripts/test` into `.peers/oidc`) on loopback, and a user signing in to
//! it with headless Chromium through its own login and consent pages
//! (puppeteer-core, installed with it). The scripts are `oidc/provider.mjs`
//! and `oidc/signin.mjs` beside this crate's sources.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::workspace_root;

/// How long oidc-provider may take to print its issuer: Node loads the
/// provider's modules first, which took over 30 s on a CI machine compiling
/// other suites side by side.
const START_DEADLINE: Duration = Duration::from_secs(120);

/// The confidential client a protected server introspects tokens as.
pub const INTROSPECTION_CLIENT: (&str, &str) = ("mcp-server", "mcp-server-secret");

/// The client that gets tokens with the client credentials grant (the
/// tests' way to obtain a token without a browser).
pub const SERVICE_CLIENT: (&str, &str) = ("service", "service-secret");

/// A new P-256 key of a `private_key_jwt` client: its private key as PEM
/// PKCS #8, and its public key as a JWK (for the provider's `jwks`).
pub fn es256_client_key() -> (String, Value) {
    use base64::Engine;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    let rng = ring::rand::SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
    // The uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64(&point[1..33]), "y": b64(&point[33..65]), "alg": "ES256", "use": "sig"});
    let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    (format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"), jwk)
}

/// How the provider's access tokens for an MCP endpoint look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenFormat {
    /// JWT access tokens (RFC 9068), ES256.
    Jwt,
    /// Opaque tokens, checked by introspection.
    Opaque,
}

/// A running provider. Dropping it ends the process.
pub struct OidcProvider {
    /// `http://127.0.0.1:PORT` (`https://` with TLS): its URL and issuer
    /// identifier.
    pub issuer: String,
    settings: Settings,
    port: u16,
    /// Trusts the provider's certificate.
    http: reqwest::Client,
    child: Child,
}

/// What a provider is started with, kept for a restart.
#[derive(Clone)]
struct Settings {
    format: TokenFormat,
    key_id: String,
    /// The server certificate and key files, and the CA file, for https.
    tls: Option<(PathBuf, PathBuf, PathBuf)>,
    /// Static clients besides the introspection and service ones.
    clients: Vec<Value>,
}

fn peer_module(package: &str) -> PathBuf {
    let dir = workspace_root().join(".peers/oidc/node_modules").join(package);
    assert!(dir.join("package.json").is_file(), "{package} is not installed at {}: run scripts/test", dir.display());
    dir
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc").join(name)
}

impl OidcProvider {
    /// Starts a provider issuing `format` tokens, on a free port.
    pub async fn start(format: TokenFormat) -> Self {
        Self::start_with_keys(format, "key-1").await
    }

    /// [`Self::start`] over https, with `pki`'s server certificate (a
    /// client trusts `pki.ca_file`).
    pub async fn start_tls(format: TokenFormat, pki: &crate::oauth::TestPki) -> Self {
        Self::start_tls_with_clients(format, pki, Vec::new()).await
    }

    /// [`Self::start_tls`] with more static clients (see
    /// [`Self::start_with_clients`]).
    pub async fn start_tls_with_clients(format: TokenFormat, pki: &crate::oauth::TestPki, clients: Vec<Value>) -> Self {
        let tls = Some((pki.server_cert_file.clone(), pki.server_key_file.clone(), pki.ca_file.clone()));
        Self::spawn(Settings { format, key_id: "key-1".into(), tls, clients }, 0).await
    }

    /// [`Self::start`], its signing keys named after `key_id` (two
    /// providers with the same names would sign with different keys of
    /// the same id).
    pub async fn start_with_keys(format: TokenFormat, key_id: &str) -> Self {
        Self::spawn(Settings { format, key_id: key_id.into(), tls: None, clients: Vec::new() }, 0).await
    }

    /// [`Self::start`] with more static clients (oidc-provider's client
    /// metadata: `client_id`, `token_endpoint_auth_method`, `jwks`, ...).
    pub async fn start_with_clients(format: TokenFormat, clients: Vec<Value>) -> Self {
        Self::spawn(Settings { format, key_id: "key-1".into(), tls: None, clients }, 0).await
    }

    /// The same issuer (same URL, everything it issued forgotten) with new
    /// signing keys named `key_id`: a key rotation, as its clients see it.
    pub async fn restart_with_keys(self, key_id: &str) -> Self {
        let settings = Settings { key_id: key_id.into(), ..self.settings.clone() };
        let port = self.port;
        let mut child = self.child;
        child.kill().await.unwrap();
        Self::spawn(settings, port).await
    }

    async fn spawn(settings: Settings, port: u16) -> Self {
        let mut clients = vec![
            json!({"client_id": INTROSPECTION_CLIENT.0, "client_secret": INTROSPECTION_CLIENT.1,
             "grant_types": [], "response_types": [], "redirect_uris": []}),
            json!({"client_id": SERVICE_CLIENT.0, "client_secret": SERVICE_CLIENT.1,
             "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []}),
        ];
        clients.extend(settings.clients.iter().cloned());
        let clients = Value::Array(clients);
        let mut command = Command::new("node");
        command
            .arg(script("provider.mjs"))
            .env("OIDC_MODULE", peer_module("oidc-provider"))
            .env("OIDC_PORT", port.to_string())
            .env("OIDC_TOKEN_FORMAT", if settings.format == TokenFormat::Jwt { "jwt" } else { "opaque" })
            .env("OIDC_KEY_ID", &settings.key_id)
            .env("OIDC_RESOURCE_SCOPE", "notes:read notes:write")
            .env("OIDC_CLIENTS", clients.to_string());
        let mut http = reqwest::Client::builder();
        if let Some((cert, key, ca)) = &settings.tls {
            command.env("OIDC_TLS_CERT", cert).env("OIDC_TLS_KEY", key);
            http = http.add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap());
        }
        let http = http.build().unwrap();
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs oidc-provider");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let issuer = tokio::time::timeout(START_DEADLINE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(issuer) = line.strip_prefix("oidc-provider: issuer ") {
                    return issuer.to_owned();
                }
            }
            panic!("oidc-provider ended before it listened");
        })
        .await
        .expect("oidc-provider listens in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let port = issuer.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap();
        OidcProvider { issuer, settings, port, http, child }
    }

    /// How many interactions of each prompt started (`prompts.login`,
    /// `prompts.consent`), how many tokens each grant type issued
    /// (`grants.authorization_code`, `grants.refresh_token`, ...) and how
    /// many clients registered (`registrations`).
    pub async fn counts(&self) -> Value {
        self.get("/test/counts").await
    }

    /// The count at `path` of [`Self::counts`] (`"/prompts/consent"`), 0 when absent.
    pub async fn count(&self, path: &str) -> u64 {
        self.counts().await.pointer(path).and_then(Value::as_u64).unwrap_or(0)
    }

    /// The codes and tokens issued so far (an opaque token's value is its
    /// id; a JWT holds its id), to look for in logs.
    pub async fn issued(&self) -> Vec<String> {
        serde_json::from_value(self.get("/test/issued").await).unwrap()
    }

    /// Sets the provider's clock `seconds` off (negative: behind); its
    /// 1-hour tokens are born expired when it is 2 hours behind.
    pub async fn set_clock_offset(&self, seconds: i64) {
        self.post(&format!("/test/clock?offset={seconds}")).await;
    }

    /// Forgets every access token: they are inactive at introspection, and
    /// their refresh tokens still work.
    pub async fn revoke_access_tokens(&self) {
        self.post("/test/revoke-access-tokens").await;
    }

    /// Forgets every grant and its tokens: only a new sign-in helps.
    pub async fn revoke_grants(&self) {
        self.post("/test/revoke-grants").await;
    }

    async fn post(&self, path: &str) {
        let response = self.http.post(format!("{}{path}", self.issuer)).send().await.unwrap();
        assert!(response.status().is_success(), "{path}: {}", response.status());
    }

    /// An access token for `resource` with `scope`, through the client
    /// credentials grant of [`SERVICE_CLIENT`] (its subject is that client).
    pub async fn service_token(&self, resource: &str, scope: &str) -> String {
        self.client_token(SERVICE_CLIENT, resource, scope).await
    }

    /// An access token for `resource` with `scope`, through the client
    /// credentials grant of `client` (id and secret; a static client of
    /// [`Self::start_with_clients`] allowed that grant): its subject is
    /// that client.
    pub async fn client_token(&self, client: (&str, &str), resource: &str, scope: &str) -> String {
        let response = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client.0, Some(client.1))
            .form(&[("grant_type", "client_credentials"), ("resource", resource), ("scope", scope)])
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "client credentials: {status} {body}");
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// The provider's published keys (its JWKS).
    pub async fn jwks(&self) -> Value {
        self.get("/jwks").await
    }

    async fn get(&self, path: &str) -> Value {
        self.http.get(format!("{}{path}", self.issuer)).send().await.unwrap().json().await.unwrap()
    }
}

/// A user at a browser: headless Chromium with its own profile (so the
/// provider's session cookie stays between sign-ins), signing in as
/// `alice` (or [`Browser::as_account`]) on the provider's pages.
#[derive(Clone)]
pub struct Browser {
    dir: PathBuf,
    account: String,
}

impl Browser {
    /// A browser whose profile and reports live in `dir`.
    pub fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        Browser { dir: dir.to_owned(), account: "alice".into() }
    }

    /// This browser's user signs in as `account` instead.
    pub fn as_account(mut self, account: &str) -> Self {
        account.clone_into(&mut self.account);
        self
    }

    fn command(&self) -> Command {
        let mut command = Command::new("node");
        command
            .arg(script("signin.mjs"))
            .env("PUPPETEER_MODULE", peer_module("puppeteer-core"))
            .env("CHROMIUM", crate::chromium())
            .env("SIGNIN_PROFILE", self.dir.join("profile"))
            .env("SIGNIN_REPORT", self.report_path())
            .env("SIGNIN_ACCOUNT", &self.account);
        command
    }

    fn report_path(&self) -> PathBuf {
        self.dir.join("signins.jsonl")
    }

    /// Signs in at `url`, following the redirects to their end (a
    /// program's loopback receiver).
    pub async fn sign_in(&self, url: &str) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.command().arg(url).status())
            .await
            .expect("the sign-in ends within 60 s")
            .unwrap();
        assert!(status.success(), "the browser's sign-in failed");
    }

    /// Opens a device sign-in at `url` and presses Abort on its
    /// confirmation page.
    pub async fn decline_device(&self, url: &str) {
        let status =
            tokio::time::timeout(Duration::from_secs(60), self.command().arg(url).env("SIGNIN_ABORT", "1").status())
                .await
                .expect("the sign-in ends within 60 s")
                .unwrap();
        assert!(status.success(), "the browser's sign-in failed");
    }

    /// Signs in at `url` and returns the URL the provider redirected to
    /// (starting with `redirect_uri`), without loading it: the code is in it.
    pub async fn sign_in_until(&self, url: &str, redirect_uri: &str) -> String {
        let output = tokio::time::timeout(
            Duration::from_secs(60),
            self.command().arg(url).env("SIGNIN_STOP_AT", redirect_uri).stderr(Stdio::inherit()).output(),
        )
        .await
        .expect("the sign-in ends within 60 s")
        .unwrap();
        assert!(output.status.success(), "the browser's sign-in failed");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    /// A `$BROWSER` for a program that opens the sign-in page itself (as
    /// `mcp-bridge URL` does): a script that signs in at its argument.
    pub fn opener(&self) -> PathBuf {
        let command = self.command();
        let std = command.as_std();
        let mut text = String::from("#!/bin/sh\n");
        for (name, value) in std.get_envs() {
            let value = value.unwrap().to_str().unwrap();
            text.push_str(&format!("export {}='{value}'\n", name.to_str().unwrap()));
        }
        text.push_str(&format!(
            "exec node '{}' \"$1\" >>'{}' 2>&1\n",
            script("signin.mjs").display(),
            self.dir.join("browser.log").display()
        ));
        let path = self.dir.join("open-browser.sh");
        std::fs::write(&path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    /// The sign-ins once there are `count` of them (the browser reports
    /// after its last page loaded, a moment after the program that opened
    /// it got its code), or a panic after 30 s.
    pub async fn sign_ins_when(&self, count: usize) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let sign_ins = self.sign_ins();
            if sign_ins.len() >= count {
                return sign_ins;
            }
            assert!(tokio::time::Instant::now() < deadline, "{count} sign-ins were expected: {sign_ins:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The sign-ins so far: for each, the provider's pages seen (`login`,
    /// `consent`) and the text of the page it ended on.
    pub fn sign_ins(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.report_path()).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}
