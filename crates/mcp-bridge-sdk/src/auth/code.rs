//! The authorization code grant with PKCE: the user authorizes in a
//! browser (the application's [`Authorize`](super::Authorize) hook), the
//! response is checked (issuer, state, error) before its code is exchanged.

use reqwest::Url;

use super::challenge::Challenge;
use super::{AskUser, AuthorizationRequest, Inner, SignInError, TokenState, discovery, pkce};

impl Inner {
    /// The authorization code flow: discovery, client, the user's
    /// authorization, tokens.
    pub(super) async fn sign_in_user(
        &self,
        session: &mut TokenState,
        challenge: &Challenge,
        previous: &[String],
        ask_user: Option<AskUser>,
    ) -> Result<(), SignInError> {
        let (resource, metadata) = self.discover(challenge).await?;
        if !metadata.code_challenge_methods_supported.as_ref().is_some_and(|m| m.iter().any(|m| m == "S256")) {
            return Err(SignInError::NoPkce);
        }
        let client = self.client_for(&metadata).await?;
        let scope = discovery::select_scope(challenge.scope.as_deref(), &resource, &metadata, previous);
        let pkce = pkce::Pkce::new();
        let state = pkce::state();
        let mut url = Url::parse(&metadata.authorization_endpoint)
            .map_err(|e| SignInError::Http(format!("the authorization endpoint is not a URL: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.client_id)
                .append_pair("redirect_uri", &self.config.redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &resource.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        let mut request = AuthorizationRequest::new(url.to_string(), self.config.redirect_uri.clone(), state.clone());
        request.ask_user = ask_user;
        let response = (self.authorize)(request).await.map_err(|e| SignInError::Authorize(e.to_string()))?;
        // RFC 9207 before anything else of the response is acted on.
        match (&response.iss, metadata.authorization_response_iss_parameter_supported) {
            (Some(iss), _) if *iss != metadata.issuer => return Err(SignInError::IssuerMismatch),
            (None, Some(true)) => return Err(SignInError::IssuerMissing),
            _ => {}
        }
        if response.state.as_deref() != Some(state.as_str()) {
            return Err(SignInError::StateMismatch);
        }
        if let Some(error) = &response.error {
            let detail = match &response.error_description {
                Some(d) => format!("{error} ({})", d.chars().filter(|c| !c.is_control()).take(200).collect::<String>()),
                None => error.clone(),
            };
            return Err(SignInError::Denied(detail));
        }
        let code = response.code.ok_or_else(|| SignInError::Denied("no authorization code".into()))?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", pkce.verifier),
            // Exactly as the metadata publishes it (RFC 8707 wants the
            // server to recognise it; no slash added by a URL parser).
            ("resource", resource.resource.clone()),
        ];
        if let Some(scope) = &scope {
            form.push(("scope", scope.clone()));
        }
        let record = self.token_request(&metadata.token_endpoint, &client, form, None).await?;
        self.keep_signed_in(session, record, scope, resource.resource)
    }
}
