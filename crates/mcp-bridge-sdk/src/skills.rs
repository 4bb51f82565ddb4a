//! Agent Skills over MCP (the Skills extension, SEP-2640), the rules the
//! client and the server share: the `SKILL.md` frontmatter, skill names,
//! file digests, and the checks a file read must pass against its
//! skill's entry before anyone acts on it.

use mcp_bridge_protocol::types::{Skill, SkillResources};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// The file every skill has at its root.
pub const SKILL_FILE: &str = "SKILL.md";

/// The longest frontmatter read: generous for any real skill, small
/// enough that a hostile one costs nothing.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// How deep frontmatter may nest.
const MAX_FRONTMATTER_DEPTH: usize = 32;

/// Why a skill file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The entry is not valid (no `name` or `description`, a `uri` whose
    /// last segment is not the name, more files than allowed).
    #[error("the skill entry is not valid: {0}")]
    InvalidEntry(String),
    /// The file is not in the entry's list of files.
    #[error("{0} is not one of the skill's files")]
    Unlisted(String),
    /// The entry's files are `dynamic`: nothing to verify against.
    #[error("the skill's files are dynamic and cannot be verified")]
    Dynamic,
    /// The file's length differs from the entry's `size`.
    #[error("{uri} has {actual} bytes, the entry says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's size.
        expected: u64,
        /// The bytes read.
        actual: u64,
    },
    /// The file's digest differs from the entry's.
    #[error("{0} does not match the entry's digest")]
    DigestMismatch(String),
    /// The `SKILL.md` frontmatter differs from the entry's.
    #[error("the frontmatter of {uri} differs from the entry's: {reason}")]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first difference.
        reason: String,
    },
    /// The frontmatter cannot be read.
    #[error("the frontmatter cannot be read: {0}")]
    Frontmatter(String),
    /// Files to publish as a skill break the extension's rules.
    #[error("the skill cannot be published: {0}")]
    Package(String),
    /// A file of a skill folder cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The operating system's message.
        message: String,
    },
}

/// `sha256:` and the 64 lowercase hex digits of the bytes' digest.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 lowercase
/// letters, digits and hyphens, no hyphen first, last or twice in a row.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The YAML frontmatter of a `SKILL.md` as JSON: the block between a first
/// line `---` and the next `---` line. It must be a mapping with string
/// `name` and `description`. YAML aliases are refused (no expansion bombs),
/// and so is nesting deeper than 32.
///
/// # Errors
/// [`SkillError::Frontmatter`] saying what is wrong.
pub fn frontmatter(skill_md: &str) -> Result<Map<String, Value>, SkillError> {
    let bad = |reason: &str| SkillError::Frontmatter(reason.to_owned());
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| bad("SKILL.md does not begin with a --- line"))?;
    let mut end = None;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            end = Some(offset);
            break;
        }
        offset += line.len();
    }
    let end = end.ok_or_else(|| bad("the frontmatter has no closing --- line"))?;
    let yaml = &rest[..end];
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(bad("the frontmatter is longer than 64 KiB"));
    }
    let value = yaml_to_json(yaml).map_err(SkillError::Frontmatter)?;
    let Value::Object(fields) = value else { return Err(bad("the frontmatter is not a mapping")) };
    for required in ["name", "description"] {
        if !fields.get(required).is_some_and(Value::is_string) {
            return Err(SkillError::Frontmatter(format!("the frontmatter has no {required}")));
        }
    }
    Ok(fields)
}

