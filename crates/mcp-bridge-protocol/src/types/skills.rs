//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): a
//! server publishes Agent Skills — directories of files with a `SKILL.md`
//! at the root — as resources, with `skills/list`, `skills/get` and
//! `resources/directory/read`.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{CacheScope, Resource, ResultType};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The most files a host must accept in one skill.
pub const MAX_SKILL_FILES: usize = 512;

/// The largest total size of one skill's files a host must accept.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// The media type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// One file of a skill, with the digest and size of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits of the file's bytes.
    pub digest: String,
    /// The file's length in bytes.
    pub size: u64,
}

/// A skill's files: the complete list, or `"dynamic"` when its content is
/// generated and cannot be digested in advance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file, `SKILL.md` included.
    Listed(Vec<SkillResource>),
    /// Generated content: nothing to verify.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Listed(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "dynamic" => Ok(SkillResources::Dynamic),
            list @ Value::Array(_) => {
                serde_json::from_value(list).map(SkillResources::Listed).map_err(D::Error::custom)
            }
            other => Err(D::Error::custom(format!("resources must be a list or \"dynamic\", not {other}"))),
        }
    }
}

/// The entry of one skill (`Skill`), from `skills/list` or `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter as JSON, every field as written;
    /// `name` and `description` at least.
    pub frontmatter: Map<String, Value>,
    /// Its files.
    pub resources: SkillResources,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Skill {
    /// The skill's name, from its frontmatter.
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }
}

/// The result of `skills/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// This page of skills.
    pub skills: Vec<Skill>,
    /// Cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the result may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `skills/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// The skill's entry.
    pub skill: Skill,
    /// How long the result may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may reuse a cached copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of `resources/directory/read`: the direct children of a
/// directory resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceDirectoryResult {
    /// `complete`.
    #[serde(default)]
    pub result_type: ResultType,
    /// Files, and subdirectories as `inode/directory` resources.
    pub resources: Vec<Resource>,
    /// Cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_read_a_file_list_or_dynamic_and_nothing_else() {
        let listed: Skill = serde_json::from_value(json!({"uri": "skill://a/SKILL.md",
            "frontmatter": {"name": "a", "description": "d", "license": "MIT"},
            "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:00", "size": 3}]}))
        .unwrap();
        assert_eq!(listed.name(), Some("a"));
        assert!(matches!(&listed.resources, SkillResources::Listed(files) if files[0].size == 3));
        let dynamic: Skill = serde_json::from_value(json!({"uri": "skill://d/SKILL.md",
            "frontmatter": {"name": "d", "description": "d"}, "resources": "dynamic"}))
        .unwrap();
        assert_eq!(serde_json::to_value(&dynamic).unwrap()["resources"], "dynamic");
        for bad in [json!("static"), json!(3), Value::Null] {
            let entry = json!({"uri": "u", "frontmatter": {}, "resources": bad});
            assert!(serde_json::from_value::<Skill>(entry).is_err());
        }
        let missing = json!({"uri": "u", "frontmatter": {}});
        assert!(serde_json::from_value::<Skill>(missing).is_err(), "resources is required");
    }
}
