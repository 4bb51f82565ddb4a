//! Reads newline-delimited JSON-RPC (a file, or stdin) the way a stdio peer
//! would, and prints one line per frame: what it is, or why it is rejected
//! and the error response a server would send.
//!
//! ```sh
//! cargo run -p mcp-bridge-protocol --example inspect -- crates/mcp-bridge-protocol/examples/session.jsonl
//! ```

use std::io::Read;

use mcp_bridge_protocol::{
    CLIENT_MAX_DEPTH, DEFAULT_MAX_LINE_BYTES, Frame, JsonRpcErrorResponse, LineFramer, Message, decode_message,
    encode_line,
};

fn main() -> std::io::Result<()> {
    let mut input: Box<dyn Read> = match std::env::args_os().nth(1) {
        Some(path) => Box::new(std::fs::File::open(path)?),
        None => Box::new(std::io::stdin().lock()),
    };
    let max_line = std::env::var("MAX_LINE_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_MAX_LINE_BYTES);
    let mut framer = LineFramer::new(max_line);
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0usize;
    loop {
        let read = input.read(&mut buf)?;
        if read == 0 {
            framer.finish();
        } else {
            framer.push(&buf[..read]);
        }
        while let Some(frame) = framer.next_frame() {
            n += 1;
            println!("{n:>3} {}", describe(frame));
        }
        if read == 0 {
            return Ok(());
        }
    }
}

fn describe(frame: Frame) -> String {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::TooLong(line) => {
            let reply = JsonRpcErrorResponse::new(
                line.recover_id(),
                mcp_bridge_protocol::ErrorObject::new(
                    mcp_bridge_protocol::error_code::INVALID_REQUEST,
                    "Invalid request: line too long",
                ),
            );
            return format!("line of {} bytes over the limit -> {}", line.len, reply_text(&reply));
        }
    };
    match decode_message(&line, CLIENT_MAX_DEPTH) {
        Ok(Message::Request(r)) => format!("request   id={} method={}", r.id, r.method),
        Ok(Message::Notification(n)) => format!("notification method={}", n.method),
        Ok(Message::Result(r)) => format!("result    id={}", r.id),
        Ok(Message::Error(e)) => format!("error     code={} message={:?}", e.error.code, e.error.message),
        Err(err) => {
            let reply = JsonRpcErrorResponse::new(err.reply_id(&line), err.to_error_object());
            format!("rejected  {err} -> {}", reply_text(&reply))
        }
    }
}

fn reply_text(reply: &JsonRpcErrorResponse) -> String {
    String::from_utf8_lossy(encode_line(reply).trim_ascii_end()).into_owned()
}
