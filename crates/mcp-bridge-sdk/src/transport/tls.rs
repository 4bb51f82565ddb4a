//! The TLS client settings of HTTP (and of the OAuth, key and icon fetches,
//! which go through its client) and of WebSocket: one trust rule — the
//! system's anchors, the bundled web roots and those of a PEM file, or the
//! file's alone — one revocation check, and an optional client certificate.
//!
//! What rustls does not offer is not offered here: record padding, OCSP
//! (stapled or fetched), TLS 1.0/1.1 and cipher suites outside its safe
//! defaults. The gRPC client is tonic's, with a TLS configuration of its own
//! (the system's roots and `GrpcConfig::ca_certificate_pem`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, SupportedCipherSuite};

use crate::error::Error;

/// Whom a TLS client trusts, which revoked certificates it refuses, and
/// the certificate it presents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsClientOptions {
    /// A PEM file of CA certificates: trusted beside the system's anchors
    /// and the bundled web roots, or alone with `only_ca_file`.
    pub ca_file: Option<PathBuf>,
    /// Trust the anchors of `ca_file` and no others (a private deployment
    /// that must not accept a certificate any public CA issued).
    pub only_ca_file: bool,
    /// PEM files of certificate revocation lists. When given, the server's
    /// certificate is checked against them and refused when revoked, when a
    /// list has expired, or (unless `allow_unknown_revocation_status`) when
    /// none of them comes from its issuer.
    pub crl_files: Vec<PathBuf>,
    /// Accepts a certificate whose issuer has no list among `crl_files`
    /// (for connections beside the one the lists are for, such as a
    /// sign-in at a public identity provider).
    pub allow_unknown_revocation_status: bool,
    /// A client certificate: a PEM file with the chain and its private key.
    pub identity_file: Option<PathBuf>,
    /// The cipher suites offered, by their IANA names (such as
    /// `TLS13_AES_256_GCM_SHA384`), among rustls's defaults; all of them
    /// when empty.
    pub cipher_suites: Vec<String>,
}

crate::setters::with_setters! {
    TlsClientOptions {
        some with_ca_file => ca_file: impl Into<PathBuf>,
        value with_only_ca_file => only_ca_file: bool,
        value with_crl_files => crl_files: Vec<PathBuf>,
        value with_allow_unknown_revocation_status => allow_unknown_revocation_status: bool,
        some with_identity_file => identity_file: impl Into<PathBuf>,
        value with_cipher_suites => cipher_suites: Vec<String>,
    }
}

impl TlsClientOptions {
    /// Where the client's trust comes from, in words (for a report).
    pub fn trusted_by(&self) -> String {
        match (&self.ca_file, self.only_ca_file) {
            (Some(file), true) => format!("{} only", file.display()),
            (Some(file), false) => format!("the system's roots and {}", file.display()),
            (None, _) => "the system's roots".into(),
        }
    }
}

/// The bytes of a PEM file, or an error naming the file and its role.
pub(crate) fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path)
        .map_err(|e| Error::InvalidRequest { reason: format!("cannot read the {what} {}: {e}", path.display()) })
}

fn invalid(reason: String) -> Error {
    Error::InvalidRequest { reason }
}

/// The anchors `options` trusts.
fn anchors(options: &TlsClientOptions) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if !options.only_ca_file {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // A system anchor rustls cannot use is skipped, as reqwest does.
        let (_, _) = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    }
    match &options.ca_file {
        Some(path) => {
            let pem = read_pem(path, "CA file")?;
            let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<_, _>>()
                .map_err(|e| invalid(format!("the CA file {} is not valid PEM: {e}", path.display())))?;
            if certificates.is_empty() {
                return Err(invalid(format!("the CA file {} holds no certificate", path.display())));
            }
            for certificate in certificates {
                roots.add(certificate).map_err(|e| {
                    invalid(format!("the CA file {} holds an unusable certificate: {e}", path.display()))
                })?;
            }
        }
        None if options.only_ca_file => {
            return Err(invalid("only the CA file is to be trusted, but no CA file is given".into()));
        }
        None => {}
    }
    Ok(roots)
}

