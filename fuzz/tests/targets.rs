//! The fuzz targets: every parser and check that reads bytes from a
//! client, a server, a child process or a browser. Each must never panic,
//! and each keeps a property beyond that (the same answer however the input
//! is cut into chunks, a round trip, a limit). `FUZZ_SECONDS` sets the time
//! of each target (2 s by default).

use mcp_bridge_protocol::{Frame, LineFramer};
use mcp_fuzz::fuzz;
use serde_json::Value;

fn report(target: &str, r: mcp_fuzz::Report) {
    eprintln!("fuzz {target}: {} executions ({} seeds)", r.executions, r.seeds);
}

/// Chunk sizes derived from the input, so each input is also cut its own way.
fn chunkings(input: &[u8]) -> Vec<usize> {
    let salt = input.iter().fold(7usize, |h, b| h.wrapping_mul(31).wrapping_add(*b as usize));
    vec![input.len().max(1), 1, 1 + salt % 17, 1 + salt % 97]
}

fn frames_of(input: &[u8], chunk: usize, limit: usize) -> Vec<Frame> {
    let mut framer = LineFramer::new(limit);
    let mut frames = Vec::new();
    for part in input.chunks(chunk) {
        framer.push(part);
        while let Some(frame) = framer.next_frame() {
            frames.push(frame);
        }
    }
    framer.finish();
    while let Some(frame) = framer.next_frame() {
        frames.push(frame);
    }
    frames
}

#[test]
fn line_framer_with_id_recovery() {
    let r = fuzz("line_framer", |input| {
        let limit = 64;
        let whole = frames_of(input, input.len().max(1), limit);
        for chunk in chunkings(input) {
            if frames_of(input, chunk, limit) != whole {
                return Err(format!("chunks of {chunk} bytes frame differently"));
            }
        }
        for frame in &whole {
            match frame {
                Frame::Line(line) if line.len() > limit => return Err("a line over the limit".into()),
                Frame::TooLong(overlong) => {
                    let _ = overlong.recover_id();
                }
                Frame::Line(line) => {
                    let _ = mcp_bridge_protocol::recover_id(line);
                }
            }
        }
        Ok(())
    });
    report("line_framer", r);
}

fn json_depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn depth_check() {
    let r = fuzz("depth_check", |input| {
        let limit = 6;
        let checked = mcp_bridge_protocol::check_depth(input, limit);
        // serde_json's own recursion limit (128) keeps the reference parse
        // off the stack's edge; deeper documents are only checked for panics.
        let mut deserializer = serde_json::Deserializer::from_slice(input);
        let parsed: Result<Value, _> = serde::Deserialize::deserialize(&mut deserializer);
        // Only a whole document: trailing bytes may hold unbalanced quotes.
        if let (Ok(value), Ok(())) = (parsed, deserializer.end()) {
            let depth = json_depth(&value);
            if checked.is_ok() != (depth <= limit) {
                return Err(format!("depth {depth} of valid JSON, check says {checked:?}"));
            }
        }
        Ok(())
    });
    report("depth_check", r);
}

#[test]
fn json_rpc_classification() {
    let r = fuzz("jsonrpc", |input| {
        // A result read without a tree is the decoder's result response, or
        // JSON a tree cannot hold, which its reader refuses too.
        if let Ok(raw) = mcp_bridge_protocol::RawResult::parse(input.to_vec(), 64) {
            match mcp_bridge_protocol::decode_message(input, 64) {
                Ok(mcp_bridge_protocol::Message::Result(r))
                    if &r.id == raw.id() && raw.to_value().ok().as_ref() == Some(&r.result) =>
                {
                    // The members found by structure are the tree's.
                    if let Some(tree) = r.result.as_object() {
                        let members = raw.members().ok_or("an object without members")?;
                        let same = members.len() == tree.len()
                            && members.iter().all(|(key, text)| {
                                serde_json::from_str::<serde_json::Value>(text).ok().as_ref() == tree.get(key)
                            });
                        if !same {
                            return Err(format!("members {members:?} are not the tree's {tree:?}"));
                        }
                    }
                }
                Err(_) if raw.to_value().is_err() => {}
                other => return Err(format!("read as a raw result, decoded as {other:?}")),
            }
        }
        match mcp_bridge_protocol::decode_message(input, 64) {
            Ok(message) => {
                let line = mcp_bridge_protocol::encode_line(&message);
                let again = mcp_bridge_protocol::decode_message(&line, 64)
                    .map_err(|e| format!("an accepted message does not decode after encoding: {e}"))?;
                if again != message {
                    return Err("the message changed in a round trip".into());
                }
            }
            Err(e) => {
                let _ = (e.code(), e.cause(), e.reply_id(input), e.to_error_object());
            }
        }
        Ok(())
    });
    report("jsonrpc", r);
}

