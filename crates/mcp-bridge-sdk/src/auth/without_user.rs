//! The grants without a user at the token endpoint: client credentials (a
//! secret or a private key), a workload's identity token (JWT bearer), and
//! enterprise-managed authorization (the user's ID token exchanged at their
//! identity provider for an identity assertion grant, RFC 8693).

use reqwest::Url;

use super::challenge::Challenge;
use super::{
    ClientRecord, EnterpriseIdp, Grant, Inner, ResourceMetadata, ServerMetadata, SignInError, TokenState, discovery,
    exchange,
};

/// The grant type of an assertion exchanged for tokens (RFC 7523 section 2.1).
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The grant type of a token exchange (RFC 8693 section 2.1).
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// The token type of an OpenID Connect ID token (RFC 8693 section 3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

impl Inner {
    /// A grant without a user at the token endpoint, for the resource and
    /// scope a user's sign-in would ask for.
    pub(super) async fn sign_in_without_user(
        &self,
        session: &mut TokenState,
        challenge: &Challenge,
        previous: &[String],
    ) -> Result<(), SignInError> {
        let (resource, metadata) = self.discover(challenge).await?;
        let client = self.client_for(&metadata).await?;
        let scope = discovery::select_scope(challenge.scope.as_deref(), &resource, &metadata, previous);
        let mut form = self.grant_without_user(&resource, &metadata, scope.as_deref()).await?;
        form.push(("resource", resource.resource.clone()));
        if let Some(scope) = &scope {
            form.push(("scope", scope.clone()));
        }
        let record = self.token_request(&metadata.token_endpoint, &client, form, None).await?;
        self.keep_signed_in(session, record, scope, resource.resource)
    }

    /// The grant type of a sign-in without a user and what it presents.
    pub(super) async fn grant_without_user(
        &self,
        resource: &ResourceMetadata,
        metadata: &ServerMetadata,
        scope: Option<&str>,
    ) -> Result<Vec<(&'static str, String)>, SignInError> {
        match &self.config.grant {
            Grant::ClientCredentials => {
                let pre = self.config.pre_registered.as_ref();
                if !pre.is_some_and(|p| p.client_secret.is_some() || p.private_key.is_some()) {
                    return Err(SignInError::NoClientCredentials);
                }
                Ok(vec![("grant_type", "client_credentials".to_owned())])
            }
            Grant::JwtBearer(token) => {
                let assertion = token
                    .read()
                    .await
                    .map_err(|e| SignInError::Token(format!("the workload's identity token cannot be read: {e}")))?;
                Ok(vec![("grant_type", JWT_BEARER_GRANT.to_owned()), ("assertion", assertion)])
            }
            Grant::EnterpriseManaged(idp) => {
                let grant = self.identity_assertion_grant(idp, resource, metadata, scope).await?;
                Ok(vec![("grant_type", JWT_BEARER_GRANT.to_owned()), ("assertion", grant)])
            }
            Grant::AuthorizationCode | Grant::DeviceCode(_) => {
                Err(SignInError::Token("this grant needs a user".into()))
            }
        }
    }

    /// Exchanges the user's ID token at their identity provider for an
    /// identity assertion grant to this server's authorization server
    /// (enterprise-managed authorization, RFC 8693).
    pub(super) async fn identity_assertion_grant(
        &self,
        idp: &EnterpriseIdp,
        resource: &ResourceMetadata,
        metadata: &ServerMetadata,
        scope: Option<&str>,
    ) -> Result<String, SignInError> {
        let endpoint = match &idp.token_endpoint {
            Some(endpoint) => {
                discovery::check_endpoint(&self.server_url, "identity provider's token endpoint", endpoint)?;
                endpoint.clone()
            }
            None => {
                let issuer = Url::parse(&idp.issuer)
                    .map_err(|_| SignInError::NoServerMetadata { issuer: idp.issuer.clone() })?;
                self.server_metadata(&issuer).await?.token_endpoint
            }
        };
        let id_token = idp
            .id_token
            .read()
            .await
            .map_err(|e| SignInError::Token(format!("the ID token of the single sign-on cannot be read: {e}")))?;
        let client = ClientRecord {
            issuer: idp.issuer.clone(),
            client_id: idp.client.client_id.clone(),
            token_endpoint_auth_method: idp.client.method(None),
            client_secret: idp.client.client_secret.clone(),
        };
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
            ("requested_token_type", exchange::ID_JAG_TOKEN_TYPE.to_owned()),
            ("audience", metadata.issuer.clone()),
            ("resource", resource.resource.clone()),
            ("subject_token", id_token),
            ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope.to_owned()));
        }
        let key = idp.client.private_key.as_deref();
        exchange::identity_assertion_grant(&self.http, &endpoint, &client, key, form).await
    }
}
