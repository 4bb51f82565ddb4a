//! What a refusal by the server starts: a request sent again (a newer
//! token, a DPoP nonce), a refresh, a sign-in, or a step-up of the scope
//! (once per scope set); a long-lived stream never starts a sign-in.

use mcp_bridge_protocol::method::{Method, SubscriptionsListen};

use super::challenge::Challenge;
use super::{Inner, ResourceMetadata, ServerMetadata, discovery, dpop};
use crate::transport::http::AuthRefusal;

/// Methods whose refusal never starts a sign-in (see `on_refusal`).
const PASSIVE_METHODS: [&str; 1] = [SubscriptionsListen::NAME];

impl Inner {
    pub(super) async fn on_refusal(&self, refusal: AuthRefusal) -> bool {
        let challenge = refusal.www_authenticate.as_deref().and_then(Challenge::parse).unwrap_or_default();
        // A server that wants a DPoP nonce (RFC 9449 section 9): the request
        // goes again with a proof carrying it; the token is fine.
        if challenge.error.as_deref() == Some(dpop::USE_NONCE) {
            return refusal.dpop_nonce.is_some_and(|nonce| self.nonces.remember(&self.config.server_url, &nonce));
        }
        let mut session = self.session.lock().await;
        let held = self.held();
        // Another request signed in (or refreshed) since this one was sent:
        // send it again with the new token.
        if held.obtained.is_some_and(|obtained| obtained > refusal.sent_at) {
            return true;
        }
        let granted: Vec<String> = held
            .record
            .as_ref()
            .and_then(|r| r.scope.as_deref())
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        // A long-lived stream does not start a sign-in of its own: it only
        // refreshes, and waits for the sign-in of another request.
        // (Signing in as the client asks nobody: any request may.)
        let interactive = !PASSIVE_METHODS.contains(&refusal.method.as_str()) || !self.config.grant.has_a_user();
        let outcome = match refusal.status {
            401 => {
                // Another process may have signed in or refreshed since this
                // one read the store.
                if self.adopt_stored() {
                    return true;
                }
                if self.held().record.is_some_and(|r| r.refresh_token.is_some())
                    && self.refresh_held(&mut session).await.is_ok()
                {
                    return true;
                }
                if !interactive {
                    return false;
                }
                self.sign_in(&mut session, &challenge, &[], refusal.ask_user).await
            }
            403 if !interactive => return false,
            403 if challenge.error.as_deref() == Some("insufficient_scope") => {
                // Another process may have stepped up already: its token goes first.
                if self.adopt_stored() {
                    return true;
                }
                let wanted = discovery::select_scope(
                    challenge.scope.as_deref(),
                    &ResourceMetadata {
                        resource: String::new(),
                        authorization_servers: Vec::new(),
                        scopes_supported: None,
                    },
                    &no_offline(),
                    &granted,
                );
                // One step-up per scope set: a server that keeps refusing the
                // same set is not asked again and again.
                if wanted.is_some() && session.last_step_up == wanted {
                    return false;
                }
                session.last_step_up = wanted;
                let outcome = self.sign_in(&mut session, &challenge, &granted, refusal.ask_user).await;
                if outcome.is_err() {
                    // Not done (declined, timed out, its call gone): the
                    // next request that needs the scopes may ask again.
                    session.last_step_up = None;
                }
                outcome
            }
            _ => return false,
        };
        self.note(&outcome);
        outcome.is_ok()
    }
}

/// Metadata that lists no scopes: the scope set of a step-up is compared
/// without `offline_access`.
pub(super) fn no_offline() -> ServerMetadata {
    ServerMetadata {
        issuer: String::new(),
        authorization_endpoint: String::new(),
        token_endpoint: String::new(),
        registration_endpoint: None,
        scopes_supported: None,
        code_challenge_methods_supported: None,
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: None,
        authorization_response_iss_parameter_supported: None,
        device_authorization_endpoint: None,
    }
}
