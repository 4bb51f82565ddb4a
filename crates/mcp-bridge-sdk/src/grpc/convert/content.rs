//! Content blocks, their annotations, icons and resource contents.

use serde_json::{Value, json};

use super::{Members, Object, Unmappable, decode_base64, encode_base64, proto, role_from_proto, role_to_proto};

pub(crate) fn annotations_to_proto(value: Option<serde_json::Map<String, Value>>) -> Option<proto::Annotations> {
    let mut a = Members::of(Value::Object(value?));
    Some(proto::Annotations {
        audience: a.strings("audience").iter().map(|r| role_to_proto(r)).collect(),
        #[allow(clippy::cast_possible_truncation)] // a priority is between 0 and 1
        priority: a.f64("priority").map(|p| p as f32),
        last_modified: a.opt_string("lastModified"),
    })
}

pub(crate) fn annotations_from_proto(a: Option<proto::Annotations>) -> Option<Value> {
    let a = a?;
    let audience: Vec<Value> = a.audience.into_iter().filter_map(role_from_proto).map(Value::from).collect();
    Some(
        Object::default()
            .list("audience", audience)
            .some("priority", a.priority.map(f64::from))
            .some("lastModified", a.last_modified)
            .build(),
    )
}

pub(crate) fn icons_to_proto(icons: Vec<Value>) -> Vec<proto::Icon> {
    icons
        .into_iter()
        .map(|icon| {
            let mut i = Members::of(icon);
            let theme = match i.opt_string("theme").as_deref() {
                Some("light") => proto::icon::Theme::Light,
                Some("dark") => proto::icon::Theme::Dark,
                _ => proto::icon::Theme::Unspecified,
            };
            proto::Icon {
                src: i.string("src"),
                mime_type: i.string("mimeType"),
                sizes: i.strings("sizes"),
                theme: theme as i32,
            }
        })
        .collect()
}

pub(crate) fn icons_from_proto(icons: Vec<proto::Icon>) -> Vec<Value> {
    icons
        .into_iter()
        .map(|icon| {
            let theme = match proto::icon::Theme::try_from(icon.theme) {
                Ok(proto::icon::Theme::Light) => Some("light"),
                Ok(proto::icon::Theme::Dark) => Some("dark"),
                _ => None,
            };
            let sizes = icon.sizes.into_iter().map(Value::from).collect();
            Object::default()
                .set("src", icon.src)
                .text("mimeType", icon.mime_type)
                .list("sizes", sizes)
                .some("theme", theme)
                .build()
        })
        .collect()
}

pub(crate) fn text_to_proto(mut c: Members) -> proto::TextContent {
    proto::TextContent {
        text: c.string("text"),
        annotations: annotations_to_proto(c.object("annotations")),
        metadata: c.into_metadata(),
    }
}

fn text_from_proto(t: proto::TextContent) -> Value {
    Object::default()
        .set("type", "text")
        .set("text", t.text)
        .some("annotations", annotations_from_proto(t.annotations))
        .metadata(t.metadata)
        .build()
}

/// Image or audio content: base64 `data` and a MIME type.
struct Media {
    data: Vec<u8>,
    mime_type: String,
    annotations: Option<proto::Annotations>,
    metadata: Option<prost_types::Struct>,
}

fn media_to_proto(kind: &str, mut c: Members) -> Result<Media, Unmappable> {
    Ok(Media {
        data: decode_base64(&format!("{kind} data"), &c.string("data"))?,
        mime_type: c.string("mimeType"),
        annotations: annotations_to_proto(c.object("annotations")),
        metadata: c.into_metadata(),
    })
}

fn media_from_proto(kind: &str, m: Media) -> Value {
    Object::default()
        .set("type", kind)
        .set("data", encode_base64(&m.data))
        .set("mimeType", m.mime_type)
        .some("annotations", annotations_from_proto(m.annotations))
        .metadata(m.metadata)
        .build()
}

pub(crate) fn image_to_proto(c: Members) -> Result<proto::ImageContent, Unmappable> {
    let m = media_to_proto("image", c)?;
    Ok(proto::ImageContent { data: m.data, mime_type: m.mime_type, annotations: m.annotations, metadata: m.metadata })
}

pub(crate) fn image_from_proto(i: proto::ImageContent) -> Value {
    media_from_proto(
        "image",
        Media { data: i.data, mime_type: i.mime_type, annotations: i.annotations, metadata: i.metadata },
    )
}

pub(crate) fn audio_to_proto(c: Members) -> Result<proto::AudioContent, Unmappable> {
    let m = media_to_proto("audio", c)?;
    Ok(proto::AudioContent { data: m.data, mime_type: m.mime_type, annotations: m.annotations, metadata: m.metadata })
}

pub(crate) fn audio_from_proto(a: proto::AudioContent) -> Value {
    media_from_proto(
        "audio",
        Media { data: a.data, mime_type: a.mime_type, annotations: a.annotations, metadata: a.metadata },
    )
}

/// One resource's contents: text, or a base64 `blob`.
pub(crate) fn contents_to_proto(value: Value) -> Result<proto::ResourceContents, Unmappable> {
    let mut c = Members::of(value);
    let blob = match c.opt_string("blob") {
        Some(blob) => decode_base64("blob", &blob)?,
        None => Vec::new(),
    };
    Ok(proto::ResourceContents {
        uri: c.string("uri"),
        mime_type: c.string("mimeType"),
        text: c.string("text"),
        blob,
        metadata: c.into_metadata(),
    })
}

