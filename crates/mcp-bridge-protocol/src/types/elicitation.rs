//! Elicitation: a server asks the user for input, as a form with a flat
//! schema or as a URL to open. In 2026-07-28 it is an input request inside an
//! `InputRequiredResult`; in 2025-11-25 a real `elicitation/create` request.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Number, Value};

use crate::meta::Meta;
use crate::tag::{const_tag, from_value};

const_tag!(
    /// `"mode": "form"`.
    FormModeTag = "form"
);
const_tag!(
    /// `"mode": "url"`.
    UrlModeTag = "url"
);
const_tag!(
    /// `"type": "object"`.
    ObjectTypeTag = "object"
);
const_tag!(
    /// `"type": "string"`.
    StringTypeTag = "string"
);
const_tag!(
    /// `"type": "boolean"`.
    BooleanTypeTag = "boolean"
);
const_tag!(
    /// `"type": "array"`.
    ArrayTypeTag = "array"
);

/// Params of `elicitation/create`, told apart by `mode` (absent = form).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// A form.
    Form(ElicitRequestFormParams),
    /// A URL to open.
    Url(ElicitRequestUrlParams),
}

impl<'de> Deserialize<'de> for ElicitRequestParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match v.get("mode") {
            None => from_value(v).map(ElicitRequestParams::Form),
            Some(m) if m == FormModeTag::VALUE => from_value(v).map(ElicitRequestParams::Form),
            Some(m) if m == UrlModeTag::VALUE => from_value(v).map(ElicitRequestParams::Url),
            Some(_) => Err(serde::de::Error::custom("elicitation mode must be \"form\" or \"url\"")),
        }
    }
}

/// A form elicitation (`ElicitRequestFormParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestFormParams {
    /// `form`, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormModeTag>,
    /// What to ask the user.
    pub message: String,
    /// The fields of the form.
    pub requested_schema: ElicitationSchema,
    /// Members not modelled here (2025-11-25 `_meta`, `task`).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A URL elicitation (`ElicitRequestURLParams`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestUrlParams {
    /// Always `url`.
    pub mode: UrlModeTag,
    /// Why the user should open it.
    pub message: String,
    /// The URL.
    pub url: String,
    /// 2025-11-25: the id of this elicitation (required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The restricted JSON Schema of a form: one object of flat properties.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationSchema {
    /// The JSON Schema dialect, when given.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Always `object`.
    #[serde(rename = "type")]
    pub kind: ObjectTypeTag,
    /// The fields by name.
    pub properties: Map<String, Value>,
    /// The names of the fields the user must fill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A text field (`StringSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StringSchema {
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: StringTypeTag,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Minimum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Maximum length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// `date`, `date-time`, `email` or `uri`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A number field (`NumberSchema`); `type` is `number` or `integer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberSchema {
    /// `number` or `integer`.
    #[serde(rename = "type")]
    pub kind: NumberKind,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Smallest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Largest allowed value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Number>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `type` of a [`NumberSchema`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumberKind {
    /// Any number.
    Number,
    /// Whole numbers only.
    Integer,
}

/// A checkbox (`BooleanSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BooleanSchema {
    /// Always `boolean`.
    #[serde(rename = "type")]
    pub kind: BooleanTypeTag,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One choice of a titled enum: a value and its label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnumOption {
    /// The value sent back.
    #[serde(rename = "const")]
    pub value: String,
    /// The label shown.
    pub title: String,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A single choice from plain values (`UntitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledSingleSelectEnumSchema {
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: StringTypeTag,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A single choice from labelled values (`TitledSingleSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledSingleSelectEnumSchema {
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: StringTypeTag,
    /// The choices.
    #[serde(rename = "oneOf")]
    pub options: Vec<EnumOption>,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Default choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The items of a multi-select of plain values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntitledEnumItems {
    /// Always `string`.
    #[serde(rename = "type")]
    pub kind: StringTypeTag,
    /// The choices.
    #[serde(rename = "enum")]
    pub values: Vec<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The items of a multi-select of labelled values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitledEnumItems {
    /// The choices.
    #[serde(rename = "anyOf")]
    pub options: Vec<EnumOption>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Several choices from plain values (`UntitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UntitledMultiSelectEnumSchema {
    /// Always `array`.
    #[serde(rename = "type")]
    pub kind: ArrayTypeTag,
    /// The choices.
    pub items: UntitledEnumItems,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Several choices from labelled values (`TitledMultiSelectEnumSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TitledMultiSelectEnumSchema {
    /// Always `array`.
    #[serde(rename = "type")]
    pub kind: ArrayTypeTag,
    /// The choices.
    pub items: TitledEnumItems,
    /// Label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fewest choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// Default choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Vec<String>>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How the user answered (`ElicitResult.action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form (or finished at the URL).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

/// The answer to an elicitation (`ElicitResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// How the user answered.
    pub action: ElicitAction,
    /// The form's values, on accept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Metadata (2025-11-25).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ElicitResult {
    /// The user submitted the form with these values (an empty map for a
    /// URL elicitation they finished).
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult { action: ElicitAction::Accept, content: Some(content), meta: None, extra: Map::new() }
    }

    /// The user said no.
    pub fn decline() -> Self {
        ElicitResult { action: ElicitAction::Decline, content: None, meta: None, extra: Map::new() }
    }

    /// The user dismissed the question.
    pub fn cancel() -> Self {
        ElicitResult { action: ElicitAction::Cancel, content: None, meta: None, extra: Map::new() }
    }
}
