//! The TLS client settings of the transports that run TLS themselves
//! (WebSocket): the same trust as the HTTP client's — the system's anchors,
//! the bundled web roots and the anchors of a PEM file — and an optional
//! client certificate.

use std::path::Path;
#[cfg(feature = "websocket")]
use std::sync::Arc;

#[cfg(feature = "websocket")]
use tokio_rustls::rustls::pki_types::pem::PemObject;
#[cfg(feature = "websocket")]
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
#[cfg(feature = "websocket")]
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::error::Error;

/// The bytes of a PEM file, or an error naming the file and its role.
pub(crate) fn read_pem(path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path)
        .map_err(|e| Error::InvalidRequest { reason: format!("cannot read the {what} {}: {e}", path.display()) })
}

/// A TLS client configuration trusting the system's anchors, the bundled
/// web roots and those of `ca_file`, presenting the certificate of
/// `identity_file` when one is given, and offering `alpn`.
///
/// # Errors
/// [`Error::InvalidRequest`] for a CA or identity file that cannot be read
/// or parsed (never quoting key material).
#[cfg(feature = "websocket")]
pub(crate) fn client_config(
    ca_file: Option<&Path>,
    identity_file: Option<&Path>,
    alpn: &[&[u8]],
) -> Result<ClientConfig, Error> {
    let invalid = |reason: String| Error::InvalidRequest { reason };
    let mut roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    // A system anchor rustls cannot use is skipped, as reqwest does.
    let (_, _) = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = ca_file {
        let pem = read_pem(path, "CA file")?;
        let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(format!("the CA file {} is not valid PEM: {e}", path.display())))?;
        if certificates.is_empty() {
            return Err(invalid(format!("the CA file {} holds no certificate", path.display())));
        }
        for certificate in certificates {
            roots
                .add(certificate)
                .map_err(|e| invalid(format!("the CA file {} holds an unusable certificate: {e}", path.display())))?;
        }
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(format!("TLS cannot be set up: {e}")))?
        .with_root_certificates(roots);
    let mut config = match identity_file {
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
