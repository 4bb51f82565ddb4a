//! Where this client signs in: the protected resource's metadata, its
//! authorization server's metadata (each checked before use), and this
//! client's id there (pre-registered, a client ID metadata document, or
//! registered now; kept per issuer).

use reqwest::Url;

use super::challenge::Challenge;
use super::{ClientRecord, Grant, Inner, ResourceMetadata, ServerMetadata, SignInError, discovery, exchange, store};

impl Inner {
    pub(super) async fn resource_metadata(&self, challenge: &Challenge) -> Result<ResourceMetadata, SignInError> {
        let mut candidates = Vec::new();
        if let Some(named) = challenge.resource_metadata.as_deref().filter(|u| Url::parse(u).is_ok()) {
            candidates.push(named.to_owned());
        }
        candidates.extend(discovery::resource_metadata_urls(&self.server_url).iter().map(Url::to_string));
        for url in candidates {
            let url = discovery::check_endpoint(&self.server_url, "protected resource metadata URL", &url)?;
            if let Some(found) =
                exchange::get_json::<ResourceMetadata>(&self.http, &url, "protected resource metadata").await?
            {
                if !discovery::resource_covers(&found.resource, &self.server_url) {
                    return Err(SignInError::ResourceMismatch { resource: found.resource });
                }
                return Ok(found);
            }
        }
        Err(SignInError::NoResourceMetadata)
    }

    pub(super) async fn server_metadata(&self, issuer: &Url) -> Result<ServerMetadata, SignInError> {
        let wanted = issuer.as_str().trim_end_matches('/');
        discovery::check_endpoint(&self.server_url, "authorization server", issuer.as_str())?;
        for url in discovery::server_metadata_urls(issuer) {
            let found =
                match exchange::get_json::<ServerMetadata>(&self.http, &url, "authorization server metadata").await {
                    Ok(Some(found)) => found,
                    Ok(None) | Err(SignInError::Http(_)) => continue,
                    Err(e) => return Err(e),
                };
            // The issuer must be the one the metadata was looked up for
            // (RFC 8414 section 3.3); other metadata is not used at all.
            if found.issuer.trim_end_matches('/') == wanted {
                discovery::check_server_metadata(&self.server_url, &found)?;
                return Ok(found);
            }
            tracing::warn!(target: "mcp_auth", "authorization server metadata with another issuer ignored");
        }
        Err(SignInError::NoServerMetadata { issuer: issuer.to_string() })
    }

    /// The client at this authorization server: registered before (kept
    /// per issuer), pre-registered, a metadata document URL, or registered
    /// now.
    pub(super) async fn client_for(&self, metadata: &ServerMetadata) -> Result<ClientRecord, SignInError> {
        let device = matches!(self.config.grant, Grant::DeviceCode(_));
        let key = if device { store::device_client_key(&metadata.issuer) } else { store::client_key(&metadata.issuer) };
        if let Some(known) =
            crate::store::load::<ClientRecord>(self.store.as_ref(), &key).map_err(SignInError::Store)?
            && known.issuer == metadata.issuer
        {
            return Ok(known);
        }
        let supported = metadata.token_endpoint_auth_methods_supported.as_ref();
        let client = if let Some(pre) = &self.config.pre_registered {
            ClientRecord {
                issuer: metadata.issuer.clone(),
                client_id: pre.client_id.clone(),
                token_endpoint_auth_method: pre.method(supported),
                client_secret: pre.client_secret.clone(),
            }
        } else if let (Some(url), Some(true)) =
            (&self.config.client_metadata_url, metadata.client_id_metadata_document_supported)
        {
            ClientRecord {
                issuer: metadata.issuer.clone(),
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
            }
        } else if let Some(endpoint) = &metadata.registration_endpoint {
            let registered = exchange::register(
                &self.http,
                endpoint,
                &metadata.issuer,
                &self.config.client_name,
                (!device).then_some(self.config.redirect_uri.as_str()),
                supported,
            )
            .await?;
            crate::store::save(self.store.as_ref(), &key, &registered).map_err(SignInError::Store)?;
            registered
        } else {
            return Err(SignInError::NoRegistration);
        };
        Ok(client)
    }

    /// The resource's metadata and its (first) authorization server's.
    pub(super) async fn discover(
        &self,
        challenge: &Challenge,
    ) -> Result<(ResourceMetadata, ServerMetadata), SignInError> {
        let resource = self.resource_metadata(challenge).await?;
        let issuer_text = resource.authorization_servers.first().ok_or(SignInError::NoAuthorizationServer)?;
        let issuer =
            Url::parse(issuer_text).map_err(|_| SignInError::NoServerMetadata { issuer: issuer_text.clone() })?;
        let metadata = self.server_metadata(&issuer).await?;
        Ok((resource, metadata))
    }
}