/// One YAML document as JSON, through the event parser so aliases are
/// refused rather than expanded.
fn yaml_to_json(yaml: &str) -> Result<Value, String> {
    enum Open {
        Seq(Vec<Value>),
        Map(Map<String, Value>, Option<String>),
    }
    fn place(stack: &mut [Open], value: Value, root: &mut Option<Value>) -> Result<(), String> {
        match stack.last_mut() {
            None => *root = Some(value),
            Some(Open::Seq(items)) => items.push(value),
            Some(Open::Map(map, key)) => match key.take() {
                None => match value {
                    Value::String(k) => *key = Some(k),
                    Value::Number(n) => *key = Some(n.to_string()),
                    Value::Bool(b) => *key = Some(b.to_string()),
                    _ => return Err("a mapping key that is not a scalar".into()),
                },
                Some(k) => {
                    map.insert(k, value);
                }
            },
        }
        Ok(())
    }
    let mut parser = Parser::new_from_str(yaml);
    let mut stack: Vec<Open> = Vec::new();
    let mut root = None;
    loop {
        let (event, _) = parser.next_token().map_err(|e| format!("YAML: {e}"))?;
        match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => {}
            Event::Alias(_) => return Err("YAML aliases are not accepted".into()),
            Event::Scalar(text, style, _, _) => place(&mut stack, scalar(text, style), &mut root)?,
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_FRONTMATTER_DEPTH => {
                return Err("the frontmatter nests too deep".into());
            }
            Event::SequenceStart(..) => stack.push(Open::Seq(Vec::new())),
            Event::MappingStart(..) => stack.push(Open::Map(Map::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let value = match stack.pop() {
                    Some(Open::Seq(items)) => Value::Array(items),
                    Some(Open::Map(map, _)) => Value::Object(map),
                    None => return Err("YAML: an end without a start".into()),
                };
                place(&mut stack, value, &mut root)?;
            }
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

/// A YAML scalar as JSON under the core schema: plain `null`, booleans and
/// numbers are typed, everything quoted or in a block is a string.
fn scalar(text: String, style: TScalarStyle) -> Value {
    if style != TScalarStyle::Plain {
        return Value::String(text);
    }
    match text.as_str() {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            if let Ok(i) = text.parse::<i64>() {
                return Value::Number(i.into());
            }
            let numeric = text.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
            match text.parse::<f64>().ok().filter(|_| numeric).and_then(Number::from_f64) {
                Some(n) => Value::Number(n),
                None => Value::String(text),
            }
        }
    }
}

/// Checks a skill entry before its files are used: `name` and
/// `description` present, the name valid and the last segment of the
/// `SKILL.md`'s directory, `SKILL.md` among the files, the limits kept.
///
/// # Errors
/// [`SkillError::InvalidEntry`] saying why.
pub fn check_entry(entry: &Skill) -> Result<(), SkillError> {
    let invalid = |reason: String| SkillError::InvalidEntry(reason);
    let name = entry.name().ok_or_else(|| invalid("no name in the frontmatter".into()))?;
    if !entry.frontmatter.get("description").is_some_and(Value::is_string) {
        return Err(invalid("no description in the frontmatter".into()));
    }
    let dir = entry
        .uri
        .strip_suffix(&format!("/{SKILL_FILE}"))
        .ok_or_else(|| invalid(format!("{} is not the URI of a {SKILL_FILE}", entry.uri)))?;
    if dir.rsplit('/').next() != Some(name) || !valid_name(name) {
        return Err(invalid(format!("the name {name:?} is not valid or not the skill's directory")));
    }
    if let SkillResources::Listed(files) = &entry.resources {
        if !files.iter().any(|f| f.uri == entry.uri) {
            return Err(invalid(format!("the files do not list {}", entry.uri)));
        }
        let total: u64 = files.iter().map(|f| f.size).sum();
        if files.len() > mcp_bridge_protocol::types::MAX_SKILL_FILES
            || total > mcp_bridge_protocol::types::MAX_SKILL_BYTES
        {
            return Err(invalid(format!("{} files of {total} bytes is over the limits", files.len())));
        }
        if let Some(stray) = files.iter().find(|f| !f.uri.starts_with(&format!("{dir}/"))) {
            return Err(invalid(format!("{} is outside the skill's directory", stray.uri)));
        }
    }
    Ok(())
}

/// Checks the bytes read of one of a skill's files against its entry: the
/// file is listed, its size and digest match, and for the `SKILL.md` its
/// frontmatter is the entry's, field by field.
///
/// # Errors
/// The [`SkillError`] of the first check that fails.
pub fn verify_file(entry: &Skill, uri: &str, bytes: &[u8]) -> Result<(), SkillError> {
    check_entry(entry)?;
    let SkillResources::Listed(files) = &entry.resources else { return Err(SkillError::Dynamic) };
    let listed = files.iter().find(|f| f.uri == uri).ok_or_else(|| SkillError::Unlisted(uri.to_owned()))?;
    if listed.size != bytes.len() as u64 {
        return Err(SkillError::SizeMismatch {
            uri: uri.to_owned(),
            expected: listed.size,
            actual: bytes.len() as u64,
        });
    }
    if listed.digest != digest(bytes) {
        return Err(SkillError::DigestMismatch(uri.to_owned()));
    }
    if uri == entry.uri {
        let text = std::str::from_utf8(bytes).map_err(|_| SkillError::Frontmatter("SKILL.md is not UTF-8".into()))?;
        let found = frontmatter(text)?;
        if let Some(reason) = first_difference(&entry.frontmatter, &found) {
            return Err(SkillError::FrontmatterMismatch { uri: uri.to_owned(), reason });
        }
    }
    Ok(())
}

fn first_difference(entry: &Map<String, Value>, file: &Map<String, Value>) -> Option<String> {
    for (key, value) in entry {
        match file.get(key) {
            None => return Some(format!("{key} is missing from the file")),
            Some(v) if v != value => return Some(format!("{key} differs")),
            Some(_) => {}
        }
    }
    file.keys().find(|k| !entry.contains_key(*k)).map(|k| format!("{k} is not in the entry"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frontmatter_is_read_as_written() {
        let md = "---\nname: pdf-processing\ndescription: |\n  Extract and fill\n  PDF forms.\nlicense: 'MIT'\nmetadata:\n  version: 2.1\n  tags: [pdf, forms]\n  count: 3\nallowed-tools:\n  - bash\n---\n\n# PDF\n";
        let fields = frontmatter(md).unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"name": "pdf-processing", "description": "Extract and fill\nPDF forms.\n", "license": "MIT",
                "metadata": {"version": 2.1, "tags": ["pdf", "forms"], "count": 3}, "allowed-tools": ["bash"]})
        );
        // A quoted number stays a string; a bare word stays a word.
        let quoted = frontmatter("---\nname: a\ndescription: \"42\"\nx: yes\n---\n").unwrap();
        assert_eq!((quoted["description"].clone(), quoted["x"].clone()), (json!("42"), json!("yes")));
    }

    #[test]
    fn bad_frontmatter_is_refused() {
        for (md, why) in [
            ("# no frontmatter", "begin"),
            ("---\nname: a\ndescription: b\n", "closing"),
            ("---\n- a\n---\n", "mapping"),
            ("---\nname: a\n---\n", "description"),
            ("---\nname: &x a\ndescription: *x\n---\n", "aliases"),
            ("---\nname: [a\n---\n", "YAML"),
        ] {
            let err = frontmatter(md).unwrap_err().to_string();
            assert!(err.contains(why), "{md:?}: {err}");
        }
        let deep = format!("---\nname: a\ndescription: b\nx: {}1{}\n---\n", "[".repeat(40), "]".repeat(40));
        assert!(frontmatter(&deep).unwrap_err().to_string().contains("deep"));
    }

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for good in ["a", "pdf-processing", "v2", &"x".repeat(64)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "PDF", "a_b", "a b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn digests_are_sha256_in_lowercase_hex() {
        assert_eq!(digest(b"abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
