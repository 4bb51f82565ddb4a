//! Icons of servers, tools, prompts and resources (2026-07-28, Base
//! protocol: Icons), treated as untrusted data: where an icon may come
//! from, which one to pick, and what its bytes must be before a caller
//! shows them.
//!
//! The rules are plain functions ([`check_source`], [`select`],
//! [`inspect`], [`decode_data`]); [`fetch`] runs them around one
//! download, and [`crate::Client::fetch_icon`] with the client's policy
//! and endpoint.

mod fetch;
mod format;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use mcp_bridge_protocol::types::Icon;

pub use fetch::fetch;
pub use format::{Format, inspect};

/// The most redirects an icon fetch follows.
pub const MAX_REDIRECT_HOPS: usize = 3;

/// Why an icon cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IconError {
    /// The source is neither `https:` nor `data:`.
    #[error("icons come from https: or data: URIs only")]
    UnsupportedScheme,
    /// The source is not a valid URI, or carries user information.
    #[error("the icon's URI is not valid: {0}")]
    InvalidUri(&'static str),
    /// An https icon of an origin the policy does not accept.
    #[error("the icon's origin is not the server's nor a trusted one")]
    OriginNotAllowed,
    /// A data: icon while the policy refuses them.
    #[error("data: icons are turned off")]
    DataNotAllowed,
    /// A redirect to another origin or away from https.
    #[error("the icon's server redirected to another origin or away from https")]
    RedirectRefused,
    /// More redirects than [`MAX_REDIRECT_HOPS`].
    #[error("more than {MAX_REDIRECT_HOPS} redirects")]
    TooManyRedirects,
    /// The media type says one format and the bytes another.
    #[error("the icon's media type {declared:?} does not match its bytes ({found})")]
    MimeMismatch {
        /// The media type that applied.
        declared: String,
        /// The format of the bytes.
        found: Format,
    },
    /// The bytes are no image format known here.
    #[error("the icon's bytes are no known image format")]
    UnknownFormat,
    /// A format the policy does not turn on, or one that needs a decoder
    /// hook when none is set.
    #[error("{0} icons are turned off (GIF, WebP and SVG need the policy and a decoder hook)")]
    FormatNotAllowed(Format),
    /// Width or height above the policy's limit.
    #[error("the icon is {width}x{height}, over the limit of {max}")]
    DimensionsTooLarge {
        /// The width.
        width: u32,
        /// The height.
        height: u32,
        /// The limit of either.
        max: u32,
    },
    /// More bytes than the policy's limit.
    #[error("the icon is larger than {0} bytes")]
    TooLarge(usize),
    /// The decoder hook refused the image.
    #[error("the icon decoder refused the image: {0}")]
    DecoderFailed(String),
    /// The fetch took longer than the policy's time limit.
    #[error("the icon fetch timed out")]
    Timeout,
    /// The icon's server answered with an error status.
    #[error("the icon's server answered HTTP {0}")]
    Http(u16),
    /// The icon's server could not be reached or the transfer broke.
    #[error("the icon could not be fetched: {0}")]
    Fetch(String),
}

/// Cleans, converts or rejects a checked image before the caller gets it;
/// an `Err` is the reason it is rejected.
pub type IconDecoder = Arc<dyn Fn(Image) -> Result<Image, crate::BoxError> + Send + Sync>;

/// Which https origins icons may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OriginRule {
    /// The MCP endpoint's origin and the trusted origins.
    #[default]
    Endpoint,
    /// Any origin.
    Any,
    /// None: data: icons only.
    None,
}

/// The formats beyond PNG and JPEG that may pass (each also needs a
/// decoder hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ExtraFormats {
    /// GIF.
    pub gif: bool,
    /// WebP.
    pub webp: bool,
    /// SVG, which can carry script: let the decoder clean it.
    pub svg: bool,
}

crate::setters::with_setters! {
    ExtraFormats {
        value with_gif => gif: bool,
        value with_webp => webp: bool,
        value with_svg => svg: bool,
    }
}

/// What a client accepts as an icon.
#[derive(Clone)]
#[non_exhaustive]
pub struct IconPolicy {
    /// Which https origins are accepted.
    pub origins: OriginRule,
    /// Origins (`https://host[:port]`) accepted beside the endpoint's.
    pub trusted_origins: Vec<String>,
    /// Whether data: icons are accepted.
    pub allow_data: bool,
    /// GIF, WebP and SVG, off by default.
    pub formats: ExtraFormats,
    /// Receives each checked image; required for GIF, WebP and SVG.
    pub decoder: Option<IconDecoder>,
    /// The largest icon, in bytes.
    pub max_bytes: usize,
    /// The largest width or height.
    pub max_dimension: u32,
    /// The time limit of one fetch, redirects included.
    pub timeout: Duration,
    /// The trust anchors, revocation lists and client certificate of the
    /// fetch.
    pub tls: crate::transport::TlsClientOptions,
}