#[test]
fn legacy_classifier() {
    let r = fuzz("legacy", |input| {
        let text = String::from_utf8_lossy(input);
        let _ = mcp_bridge_sdk::server::legacy::classify::classify_request(&text);
        let _ = mcp_bridge_sdk::server::legacy::classify::classify_notification(&text);
        if let Ok(value) = serde_json::from_slice::<Value>(input) {
            let _ = mcp_bridge_sdk::server::legacy::classify::parse_initialize(Some(&value));
            let cancelled = mcp_bridge_protocol::JsonRpcNotification::new("notifications/cancelled", Some(value));
            let _ = cancelled.cancelled_request();
        }
        Ok(())
    });
    report("legacy", r);
}

#[test]
fn result_rules() {
    const METHODS: [&str; 8] = [
        "tools/call",
        "tools/list",
        "prompts/get",
        "prompts/list",
        "resources/read",
        "resources/list",
        "completion/complete",
        "resources/templates/list",
    ];
    let r = fuzz("result_rules", |input| {
        let Ok(value) = serde_json::from_slice::<Value>(input) else { return Ok(()) };
        for method in METHODS {
            for origin in [
                mcp_bridge_sdk::server::legacy::translate::Origin::Local,
                mcp_bridge_sdk::server::legacy::translate::Origin::Remote,
            ] {
                let shaped = mcp_bridge_sdk::server::legacy::translate::shape_result(method, value.clone(), origin);
                if value.is_object() && !shaped.is_object() {
                    return Err(format!("{method}: an object result became {shaped}"));
                }
            }
        }
        Ok(())
    });
    report("result_rules", r);
}

#[test]
fn input_request_checks() {
    let r = fuzz("input_requests", |input| {
        let Ok(value) = serde_json::from_slice::<Value>(input) else { return Ok(()) };
        let none = mcp_bridge_protocol::types::ClientCapabilities::default();
        let all: mcp_bridge_protocol::types::ClientCapabilities = serde_json::from_value(serde_json::json!({
            "elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}
        }))
        .map_err(|e| e.to_string())?;
        if let Ok(requests) = serde_json::from_value::<mcp_bridge_protocol::types::InputRequests>(value.clone()) {
            let _ = mcp_bridge_protocol::rounds::check_round(&requests, &none);
            let _ = mcp_bridge_protocol::rounds::check_round(&requests, &all);
            for (key, request) in &requests {
                let _ = mcp_bridge_sdk::fuzzing::check_answer(key, request, value.clone());
                let _ = mcp_bridge_sdk::fuzzing::client_request(request);
            }
        }
        if let Ok(request) = serde_json::from_value::<mcp_bridge_protocol::types::InputRequest>(value.clone()) {
            let _ = mcp_bridge_sdk::fuzzing::check_answer("k", &request, value.clone());
        }
        // The same bytes as a server's result in a round loop.
        let mut rounds = mcp_bridge_protocol::rounds::Rounds::new(serde_json::Map::new(), 2);
        for _ in 0..3 {
            match rounds.on_result(value.clone(), &all) {
                Ok(mcp_bridge_protocol::rounds::Step::Ask(_)) => rounds.answered(Default::default()),
                _ => break,
            }
        }
        Ok(())
    });
    report("input_requests", r);
}

