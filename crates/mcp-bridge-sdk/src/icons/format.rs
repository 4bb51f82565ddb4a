//! What an icon's bytes are: the format by its magic bytes, the width and
//! height from its header, and the checks of [`inspect`].

use super::{IconError, IconPolicy, Image};

/// An image format an icon can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `image/png`.
    Png,
    /// `image/jpeg`.
    Jpeg,
    /// `image/gif`.
    Gif,
    /// `image/webp`.
    Webp,
    /// `image/svg+xml`.
    Svg,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.media_type())
    }
}

impl Format {
    /// The media type of the format.
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
            Format::Gif => "image/gif",
            Format::Webp => "image/webp",
            Format::Svg => "image/svg+xml",
        }
    }

    /// The format a media type names (parameters ignored).
    pub fn from_media_type(media_type: &str) -> Option<Format> {
        let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        match essence.as_str() {
            "image/png" => Some(Format::Png),
            "image/jpeg" | "image/jpg" | "image/pjpeg" => Some(Format::Jpeg),
            "image/gif" => Some(Format::Gif),
            "image/webp" => Some(Format::Webp),
            "image/svg+xml" => Some(Format::Svg),
            _ => None,
        }
    }

    /// The format the bytes begin with.
    pub fn detect(bytes: &[u8]) -> Option<Format> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(Format::Jpeg)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(Format::Gif)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Format::Webp)
        } else if looks_like_svg(bytes) {
            Some(Format::Svg)
        } else {
            None
        }
    }
}

/// An XML text whose first element is `<svg`, within its first 4 KiB.
fn looks_like_svg(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    let Ok(text) = std::str::from_utf8(head).or_else(|e| std::str::from_utf8(&head[..e.valid_up_to()])) else {
        return false;
    };
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    // Skip the XML declaration, comments and a doctype before the root.
    loop {
        if let Some(after) = rest.strip_prefix("<?").and_then(|r| r.split_once("?>")) {
            rest = after.1.trim_start();
        } else if let Some(after) = rest.strip_prefix("<!--").and_then(|r| r.split_once("-->")) {
            rest = after.1.trim_start();
        } else if let Some(after) = rest.strip_prefix("<!").and_then(|r| r.split_once('>')) {
            rest = after.1.trim_start();
        } else {
            break;
        }
    }
    rest.starts_with("<svg") && rest[4..].starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/')
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?])))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*b.get(at)?, *b.get(at + 1)?, *b.get(at + 2)?, 0]))
}

/// Width and height from the header of a raster image.
fn dimensions(format: Format, b: &[u8]) -> Option<(u32, u32)> {
    match format {
        Format::Png => {
            // The first chunk is IHDR: width and height, big-endian.
            (b.get(12..16)? == b"IHDR").then_some(())?;
            let w = u32::from_be_bytes(b.get(16..20)?.try_into().ok()?);
            let h = u32::from_be_bytes(b.get(20..24)?.try_into().ok()?);
            Some((w, h))
        }
        Format::Gif => Some((le16(b, 6)?, le16(b, 8)?)),
        Format::Jpeg => jpeg_dimensions(b),
        Format::Webp => match b.get(12..16)? {
            b"VP8 " => {
                (b.get(23..26)? == [0x9d, 0x01, 0x2a]).then_some(())?;
                Some((le16(b, 26)? & 0x3fff, le16(b, 28)? & 0x3fff))
            }
            b"VP8L" => {
                (*b.get(20)? == 0x2f).then_some(())?;
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
            _ => None,
        },
        Format::Svg => None,
    }
}

/// Walks the JPEG segments to the first start-of-frame marker.
fn jpeg_dimensions(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        while *b.get(at)? != 0xff {
            at += 1;
        }
        while *b.get(at)? == 0xff {
            at += 1;
        }
        let marker = *b.get(at)?;
        at += 1;
        match marker {
            // Markers without a length.
            0x01 | 0xd0..=0xd7 => continue,
            0xd9 | 0xda => return None,
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some((be16(b, at + 5)?, be16(b, at + 3)?));
            }
            _ => at += usize::try_from(be16(b, at)?).ok()?,
        }
    }
}

/// Media types that say nothing about the format.
fn is_generic(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    matches!(essence.as_str(), "" | "application/octet-stream" | "binary/octet-stream" | "application/unknown")
}

/// Checks an icon's bytes: the format by magic bytes against the media
/// type (`transfer_type`, from the response or the data: URI, first; the
/// icon's declared `mimeType` when that is absent or generic), the format
/// against the policy, the dimensions against its limit; then the
/// policy's decoder hook, whose result the caller gets.
///
/// # Errors
/// The rule the icon breaks.
pub fn inspect(
    bytes: Vec<u8>,
    transfer_type: Option<&str>,
    declared_type: Option<&str>,
    policy: &IconPolicy,
) -> Result<Image, IconError> {
    if bytes.len() > policy.max_bytes {
        return Err(IconError::TooLarge(policy.max_bytes));
    }
    let format = Format::detect(&bytes).ok_or(IconError::UnknownFormat)?;
    let applies = transfer_type.filter(|t| !is_generic(t)).or(declared_type.filter(|t| !is_generic(t)));
    if let Some(media_type) = applies
        && Format::from_media_type(media_type) != Some(format)
    {
        return Err(IconError::MimeMismatch { declared: media_type.to_owned(), found: format });
    }
    if !policy.allows(format) {
        return Err(IconError::FormatNotAllowed(format));
    }
    let dimensions = match format {
        Format::Svg => None,
        raster => Some(dimensions(raster, &bytes).ok_or(IconError::UnknownFormat)?),
    };
    if let Some((width, height)) = dimensions
        && (width > policy.max_dimension || height > policy.max_dimension)
    {
        return Err(IconError::DimensionsTooLarge { width, height, max: policy.max_dimension });
    }
    let image = Image { format, bytes, dimensions };
    match &policy.decoder {
        Some(decoder) => decoder(image).map_err(|e| IconError::DecoderFailed(e.to_string())),
        None => Ok(image),
    }
}
