//! A small OAuth world on loopback for the sign-in tests: an authorization
//! server (metadata, an authorize endpoint that approves at once, a token
//! endpoint that checks PKCE, registration), optionally over HTTPS with a
//! test CA, and an MCP server behind a Bearer check with its protected
//! resource metadata. A token request with a DPoP proof gets a DPoP-bound
//! token, accepted only with the `DPoP` scheme and a proof (recorded, for
//! the tests to check).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::net::{TcpListener, TcpStream};

/// What the authorization server handed out and saw.
#[derive(Debug, Default)]
pub struct Issued {
    /// Access tokens the protected server accepts.
    pub valid: Vec<String>,
    /// Grant types of the token requests, in order.
    pub grants: Vec<String>,
    /// Seconds to the expiry of the next token.
    pub expires_in: u64,
    /// Refuse every token request with `invalid_grant`.
    pub refuse: bool,
    /// Refuse refresh requests only (a revoked refresh token).
    pub refuse_refresh: bool,
    /// The `iss` the authorize endpoint puts in its redirect; the issuer
    /// when `None`.
    pub iss_override: Option<String>,
    /// Answer the authorize endpoint with `error=access_denied`.
    pub deny: bool,
    /// The code challenge of each code handed out.
    pub challenges: HashMap<String, String>,
    /// Authorization requests seen.
    pub authorizations: usize,
    /// Registration requests seen.
    pub registrations: usize,
    /// The `assertion` of each JWT-bearer token request, in order.
    pub assertions: Vec<String>,
    /// Issue no refresh tokens (as for grants without a user).
    pub without_refresh_tokens: bool,
    /// How each token request authenticated its client, in order:
    /// `basic ID:SECRET`, `post ID:SECRET`, `jwt ID CLAIMS` (the client
    /// assertion's claims, unverified) or `none ID`.
    pub client_auth: Vec<String>,
    /// The form of each token request, in order.
    pub forms: Vec<HashMap<String, String>>,
    /// The DPoP proofs of token requests, in order; a token request with
    /// one gets a DPoP-bound token.
    pub token_proofs: Vec<String>,
    /// The tokens bound to a DPoP key: accepted only with the `DPoP`
    /// scheme and a proof.
    pub dpop_bound: Vec<String>,
    /// The DPoP proofs of the requests to the protected server, in order.
    pub resource_proofs: Vec<String>,
    /// What the device authorization endpoint names as the codes' lifetime
    /// and the polling interval, in seconds.
    pub device_expires_in: u64,
    /// The OAuth errors the next device-code polls get, in order
    /// (`authorization_pending`, `slow_down`, ...); then tokens.
    pub device_answers: std::collections::VecDeque<&'static str>,
    /// When each device-code poll came.
    pub device_polls: Vec<std::time::Instant>,
    /// The scope each access token was granted (the token request's
    /// `scope`, else `mcp offline_access`).
    pub scopes: HashMap<String, String>,
    /// A tool and the scope its calls need: a token without it gets 403
    /// `insufficient_scope` naming the scope (a step-up).
    pub step_up: Option<(String, String)>,
}

/// The shared record of an authorization server.
pub type Shared = Arc<Mutex<Issued>>;

/// A test CA, a server certificate for 127.0.0.1 it signed, and with
/// [`TestPki::with_client_certificates`] a client certificate the server
/// requires.
pub struct TestPki {
    /// The CA certificate, PEM, in a file.
    pub ca_file: PathBuf,
    /// A client's certificate and key, PEM, in a file (when required).
    pub client_identity_file: Option<PathBuf>,
    /// The server's certificate (for 127.0.0.1 and localhost), PEM, in a
    /// file: for a server in another process.
    pub server_cert_file: PathBuf,
    /// The server certificate's private key, PEM, in a file.
    pub server_key_file: PathBuf,
    config: Arc<rustls::ServerConfig>,
    dir: PathBuf,
    ca: rcgen::Certificate,
    ca_key: rcgen::KeyPair,
}

impl TestPki {
    /// Makes the CA and the server certificate; files go into `dir`.
    pub fn new(dir: &Path) -> TestPki {
        TestPki::make(dir, false, "mcp-bridge test CA")
    }

    /// [`TestPki::new`] with a CA of another name (another issuer).
    pub fn with_ca_named(dir: &Path, ca_name: &str) -> TestPki {
        TestPki::make(dir, false, ca_name)
    }