crate::setters::with_setters! {
    IconPolicy {
        value with_origins => origins: OriginRule,
        value with_trusted_origins => trusted_origins: Vec<String>,
        value with_allow_data => allow_data: bool,
        value with_formats => formats: ExtraFormats,
        some with_decoder => decoder: IconDecoder,
        value with_max_bytes => max_bytes: usize,
        value with_max_dimension => max_dimension: u32,
        value with_timeout => timeout: Duration,
        value with_tls => tls: crate::transport::TlsClientOptions,
    }
}

impl Default for IconPolicy {
    /// The endpoint's origin and data: icons, PNG and JPEG, 1 MiB,
    /// 1024 pixels a side, 10 s.
    fn default() -> Self {
        IconPolicy {
            origins: OriginRule::Endpoint,
            trusted_origins: Vec::new(),
            allow_data: true,
            formats: ExtraFormats::default(),
            decoder: None,
            max_bytes: 1024 * 1024,
            max_dimension: 1024,
            timeout: Duration::from_secs(10),
            tls: crate::transport::TlsClientOptions::default(),
        }
    }
}

impl std::fmt::Debug for IconPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IconPolicy")
            .field("origins", &self.origins)
            .field("trusted_origins", &self.trusted_origins)
            .field("allow_data", &self.allow_data)
            .field("formats", &self.formats)
            .field("decoder", &self.decoder.is_some())
            .field("max_bytes", &self.max_bytes)
            .field("max_dimension", &self.max_dimension)
            .finish_non_exhaustive()
    }
}

impl IconPolicy {
    /// Whether images of `format` may pass.
    pub fn allows(&self, format: Format) -> bool {
        let extra = match format {
            Format::Png | Format::Jpeg => return true,
            Format::Gif => self.formats.gif,
            Format::Webp => self.formats.webp,
            Format::Svg => self.formats.svg,
        };
        extra && self.decoder.is_some()
    }
}

/// A checked image, ready for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Image {
    /// The format its bytes are in.
    pub format: Format,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Width and height from the header (`None` for SVG).
    pub dimensions: Option<(u32, u32)>,
}

/// Where an icon's bytes are, once its source passed the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An https URL of an accepted origin.
    Https(reqwest::Url),
    /// A data: URI: its media type (when given) and its bytes.
    Data {
        /// The media type of the URI.
        media_type: Option<String>,
        /// The decoded bytes.
        bytes: Vec<u8>,
    },
}

/// The origin (`scheme://host[:port]`) of an MCP endpoint as icons see it:
/// a `wss` endpoint has the origin of `https` on the same host and port.
pub fn endpoint_origin(endpoint: &str) -> Option<String> {
    let mut url = reqwest::Url::parse(endpoint).ok()?;
    let web_scheme = match url.scheme() {
        "wss" => "https",
        "ws" => "http",
        "https" | "http" => return Some(url.origin().ascii_serialization()),
        _ => return None,
    };
    url.set_scheme(web_scheme).ok()?;
    Some(url.origin().ascii_serialization())
}

/// Checks an icon's `src` against the policy, for a server whose MCP
/// endpoint is `endpoint` (`None` on stdio: only data: icons and trusted
/// origins pass).
///
/// # Errors
/// Which rule the source breaks.
pub fn check_source(src: &str, endpoint: Option<&str>, policy: &IconPolicy) -> Result<Source, IconError> {
    if src.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:")) {
        if !policy.allow_data {
            return Err(IconError::DataNotAllowed);
        }
        let (media_type, bytes) = decode_data(src)?;
        if bytes.len() > policy.max_bytes {
            return Err(IconError::TooLarge(policy.max_bytes));
        }
        return Ok(Source::Data { media_type, bytes });
    }
    let url = reqwest::Url::parse(src).map_err(|_| IconError::InvalidUri("not a URL"))?;
    if url.scheme() != "https" {
        return Err(IconError::UnsupportedScheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(IconError::InvalidUri("it carries user information"));
    }
    if !origin_allowed(&url.origin().ascii_serialization(), endpoint, policy) {
        return Err(IconError::OriginNotAllowed);
    }
    Ok(Source::Https(url))
}

