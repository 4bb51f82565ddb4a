//! The names tools and prompts take in a [`Toolset`](super::Toolset):
//! `<server>__<name>`, valid where the strictest clients want them (VS
//! Code and the LLM APIs: `^[a-zA-Z0-9_-]{1,64}$`), the same for the same
//! server and name, and never two alike. No I/O here.

use sha2::{Digest, Sha256};

/// The longest name.
pub const MAX_NAME: usize = 64;

/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";

/// Hex digits of the digest that stands for a name too long or taken.
const DIGEST_HEX: usize = 8;

fn is_allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// `text` with every character outside `[a-zA-Z0-9_-]` as `_`.
fn sanitized(text: &str) -> String {
    text.chars().map(|c| if is_allowed(c) { c } else { '_' }).collect()
}

/// The first hex digits of the SHA-256 of `server` and `name` (a NUL
/// between them, so `a`+`b_c` and `a_b`+`c` differ), `extra` more of them
/// for a second try.
fn digest(server: &str, name: &str, extra: usize) -> String {
    let hash = Sha256::digest(format!("{server}\0{name}").as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect::<String>()[..DIGEST_HEX + extra].to_owned()
}

/// The plain name of `name` of `server`: both sanitized, joined by
/// [`SEPARATOR`]; when it is too long, cut and ended with a digest of the
/// original pair.
pub fn qualified(server: &str, name: &str) -> String {
    let plain = format!("{}{SEPARATOR}{}", sanitized(server), sanitized(name));
    if plain.len() <= MAX_NAME { plain } else { hashed(&plain, server, name, 0) }
}

/// `plain` cut to leave room for `_` and the digest of the pair.
fn hashed(plain: &str, server: &str, name: &str, extra: usize) -> String {
    let digest = digest(server, name, extra);
    // `plain` is ASCII: any byte index is a character boundary.
    let keep = MAX_NAME - 1 - digest.len();
    format!("{}_{digest}", &plain[..plain.len().min(keep)])
}

/// The names of `pairs` (server, name), in their order: each its
/// [`qualified`] name, except where two pairs would share one; those take
/// the digest form (with more digits until no name is taken twice).
pub fn assign(pairs: &[(&str, &str)]) -> Vec<String> {
    let mut names: Vec<String> = pairs.iter().map(|(server, name)| qualified(server, name)).collect();
    for extra in 0..=(64 - DIGEST_HEX) {
        let taken = |i: usize, names: &[String]| names.iter().enumerate().any(|(j, n)| j != i && *n == names[i]);
        let clashing: Vec<usize> = (0..names.len()).filter(|&i| taken(i, &names)).collect();
        if clashing.is_empty() {
            break;
        }
        for i in clashing {
            let (server, name) = pairs[i];
            names[i] = hashed(&format!("{}{SEPARATOR}{}", sanitized(server), sanitized(name)), server, name, extra);
        }
    }
    names
}

/// Whether `name` is valid for VS Code and the LLM APIs.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len()) && name.chars().all(is_allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_the_server_and_the_tool() {
        assert_eq!(qualified("weather", "get_forecast"), "weather__get_forecast");
        assert_eq!(qualified("my server", "files/read.v2"), "my_server__files_read_v2");
        assert_eq!(qualified("ü", "x"), "___x", "one underscore per character");
    }

    #[test]
    fn a_long_name_is_cut_and_ends_with_a_digest() {
        let long = "a".repeat(80);
        let name = qualified("server", &long);
        assert_eq!(name.len(), MAX_NAME);
        assert!(name.starts_with("server__aaaa"), "{name}");
        assert_eq!(name, qualified("server", &long), "the same every time");
        assert_ne!(name, qualified("server", &format!("{long}b")), "another long name, another digest");
    }

    #[test]
    fn pairs_that_would_share_a_name_each_get_their_own() {
        let names = assign(&[("a", "b.c"), ("a", "b_c"), ("x", "y")]);
        assert_eq!(names[2], "x__y", "the others keep their plain name");
        assert_ne!(names[0], names[1]);
        assert!(names[0].starts_with("a__b_c_") && names[1].starts_with("a__b_c_"), "{names:?}");
        assert_eq!(names, assign(&[("a", "b.c"), ("a", "b_c"), ("x", "y")]), "deterministic");
    }

    proptest! {
        #[test]
        fn every_assigned_name_is_valid_and_unique(
            pairs in proptest::collection::vec(("[a-z .ü-]{0,40}", "[a-zA-Z0-9_./]{0,90}"), 0..12)
        ) {
            let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(s, n)| (s.as_str(), n.as_str())).collect();
            let mut unique: Vec<(&str, &str)> = borrowed.clone();
            unique.sort();
            unique.dedup();
            let names = assign(&unique);
            for name in &names {
                prop_assert!(is_valid(name), "{name}");
            }
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), names.len());
        }
    }
}