    /// [`TestPki::new`], and the server requires a client certificate.
    pub fn with_client_certificates(dir: &Path) -> TestPki {
        TestPki::make(dir, true, "mcp-bridge test CA")
    }

    fn make(dir: &Path, client_certificates: bool, ca_name: &str) -> TestPki {
        use rcgen::{
            BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        };
        let named = |name: &str| {
            let mut dn = DistinguishedName::new();
            dn.push(DnType::CommonName, name);
            dn
        };
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // OpenSSL takes a certificate whose issuer is its subject for a
        // self-signed one: the CA and the server get names of their own.
        ca_params.distinguished_name = named(ca_name);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        params.distinguished_name = named("127.0.0.1");
        params.serial_number = Some(rcgen::SerialNumber::from(SERVER_SERIAL.to_vec()));
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        std::fs::create_dir_all(dir).unwrap();
        let ca_file = dir.join("test-ca.pem");
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let (server_cert_file, server_key_file) = (dir.join("server.pem"), dir.join("server-key.pem"));
        std::fs::write(&server_cert_file, cert.pem()).unwrap();
        std::fs::write(&server_key_file, key.serialize_pem()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let mut client_identity_file = None;
        let builder = if client_certificates {
            let client_key = KeyPair::generate().unwrap();
            let mut client_params = CertificateParams::new(vec!["client.test".to_owned()]).unwrap();
            client_params.distinguished_name = named("client.test");
            client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            let client_cert = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();
            let file = dir.join("client.pem");
            std::fs::write(&file, format!("{}{}", client_cert.pem(), client_key.serialize_pem())).unwrap();
            client_identity_file = Some(file);
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let mut config = builder.with_single_cert(vec![cert.der().clone()], private).unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        TestPki {
            ca_file,
            client_identity_file,
            server_cert_file,
            server_key_file,
            config: Arc::new(config),
            dir: dir.to_owned(),
            ca,
            ca_key,
        }
    }

    /// Writes a certificate revocation list of the test CA, listing the
    /// server's certificate when `revoke_server`; returns its PEM file.
    pub fn revocation_list(&self, revoke_server: bool) -> PathBuf {
        self.write_revocation_list(revoke_server, 2099)
    }

    /// A list of the test CA that lists nothing and expired on 2026-01-02
    /// (its next update).
    pub fn expired_revocation_list(&self) -> PathBuf {
        self.write_revocation_list(false, 2026)
    }

    /// A list next updated on January 2nd of `next_update_year`.
    fn write_revocation_list(&self, revoke_server: bool, next_update_year: i32) -> PathBuf {
        use rcgen::{CertificateRevocationListParams, KeyIdMethod, RevokedCertParams, SerialNumber};
        let revoked = RevokedCertParams {
            serial_number: SerialNumber::from(SERVER_SERIAL.to_vec()),
            revocation_time: rcgen::date_time_ymd(2026, 1, 1),
            reason_code: None,
            invalidity_date: None,
        };
        let params = CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2026, 1, 1),
            next_update: rcgen::date_time_ymd(next_update_year, 1, 2),
            crl_number: SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: if revoke_server { vec![revoked] } else { Vec::new() },
            key_identifier_method: KeyIdMethod::Sha256,
        };
        let list = params.signed_by(&self.ca, &self.ca_key).unwrap();
        let file =
            self.dir.join(format!("{}-{next_update_year}.crl.pem", if revoke_server { "revoked" } else { "empty" }));
        std::fs::write(&file, list.pem().unwrap()).unwrap();
        file
    }
}

/// The serial number of every test server certificate.
const SERVER_SERIAL: [u8; 4] = [0x0a, 0x0b, 0x0c, 0x0d];

impl TestPki {
    /// The server side of TLS with the test certificate, for a server the
    /// test runs itself.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }

    /// The server side's rustls configuration, for a server that does its
    /// own TLS.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.config.clone()
    }
}

