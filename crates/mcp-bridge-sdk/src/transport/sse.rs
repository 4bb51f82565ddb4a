//! A bounded parser of `text/event-stream` (WHATWG HTML, server-sent
//! events), fed bytes as they arrive: multi-line `data:`, comments, CR/LF
//! line ends. `id` and `retry` are kept for a stream that is resumed (a
//! 2025-11-25 session's `Last-Event-ID`; 2026-07-28 has no resume). An
//! event larger than the limit is an error, not a buffer that grows.

/// An event over the size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event is larger than {limit} bytes")]
pub struct EventTooLarge {
    /// The limit.
    pub limit: usize,
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when absent.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The parser.
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// The previous byte was a CR (a following LF belongs to the same end).
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    size: usize,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser whose events may be at most `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            size: 0,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// The last `id:` the stream gave (an empty one clears it): what a
    /// resumed stream sends as `Last-Event-ID`.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection time the stream asked for with `retry:`, in
    /// milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feeds bytes; returns the events they complete.
    ///
    /// # Errors
    /// [`EventTooLarge`] when an event (or a line) passes the limit; the
    /// stream cannot be trusted after that.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr && b == b'\n' {
                self.after_cr = false;
                continue;
            }
            self.after_cr = b == b'\r';
            if b == b'\n' || b == b'\r' {
                let line = std::mem::take(&mut self.line);
                if let Some(event) = self.take_line(&line)? {
                    events.push(event);
                }
                continue;
            }
            self.line.push(b);
            self.size += 1;
            if self.size > self.max_event_bytes {
                return Err(EventTooLarge { limit: self.max_event_bytes });
            }
        }
        Ok(events)
    }

    fn take_line(&mut self, line: &[u8]) -> Result<Option<SseEvent>, EventTooLarge> {
        if line.is_empty() {
            let event = self.has_data.then(|| SseEvent {
                event: if self.event.is_empty() { "message".to_owned() } else { std::mem::take(&mut self.event) },
                data: std::mem::take(&mut self.data),
            });
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            self.size = 0;
            return Ok(event);
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                // Invalid UTF-8 grows as it is replaced: the limit holds for
                // the data as decoded too (found by fuzzing).
                if self.data.len() > self.max_event_bytes {
                    return Err(EventTooLarge { limit: self.max_event_bytes });
                }
            }
            "event" => self.event = value.to_owned(),
            // An id with NUL is ignored, as the standard says.
            "id" if !value.contains('\0') => {
                self.last_event_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok();
            }
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn events_are_dispatched_on_blank_lines() {
        let mut p = SseParser::new(1024);
        let events = p
            .push(b": comment\nevent: message\ndata: {\"a\":1}\n\ndata: one\r\ndata:two\r\n\r\nretry: 5\nid: 7\n\n")
            .unwrap();
        assert_eq!(
            events,
            vec![
                SseEvent { event: "message".into(), data: "{\"a\":1}".into() },
                SseEvent { event: "message".into(), data: "one\ntwo".into() },
            ]
        );
    }

    #[test]
    fn the_last_id_and_the_retry_time_are_kept_for_a_resume() {
        let mut p = SseParser::new(1024);
        assert_eq!((p.last_event_id(), p.retry_ms()), (None, None));
        let events = p.push(b"id: event-1\nretry: 500\ndata: \n\n").unwrap();
        assert_eq!(events, vec![SseEvent { event: "message".into(), data: String::new() }]);
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("event-1"), Some(500)));
        p.push(b"retry: soon\nid: a\0b\ndata: x\n\n").unwrap();
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("event-1"), Some(500)), "invalid fields are ignored");
        p.push(b"id\ndata: y\n\n").unwrap();
        assert_eq!(p.last_event_id(), None, "an empty id clears it");
    }

    #[test]
    fn an_event_over_the_limit_is_an_error() {
        let mut p = SseParser::new(16);
        assert!(p.push(b"data: 0123456789abcdefghij\n\n").is_err());
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_events(cuts in prop::collection::vec(0usize..80, 0..6)) {
            let input = b"data: a\r\n\r\nevent: x\ndata: b\ndata: c\n\n: c\rdata: d\r\r";
            let whole = SseParser::new(1024).push(input).unwrap();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(input.len())).collect();
            points.sort_unstable();
            let mut p = SseParser::new(1024);
            let mut got = Vec::new();
            let mut from = 0;
            for point in points.into_iter().chain([input.len()]) {
                got.extend(p.push(&input[from..point]).unwrap());
                from = point;
            }
            prop_assert_eq!(got, whole);
        }
    }
}
