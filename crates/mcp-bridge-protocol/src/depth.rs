//! The nesting-depth check that runs on raw bytes before any JSON parser.
//!
//! A deeply nested line (`[[[[...`) would make a recursive parser overflow its
//! stack, and a value tree that deep is costly to build and to drop. This check
//! is one forward pass with a counter: linear time, constant memory, no
//! recursion. It does not validate JSON; it only has to count brackets outside
//! strings correctly, so that the parser afterwards never sees more than
//! `limit` levels.

/// Levels of nesting allowed in a message from a client (2025-11-25 bridge
/// side); deep enough for any real tool argument, shallow enough that a parse
/// is cheap.
pub const CLIENT_MAX_DEPTH: usize = 64;

/// Levels of nesting allowed in a message from an upstream server: servers
/// return schemas and structured content that legitimately nest deeper than
/// client requests do.
pub const UPSTREAM_MAX_DEPTH: usize = 200;

/// A message nests objects and arrays deeper than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("message nests deeper than {limit} levels")]
pub struct DepthExceeded {
    /// The limit that was exceeded.
    pub limit: usize,
}

/// Checks that `bytes` never nests objects or arrays more than `limit` deep.
///
/// Brackets inside JSON strings do not count. A top-level object is depth 1.
///
/// # Errors
/// [`DepthExceeded`] at the first bracket past the limit; the rest of the input
/// is not read.
pub fn check_depth(bytes: &[u8], limit: usize) -> Result<(), DepthExceeded> {
    let mut depth = 0usize;
    let mut at = 0usize;
    while let Some(&b) = bytes.get(at) {
        match b {
            b'"' => {
                // Skip the string: jump from quote or backslash to the next,
                // so long strings (most of a large result) cost a memchr.
                at += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &bytes[at..]) {
                        None => return Ok(()),
                        Some(i) if bytes[at + i] == b'\\' => at += i + 2,
                        Some(i) => {
                            at += i + 1;
                            break;
                        }
                    }
                    if at >= bytes.len() {
                        return Ok(());
                    }
                }
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Err(DepthExceeded { limit });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nested(depth: usize) -> String {
        "[".repeat(depth) + &"]".repeat(depth)
    }

    #[test]
    fn depth_at_limit_is_accepted() {
        assert!(check_depth(nested(64).as_bytes(), 64).is_ok());
        assert!(check_depth(br#"{"a":{"b":[1]}}"#, 3).is_ok());
    }

    #[test]
    fn depth_over_limit_is_rejected() {
        assert_eq!(check_depth(nested(65).as_bytes(), 64), Err(DepthExceeded { limit: 64 }));
    }

    #[test]
    fn brackets_in_strings_do_not_count() {
        let line = format!(r#"{{"a":"{}\"{}"}}"#, "[".repeat(500), "{".repeat(500));
        assert!(check_depth(line.as_bytes(), 1).is_ok());
    }

    #[test]
    fn hundred_thousand_levels_are_rejected_without_overflow() {
        let line = "[".repeat(100_000);
        assert!(check_depth(line.as_bytes(), CLIENT_MAX_DEPTH).is_err());
    }

    fn value_depth(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Array(a) => 1 + a.iter().map(value_depth).max().unwrap_or(0),
            serde_json::Value::Object(o) => 1 + o.values().map(value_depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<i32>().prop_map(serde_json::Value::from),
            "[\\[\\]{}\"\\\\a-z]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(12, 64, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z\\[{]{1,3}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn check_agrees_with_the_parsed_depth(v in json_value(), limit in 0usize..14) {
            let text = serde_json::to_string(&v).unwrap();
            let ok = check_depth(text.as_bytes(), limit).is_ok();
            prop_assert_eq!(ok, value_depth(&v) <= limit);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), limit in 0usize..80) {
            let _ = check_depth(&bytes, limit);
        }
    }
}
