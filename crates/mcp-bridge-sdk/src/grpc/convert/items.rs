//! The items of the lists: tools, resources, resource templates, prompts.

use serde_json::Value;

use super::content::{annotations_from_proto, annotations_to_proto, icons_from_proto, icons_to_proto};
use super::{Members, Object, proto};
use crate::grpc::json::{from_struct, to_struct};

pub(crate) fn tool_to_proto(value: Value) -> proto::Tool {
    let mut t = Members::of(value);
    let annotations = t.object("annotations").map(|a| {
        let mut a = Members::of(Value::Object(a));
        // proto3 booleans have no "absent": the specification's defaults.
        proto::ToolAnnotations {
            title: a.string("title"),
            read_only_hint: a.bool("readOnlyHint").unwrap_or(false),
            destructive_hint: a.bool("destructiveHint").unwrap_or(true),
            idempotent_hint: a.bool("idempotentHint").unwrap_or(false),
            open_world_hint: a.bool("openWorldHint").unwrap_or(true),
        }
    });
    proto::Tool {
        name: t.string("name"),
        title: t.string("title"),
        description: t.string("description"),
        input_schema: t.object("inputSchema").map(|s| to_struct(&s)),
        output_schema: t.object("outputSchema").map(|s| to_struct(&s)),
        annotations,
        icons: icons_to_proto(t.array("icons")),
        metadata: t.into_metadata(),
    }
}

pub(crate) fn tool_from_proto(t: proto::Tool) -> Value {
    let annotations = t.annotations.map(|a| {
        Object::default()
            .text("title", a.title)
            .set("readOnlyHint", a.read_only_hint)
            .set("destructiveHint", a.destructive_hint)
            .set("idempotentHint", a.idempotent_hint)
            .set("openWorldHint", a.open_world_hint)
            .build()
    });
    let input_schema =
        t.input_schema.map_or_else(|| serde_json::json!({"type": "object"}), |s| Value::Object(from_struct(s)));
    Object::default()
        .set("name", t.name)
        .text("title", t.title)
        .text("description", t.description)
        .set("inputSchema", input_schema)
        .some("outputSchema", t.output_schema.map(|s| Value::Object(from_struct(s))))
        .some("annotations", annotations)
        .list("icons", icons_from_proto(t.icons))
        .metadata(t.metadata)
        .build()
}

pub(crate) fn resource_to_proto(mut r: Members) -> proto::Resource {
    proto::Resource {
        uri: r.string("uri"),
        name: r.string("name"),
        title: r.string("title"),
        description: r.string("description"),
        mime_type: r.string("mimeType"),
        annotations: annotations_to_proto(r.object("annotations")),
        size: r.take("size").and_then(|s| s.as_u64()).unwrap_or(0),
        icons: icons_to_proto(r.array("icons")),
        metadata: r.into_metadata(),
    }
}

pub(crate) fn resource_from_proto(r: proto::Resource) -> Value {
    Object::default()
        .set("uri", r.uri)
        .set("name", r.name)
        .text("title", r.title)
        .text("description", r.description)
        .text("mimeType", r.mime_type)
        .some("annotations", annotations_from_proto(r.annotations))
        .some("size", (r.size > 0).then_some(r.size))
        .list("icons", icons_from_proto(r.icons))
        .metadata(r.metadata)
        .build()
}

pub(crate) fn template_to_proto(value: Value) -> proto::ResourceTemplate {
    let mut r = Members::of(value);
    proto::ResourceTemplate {
        uri_template: r.string("uriTemplate"),
        name: r.string("name"),
        title: r.string("title"),
        description: r.string("description"),
        mime_type: r.string("mimeType"),
        annotations: annotations_to_proto(r.object("annotations")),
        icons: icons_to_proto(r.array("icons")),
        metadata: r.into_metadata(),
    }
}

pub(crate) fn template_from_proto(r: proto::ResourceTemplate) -> Value {
    Object::default()
        .set("uriTemplate", r.uri_template)
        .set("name", r.name)
        .text("title", r.title)
        .text("description", r.description)
        .text("mimeType", r.mime_type)
        .some("annotations", annotations_from_proto(r.annotations))
        .list("icons", icons_from_proto(r.icons))
        .metadata(r.metadata)
        .build()
}

pub(crate) fn prompt_to_proto(value: Value) -> proto::Prompt {
    let mut p = Members::of(value);
    let arguments = p
        .array("arguments")
        .into_iter()
        .map(|a| {
            let mut a = Members::of(a);
            proto::prompt::Argument {
                name: a.string("name"),
                title: a.string("title"),
                description: a.string("description"),
                required: a.bool("required").unwrap_or(false),
            }
        })
        .collect();
    proto::Prompt {
        name: p.string("name"),
        title: p.string("title"),
        description: p.string("description"),
        arguments,
        icons: icons_to_proto(p.array("icons")),
        metadata: p.into_metadata(),
    }
}

pub(crate) fn prompt_from_proto(p: proto::Prompt) -> Value {
    let arguments = p
        .arguments
        .into_iter()
        .map(|a| {
            Object::default()
                .set("name", a.name)
                .text("title", a.title)
                .text("description", a.description)
                .some("required", a.required.then_some(true))
                .build()
        })
        .collect();
    Object::default()
        .set("name", p.name)
        .text("title", p.title)
        .text("description", p.description)
        .list("arguments", arguments)
        .list("icons", icons_from_proto(p.icons))
        .metadata(p.metadata)
        .build()
}
