//! Why a sign-in failed, as the error the client is told: the user's part
//! (its [`Failure`]) or the OAuth exchange (the SDK's [`SignInError`]),
//! each a cause of the error table.

use mcp_bridge_protocol::ErrorObject;
use mcp_bridge_sdk::auth::SignInError;
use serde_json::json;

use super::Failure;
use mcp_bridge_sdk::server::legacy::translate::{Cause, error_for};

/// Why a sign-in failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignInProblem {
    /// The user's part (the browser, the consent, the time).
    User(Failure),
    /// The OAuth exchange (its texts hold no secrets), and the redirect URI
    /// a registration must list.
    Protocol {
        /// What failed.
        error: SignInError,
        /// The bridge's redirect URI.
        redirect_uri: String,
    },
}

impl SignInProblem {
    /// The error the client is told.
    pub(crate) fn error(&self) -> ErrorObject {
        match self {
            SignInProblem::User(failure) => {
                let mut error = error_for(failure.cause(), None);
                if *failure == Failure::StartReused {
                    // Which computer "the computer that runs mcp-bridge" is.
                    error.message = failure.cause().text_with(Some(&format!("mcp-bridge runs on {}", bridge_host())));
                }
                error
            }
            SignInProblem::Protocol { error, redirect_uri } => error_of_sign_in(error, redirect_uri),
        }
    }
}

/// The name of the computer the bridge runs on, as its user knows it.
fn bridge_host() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

/// The cause of a failed OAuth exchange.
fn cause_of_sign_in(error: &mcp_bridge_sdk::auth::SignInError) -> Cause {
    match error {
        SignInError::NoRegistration => Cause::RegistrationUnavailable,
        SignInError::Registration(_) => Cause::RegistrationFailed,
        SignInError::ClientRejected { metadata_document: true, .. } => Cause::InvalidClientMetadataUrl,
        SignInError::ClientRejected { metadata_document: false, .. } => Cause::IssuerNotRegistered,
        SignInError::Authorize(_) => Cause::SignInFailed,
        SignInError::Denied(_) => Cause::SignInDenied,
        SignInError::DeviceCodeExpired => Cause::SignInCodeExpired,
        _ => Cause::SignInError,
    }
}

/// The error of a failed OAuth exchange: its cause, the reason in
/// `data.detail`, and for a registration problem the redirect URI in the
/// message (what an administrator must allow).
fn error_of_sign_in(error: &mcp_bridge_sdk::auth::SignInError, redirect_uri: &str) -> ErrorObject {
    let cause = cause_of_sign_in(error);
    let mut object = error_for(cause, Some(json!({ "reason": error.to_string() })));
    if matches!(cause, Cause::RegistrationUnavailable | Cause::RegistrationFailed | Cause::InvalidClientMetadataUrl) {
        object.message = cause.text_with(Some(&format!("redirect URI: {redirect_uri}")));
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_in_failures_name_their_cause_and_for_registration_the_redirect_uri() {
        let redirect = "http://127.0.0.1:33418/callback";
        let of = |error: SignInError| {
            let object = SignInProblem::Protocol { error, redirect_uri: redirect.into() }.error();
            (object.data.unwrap()["cause"].as_str().unwrap().to_owned(), object.message)
        };
        let (cause, message) = of(SignInError::NoRegistration);
        assert_eq!(cause, "registration_unavailable");
        assert!(message.contains("client metadata document") && message.contains(redirect), "{message}");
        assert!(message.contains("client id") && !message.contains("--"), "no option of a program: {message}");
        let (cause, message) = of(SignInError::Registration("HTTP 400".into()));
        assert_eq!(cause, "registration_failed");
        assert!(message.contains(redirect) && message.contains("client id"), "{message}");
        let rejected = |metadata_document| SignInError::ClientRejected { metadata_document, reason: "HTTP 401".into() };
        let (cause, message) = of(rejected(false));
        assert_eq!(cause, "issuer_not_registered");
        assert!(message.contains("forget the registration") && message.contains("authentication method"), "{message}");
        let (cause, message) = of(rejected(true));
        assert_eq!(cause, "invalid_client_metadata_url");
        assert!(message.contains("metadata document") && message.contains(redirect), "{message}");
        assert_eq!(of(SignInError::Authorize("the hook stopped".into())).0, "sign_in_failed");
        assert_eq!(of(SignInError::NoPkce).0, "sign_in_error");
        // A device sign-in: its code expired, or the user refused it.
        let (cause, message) = of(SignInError::DeviceCodeExpired);
        assert_eq!(cause, "sign_in_code_expired");
        assert!(message.contains("expired") && message.contains("try again"), "{message}");
        assert_eq!(of(SignInError::Denied("the user refused the sign-in".into())).0, "sign_in_denied");
        assert!(of(SignInError::NoDeviceAuthorization).1.contains("sign-in"));
    }
}
