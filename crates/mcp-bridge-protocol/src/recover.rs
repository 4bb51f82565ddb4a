//! Finding the `id` of a message that cannot be parsed: a line over the limit,
//! too deep, or broken JSON. An error response should carry the id the client
//! used, so the client can match it to its request (JSON-RPC 2.0, section 5).
//!
//! Both scanners read a few hundred bytes lexically and never build a value.
//! They answer `None` rather than guess: an id cut off by the edge of the kept
//! bytes, an `id` inside a nested object, or a fractional number is no id.

use crate::RequestId;

/// The `id` member of a top-level object, found by reading its members from
/// the start until `id` or until the bytes end.
pub fn leading_id(head: &[u8]) -> Option<RequestId> {
    let mut s = Scanner { bytes: head, at: 0 };
    s.skip_ws();
    s.expect(b'{')?;
    loop {
        s.skip_ws();
        let key = s.string()?;
        s.skip_ws();
        s.expect(b':')?;
        s.skip_ws();
        if key == b"\"id\"" {
            return s.id_literal();
        }
        s.skip_value()?;
        s.skip_ws();
        s.expect(b',')?;
    }
}

/// The `id` member of a top-level object when it is the last member, found by
/// reading backwards from the closing brace.
pub fn trailing_id(tail: &[u8]) -> Option<RequestId> {
    let mut end = trim_end(tail, tail.len());
    end = end.checked_sub(1)?;
    if tail[end] != b'}' {
        return None;
    }
    end = trim_end(tail, end);
    let value_start = if end > 0 && tail[end - 1] == b'"' {
        let close = end - 1;
        let mut open = close;
        loop {
            open = open.checked_sub(1)?;
            if tail[open] == b'"' && !is_escaped(tail, open) {
                break;
            }
        }
        open
    } else {
        let mut start = end;
        while start > 0 && matches!(tail[start - 1], b'0'..=b'9' | b'-') {
            start -= 1;
        }
        start
    };
    // The literal must be whole: something must precede it in the kept bytes.
    if value_start == 0 || value_start == end {
        return None;
    }
    let literal = &tail[value_start..end];
    let mut at = trim_end(tail, value_start);
    at = at.checked_sub(1)?;
    if tail[at] != b':' {
        return None;
    }
    at = trim_end(tail, at);
    if at < 4 || &tail[at - 4..at] != b"\"id\"" || is_escaped(tail, at - 4) {
        return None;
    }
    let before = trim_end(tail, at - 4);
    if before == 0 || !matches!(tail[before - 1], b',' | b'{') {
        return None;
    }
    serde_json::from_slice(literal).ok()
}

fn trim_end(bytes: &[u8], mut end: usize) -> usize {
    while end > 0 && bytes[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}

/// Whether the quote at `at` is escaped by an odd run of backslashes.
fn is_escaped(bytes: &[u8], at: usize) -> bool {
    bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// A forward lexical reader over a byte slice that may end anywhere.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// A whole string literal, quotes included.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(&self.bytes[start..self.at]);
                }
                _ => self.at += 1,
            }
        }
    }

    /// An integer or string literal that ends before the bytes do.
    fn id_literal(&mut self) -> Option<RequestId> {
        let start = self.at;
        if self.peek()? == b'"' {
            self.string()?;
        } else {
            while matches!(self.peek()?, b'0'..=b'9' | b'-') {
                self.at += 1;
            }
        }
        // The next byte must end the value; a '.', 'e' or the end of the
        // kept bytes means this is not (or not all of) an integer.
        match self.peek()? {
            b',' | b'}' => {}
            b if b.is_ascii_whitespace() => {}
            _ => return None,
        }
        serde_json::from_slice(&self.bytes[start..self.at]).ok()
    }

    /// Any value, nested containers included, without interpreting it.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(self.peek()?, b',' | b'}') && !self.peek()?.is_ascii_whitespace() {
                    self.at += 1;
                }
                Some(())
            }
        }
    }
}

/// The id of an unparseable line, from its start or else from its end.
pub fn recover_id(line: &[u8]) -> Option<RequestId> {
    use crate::framing::KEPT_EDGE_BYTES;
    let head = &line[..line.len().min(KEPT_EDGE_BYTES)];
    let tail = &line[line.len().saturating_sub(KEPT_EDGE_BYTES)..];
    leading_id(head).or_else(|| trailing_id(tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn id_near_the_start_is_found() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#), Some(7.into()));
        assert_eq!(leading_id(br#" { "id" : "a\"b" , "#), Some("a\"b".into()));
        assert_eq!(leading_id(br#"{"params":{"id":1,"q":[1,{"x":"}"}]},"id":-3,"#), Some((-3).into()));
    }

    #[test]
    fn leading_id_cut_by_the_edge_or_fractional_is_not_found() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(leading_id(br#"{"id":"abc"#), None);
        assert_eq!(leading_id(br#"{"id":1.5,"#), None);
        assert_eq!(leading_id(br#"{"id":null,"#), None);
        assert_eq!(leading_id(br#"{"params":{"id":1"#), None);
        assert_eq!(leading_id(br#"[{"id":1}]"#), None);
    }

    #[test]
    fn id_as_the_last_member_is_found() {
        assert_eq!(trailing_id(br#"aaaa"}]}},"jsonrpc":"2.0","id":42}"#), Some(42.into()));
        assert_eq!(trailing_id(b"x\"},\"id\" : \"r-1\" }\r\n"), Some("r-1".into()));
        assert_eq!(trailing_id(br#"{"id":"a\"b"}"#), Some("a\"b".into()));
    }

    #[test]
    fn trailing_id_inside_a_nested_object_is_not_found() {
        assert_eq!(trailing_id(br#"x,"params":{"id":5}}"#), None);
        assert_eq!(trailing_id(br#"x,"id":1.5}"#), None);
        assert_eq!(trailing_id(br#"x,"xid":5}"#), None);
        assert_eq!(trailing_id(br#""id":5}"#), None);
        assert_eq!(trailing_id(br#"5}"#), None);
    }

    #[test]
    fn recover_id_tries_both_edges() {
        let mut line = br#"{"method":"tools/call","params":{"a":""#.to_vec();
        line.extend(std::iter::repeat_n(b'x', 10_000));
        line.extend(br#""},"jsonrpc":"2.0","id":9}"#);
        assert_eq!(recover_id(&line), Some(9.into()));
    }

    proptest! {
        #[test]
        fn scanners_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
            let _ = leading_id(&bytes);
            let _ = trailing_id(&bytes);
            let _ = recover_id(&bytes);
        }

        #[test]
        fn scanners_never_panic_on_json_like_bytes(s in "[{}\\[\\]\":,\\\\ id0-9.a-]{0,80}") {
            let _ = leading_id(s.as_bytes());
            let _ = trailing_id(s.as_bytes());
        }
    }
}
