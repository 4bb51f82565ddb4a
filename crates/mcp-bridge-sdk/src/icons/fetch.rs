//! Downloading an icon: one GET per redirect hop, each on the icon's
//! origin and on https, with no cookie and no credentials, within the
//! policy's size and time limits.

use mcp_bridge_protocol::types::Icon;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};

use super::{IconError, IconPolicy, Image, MAX_REDIRECT_HOPS, Source, check_source, inspect};
use crate::transport::http::{HttpConfig, build_client_with};

/// Fetches and checks an icon of a server whose MCP endpoint is `endpoint`
/// (`None` on stdio): [`check_source`], the download for https, then
/// [`inspect`] (with the policy's decoder).
///
/// # Errors
/// The rule the icon breaks, or why it could not be fetched.
pub async fn fetch(icon: &Icon, endpoint: Option<&str>, policy: &IconPolicy) -> Result<Image, IconError> {
    let (bytes, transfer_type) = match check_source(&icon.src, endpoint, policy)? {
        Source::Data { media_type, bytes } => (bytes, media_type),
        Source::Https(url) => {
            tokio::time::timeout(policy.timeout, download(url, policy)).await.map_err(|_| IconError::Timeout)??
        }
    };
    inspect(bytes, transfer_type.as_deref(), icon.mime_type.as_deref(), policy)
}

/// The body and content type at `url`, following at most
/// [`MAX_REDIRECT_HOPS`] redirects on its origin.
async fn download(url: reqwest::Url, policy: &IconPolicy) -> Result<(Vec<u8>, Option<String>), IconError> {
    let config = HttpConfig::new(url.as_str()).with_tls(policy.tls.clone());
    // No cookie store and no Authorization: the client is built for icons only.
    let http =
        build_client_with(&config, reqwest::redirect::Policy::none()).map_err(|e| IconError::Fetch(e.to_string()))?;
    let origin = url.origin();
    let mut current = url;
    let mut hops = 0;
    loop {
        let mut response = http
            .get(current.clone())
            .header(ACCEPT, "image/png, image/jpeg, image/*;q=0.8")
            .send()
            .await
            .map_err(|e| IconError::Fetch(e.without_url().to_string()))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response.headers().get(LOCATION).and_then(|l| l.to_str().ok());
            let next = location.and_then(|l| current.join(l).ok()).ok_or(IconError::Http(status.as_u16()))?;
            if next.scheme() != "https" || next.origin() != origin {
                return Err(IconError::RedirectRefused);
            }
            hops += 1;
            if hops > MAX_REDIRECT_HOPS {
                return Err(IconError::TooManyRedirects);
            }
            current = next;
            continue;
        }
        if !status.is_success() {
            return Err(IconError::Http(status.as_u16()));
        }
        let max = policy.max_bytes;
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(IconError::TooLarge(max));
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|c| c.to_str().ok()).map(str::to_owned);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| IconError::Fetch(e.without_url().to_string()))? {
            if body.len() + chunk.len() > max {
                return Err(IconError::TooLarge(max));
            }
            body.extend_from_slice(&chunk);
        }
        return Ok((body, content_type));
    }
}
