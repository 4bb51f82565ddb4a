//! An elicitation form's schema (a flat JSON Schema object) as the proto's
//! `PrimitiveSchemaDefinition`s and back.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Members, Object, Unmappable};
use crate::grpc::proto::PrimitiveSchemaDefinition as Definition;
use crate::grpc::proto::primitive_schema_definition::{
    BooleanSchema, EnumSchema, NumberSchema, StringSchema, enum_schema, number_schema, string_schema,
};

/// A form's `requestedSchema` as the proto's definitions and required fields.
pub(crate) fn to_proto(schema: Map<String, Value>) -> Result<(BTreeMap<String, Definition>, Vec<String>), Unmappable> {
    let mut s = Members::of(Value::Object(schema));
    let required = s.strings("required");
    let properties = s.object("properties").unwrap_or_default();
    let definitions = properties
        .into_iter()
        .map(|(name, property)| definition_to_proto(&name, property).map(|d| (name, d)))
        .collect::<Result<_, _>>()?;
    Ok((definitions, required))
}

/// The proto's definitions and required fields as a `requestedSchema`.
pub(crate) fn from_proto(definitions: BTreeMap<String, Definition>, required: Vec<String>) -> Value {
    let properties: Map<String, Value> =
        definitions.into_iter().map(|(name, d)| (name, definition_from_proto(d))).collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn definition_to_proto(name: &str, property: Value) -> Result<Definition, Unmappable> {
    let mut p = Members::of(property);
    let mut kind = p.string("type");
    if kind == "string" && (p.0.contains_key("enum") || p.0.contains_key("oneOf")) {
        kind = "enum".into();
    }
    let (title, description) = (p.string("title"), p.string("description"));
    let titled_options = |options: Vec<Value>| -> (Vec<String>, Vec<String>) {
        options
            .into_iter()
            .map(|o| {
                let mut o = Members::of(o);
                let value = o.take("const").and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
                (value.clone(), o.opt_string("title").unwrap_or(value))
            })
            .unzip()
    };
    let mut definition = Definition::default();
    match kind.as_str() {
        "string" => {
            let format = match p.opt_string("format").as_deref() {
                None => string_schema::Format::Unknown,
                Some("email") => string_schema::Format::Email,
                Some("uri") => string_schema::Format::Uri,
                Some("date") => string_schema::Format::Date,
                Some("date-time") => string_schema::Format::DateTime,
                Some(other) => return Err(Unmappable(format!("{name}: the format {other:?} has no proto value"))),
            };
            definition.string_schema = Some(StringSchema {
                title,
                description,
                min_length: p.take("minLength").and_then(|v| v.as_u64()),
                max_length: p.take("maxLength").and_then(|v| v.as_u64()),
                format: format as i32,
                default_value: p.opt_string("default"),
            });
        }
        "integer" => {
            let (minimum, maximum) =
                (p.take("minimum").and_then(|v| v.as_i64()), p.take("maximum").and_then(|v| v.as_i64()));
            definition.number_schema = Some(NumberSchema {
                title,
                description,
                integer_range: Some(number_schema::IntegerRange { minimum, maximum }),
                default_integer: p.take("default").and_then(|v| v.as_i64()),
                ..Default::default()
            });
        }
        "number" => {
            definition.number_schema = Some(NumberSchema {
                title,
                description,
                double_range: Some(number_schema::DoubleRange { minimum: p.f64("minimum"), maximum: p.f64("maximum") }),
                default_number: p.f64("default"),
                ..Default::default()
            });
        }
        "boolean" => {
            definition.boolean_schema =
                Some(BooleanSchema { title, description, default: p.bool("default").unwrap_or(false) });
        }
        "enum" => {
            let (enum_list, enum_names) = match p.take("oneOf") {
                Some(Value::Array(options)) => titled_options(options),
                _ => (p.strings("enum"), p.strings("enumNames")),
            };
            definition.enum_schema = Some(EnumSchema {
                title,
                description,
                enum_list,
                enum_names,
                single_select: Some(enum_schema::SingleSelect { default_item: p.opt_string("default") }),
                multi_select: None,
            });
        }
        "array" => {
            let mut items = Members::of(p.take("items").unwrap_or(Value::Null));
            let (enum_list, enum_names) = match items.take("anyOf") {
                Some(Value::Array(options)) => titled_options(options),
                _ => (items.strings("enum"), Vec::new()),
            };
            #[allow(clippy::cast_possible_truncation)] // item counts of a form
            let count = |v: Option<Value>| v.and_then(|v| v.as_u64()).map(|n| n.min(u64::from(u32::MAX)) as u32);
            definition.enum_schema = Some(EnumSchema {
                title,
                description,
                enum_list,
                enum_names,
                single_select: None,
                multi_select: Some(enum_schema::MultiSelect {
                    default_items: p.strings("default"),
                    min_items: count(p.take("minItems")),
                    max_items: count(p.take("maxItems")),
                }),
            });
        }
        other => return Err(Unmappable(format!("{name}: a form field of type {other:?} has no proto definition"))),
    }
    Ok(definition)
}

fn definition_from_proto(d: Definition) -> Value {
    let mut out = Object::default();
    if let Some(s) = d.string_schema {
        let format = match string_schema::Format::try_from(s.format) {
            Ok(string_schema::Format::Email) => Some("email"),
            Ok(string_schema::Format::Uri) => Some("uri"),
            Ok(string_schema::Format::Date) => Some("date"),
            Ok(string_schema::Format::DateTime) => Some("date-time"),
            _ => None,
        };
        out.set("type", "string")
            .text("title", s.title)
            .text("description", s.description)
            .some("minLength", s.min_length)
            .some("maxLength", s.max_length)
            .some("format", format)
            .some("default", s.default_value);
    } else if let Some(n) = d.number_schema {
        out.text("title", n.title).text("description", n.description);
        if let Some(range) = n.integer_range.filter(|_| n.double_range.is_none()) {
            out.set("type", "integer").some("minimum", range.minimum).some("maximum", range.maximum);
            out.some("default", n.default_integer);
        } else {
            let range = n.double_range.unwrap_or_default();
            let whole = n.default_integer.is_some() && n.default_number.is_none();
            out.set("type", if whole { "integer" } else { "number" });
            out.some("minimum", range.minimum).some("maximum", range.maximum);
            out.some("default", n.default_number.map(Value::from).or(n.default_integer.map(Value::from)));
        }
    } else if let Some(b) = d.boolean_schema {
        out.set("type", "boolean").text("title", b.title).text("description", b.description).set("default", b.default);
    } else if let Some(e) = d.enum_schema {
        out.text("title", e.title).text("description", e.description);
        let named = e.enum_names.len() == e.enum_list.len() && !e.enum_names.is_empty();
        if let Some(multi) = e.multi_select {
            let items = if named {
                let options = e.enum_list.iter().zip(&e.enum_names).map(|(v, t)| json!({"const": v, "title": t}));
                json!({"anyOf": options.collect::<Vec<_>>()})
            } else {
                json!({"type": "string", "enum": e.enum_list})
            };
            out.set("type", "array")
                .set("items", items)
                .some("minItems", multi.min_items)
                .some("maxItems", multi.max_items);
            out.list("default", multi.default_items.into_iter().map(Value::from).collect());
        } else {
            out.set("type", "string");
            if named {
                let options = e.enum_list.iter().zip(&e.enum_names).map(|(v, t)| json!({"const": v, "title": t}));
                out.set("oneOf", options.collect::<Vec<_>>());
            } else {
                out.set("enum", e.enum_list);
            }
            out.some("default", e.single_select.and_then(|s| s.default_item));
        }
    }
    out.build()
}
