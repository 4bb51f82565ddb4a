//! The client's half of multi round-trip requests: each input request is
//! checked (known kind, declared capability, valid params), answered by its
//! hook, and the answer checked before it goes back (2026-07-28, MRTR,
//! Elicitation, Sampling, Roots).

/// The tool-use rules of sampling messages, from the protocol crate.
pub use mcp_bridge_protocol::types::check_sampling_messages;
use mcp_bridge_protocol::types::{
    ClientCapabilities, ElicitAction, ElicitRequestParams, InputRequest, InputRequests, InputResponse, InputResponses,
};
use serde_json::Value;

use super::options::InputHooks;
use crate::error::Error;

/// Answers every input request of one round.
pub(crate) async fn answer_round(
    requests: InputRequests,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponses, Error> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = answer_one(&key, request, caps, hooks).await?;
        responses.insert(key, response);
    }
    Ok(responses)
}

fn undeclared(key: &str, capability: &'static str) -> Error {
    Error::UndeclaredInputRequest { key: key.to_owned(), capability }
}

fn hook_failed(key: &str, reason: impl Into<String>) -> Error {
    Error::HookFailed { key: key.to_owned(), reason: reason.into() }
}

pub(crate) async fn answer_one(
    key: &str,
    request: InputRequest,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponse, Error> {
    if let Some(missing) = request.missing_capability(caps) {
        return Err(undeclared(key, missing.path()));
    }
    match request {
        InputRequest::Elicit(call) => match call.params {
            ElicitRequestParams::Form(params) => {
                let hook = hooks.elicit_form.as_ref().ok_or_else(|| hook_failed(key, "no form elicitation hook"))?;
                #[cfg(feature = "validation")]
                let schema = serde_json::to_value(&params.requested_schema)
                    .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: e.to_string() })?;
                let result = hook(params).await.map_err(|e| hook_failed(key, e.to_string()))?;
                #[cfg(feature = "validation")]
                if result.action == ElicitAction::Accept {
                    check_elicitation_content(key, &schema, result.content.as_ref())?;
                }
                Ok(InputResponse::Elicit(result))
            }
            ElicitRequestParams::Url(params) => {
                check_elicitation_url(&params.url)
                    .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: e.to_string() })?;
                let hook = hooks.elicit_url.as_ref().ok_or_else(|| hook_failed(key, "no URL elicitation hook"))?;
                Ok(InputResponse::Elicit(hook(params).await.map_err(|e| hook_failed(key, e.to_string()))?))
            }
        },
        InputRequest::CreateMessage(call) => {
            check_sampling_messages(&call.params.messages)
                .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: e.to_string() })?;
            let hook = hooks.sample.as_ref().ok_or_else(|| hook_failed(key, "no sampling hook"))?;
            Ok(InputResponse::CreateMessage(Box::new(
                hook(call.params).await.map_err(|e| hook_failed(key, e.to_string()))?,
            )))
        }
        InputRequest::ListRoots(_) => {
            let hook = hooks.list_roots.as_ref().ok_or_else(|| hook_failed(key, "no roots hook"))?;
            let roots = hook(()).await.map_err(|e| hook_failed(key, e.to_string()))?;
            if let Some(bad) = roots.iter().find(|r| !r.uri.starts_with("file://")) {
                return Err(hook_failed(key, format!("root {:?} is not a file:// URI", bad.uri)));
            }
            Ok(InputResponse::ListRoots(mcp_bridge_protocol::types::ListRootsResult {
                roots,
                meta: None,
                extra: Default::default(),
            }))
        }
        InputRequest::Invalid { reason, .. } => Err(Error::InvalidInputRequest { key: key.to_owned(), reason }),
        InputRequest::Unknown(v) => Err(Error::InvalidInputRequest {
            key: key.to_owned(),
            reason: format!("unknown method {:?}", v.get("method").and_then(Value::as_str).unwrap_or("")),
        }),
    }
}

/// Checks accepted form content against the requested schema.
///
/// # Errors
/// [`Error::InvalidInputRequest`] when the schema does not compile,
/// [`Error::HookFailed`] when the content does not match it.
#[cfg(feature = "validation")]
pub fn check_elicitation_content(
    key: &str,
    schema: &Value,
    content: Option<&serde_json::Map<String, Value>>,
) -> Result<(), Error> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: format!("requestedSchema: {e}") })?;
    let instance = Value::Object(content.cloned().unwrap_or_default());
    match validator.iter_errors(&instance).next() {
        Some(error) => Err(hook_failed(key, format!("answer does not match requestedSchema: {error}"))),
        None => Ok(()),
    }
}

/// The URL of a URL elicitation that is not shown to the user: only an
/// absolute `http://` or `https://` URL is (a `javascript:`, `file:`,
/// `data:` or `vscode:` one could run code or open something local).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the url is not an absolute http:// or https:// URL: a URL elicitation may only open a web page")]
pub struct NotAWebUrl;

/// Checks the URL a URL elicitation asks the user to open.
///
/// # Errors
/// [`NotAWebUrl`] unless it is an absolute `http://` or `https://` URL.
pub fn check_elicitation_url(url: &str) -> Result<(), NotAWebUrl> {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") if is_absolute_url(url) => Ok(()),
        _ => Err(NotAWebUrl),
    }
}

/// A URL with a scheme and an authority (`scheme://host...`), no spaces.
pub fn is_absolute_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else { return false };
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    scheme_ok && !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_urls_are_told_from_others() {
        assert!(is_absolute_url("https://example.com/x?y=1"));
        assert!(!is_absolute_url("/relative"));
        assert!(!is_absolute_url("https://"));
        assert!(!is_absolute_url("https://exa mple.com"));
        assert!(!is_absolute_url("1http://x"));
    }

    #[test]
    fn a_url_elicitation_opens_web_pages_only() {
        for good in ["https://example.com/x?y=1", "HTTP://127.0.0.1:8080/cb"] {
            assert_eq!(check_elicitation_url(good), Ok(()), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "javascript://example.com/%0aalert(1)",
            "file:///etc/passwd",
            "file://localhost/etc/passwd",
            "data:text/html,<script>alert(1)</script>",
            "vscode://evil.extension/run",
            "https:///nohost",
            "/relative",
        ] {
            assert_eq!(check_elicitation_url(bad), Err(NotAWebUrl), "{bad}");
        }
    }
}