/// A TLS listener for `axum::serve`.
struct TlsListener {
    tcp: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else { continue };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves `router` on a free loopback port, over TLS with `pki`; returns
/// the base URL.
pub async fn serve(router: axum::Router, pki: Option<&TestPki>) -> String {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    match pki {
        Some(pki) => {
            let listener = TlsListener { tcp, acceptor: tokio_rustls::TlsAcceptor::from(pki.config.clone()) };
            tokio::spawn(async move { axum::serve(listener, router).await });
            format!("https://{addr}")
        }
        None => {
            tokio::spawn(async move { axum::serve(tcp, router).await });
            format!("http://{addr}")
        }
    }
}

fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn form(body: &str) -> HashMap<String, String> {
    let url = reqwest::Url::parse(&format!("http://form/?{body}")).unwrap();
    url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// The grant type of a device-code poll (RFC 8628).
pub const DEVICE_CODE: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// The grant type of a token exchange (RFC 8693).
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// Starts an authorization server; returns its issuer (base URL) and its
/// record. Tokens are `at-N`, refresh tokens `rt-N`, codes `code-N`; a
/// token exchange (as at an enterprise identity provider) answers the
/// identity assertion grant `jag-N`; a device authorization (code `dc-1`)
/// is polled with the scripted `device_answers` first.
pub async fn authorization_server(issued: Shared, pki: Option<&TestPki>) -> String {
    // The issuer is known once the port is: the router reads it from here.
    let issuer: Arc<Mutex<String>> = Arc::default();
    let metadata_issuer = issuer.clone();
    let authorize_issuer = issuer.clone();
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || {
                let base = metadata_issuer.lock().unwrap().clone();
                async move {
                    axum::Json(json!({
                        "issuer": base,
                        "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"),
                        "registration_endpoint": format!("{base}/register"),
                        "code_challenge_methods_supported": ["S256"],
                        "authorization_response_iss_parameter_supported": true,
                        "scopes_supported": ["mcp", "offline_access"],
                        "device_authorization_endpoint": format!("{base}/device")
                    }))
                }
            }),
        )
        .route(
            "/authorize",
            get(move |State(issued): State<Shared>, Query(q): Query<HashMap<String, String>>| {
                let base = authorize_issuer.lock().unwrap().clone();
                async move {
                    let mut issued = issued.lock().unwrap();
                    issued.authorizations += 1;
                    let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
                    let state = q.get("state").cloned().unwrap_or_default();
                    let iss = issued.iss_override.clone().unwrap_or(base);
                    if issued.deny {
                        let to = format!("{redirect}?error=access_denied&state={state}&iss={iss}");
                        return (StatusCode::FOUND, [("location", to)]).into_response();
                    }
                    let code = format!("code-{}", issued.authorizations);
                    issued.challenges.insert(code.clone(), q.get("code_challenge").cloned().unwrap_or_default());
                    let to = format!("{redirect}?code={code}&state={state}&iss={iss}");
                    (StatusCode::FOUND, [("location", to)]).into_response()
                }
            }),
        )
        .route(
            "/device",
            post(|State(issued): State<Shared>| async move {
                let issued = issued.lock().unwrap();
                axum::Json(json!({"device_code": "dc-1", "user_code": "WDJB-MJHT",
                    "verification_uri": "https://as.example/device", "expires_in": issued.device_expires_in,
                    "interval": 1}))
            }),
        )
        .route(
            "/register",
            post(|State(issued): State<Shared>| async move {
                issued.lock().unwrap().registrations += 1;
                (StatusCode::CREATED, axum::Json(json!({"client_id": "client-1"})))
            }),
        )
        .route(
            "/token",
            post(|State(issued): State<Shared>, headers: axum::http::HeaderMap, body: String| async move {
                let form = form(&body);
                let mut issued = issued.lock().unwrap();
                let basic = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok()?.strip_prefix("Basic ").map(str::to_owned));
                let field = |name: &str| form.get(name).cloned().unwrap_or_default();
                issued.client_auth.push(match (basic, form.get("client_secret")) {
                    (Some(encoded), _) => {
                        use base64::Engine;
                        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default();
                        format!("basic {}", String::from_utf8_lossy(&decoded))
                    }
                    (None, Some(secret)) => format!("post {}:{secret}", field("client_id")),
                    (None, None) if form.contains_key("client_assertion") => {
                        use base64::Engine;
                        let assertion = field("client_assertion");
                        let claims = assertion.split('.').nth(1).unwrap_or_default();
                        let claims =
                            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(claims).unwrap_or_default();
                        format!("jwt {} {}", field("client_id"), String::from_utf8_lossy(&claims))
                    }
                    (None, None) => format!("none {}", field("client_id")),
                });
                let grant = form.get("grant_type").cloned().unwrap_or_default();
                issued.grants.push(grant.clone());
                issued.forms.push(form.clone());
                let refuse = |why: &str| (StatusCode::BAD_REQUEST, axum::Json(json!({"error": why}))).into_response();
                if issued.refuse || (issued.refuse_refresh && grant == "refresh_token") {
                    return refuse("invalid_grant");
                }
                if grant == "authorization_code" {
                    let code = form.get("code").cloned().unwrap_or_default();
                    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                    if issued.challenges.remove(&code) != Some(s256(&verifier)) {
                        return refuse("invalid_grant");
                    }
                }
                if grant == DEVICE_CODE {
                    issued.device_polls.push(std::time::Instant::now());
                    if let Some(error) = issued.device_answers.pop_front() {
                        return refuse(error);
                    }
                }
                if let Some(assertion) = form.get("assertion") {
                    issued.assertions.push(assertion.clone());
                }
                let n = issued.grants.len();
                if grant == TOKEN_EXCHANGE {
                    // An identity provider's answer: an identity assertion grant.
                    let answer = json!({"access_token": format!("jag-{n}"), "token_type": "N_A",
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "expires_in": 300});
                    return axum::Json(answer).into_response();
                }
                let token = format!("at-{n}");
                issued.valid.push(token.clone());
                let scope = form.get("scope").cloned().unwrap_or_else(|| "mcp offline_access".to_owned());
                issued.scopes.insert(token.clone(), scope.clone());
                let mut token_type = "Bearer";
                if let Some(proof) = headers.get("dpop").and_then(|v| v.to_str().ok()) {
                    issued.token_proofs.push(proof.to_owned());
                    issued.dpop_bound.push(token.clone());
                    token_type = "DPoP";
                }
                let mut answer = json!({"access_token": token, "token_type": token_type,
                    "expires_in": issued.expires_in, "refresh_token": format!("rt-{n}"), "scope": scope});
                if issued.without_refresh_tokens {
                    answer.as_object_mut().unwrap().remove("refresh_token");
                }
                axum::Json(answer).into_response()
            }),
        )
        .with_state(issued);
    let base = serve(router, pki).await;
    *issuer.lock().unwrap() = base.clone();
    base
}