/// The process's rustls cryptography (ring unless the application
/// installed another, such as a FIPS one) with the cipher suites `named`
/// (all when empty).
fn provider(named: &[String]) -> Result<CryptoProvider, Error> {
    let mut provider = CryptoProvider::get_default()
        .map_or_else(tokio_rustls::rustls::crypto::ring::default_provider, |installed| (**installed).clone());
    if named.is_empty() {
        return Ok(provider);
    }
    let name_of = |suite: &SupportedCipherSuite| format!("{:?}", suite.suite());
    if let Some(unknown) = named.iter().find(|n| !provider.cipher_suites.iter().any(|s| name_of(s) == **n)) {
        let known: Vec<String> = provider.cipher_suites.iter().map(name_of).collect();
        return Err(invalid(format!("unknown cipher suite {unknown:?}; rustls offers {}", known.join(", "))));
    }
    provider.cipher_suites.retain(|s| named.contains(&name_of(s)));
    Ok(provider)
}

/// The revocation lists of `options.crl_files`.
fn revocation_lists(options: &TlsClientOptions) -> Result<Vec<CertificateRevocationListDer<'static>>, Error> {
    let mut lists = Vec::new();
    for path in &options.crl_files {
        let pem = read_pem(path, "CRL file")?;
        let before = lists.len();
        for list in CertificateRevocationListDer::pem_slice_iter(&pem) {
            lists.push(list.map_err(|e| invalid(format!("the CRL file {} is not valid PEM: {e}", path.display())))?);
        }
        if lists.len() == before {
            return Err(invalid(format!("the CRL file {} holds no revocation list", path.display())));
        }
    }
    Ok(lists)
}

/// A TLS client configuration as `options` say, offering `alpn`.
///
/// # Errors
/// [`Error::InvalidRequest`] for a CA, CRL or identity file that cannot be
/// read or parsed (never quoting key material).
pub(crate) fn client_config(options: &TlsClientOptions, alpn: &[&[u8]]) -> Result<ClientConfig, Error> {
    let provider = Arc::new(provider(&options.cipher_suites)?);
    let roots = Arc::new(anchors(options)?);
    let lists = revocation_lists(options)?;
    let mut verifier = WebPkiServerVerifier::builder_with_provider(roots, provider.clone());
    if !lists.is_empty() {
        // As OpenSSL's CRL check: the server's own certificate, against a
        // list of its issuer that has not expired.
        verifier = verifier.with_crls(lists).only_check_end_entity_revocation().enforce_revocation_expiration();
        if options.allow_unknown_revocation_status {
            verifier = verifier.allow_unknown_revocation_status();
        }
    }
    let verifier = verifier.build().map_err(|e| invalid(format!("the TLS trust cannot be used: {e}")))?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS cannot be set up: {e}")))?
        .with_webpki_verifier(verifier);
    let mut config = match &options.identity_file {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let pem = read_pem(path, "client identity file")?;
            let needs = || {
                invalid(format!(
                    "the client identity file {} needs a certificate and its private key in PEM",
                    path.display()
                ))
            };
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&pem).collect::<Result<_, _>>().map_err(|_| needs())?;
            let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|_| needs())?;
            if chain.is_empty() {
                return Err(needs());
            }
            builder.with_client_auth_cert(chain, key).map_err(|_| needs())?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// `with_ca_file` and `with_client_identity_file` for a client
/// configuration with a `tls: TlsClientOptions` field: the common cases of
/// its TLS options, one call each.
macro_rules! tls_file_setters {
    ($config:ident) => {
        impl $config {
            /// Trusts the CA certificates of a PEM file beside the system's
            /// anchors (the common case of [`Self::tls`]).
            #[must_use]
            pub fn with_ca_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
                self.tls.ca_file = Some(path.into());
                self
            }

            /// Presents the client certificate of a PEM file (chain and key).
            #[must_use]
            pub fn with_client_identity_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
                self.tls.identity_file = Some(path.into());
                self
            }
        }
    };
}

pub(crate) use tls_file_setters;
