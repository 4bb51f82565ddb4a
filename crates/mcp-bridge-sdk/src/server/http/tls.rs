//! The endpoint over TLS of its own (`https://`), for a server with no
//! proxy in front to end TLS: rustls with the caller's configuration (its
//! certificate, and client certificates when it asks for them), the same
//! connection limits as plain HTTP (a handshake gets the time a request
//! has to arrive), and the client's certificates, when it presented some,
//! given to handlers ([`RequestContext::peer_certificates`](crate::RequestContext::peer_certificates)).

use std::sync::Arc;

use axum::Router;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

use super::{ConnectionLimits, HttpOptions, connections, refuse_connection};
use crate::server::Server;
use crate::server::accept::{accept_tcp, serve_capped};
use crate::server::protect::PeerCertificates;

impl Server {
    /// [`Server::serve_http`] over TLS with `tls` (a rustls 0.23 server
    /// configuration: its certificate, and a client-certificate verifier
    /// for mutual TLS). Its ALPN protocols are set to `http/1.1`.
    ///
    /// # Errors
    /// None today: a failed accept or handshake is logged and the loop goes on.
    pub async fn serve_https(
        &self,
        listener: tokio::net::TcpListener,
        tls: Arc<ServerConfig>,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let limits = options.connections;
        serve_router_tls(listener, self.http_router(options), tls, limits, self.ending_listens(shutdown)).await
    }
}

/// [`serve_router`](super::serve_router) over TLS with `tls`.
///
/// # Errors
/// None today: a failed accept or handshake is logged and the loop goes on.
pub async fn serve_router_tls(
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Arc<ServerConfig>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut config = (*tls).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let serve = |stream, slot, stop| {
        let (acceptor, router) = (acceptor.clone(), router.clone());
        async move {
            let handshake = tokio::time::timeout(limits.request_read_timeout, acceptor.accept(stream));
            let stream = match handshake.await {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return tracing::debug!("a TLS handshake failed: {e}"),
                Err(_) => return tracing::debug!("a TLS handshake did not end in time"),
            };
            let peer = stream
                .get_ref()
                .1
                .peer_certificates()
                .filter(|chain| !chain.is_empty())
                .map(|chain| PeerCertificates::new(chain.iter().map(|c| c.as_ref().to_vec()).collect()));
            connections::serve_connection(stream, router, limits, stop, slot, peer).await;
        }
    };
    let accept = || accept_tcp(&listener);
    let open = serve_capped(accept, limits.max_connections, "an HTTPS client", shutdown, serve, refuse_connection);
    open.await.end(None).await;
    Ok(())
}
