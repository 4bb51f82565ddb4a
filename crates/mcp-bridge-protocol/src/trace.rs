//! W3C trace context as MCP carries it: `traceparent` and `tracestate` in
//! a request's `params._meta` (OpenTelemetry's conventions for MCP), on
//! either revision and any transport. Pure: reading and writing the
//! header's form; the ids themselves come from whoever starts a span.

use std::fmt;

/// The `_meta` key of the trace parent.
pub const TRACEPARENT_KEY: &str = "traceparent";
/// The `_meta` key of the vendors' trace state.
pub const TRACESTATE_KEY: &str = "tracestate";

/// A span's place in a trace: `00-{trace id}-{span id}-{flags}` in
/// `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The trace's id: 16 bytes, not all zero.
    pub trace_id: [u8; 16],
    /// The span's id (the parent of the receiver's span): 8 bytes, not all
    /// zero.
    pub span_id: [u8; 8],
    /// The trace flags; bit 0 says the caller records (samples) the trace.
    pub flags: u8,
}

impl TraceParent {
    /// Whether the caller records this trace.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The same trace with another span as the parent.
    pub fn with_span(self, span_id: [u8; 8]) -> Self {
        TraceParent { span_id, ..self }
    }

    /// Reads a `traceparent` value; `None` when it is not one. Version
    /// `00` must be exactly 55 characters; a later version may add fields
    /// after a dash, which are ignored (W3C Trace Context, §3.2.4). Version
    /// `ff` and all-zero ids are invalid.
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let bytes = value.as_bytes();
        // ASCII only, so that the slices below fall on characters.
        if !value.is_ascii() || bytes.len() < 55 || (bytes.len() > 55 && bytes[55] != b'-') {
            return None;
        }
        let version = hex::<1>(&value[0..2])?[0];
        if version == 0xff || (version == 0 && bytes.len() != 55) {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = hex::<16>(&value[3..35])?;
        let span_id = hex::<8>(&value[36..52])?;
        let flags = hex::<1>(&value[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id, flags })
    }
}

/// The `traceparent` value, version `00`, lowercase: written into one
/// buffer (a request sends one or two of them).
impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; 55];
        text[..3].copy_from_slice(b"00-");
        hex_into(&mut text[3..35], &self.trace_id);
        text[35] = b'-';
        hex_into(&mut text[36..52], &self.span_id);
        text[52] = b'-';
        hex_into(&mut text[53..55], &[self.flags]);
        // Only ASCII digits, letters and dashes were written.
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

/// `bytes` as lowercase hex into `out` (twice as long).
fn hex_into(out: &mut [u8], bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
}

/// The trace context of a request: its parent span and the vendors'
/// state, read from and written to `_meta`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// The span the request was sent under.
    pub parent: TraceParent,
    /// `tracestate`, passed on unchanged.
    pub state: Option<String>,
}

impl TraceContext {
    /// The context in a request's `_meta`, when its `traceparent` is valid.
    pub fn from_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Option<Self> {
        let parent = TraceParent::parse(meta.get(TRACEPARENT_KEY)?.as_str()?)?;
        let state = meta.get(TRACESTATE_KEY).and_then(serde_json::Value::as_str).map(str::to_owned);
        Some(TraceContext { parent, state })
    }

    /// Writes the context into a request's `_meta`, over what was there.
    pub fn write_to(&self, meta: &mut serde_json::Map<String, serde_json::Value>) {
        meta.insert(TRACEPARENT_KEY.into(), self.parent.to_string().into());
        match &self.state {
            Some(state) => meta.insert(TRACESTATE_KEY.into(), state.clone().into()),
            None => meta.remove(TRACESTATE_KEY),
        };
    }
}

/// Bytes as lowercase hex, as trace ids are written everywhere.
pub fn write_hex(out: &mut impl fmt::Write, bytes: &[u8]) -> fmt::Result {
    let mut text = vec![0u8; bytes.len() * 2];
    hex_into(&mut text, bytes);
    out.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
}

/// `N` bytes from exactly `2 * N` lowercase hex digits (the header allows
/// no uppercase).
fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EXAMPLE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_specification_example_reads_and_writes_back() {
        let parent = TraceParent::parse(EXAMPLE).unwrap();
        assert!(parent.sampled());
        assert_eq!(parent.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(parent.to_string(), EXAMPLE);
    }

    #[test]
    fn what_is_not_a_traceparent_is_refused() {
        for bad in [
            "",
            "00-x",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_keeps_the_known_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future";
        let parent = TraceParent::parse(later).unwrap();
        assert!(!parent.sampled());
        assert_eq!(parent.to_string(), EXAMPLE.replace("-01", "-00"));
    }

    #[test]
    fn the_context_goes_through_meta() {
        let mut meta = serde_json::Map::new();
        meta.insert(TRACEPARENT_KEY.into(), EXAMPLE.into());
        meta.insert(TRACESTATE_KEY.into(), "congo=t61rcWkgMzE".into());
        let context = TraceContext::from_meta(&meta).unwrap();
        let mut written = serde_json::Map::new();
        context.write_to(&mut written);
        assert_eq!(written, meta);
        meta.insert(TRACEPARENT_KEY.into(), 7.into());
        assert_eq!(TraceContext::from_meta(&meta), None);
    }

    proptest! {
        #[test]
        fn written_values_read_back(trace in any::<[u8; 16]>(), span in any::<[u8; 8]>(), flags in any::<u8>()) {
            prop_assume!(trace != [0; 16] && span != [0; 8]);
            let parent = TraceParent { trace_id: trace, span_id: span, flags };
            prop_assert_eq!(TraceParent::parse(&parent.to_string()), Some(parent));
        }

        #[test]
        fn any_text_is_read_without_panic(text in ".{0,80}") {
            let _ = TraceParent::parse(&text);
        }
    }
}