/// Serves `router` (an MCP endpoint at `/mcp`) behind a Bearer check
/// against `issued`, with the resource metadata naming `issuer`; returns
/// the endpoint's URL.
pub async fn protected(router: axum::Router, issued: Shared, issuer: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let prm =
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer], "scopes_supported": ["mcp"]});
    let challenge = format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
    let guarded = axum::Router::new().fallback_service(router).layer(axum::middleware::from_fn(
        move |headers: HeaderMap, request: axum::extract::Request, next: axum::middleware::Next| {
            let (issued, challenge) = (issued.clone(), challenge.clone());
            async move {
                let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
                let proof = headers.get("dpop").and_then(|v| v.to_str().ok());
                let accepted = {
                    let mut issued = issued.lock().unwrap();
                    match (authorization.split_once(' '), proof) {
                        (Some(("Bearer", token)), _) => {
                            issued.valid.iter().any(|v| v == token) && !issued.dpop_bound.iter().any(|v| v == token)
                        }
                        (Some(("DPoP", token)), Some(proof)) => {
                            issued.resource_proofs.push(proof.to_owned());
                            issued.dpop_bound.iter().any(|v| v == token)
                        }
                        _ => false,
                    }
                };
                if !accepted {
                    return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)], "").into_response();
                }
                let step_up = issued.lock().unwrap().step_up.clone();
                let Some((tool, needed)) = step_up else { return next.run(request).await };
                let (parts, body) = request.into_parts();
                let body = axum::body::to_bytes(body, 16 << 20).await.unwrap_or_default();
                let message: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let token = authorization.split_once(' ').map(|(_, t)| t).unwrap_or_default();
                let granted = issued.lock().unwrap().scopes.get(token).cloned().unwrap_or_default();
                if message["method"] == "tools/call"
                    && message["params"]["name"] == tool.as_str()
                    && !granted.split_whitespace().any(|s| s == needed)
                {
                    let (metadata, _) = challenge.split_once(", ").unwrap_or((&challenge, ""));
                    let refusal = format!(
                        "Bearer error=\"insufficient_scope\", scope=\"{needed}\", {}",
                        metadata.trim_start_matches("Bearer ")
                    );
                    return (StatusCode::FORBIDDEN, [("www-authenticate", refusal)], "").into_response();
                }
                next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(body))).await
            }
        },
    ));
    let router = axum::Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(move || async move { axum::Json(prm) }))
        .merge(guarded);
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("{base}/mcp")
}
