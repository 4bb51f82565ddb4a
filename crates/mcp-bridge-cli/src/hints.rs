//! The options of this program that change the outcome of a bridge error:
//! the library's messages name none of them, so each is added here as the
//! message's hint (`mcp_bridge_sdk::server::legacy::translate::set_hints`), starting with the
//! words that join it to the message.

use mcp_bridge_sdk::server::legacy::translate::Cause;

/// The hint of `cause`: which option of `mcp-bridge` changes its outcome.
pub(crate) fn of(cause: Cause) -> Option<&'static str> {
    Some(match cause {
        Cause::LineTooLong => "; raise the limit with --max-line-bytes",
        Cause::DiscoverFailed => "; give it more time with --discover-timeout",
        Cause::SignInTimeout => ", or give it more time with --sign-in-timeout",
        Cause::BrowserLaunchFailed | Cause::SignInStartReused => ", or use --no-browser",
        Cause::SignInFailed => " (--no-browser shows the link without starting a browser)",
        Cause::RedirectPortUnavailable => "; choose another with --redirect-port",
        Cause::RegistrationUnavailable | Cause::RegistrationFailed => {
            "; pass the client id with --client-id (a confidential client adds --client-secret-env or --client-key-file), or the document's https URL with --client-metadata-url"
        }
        Cause::IssuerNotRegistered => {
            "; the client is set with --client-id, --client-secret-env, --client-key-file and --client-auth-method, and `mcp-bridge logout URL` forgets a registration"
        }
        Cause::InvalidClientMetadataUrl => " (the URL given with --client-metadata-url)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hint_names_an_option_or_a_command_of_this_program() {
        for cause in Cause::ALL {
            if let Some(hint) = of(cause) {
                assert!(hint.contains("--") || hint.contains("mcp-bridge "), "{cause:?}: {hint}");
                assert!(hint.starts_with([';', ',', ' ']), "a hint joins its message: {cause:?}: {hint}");
            }
        }
        assert!(of(Cause::ParseError).is_none());
    }

    #[test]
    fn a_hint_reads_as_the_end_of_its_message() {
        mcp_bridge_sdk::server::legacy::translate::set_hints(of);
        assert_eq!(
            Cause::SignInTimeout.text(),
            "The sign-in did not finish in time; try again, or give it more time with --sign-in-timeout"
        );
        let reused = Cause::SignInStartReused.text_with(Some("mcp-bridge runs on box"));
        assert!(reused.ends_with("mcp-bridge (mcp-bridge runs on box), or use --no-browser"), "{reused}");
        assert_eq!(Cause::ParseError.text(), "Parse error");
    }
}