fn origin_allowed(origin: &str, endpoint: Option<&str>, policy: &IconPolicy) -> bool {
    match policy.origins {
        OriginRule::Any => true,
        OriginRule::None => false,
        OriginRule::Endpoint => {
            endpoint.and_then(endpoint_origin).is_some_and(|e| e == origin)
                || policy.trusted_origins.iter().any(|t| endpoint_origin(t).is_some_and(|t| t == origin))
        }
    }
}

/// The media type and the bytes of a `data:` URI (base64 or
/// percent-encoded).
///
/// # Errors
/// [`IconError::InvalidUri`] when it is not a valid data: URI.
pub fn decode_data(uri: &str) -> Result<(Option<String>, Vec<u8>), IconError> {
    let rest = uri.get(5..).ok_or(IconError::InvalidUri("not a data: URI"))?;
    let (header, data) = rest.split_once(',').ok_or(IconError::InvalidUri("a data: URI needs a comma"))?;
    let mut parts = header.split(';');
    let media_type = parts.next().map(str::trim).filter(|t| !t.is_empty()).map(str::to_ascii_lowercase);
    let base64 = parts.any(|p| p.trim().eq_ignore_ascii_case("base64"));
    let bytes = if base64 {
        let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(compact.as_bytes())
            .map_err(|_| IconError::InvalidUri("the base64 of a data: URI is not valid"))?
    } else {
        percent_decode(data)?
    };
    Ok((media_type, bytes))
}

fn percent_decode(text: &str) -> Result<Vec<u8>, IconError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or(IconError::InvalidUri("a cut percent escape"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| IconError::InvalidUri("a bad percent escape"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// What a caller wants to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct IconWanted {
    /// The size in pixels it will be shown at.
    pub size: Option<u32>,
    /// `light` or `dark`.
    pub theme: Option<String>,
}

crate::setters::with_setters! {
    IconWanted {
        some with_size => size: u32,
        some with_theme => theme: impl Into<String>,
    }
}

/// The icon to show: by theme first (the same theme, then none, then
/// another), then by size (exact, then `any` or unsized, then the smallest
/// larger, then the largest smaller), then in the server's order. Icons
/// whose source or declared format the policy refuses are not candidates.
pub fn select<'a>(
    icons: &'a [Icon],
    wanted: &IconWanted,
    endpoint: Option<&str>,
    policy: &IconPolicy,
) -> Option<&'a Icon> {
    icons
        .iter()
        .enumerate()
        .filter(|(_, icon)| usable(icon, endpoint, policy))
        .min_by_key(|(order, icon)| (theme_rank(icon, wanted), size_rank(icon, wanted), *order))
        .map(|(_, icon)| icon)
}

fn usable(icon: &Icon, endpoint: Option<&str>, policy: &IconPolicy) -> bool {
    let format_ok = icon.mime_type.as_deref().and_then(Format::from_media_type).is_none_or(|f| policy.allows(f));
    // A data: icon is decoded later; only its scheme and the policy matter here.
    let source_ok = if icon.src.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("data:")) {
        policy.allow_data
    } else {
        check_source(&icon.src, endpoint, policy).is_ok()
    };
    format_ok && source_ok
}

fn theme_rank(icon: &Icon, wanted: &IconWanted) -> u8 {
    match (&wanted.theme, &icon.theme) {
        (None, _) => 0,
        (Some(w), Some(t)) if w.eq_ignore_ascii_case(t) => 0,
        (Some(_), None) => 1,
        (Some(_), Some(_)) => 2,
    }
}

/// (class, distance): exact 0, any/unsized 1, larger 2 (smallest first),
/// smaller 3 (largest first).
fn size_rank(icon: &Icon, wanted: &IconWanted) -> (u8, u32) {
    let Some(want) = wanted.size else { return (0, 0) };
    let sizes = icon.sizes.as_deref().unwrap_or_default();
    if sizes.is_empty() || sizes.iter().any(|s| s.eq_ignore_ascii_case("any")) {
        return (1, 0);
    }
    let sides: Vec<u32> = sizes.iter().filter_map(|s| parse_size(s)).collect();
    if sides.contains(&want) {
        return (0, 0);
    }
    if let Some(larger) = sides.iter().filter(|&&s| s > want).min() {
        return (2, larger - want);
    }
    match sides.iter().max() {
        Some(smaller) => (3, want - smaller),
        None => (1, 0),
    }
}

/// The longer side of a `WxH` size.
fn parse_size(size: &str) -> Option<u32> {
    let (w, h) = size.to_ascii_lowercase().split_once('x').map(|(w, h)| (w.parse::<u32>(), h.parse::<u32>()))?;
    Some(w.ok()?.max(h.ok()?))
}
