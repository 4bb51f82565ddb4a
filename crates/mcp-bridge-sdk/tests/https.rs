//! The HTTP endpoint over TLS of its own (`Server::serve_https`): our client
//! reaches it with the server's CA, and with mutual TLS the handlers see the
//! client's certificate (`RequestContext::peer_certificates`); a client
//! without one is refused in the handshake.

use base64::Engine;
use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::transport::TlsClientOptions;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Reply, RequestContext, RequestOptions, Server};
use serde_json::json;
use test_support::oauth::TestPki;

/// A server whose `peer` tool answers with the client's certificate
/// (base64 DER) or "none", served over TLS with `pki`'s certificate.
async fn served(pki: &TestPki) -> String {
    served_with(pki.server_config()).await
}

/// [`served`] with this TLS configuration.
async fn served_with(tls: std::sync::Arc<rustls::ServerConfig>) -> String {
    let server = Server::builder(Implementation::new("tls", "1"))
        .tool(Tool::new("peer"), |_call, ctx: RequestContext| async move {
            let leaf = ctx.peer_certificates.as_ref().and_then(|p| p.leaf().map(<[u8]>::to_vec));
            let text =
                leaf.map_or_else(|| "none".to_owned(), |der| base64::engine::general_purpose::STANDARD.encode(der));
            Ok(Reply::Complete(CallToolResult::text(text)))
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://localhost:{}/mcp", listener.local_addr().unwrap().port());
    tokio::spawn(
        async move { server.serve_https(listener, tls, HttpOptions::default(), std::future::pending()).await },
    );
    url
}

async fn peer_of(config: HttpConfig) -> Result<String, mcp_bridge_sdk::Error> {
    let client = Client::new(ClientOptions::new("tls-test", "1"), connect(config).unwrap());
    let result = client.call_tool("peer", json!({}), &RequestOptions::default()).await?;
    match &result.content[0] {
        ContentBlock::Text(t) => Ok(t.text.clone()),
        other => panic!("{other:?}"),
    }
}

/// The base64 body of the first certificate in a PEM file.
fn first_certificate(pem: &str) -> String {
    let body = pem.split("-----BEGIN CERTIFICATE-----").nth(1).unwrap();
    body.split("-----END CERTIFICATE-----").next().unwrap().split_whitespace().collect()
}

#[tokio::test]
async fn a_client_reaches_the_endpoint_over_tls_without_a_certificate_of_its_own() {
    let dir = std::env::temp_dir().join(format!("mcp-https-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let url = served(&pki).await;
    assert_eq!(peer_of(HttpConfig::new(&url).with_ca_file(&pki.ca_file)).await.unwrap(), "none");
    let untrusted = peer_of(HttpConfig::new(&url)).await;
    assert!(untrusted.is_err(), "a client that does not trust the CA: {untrusted:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn with_mutual_tls_the_handler_sees_the_clients_certificate() {
    let dir = std::env::temp_dir().join(format!("mcp-mtls-{}", std::process::id()));
    let pki = TestPki::with_client_certificates(&dir);
    let url = served(&pki).await;
    let identity = pki.client_identity_file.clone().unwrap();
    let config = HttpConfig::new(&url).with_ca_file(&pki.ca_file).with_client_identity_file(&identity);
    let seen = peer_of(config).await.unwrap();
    assert_eq!(seen, first_certificate(&std::fs::read_to_string(&identity).unwrap()), "the client's own certificate");
    let anonymous = peer_of(HttpConfig::new(&url).with_ca_file(&pki.ca_file)).await;
    assert!(anonymous.is_err(), "no certificate, no connection: {anonymous:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_certificate_revoked_by_its_issuers_list_is_refused() {
    let dir = std::env::temp_dir().join(format!("mcp-crl-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let stranger = TestPki::new(&dir.join("stranger"));
    let url = served(&pki).await;
    let checked = |lists: Vec<std::path::PathBuf>| {
        HttpConfig::new(&url).with_tls(TlsClientOptions::default().with_ca_file(&pki.ca_file).with_crl_files(lists))
    };
    assert_eq!(peer_of(checked(vec![pki.revocation_list(false)])).await.unwrap(), "none", "not on the list");
    let revoked = peer_of(checked(vec![pki.revocation_list(true)])).await.unwrap_err();
    assert!(revoked.to_string().contains("invalid peer certificate: Revoked"), "{revoked}");
    let expired = peer_of(checked(vec![pki.expired_revocation_list()])).await.unwrap_err();
    assert!(
        expired.to_string().contains("certificate revocation list expired"),
        "a list past its next update: {expired}"
    );
    // A list from another issuer only: the certificate's status is unknown,
    // refused unless unknown status is allowed.
    let unrelated = TestPki::with_ca_named(&dir.join("unrelated"), "another test CA");
    let unknown = peer_of(checked(vec![unrelated.revocation_list(true)])).await.unwrap_err();
    assert!(unknown.to_string().contains("UnknownRevocationStatus"), "{unknown}");
    let lenient = TlsClientOptions::default()
        .with_ca_file(&pki.ca_file)
        .with_crl_files(vec![unrelated.revocation_list(true)])
        .with_allow_unknown_revocation_status(true);
    assert_eq!(peer_of(HttpConfig::new(&url).with_tls(lenient)).await.unwrap(), "none");
    // A list under the issuer's name but not signed by its key proves nothing.
    let forged = peer_of(checked(vec![stranger.revocation_list(false)])).await.unwrap_err();
    assert!(forged.to_string().contains("invalid certificate revocation list"), "{forged}");
    // A file that holds no list is a configuration error, before any connection.
    let error = connect(checked(vec![pki.ca_file.clone()])).err().unwrap();
    assert!(error.to_string().contains("holds no revocation list"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn trust_limited_to_the_given_anchors_refuses_a_server_only_others_vouch_for() {
    let dir = std::env::temp_dir().join(format!("mcp-anchors-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let stranger = TestPki::new(&dir.join("stranger"));
    let url = served(&pki).await;
    let only = |ca: &std::path::Path| {
        HttpConfig::new(&url).with_tls(TlsClientOptions::default().with_ca_file(ca).with_only_ca_file(true))
    };
    assert_eq!(peer_of(only(&pki.ca_file)).await.unwrap(), "none");
    let refused = peer_of(only(&stranger.ca_file)).await.unwrap_err();
    // The stranger's CA has the test CA's name but not its key.
    assert!(refused.to_string().contains("invalid peer certificate"), "{refused}");
    let nothing = HttpConfig::new(&url).with_tls(TlsClientOptions::default().with_only_ca_file(true));
    let error = connect(nothing).err().unwrap();
    assert!(error.to_string().contains("no CA file is given"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The test server's certificate, offering only the cipher suite `name`.
fn server_offering(pki: &TestPki, name: &str) -> std::sync::Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites.retain(|s| format!("{:?}", s.suite()) == name);
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(&pki.server_cert_file).unwrap().collect::<Result<_, _>>().unwrap();
    let key = PrivateKeyDer::from_pem_file(&pki.server_key_file).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    std::sync::Arc::new(config)
}

#[tokio::test]
async fn the_client_offers_only_the_cipher_suites_it_is_given() {
    let dir = std::env::temp_dir().join(format!("mcp-suites-{}", std::process::id()));
    let pki = TestPki::new(&dir);
    let url = served_with(server_offering(&pki, "TLS13_AES_128_GCM_SHA256")).await;
    let offering = |suites: &[&str]| {
        let tls = TlsClientOptions::default()
            .with_ca_file(&pki.ca_file)
            .with_cipher_suites(suites.iter().map(|s| (*s).to_owned()).collect());
        HttpConfig::new(&url).with_tls(tls)
    };
    assert_eq!(peer_of(offering(&[])).await.unwrap(), "none", "rustls's defaults include the server's");
    assert_eq!(peer_of(offering(&["TLS13_AES_128_GCM_SHA256"])).await.unwrap(), "none");
    let refused = peer_of(offering(&["TLS13_CHACHA20_POLY1305_SHA256"])).await.unwrap_err();
    assert!(refused.to_string().contains("HandshakeFailure"), "no suite in common: {refused}");
    let unknown = connect(offering(&["TLS_RSA_WITH_RC4_128_MD5"])).err().unwrap();
    assert!(unknown.to_string().contains("unknown cipher suite \"TLS_RSA_WITH_RC4_128_MD5\""), "{unknown}");
    let _ = std::fs::remove_dir_all(&dir);
}