pub(crate) fn contents_from_proto(c: proto::ResourceContents) -> Value {
    let mut out = Object::default();
    out.set("uri", c.uri).text("mimeType", c.mime_type);
    if c.blob.is_empty() {
        out.set("text", c.text);
    } else {
        out.set("blob", encode_base64(&c.blob));
    }
    out.metadata(c.metadata).build()
}

/// A content block as one of the proto's: text, image, audio, an embedded
/// resource or a resource link.
pub(crate) enum Block {
    Text(proto::TextContent),
    Image(proto::ImageContent),
    Audio(proto::AudioContent),
    Embedded(proto::EmbeddedResource),
    Link(proto::Resource),
}

pub(crate) fn block_to_proto(value: Value) -> Result<Block, Unmappable> {
    let mut c = Members::of(value);
    let kind = c.string("type");
    Ok(match kind.as_str() {
        "text" => Block::Text(text_to_proto(c)),
        "image" => Block::Image(image_to_proto(c)?),
        "audio" => Block::Audio(audio_to_proto(c)?),
        "resource" => {
            let contents = c.take("resource").map(contents_to_proto).transpose()?;
            Block::Embedded(proto::EmbeddedResource {
                contents,
                annotations: annotations_to_proto(c.object("annotations")),
                metadata: c.into_metadata(),
            })
        }
        "resource_link" => Block::Link(super::items::resource_to_proto(c)),
        other => return Err(Unmappable(format!("a content block of type {other:?} has no proto message"))),
    })
}

pub(crate) fn block_from_proto(block: Block) -> Value {
    match block {
        Block::Text(t) => text_from_proto(t),
        Block::Image(i) => image_from_proto(i),
        Block::Audio(a) => audio_from_proto(a),
        Block::Embedded(e) => {
            let contents = e.contents.map(contents_from_proto).unwrap_or_else(|| json!({}));
            Object::default()
                .set("type", "resource")
                .set("resource", contents)
                .some("annotations", annotations_from_proto(e.annotations))
                .metadata(e.metadata)
                .build()
        }
        Block::Link(r) => {
            let mut link = super::items::resource_from_proto(r);
            if let Value::Object(map) = &mut link {
                map.insert("type".into(), "resource_link".into());
            }
            link
        }
    }
}

/// The five content fields of a tool result's content and of a prompt
/// message, of which one is set.
type BlockFields = (
    Option<proto::TextContent>,
    Option<proto::ImageContent>,
    Option<proto::AudioContent>,
    Option<proto::EmbeddedResource>,
    Option<proto::Resource>,
);

impl Block {
    fn into_fields(self) -> BlockFields {
        match self {
            Block::Text(t) => (Some(t), None, None, None, None),
            Block::Image(i) => (None, Some(i), None, None, None),
            Block::Audio(a) => (None, None, Some(a), None, None),
            Block::Embedded(e) => (None, None, None, Some(e), None),
            Block::Link(r) => (None, None, None, None, Some(r)),
        }
    }

    /// The block of the first field set; `what` names the message for the error.
    fn from_fields(fields: BlockFields, what: &str) -> Result<Block, Unmappable> {
        match fields {
            (Some(t), ..) => Ok(Block::Text(t)),
            (_, Some(i), ..) => Ok(Block::Image(i)),
            (_, _, Some(a), ..) => Ok(Block::Audio(a)),
            (_, _, _, Some(e), _) => Ok(Block::Embedded(e)),
            (.., Some(r)) => Ok(Block::Link(r)),
            _ => Err(Unmappable(format!("{what} with no content"))),
        }
    }
}

pub(crate) fn tool_content_to_proto(value: Value) -> Result<proto::call_tool_response::Content, Unmappable> {
    let (text, image, audio, embedded_resource, resource_link) = block_to_proto(value)?.into_fields();
    Ok(proto::call_tool_response::Content { text, image, audio, embedded_resource, resource_link })
}

pub(crate) fn tool_content_from_proto(c: proto::call_tool_response::Content) -> Result<Value, Unmappable> {
    let fields = (c.text, c.image, c.audio, c.embedded_resource, c.resource_link);
    Ok(block_from_proto(Block::from_fields(fields, "a content block")?))
}

pub(crate) fn prompt_message_to_proto(value: Value) -> Result<proto::PromptMessage, Unmappable> {
    let mut m = Members::of(value);
    let role = role_to_proto(&m.string("role"));
    let block = block_to_proto(m.take("content").unwrap_or(Value::Null))?;
    let (text, image, audio, embedded_resource, resource_link) = block.into_fields();
    Ok(proto::PromptMessage { role, text, image, audio, embedded_resource, resource_link })
}

pub(crate) fn prompt_message_from_proto(m: proto::PromptMessage) -> Result<Value, Unmappable> {
    let fields = (m.text, m.image, m.audio, m.embedded_resource, m.resource_link);
    let block = block_from_proto(Block::from_fields(fields, "a prompt message")?);
    Ok(Object::default().some("role", role_from_proto(m.role)).set("content", block).build())
}
