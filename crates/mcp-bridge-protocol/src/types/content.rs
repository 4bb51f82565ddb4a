//! Content blocks of tool results, prompts and sampling messages, and the
//! contents of resources. Each block carries its own `type`; the unions read
//! that member first and keep an unknown `type` as [`ContentBlock::Unknown`].

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{Annotations, Icon};
use crate::meta::Meta;
use crate::tag::{const_tag, from_value};

const_tag!(
    /// `"type": "text"`.
    TextTag = "text"
);
const_tag!(
    /// `"type": "image"`.
    ImageTag = "image"
);
const_tag!(
    /// `"type": "audio"`.
    AudioTag = "audio"
);
const_tag!(
    /// `"type": "resource_link"`.
    ResourceLinkTag = "resource_link"
);
const_tag!(
    /// `"type": "resource"`.
    EmbeddedResourceTag = "resource"
);
const_tag!(
    /// `"type": "tool_use"`.
    ToolUseTag = "tool_use"
);
const_tag!(
    /// `"type": "tool_result"`.
    ToolResultTag = "tool_result"
);

/// Text (`TextContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: TextTag,
    /// The text.
    pub text: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TextContent {
    /// A plain text block.
    pub fn new(text: impl Into<String>) -> Self {
        TextContent { kind: TextTag, text: text.into(), annotations: None, meta: None, extra: Map::new() }
    }
}

/// A base64 image (`ImageContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Always `image`.
    #[serde(rename = "type")]
    pub kind: ImageTag,
    /// Base64 data.
    pub data: String,
    /// Its MIME type.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Base64 audio (`AudioContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AudioContent {
    /// Always `audio`.
    #[serde(rename = "type")]
    pub kind: AudioTag,
    /// Base64 data.
    pub data: String,
    /// Its MIME type.
    pub mime_type: String,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A link to a resource the client may read (`ResourceLink`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// Always `resource_link`.
    #[serde(rename = "type")]
    pub kind: ResourceLinkTag,
    /// The resource's URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Human description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A resource's contents inline (`EmbeddedResource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Always `resource`.
    #[serde(rename = "type")]
    pub kind: EmbeddedResourceTag,
    /// The contents.
    pub resource: ResourceContents,
    /// Usage hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A model's request to call a tool, inside sampling (`ToolUseContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseContent {
    /// Always `tool_use`.
    #[serde(rename = "type")]
    pub kind: ToolUseTag,
    /// Id the matching result refers to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The tool's arguments.
    pub input: Map<String, Value>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a tool use, inside sampling (`ToolResultContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultContent {
    /// Always `tool_result`.
    #[serde(rename = "type")]
    pub kind: ToolResultTag,
    /// The `id` of the [`ToolUseContent`] this answers.
    pub tool_use_id: String,
    /// Unstructured result.
    pub content: Vec<ContentBlock>,
    /// Structured result; `null` is kept apart from absent.
    #[serde(default, deserialize_with = "crate::serde_util::present", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Any content of a tool result or a prompt message (`ContentBlock`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ContentBlock {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
    /// Audio.
    Audio(AudioContent),
    /// A resource link.
    ResourceLink(ResourceLink),
    /// An embedded resource.
    Resource(EmbeddedResource),
    /// A block whose `type` this crate does not know, kept whole.
    Unknown(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }

    /// An image: base64 `data` of `mime_type` (`image/png`, ...).
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            kind: ImageTag,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Map::new(),
        })
    }

    /// Audio: base64 `data` of `mime_type` (`audio/wav`, ...).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            kind: AudioTag,
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
            extra: Map::new(),
        })
    }

    /// A resource embedded whole.
    pub fn resource(contents: ResourceContents) -> Self {
        ContentBlock::Resource(EmbeddedResource {
            kind: EmbeddedResourceTag,
            resource: contents,
            annotations: None,
            meta: None,
            extra: Map::new(),
        })
    }

    /// A link to the resource at `uri`, called `name`.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(ResourceLink {
            kind: ResourceLinkTag,
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
            extra: Map::new(),
        })
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.get("type").and_then(Value::as_str) {
            Some(TextTag::VALUE) => ContentBlock::Text(from_value(v)?),
            Some(ImageTag::VALUE) => ContentBlock::Image(from_value(v)?),
            Some(AudioTag::VALUE) => ContentBlock::Audio(from_value(v)?),
            Some(ResourceLinkTag::VALUE) => ContentBlock::ResourceLink(from_value(v)?),
            Some(EmbeddedResourceTag::VALUE) => ContentBlock::Resource(from_value(v)?),
            _ => ContentBlock::Unknown(v),
        })
    }
}

/// Content of a sampling message (`SamplingMessageContentBlock`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SamplingContent {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(ImageContent),
    /// Audio.
    Audio(AudioContent),
    /// A tool use by the model.
    ToolUse(ToolUseContent),
    /// A tool result for the model.
    ToolResult(ToolResultContent),
    /// A block whose `type` this crate does not know, kept whole.
    Unknown(Value),
}

impl<'de> Deserialize<'de> for SamplingContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match v.get("type").and_then(Value::as_str) {
            Some(TextTag::VALUE) => SamplingContent::Text(from_value(v)?),
            Some(ImageTag::VALUE) => SamplingContent::Image(from_value(v)?),
            Some(AudioTag::VALUE) => SamplingContent::Audio(from_value(v)?),
            Some(ToolUseTag::VALUE) => SamplingContent::ToolUse(from_value(v)?),
            Some(ToolResultTag::VALUE) => SamplingContent::ToolResult(from_value(v)?),
            _ => SamplingContent::Unknown(v),
        })
    }
}

/// One sampling content block, or several (the schema allows both).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SamplingContentList {
    /// A single block.
    One(SamplingContent),
    /// An array of blocks.
    Many(Vec<SamplingContent>),
}

impl SamplingContentList {
    /// The blocks as a slice, whichever form they came in.
    pub fn as_slice(&self) -> &[SamplingContent] {
        match self {
            SamplingContentList::One(one) => std::slice::from_ref(one),
            SamplingContentList::Many(many) => many,
        }
    }
}

impl<'de> Deserialize<'de> for SamplingContentList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.is_array() {
            from_value(v).map(SamplingContentList::Many)
        } else {
            from_value(v).map(SamplingContentList::One)
        }
    }
}

/// Text contents of a resource (`TextResourceContents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// The text.
    pub text: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Binary contents of a resource (`BlobResourceContents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Base64 data.
    pub blob: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The contents of a resource, text or binary, told apart by which of
/// `blob` and `text` is present (the schema has no discriminator).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text(TextResourceContents),
    /// Binary contents.
    Blob(BlobResourceContents),
}

impl ResourceContents {
    /// Text contents of the resource at `uri`.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            text: text.into(),
            mime_type: Some(mime_type.into()),
            meta: None,
            extra: Map::new(),
        })
    }

    /// Binary contents of the resource at `uri`; `blob` is base64.
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, blob: impl Into<String>) -> Self {
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            blob: blob.into(),
            mime_type: Some(mime_type.into()),
            meta: None,
            extra: Map::new(),
        })
    }

    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text(t) => &t.uri,
            ResourceContents::Blob(b) => &b.uri,
        }
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if v.get("blob").is_some() {
            from_value(v).map(ResourceContents::Blob)
        } else {
            from_value(v).map(ResourceContents::Text)
        }
    }
}
