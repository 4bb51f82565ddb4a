//! Input requests (in a response's `input_requests`) and the client's
//! answers (in the retry's `input_responses`): elicitation, and the
//! proto's deprecated sampling and roots.

// The proto marks its sampling and roots fields deprecated; MCP still has
// both as input requests, so they are carried while the proto has them.
#![allow(deprecated)]

use mcp_bridge_protocol::method::{ElicitationCreate, Method, RootsList, SamplingCreateMessage};
use serde_json::{Value, json};

use super::content::{audio_from_proto, audio_to_proto, image_from_proto, image_to_proto, text_to_proto};
use super::{Members, Object, Unmappable, proto, role_from_proto, role_to_proto, schema};
use crate::grpc::json::{from_struct, to_struct};
use proto::sampling_create_message_request::{IncludeContext, ModelPreferences, model_preferences::ModelHint};

/// `{"method": ..., "params": ...}` as the proto's `InputRequest`.
pub(crate) fn request_to_proto(value: Value) -> Result<proto::InputRequest, Unmappable> {
    let mut r = Members::of(value);
    let method = r.string("method");
    let mut p = Members::of(r.take("params").unwrap_or(Value::Null));
    let mut request = proto::InputRequest::default();
    match method.as_str() {
        ElicitationCreate::NAME => {
            let message = p.string("message");
            let mode = p.opt_string("mode");
            request.elicit_request = Some(if mode.as_deref() == Some("url") {
                proto::ElicitRequest {
                    message,
                    url_mode: Some(proto::elicit_request::UrlMode {
                        id: p.string("elicitationId"),
                        url: p.string("url"),
                    }),
                    ..Default::default()
                }
            } else {
                let (requested_schema, required_fields) =
                    schema::to_proto(p.object("requestedSchema").unwrap_or_default())?;
                proto::ElicitRequest { message, requested_schema, required_fields, url_mode: None }
            });
        }
        SamplingCreateMessage::NAME => request.sampling_create_message = Some(sampling_to_proto(p)?),
        RootsList::NAME => request.list_roots_request = Some(proto::ListRootsRequest {}),
        other => return Err(Unmappable(format!("an input request {other:?} has no proto message"))),
    }
    Ok(request)
}

pub(crate) fn request_from_proto(r: proto::InputRequest) -> Result<Value, Unmappable> {
    if let Some(e) = r.elicit_request {
        let params = match e.url_mode {
            Some(url) => json!({"mode": "url", "message": e.message, "url": url.url, "elicitationId": url.id}),
            None => json!({
                "mode": "form",
                "message": e.message,
                "requestedSchema": schema::from_proto(e.requested_schema, e.required_fields),
            }),
        };
        Ok(json!({"method": ElicitationCreate::NAME, "params": params}))
    } else if let Some(s) = r.sampling_create_message {
        Ok(json!({"method": SamplingCreateMessage::NAME, "params": sampling_from_proto(s)?}))
    } else if r.list_roots_request.is_some() {
        Ok(json!({"method": RootsList::NAME}))
    } else {
        Err(Unmappable("an input request of no kind".into()))
    }
}

