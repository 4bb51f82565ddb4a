//! The token endpoint as this client uses it (its authentication, DPoP
//! proofs when it asks for key-bound tokens), and the credential headers a
//! token makes for a request to the server.

use std::sync::Arc;

use super::dpop::{self, DpopKey, Prover};
use super::{ClientRecord, Inner, SignInError, TokenRecord, assertion, exchange, store};
use crate::transport::http::Credentials;

impl Inner {
    /// A token request of this client: its authentication, and a DPoP
    /// proof when it asks for key-bound tokens.
    pub(super) async fn token_request(
        &self,
        endpoint: &str,
        client: &ClientRecord,
        form: exchange::Form,
        previous: Option<&TokenRecord>,
    ) -> Result<TokenRecord, SignInError> {
        self.token_answer(endpoint, client, form, previous).await?.map_err(|refused| refused.error)
    }

    /// [`Inner::token_request`], with how the endpoint refused.
    pub(super) async fn token_answer(
        &self,
        endpoint: &str,
        client: &ClientRecord,
        form: exchange::Form,
        previous: Option<&TokenRecord>,
    ) -> Result<Result<TokenRecord, exchange::Refused>, SignInError> {
        let key = if self.config.dpop { Some(self.dpop_key()?) } else { None };
        let prover = key.as_deref().map(|key| Prover { key, nonces: &self.nonces });
        exchange::token_request(&self.http, endpoint, client, self.client_key(), prover, form, previous).await
    }

    /// The DPoP key used with this server: the one in memory, else the
    /// store's, else a new one (kept in the store).
    pub(super) fn dpop_key(&self) -> Result<Arc<DpopKey>, SignInError> {
        let mut slot = self.dpop_key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = slot.as_ref() {
            return Ok(key.clone());
        }
        let name = store::dpop_key(&self.resource());
        let key = match crate::store::load::<dpop::KeyRecord>(self.store.as_ref(), &name).map_err(SignInError::Store)? {
            Some(record) => DpopKey::from_record(&record)?,
            None => {
                let key = DpopKey::generate()?;
                crate::store::save(self.store.as_ref(), &name, &key.record()).map_err(SignInError::Store)?;
                key
            }
        };
        let key = Arc::new(key);
        *slot = Some(key.clone());
        Ok(key)
    }

    /// The credential headers of a request to the server with `record`'s
    /// token: a DPoP token with its proof for this request.
    pub(super) fn credentials(
        &self,
        record: &TokenRecord,
        method: &str,
        url: &str,
    ) -> Result<Credentials, SignInError> {
        let dpop = match record.token_type.as_deref() {
            Some(dpop::DPOP_TOKEN_TYPE) => {
                let key = self.dpop_key()?;
                Some(Prover { key: &key, nonces: &self.nonces }.proof(method, url, Some(&record.access_token))?)
            }
            _ => None,
        };
        Ok(Credentials { authorization: Some(authorization_value(record)), dpop })
    }

    /// The private key of a `private_key_jwt` client.
    pub(super) fn client_key(&self) -> Option<&assertion::ClientKey> {
        self.config.pre_registered.as_ref().and_then(|p| p.private_key.as_deref())
    }
}

/// The `Authorization` header value of `record`'s access token, with the
/// scheme of its type (`DPoP` for a key-bound one, else `Bearer`).
pub(super) fn authorization_value(record: &TokenRecord) -> String {
    let scheme = match record.token_type.as_deref() {
        Some(dpop::DPOP_TOKEN_TYPE) => dpop::DPOP_TOKEN_TYPE,
        _ => "Bearer",
    };
    format!("{scheme} {}", record.access_token)
}
