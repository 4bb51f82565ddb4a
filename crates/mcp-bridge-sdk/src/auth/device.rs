//! The device authorization grant (RFC 8628): for a machine without a
//! browser (an SSH session, a dev container), the user signs in on another
//! device with a short code. The client shows the verification URL and the
//! code through the application's [`DevicePrompt`], and polls the token
//! endpoint at the server's pace until the user finished, refused, or the
//! code expired.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::challenge::Challenge;
use super::{SignInError, TokenState, discovery, exchange};
use crate::BoxFuture;

/// The interval between polls when the server names none (RFC 8628
/// section 3.2).
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// How much a `slow_down` answer adds to the interval (RFC 8628 section 3.5).
const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);

/// What the user is shown to sign in on another device.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceAuthorization {
    /// Where the user goes.
    pub verification_uri: String,
    /// The same with the code in it: opening it is enough.
    pub verification_uri_complete: Option<String>,
    /// The code the user types there.
    pub user_code: String,
    /// How long the code is valid.
    pub expires_in: Duration,
}

impl std::fmt::Debug for DeviceAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The user code is shown to the user, but logs do not need it.
        f.debug_struct("DeviceAuthorization")
            .field("verification_uri", &self.verification_uri)
            .field("expires_in", &self.expires_in)
            .finish_non_exhaustive()
    }
}

type Show = dyn Fn(DeviceAuthorization) -> BoxFuture<Result<(), crate::BoxError>> + Send + Sync;

/// Shows a device sign-in to the user (a line in a terminal, a message of
/// the application). Its future ends when the sign-in was shown, or with
/// an error when the user declined: the polling then stops. Polling goes
/// on while it runs.
#[derive(Clone)]
pub struct DevicePrompt(Arc<Show>);

impl std::fmt::Debug for DevicePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DevicePrompt")
    }
}

impl DevicePrompt {
    /// The prompt of an async function or closure, whose error is any
    /// error (or a `String`).
    pub fn new<F, Fut, E>(show: F) -> Self
    where
        F: Fn(DeviceAuthorization) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: Into<crate::BoxError>,
    {
        DevicePrompt(Arc::new(move |shown| {
            let showing = show(shown);
            Box::pin(async move { showing.await.map_err(Into::into) })
        }))
    }
}

/// What follows a refused poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Poll {
    /// Ask again after this interval.
    Again(Duration),
    /// The user refused.
    Denied,
    /// The code expired before the user finished.
    Expired,
    /// Any other refusal: the sign-in failed.
    Failed,
}

/// The rule of RFC 8628 section 3.5 for the OAuth error `code` of a poll.
pub(crate) fn after_refusal(code: Option<&str>, interval: Duration) -> Poll {
    match code {
        Some("authorization_pending") => Poll::Again(interval),
        Some("slow_down") => Poll::Again(interval + SLOW_DOWN_STEP),
        Some("access_denied") => Poll::Denied,
        Some("expired_token") => Poll::Expired,
        _ => Poll::Failed,
    }
}

impl super::Inner {
    /// The device authorization grant: asks for a code, shows it through
    /// `prompt`, and polls for the tokens.
    pub(super) async fn sign_in_device(
        &self,
        session: &mut TokenState,
        challenge: &Challenge,
        previous: &[String],
        prompt: &DevicePrompt,
    ) -> Result<(), SignInError> {
        let (resource, metadata) = self.discover(challenge).await?;
        let endpoint = metadata.device_authorization_endpoint.clone().ok_or(SignInError::NoDeviceAuthorization)?;
        let client = self.client_for(&metadata).await?;
        let scope = discovery::select_scope(challenge.scope.as_deref(), &resource, &metadata, previous);
        let mut form = vec![("resource", resource.resource.clone())];
        if let Some(scope) = &scope {
            form.push(("scope", scope.clone()));
        }
        let answer = exchange::device_authorization(&self.http, &endpoint, &client, self.client_key(), form).await?;
        discovery::check_endpoint(&self.server_url, "verification URI", &answer.verification_uri)?;
        if let Some(complete) = &answer.verification_uri_complete {
            discovery::check_endpoint(&self.server_url, "verification URI", complete)?;
        }
        let expires_in = Duration::from_secs(answer.expires_in);
        let deadline = Instant::now() + expires_in;
        let mut interval = answer.interval.map_or(DEFAULT_INTERVAL, Duration::from_secs).max(Duration::from_secs(1));
        let shown = DeviceAuthorization {
            verification_uri: answer.verification_uri,
            verification_uri_complete: answer.verification_uri_complete,
            user_code: answer.user_code,
            expires_in,
        };
        let mut showing = std::pin::pin!((prompt.0)(shown));
        let mut still_showing = true;
        loop {
            let wake = Instant::now() + interval;
            loop {
                tokio::select! {
                    shown = &mut showing, if still_showing => {
                        still_showing = false;
                        if let Err(e) = shown {
                            return Err(SignInError::Denied(format!("the sign-in was declined: {e}")));
                        }
                    }
                    () = tokio::time::sleep_until(wake) => break,
                }
            }
            if Instant::now() >= deadline {
                return Err(SignInError::DeviceCodeExpired);
            }
            let form = vec![
                ("grant_type", exchange::DEVICE_CODE_GRANT.to_owned()),
                ("device_code", answer.device_code.clone()),
            ];
            let refused = match self.token_answer(&metadata.token_endpoint, &client, form, None).await? {
                Ok(record) => return self.keep_signed_in(session, record, scope, resource.resource),
                Err(refused) => refused,
            };
            match after_refusal(refused.code.as_deref(), interval) {
                Poll::Again(next) => interval = next,
                Poll::Denied => return Err(SignInError::Denied("the user refused the sign-in".into())),
                Poll::Expired => return Err(SignInError::DeviceCodeExpired),
                Poll::Failed => return Err(refused.error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_follow_the_servers_answers() {
        let five = Duration::from_secs(5);
        assert_eq!(after_refusal(Some("authorization_pending"), five), Poll::Again(five));
        assert_eq!(after_refusal(Some("slow_down"), five), Poll::Again(Duration::from_secs(10)));
        assert_eq!(after_refusal(Some("access_denied"), five), Poll::Denied);
        assert_eq!(after_refusal(Some("expired_token"), five), Poll::Expired);
        assert_eq!(after_refusal(Some("invalid_grant"), five), Poll::Failed);
        assert_eq!(after_refusal(None, five), Poll::Failed);
    }

    #[test]
    fn the_user_code_stays_out_of_debug() {
        let shown = DeviceAuthorization {
            verification_uri: "https://as.example/device".into(),
            verification_uri_complete: Some("https://as.example/device?user_code=WXYZ-1234".into()),
            user_code: "WXYZ-1234".into(),
            expires_in: Duration::from_secs(600),
        };
        assert!(!format!("{shown:?}").contains("WXYZ"));
    }
}