/// The client's answer (an elicitation's, a sampling's, a roots list) as
/// the proto's `InputResponse`.
pub(crate) fn response_to_proto(value: Value) -> Result<proto::InputResponse, Unmappable> {
    let mut r = Members::of(value);
    let mut response = proto::InputResponse::default();
    if let Some(action) = r.opt_string("action") {
        let kind = match action.as_str() {
            "accept" => proto::elicit_result::Type::Accept,
            "decline" => proto::elicit_result::Type::Decline,
            "cancel" => proto::elicit_result::Type::Cancel,
            other => return Err(Unmappable(format!("an elicitation action {other:?} has no proto value"))),
        };
        response.elicit_result =
            Some(proto::ElicitResult { r#type: kind as i32, content: r.object("content").map(|c| to_struct(&c)) });
    } else if r.0.contains_key("roots") {
        let roots = r
            .array("roots")
            .into_iter()
            .map(|root| {
                let mut root = Members::of(root);
                proto::list_roots_result::Root { uri: root.string("uri"), name: root.string("name") }
            })
            .collect();
        response.root_list_result = Some(proto::ListRootsResult { roots });
    } else if r.0.contains_key("model") {
        let role = role_to_proto(&r.string("role"));
        let content = r.take("content").unwrap_or(Value::Null);
        response.sampling_create_message_result = Some(proto::SamplingCreateMessageResult {
            message: Some(sampling_message_to_proto(role, content)?),
            model: r.string("model"),
            stop_reason: r.string("stopReason"),
        });
    } else {
        return Err(Unmappable("an input response of no known kind".into()));
    }
    Ok(response)
}

pub(crate) fn response_from_proto(r: proto::InputResponse) -> Result<Value, Unmappable> {
    if let Some(e) = r.elicit_result {
        let action = match proto::elicit_result::Type::try_from(e.r#type) {
            Ok(proto::elicit_result::Type::Accept) => "accept",
            Ok(proto::elicit_result::Type::Decline) => "decline",
            Ok(proto::elicit_result::Type::Cancel) => "cancel",
            _ => return Err(Unmappable("an elicitation result without an action".into())),
        };
        Ok(Object::default()
            .set("action", action)
            .some("content", e.content.map(|c| Value::Object(from_struct(c))))
            .build())
    } else if let Some(roots) = r.root_list_result {
        let roots: Vec<Value> = roots
            .roots
            .into_iter()
            .map(|root| Object::default().set("uri", root.uri).text("name", root.name).build())
            .collect();
        Ok(json!({ "roots": roots }))
    } else if let Some(s) = r.sampling_create_message_result {
        let (role, content) = sampling_message_from_proto(s.message.unwrap_or_default())?;
        Ok(Object::default()
            .some("role", role)
            .set("content", content)
            .set("model", s.model)
            .text("stopReason", s.stop_reason)
            .build())
    } else {
        Err(Unmappable("an input response of no kind".into()))
    }
}

fn sampling_message_to_proto(role: i32, content: Value) -> Result<proto::SamplingMessage, Unmappable> {
    let mut c = Members::of(content);
    let mut message = proto::SamplingMessage { role, ..Default::default() };
    match c.string("type").as_str() {
        "text" => message.text = Some(text_to_proto(c)),
        "image" => message.image = Some(image_to_proto(c)?),
        "audio" => message.audio = Some(audio_to_proto(c)?),
        other => return Err(Unmappable(format!("sampling content of type {other:?} has no proto message"))),
    }
    Ok(message)
}

fn sampling_message_from_proto(m: proto::SamplingMessage) -> Result<(Option<&'static str>, Value), Unmappable> {
    let content = if let Some(t) = m.text {
        Object::default().set("type", "text").set("text", t.text).build()
    } else if let Some(i) = m.image {
        image_from_proto(i)
    } else if let Some(a) = m.audio {
        audio_from_proto(a)
    } else {
        return Err(Unmappable("a sampling message with no content".into()));
    };
    Ok((role_from_proto(m.role), content))
}

fn sampling_to_proto(mut p: Members) -> Result<proto::SamplingCreateMessageRequest, Unmappable> {
    let messages = p
        .array("messages")
        .into_iter()
        .map(|m| {
            let mut m = Members::of(m);
            let role = role_to_proto(&m.string("role"));
            sampling_message_to_proto(role, m.take("content").unwrap_or(Value::Null))
        })
        .collect::<Result<_, _>>()?;
    #[allow(clippy::cast_possible_truncation)] // priorities are between 0 and 1
    let float = |v: Option<f64>| v.map(|v| v as f32);
    let model_preferences = p.object("modelPreferences").map(|prefs| {
        let mut prefs = Members::of(Value::Object(prefs));
        let hints =
            prefs.array("hints").into_iter().map(|h| ModelHint { name: Members::of(h).string("name") }).collect();
        ModelPreferences {
            hints,
            intelligence_priority: float(prefs.f64("intelligencePriority")),
            speed_priority: float(prefs.f64("speedPriority")),
            cost_priority: float(prefs.f64("costPriority")),
        }
    });
    let include_context = match p.opt_string("includeContext").as_deref() {
        Some("thisServer") => IncludeContext::ThisServer,
        Some("allServers") => IncludeContext::AllServers,
        _ => IncludeContext::None,
    };
    #[allow(clippy::cast_possible_truncation)] // the proto's field is an int32
    let max_tokens = p.take("maxTokens").and_then(|v| v.as_i64()).unwrap_or(0).clamp(0, i64::from(i32::MAX)) as i32;
    Ok(proto::SamplingCreateMessageRequest {
        messages,
        model_preferences,
        system_prompt: p.string("systemPrompt"),
        include_context: include_context as i32,
        temperature: float(p.f64("temperature")),
        max_tokens,
        stop_sequence: p.strings("stopSequences"),
    })
}

fn sampling_from_proto(s: proto::SamplingCreateMessageRequest) -> Result<Value, Unmappable> {
    let messages = s
        .messages
        .into_iter()
        .map(|m| {
            let (role, content) = sampling_message_from_proto(m)?;
            Ok(Object::default().some("role", role).set("content", content).build())
        })
        .collect::<Result<Vec<_>, Unmappable>>()?;
    let preferences = s.model_preferences.map(|p| {
        let hints: Vec<Value> = p.hints.into_iter().map(|h| json!({"name": h.name})).collect();
        Object::default()
            .list("hints", hints)
            .some("intelligencePriority", p.intelligence_priority.map(f64::from))
            .some("speedPriority", p.speed_priority.map(f64::from))
            .some("costPriority", p.cost_priority.map(f64::from))
            .build()
    });
    let include_context = match IncludeContext::try_from(s.include_context) {
        Ok(IncludeContext::ThisServer) => Some("thisServer"),
        Ok(IncludeContext::AllServers) => Some("allServers"),
        _ => None,
    };
    Ok(Object::default()
        .set("messages", messages)
        .some("modelPreferences", preferences)
        .text("systemPrompt", s.system_prompt)
        .some("includeContext", include_context)
        .some("temperature", s.temperature.map(f64::from))
        .set("maxTokens", s.max_tokens)
        .list("stopSequences", s.stop_sequence.into_iter().map(Value::from).collect())
        .build())
}
