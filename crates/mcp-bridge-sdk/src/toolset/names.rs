//! The names tools and prompts take in a [`Toolset`](super::Toolset):
//! `<server>__<name>`, valid where the strictest clients want them (VS
//! Code and the LLM APIs: `^[a-zA-Z0-9_-]{1,64}$`), the same for the same
//! server and name, and never two alike. No I/O here.

use sha2::{Digest, Sha256};

use super::exposure::Prefix;

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
    let mut hex = hex::encode(hash);
    hex.truncate(DIGEST_HEX + extra);
    hex
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
/// the digest form (with more digits until no name is taken twice). A pair
/// given twice gets one name.
pub fn assign(pairs: &[(&str, &str)]) -> Vec<String> {
    let wanted: Vec<(&str, &str, Prefix)> =
        pairs.iter().map(|&(server, name)| (server, name, Prefix::Always)).collect();
    let (mut names, clashes) = assign_with(&wanted);
    for Clash { kept, left_out } in clashes {
        names[left_out] = names[kept].clone();
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// Two entries shown under one name without a prefix: by their places in
/// what [`assign_with`] was given, the first keeps the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clash {
    /// The entry that keeps the name.
    pub kept: usize,
    /// The entry left out.
    pub left_out: usize,
}

/// The names of `wanted` (server, name, prefix mode), in their order:
/// [`Prefix::Always`] entries their [`qualified`] name; the others their
/// own, but an [`Prefix::OnCollision`] one shared with another entry its
/// qualified name; two [`Prefix::Never`] entries alike keep the first
/// (`None` for the other, reported as a [`Clash`]). Prefixed names still
/// shared take the digest form, as [`assign`] gives them.
pub fn assign_with(wanted: &[(&str, &str, Prefix)]) -> (Vec<Option<String>>, Vec<Clash>) {
    let mut names: Vec<Option<String>> = wanted
        .iter()
        .map(|&(server, name, prefix)| {
            Some(if prefix == Prefix::Always { qualified(server, name) } else { name.into() })
        })
        .collect();
    // One server's name twice (listed twice, or renamed onto another of
    // its names): no digest tells them apart, the first keeps it.
    let mut clashes = Vec::new();
    for i in 0..names.len() {
        if let Some(kept) =
            (0..i).find(|&j| names[j].is_some() && wanted[j].0 == wanted[i].0 && wanted[j].1 == wanted[i].1)
        {
            clashes.push(Clash { kept, left_out: i });
            names[i] = None;
        }
    }
    let shared_by_another = |i: usize, names: &[Option<String>]| {
        names[i].is_some() && names.iter().enumerate().any(|(j, n)| j != i && *n == names[i])
    };
    let shared: Vec<bool> = (0..names.len()).map(|i| shared_by_another(i, &names)).collect();
    for (i, &(server, name, prefix)) in wanted.iter().enumerate() {
        if prefix == Prefix::OnCollision && shared[i] {
            names[i] = Some(qualified(server, name));
        }
    }
    for i in 0..names.len() {
        let never = |k: usize| wanted[k].2 == Prefix::Never;
        if let Some(kept) = (0..i).find(|&j| never(i) && never(j) && names[j].is_some() && names[j] == names[i]) {
            clashes.push(Clash { kept, left_out: i });
            names[i] = None;
        }
    }
    // Distinct pairs part within a few more digits; the bound keeps room
    // for a character of the plain name.
    for extra in 0..=(MAX_NAME - 2 - DIGEST_HEX) {
        let clashing: Vec<usize> =
            (0..names.len()).filter(|&i| wanted[i].2 != Prefix::Never && shared_by_another(i, &names)).collect();
        if clashing.is_empty() {
            break;
        }
        for i in clashing {
            let (server, name, _) = wanted[i];
            let plain = format!("{}{SEPARATOR}{}", sanitized(server), sanitized(name));
            names[i] = Some(hashed(&plain, server, name, extra));
        }
    }
    (names, clashes)
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

    #[test]
    fn a_name_a_server_lists_twice_is_shown_once() {
        let (names, clashes) = assign_with(&[("a", "x", Prefix::Always), ("a", "x", Prefix::Always)]);
        assert_eq!(names, [Some("a__x".into()), None]);
        assert_eq!(clashes, [Clash { kept: 0, left_out: 1 }]);
        assert_eq!(assign(&[("a", "x"), ("a", "x")]), ["a__x", "a__x"]);
    }

    #[test]
    fn prefix_modes_choose_the_names() {
        use Prefix::*;
        let wanted = [("a", "echo", Never), ("b", "echo", Never), ("c", "add", OnCollision), ("d", "add", Always)];
        let (names, clashes) = assign_with(&wanted);
        assert_eq!(names, [Some("echo".into()), None, Some("add".into()), Some("d__add".into())]);
        assert_eq!(clashes, [Clash { kept: 0, left_out: 1 }]);
        let wanted = [("a", "echo", OnCollision), ("b", "echo", Never), ("c", "echo", OnCollision)];
        let (names, clashes) = assign_with(&wanted);
        assert_eq!(names, [Some("a__echo".into()), Some("echo".into()), Some("c__echo".into())]);
        assert!(clashes.is_empty());
    }

    proptest! {
        #[test]
        fn names_shown_are_unique_and_only_a_never_entry_is_left_out(
            wanted in proptest::collection::vec(("[ab]", "[xy_]{1,3}", 0..3u8), 0..10)
        ) {
            let modes = [Prefix::Always, Prefix::Never, Prefix::OnCollision];
            let borrowed: Vec<(&str, &str, Prefix)> =
                wanted.iter().map(|(s, n, m)| (s.as_str(), n.as_str(), modes[*m as usize])).collect();
            let (names, clashes) = assign_with(&borrowed);
            let shown: Vec<&String> = names.iter().flatten().collect();
            let mut unique = shown.clone();
            unique.sort();
            unique.dedup();
            prop_assert_eq!(unique.len(), shown.len());
            for (i, name) in names.iter().enumerate() {
                let (_, own, mode) = borrowed[i];
                match (name, mode) {
                    (None, _) => {
                        let repeated = |c: &Clash| borrowed[c.kept].0 == borrowed[i].0 && borrowed[c.kept].1 == own;
                        let never = mode == Prefix::Never;
                        prop_assert!(clashes.iter().any(|c| c.left_out == i && (never || repeated(c))), "{} left out", i);
                    }
                    (Some(name), Prefix::Never) => prop_assert_eq!(name.as_str(), own),
                    (Some(name), _) => prop_assert!(is_valid(name) || name == own, "{}", name),
                }
            }
        }
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