#[test]
fn sse_parser() {
    let r = fuzz("sse", |input| {
        let limit = 128;
        let parse = |chunk: usize| -> Result<Vec<(String, String)>, usize> {
            let mut parser = mcp_bridge_sdk::fuzzing::SseParser::new(limit);
            let mut events = Vec::new();
            for part in input.chunks(chunk) {
                match parser.push(part) {
                    Ok(found) => events.extend(found.into_iter().map(|e| (e.event, e.data))),
                    Err(_) => return Err(events.len()),
                }
            }
            Ok(events)
        };
        let whole = parse(input.len().max(1));
        for chunk in chunkings(input) {
            let cut = parse(chunk);
            // A stream over the limit may be noticed at another event, but
            // the events before it are the same.
            let same = match (&whole, &cut) {
                (Ok(a), Ok(b)) => a == b,
                (Err(_), Err(_)) => true,
                _ => false,
            };
            if !same {
                return Err(format!("chunks of {chunk} bytes parse differently: {whole:?} vs {cut:?}"));
            }
        }
        if let Ok(events) = &whole
            && events.iter().any(|(_, data)| data.len() > limit)
        {
            return Err("an event over the limit".into());
        }
        Ok(())
    });
    report("sse", r);
}

#[test]
fn request_and_response_heads() {
    use mcp_bridge_sdk::fuzzing::{parse_request, parse_status};
    let r = fuzz("request_head", |input| {
        if let Some(Ok(head)) = parse_request(input)
            && head.path.contains('?')
        {
            return Err(format!("a path with its query: {:?}", head.path));
        }
        if let Some(Ok(status)) = parse_status(input)
            && !(100..1000).contains(&status)
        {
            return Err(format!("a status of {status}"));
        }
        Ok(())
    });
    report("request_head", r);
}

#[test]
fn authorization_url_check() {
    let r = fuzz("authorization_url", |input| {
        let text = String::from_utf8_lossy(input);
        let _ = mcp_bridge_sdk::auth::Challenge::parse(&text);
        if mcp_bridge::signin::check_authorization_url(&text).is_ok() {
            let https = text.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            if !https || text.bytes().any(|b| !(0x21..=0x7e).contains(&b)) || text.contains('#') {
                return Err(format!("accepted {text:?}"));
            }
        }
        Ok(())
    });
    report("authorization_url", r);
}

#[test]
fn icon_bytes() {
    use mcp_bridge_sdk::icons::{ExtraFormats, Format, IconPolicy, inspect};
    let policy = IconPolicy::default()
        .with_formats(ExtraFormats::default().with_gif(true).with_webp(true).with_svg(true))
        .with_decoder(std::sync::Arc::new(Ok))
        .with_max_dimension(4096);
    let r = fuzz("icon_bytes", |input| {
        if let Ok(image) = inspect(input.to_vec(), None, None, &policy) {
            if Some(image.format) != Format::detect(input) {
                return Err(format!("accepted as {} bytes that are not", image.format));
            }
            if image.dimensions.is_some_and(|(w, h)| w > 4096 || h > 4096) {
                return Err(format!("accepted dimensions {:?}", image.dimensions));
            }
            if (image.format == Format::Svg) != image.dimensions.is_none() {
                return Err("dimensions for SVG, or none for a raster image".into());
            }
        }
        Ok(())
    });
    report("icon_bytes", r);
}

#[test]
fn icon_source() {
    use mcp_bridge_sdk::icons::{IconPolicy, Source, check_source};
    let policy = IconPolicy::default();
    let r = fuzz("icon_source", |input| {
        let src = String::from_utf8_lossy(input);
        if let Ok(Source::Https(url)) = check_source(&src, Some("https://mcp.example.com/mcp"), &policy)
            && (url.scheme() != "https" || !url.username().is_empty() || url.host_str() != Some("mcp.example.com"))
        {
            return Err(format!("accepted {src:?}"));
        }
        Ok(())
    });
    report("icon_source", r);
}

#[test]
fn skill_frontmatter() {
    let r = fuzz("skill_frontmatter", |input| {
        let text = String::from_utf8_lossy(input);
        if let Ok(fields) = mcp_bridge_sdk::skills::frontmatter(&text)
            && !(fields.get("name").is_some_and(Value::is_string)
                && fields.get("description").is_some_and(Value::is_string))
        {
            return Err(format!("accepted frontmatter without a name and description: {fields:?}"));
        }
        Ok(())
    });
    report("skill_frontmatter", r);
}
