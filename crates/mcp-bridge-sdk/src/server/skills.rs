//! The Skills extension on the server (SEP-2640): skills registered with
//! [`ServerBuilder::skill`](super::ServerBuilder::skill) are served as
//! `skill://` resources, listed with their manifests by `skills/list`,
//! found by `skills/get`, and browsed with `resources/directory/read`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use base64::Engine;
use mcp_bridge_protocol::types::{
    BlobResourceContents, DIRECTORY_MIME_TYPE, MAX_SKILL_BYTES, MAX_SKILL_FILES, Resource, ResourceContents, Skill,
    SkillResource, SkillResources, TextResourceContents,
};
use serde_json::{Map, Value};

use crate::error::{HandlerError, ServerFault};
use crate::skills::{SKILL_FILE, SkillError, digest, frontmatter, valid_name};

/// A skill a server publishes: its path in the `skill://` namespace and
/// its files, `SKILL.md` first.
#[derive(Debug, Clone)]
pub struct SkillPackage {
    /// `<prefix>/<name>`: where the skill lives under `skill://`.
    skill_path: String,
    frontmatter: Map<String, Value>,
    /// (path relative to the skill's root, bytes).
    files: Vec<(String, Vec<u8>)>,
}

fn relative_path_ok(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..")
        && !path.contains('\\')
}

impl SkillPackage {
    /// A skill at `skill_path` (`name`, or `prefix/…/name`) from its files
    /// by relative path; one must be `SKILL.md`, whose frontmatter names the
    /// skill as the last segment of `skill_path`.
    ///
    /// # Errors
    /// What breaks the extension's rules: no `SKILL.md`, bad frontmatter,
    /// a name that differs or breaks the naming rules, a path that leaves
    /// the skill, two files at one path, more than 512 files or 16 MiB.
    pub fn new(skill_path: impl Into<String>, files: Vec<(String, Vec<u8>)>) -> Result<Self, SkillError> {
        let refuse = |reason: String| Err(SkillError::Package(reason));
        let skill_path = skill_path.into();
        if !relative_path_ok(&skill_path) {
            return refuse(format!("{skill_path:?} is not a skill path"));
        }
        let mut seen = BTreeSet::new();
        for (path, _) in &files {
            if !relative_path_ok(path) || !seen.insert(path.as_str()) {
                return refuse(format!("{path:?} is not a file path of its own in the skill"));
            }
        }
        let skill_md = files
            .iter()
            .find(|(p, _)| p == SKILL_FILE)
            .ok_or_else(|| SkillError::Package("the skill has no SKILL.md".into()))?;
        let text = std::str::from_utf8(&skill_md.1).map_err(|_| SkillError::Package("SKILL.md is not UTF-8".into()))?;
        let frontmatter = frontmatter(text)?;
        let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default();
        if !valid_name(name) || skill_path.rsplit('/').next() != Some(name) {
            return refuse(format!("the skill's name {name:?} must be valid and end its path {skill_path:?}"));
        }
        let total: usize = files.iter().map(|(_, b)| b.len()).sum();
        if files.len() > MAX_SKILL_FILES || total as u64 > MAX_SKILL_BYTES {
            return refuse(format!("{} files of {total} bytes is over the limits of a skill", files.len()));
        }
        let mut files = files;
        files.sort_by(|a, b| (a.0 != SKILL_FILE, &a.0).cmp(&(b.0 != SKILL_FILE, &b.0)));
        Ok(SkillPackage { skill_path, frontmatter, files })
    }

    /// A skill from a directory on disk (every file below it).
    ///
    /// # Errors
    /// A file cannot be read, or [`SkillPackage::new`]'s rules.
    pub fn from_dir(skill_path: impl Into<String>, dir: &Path) -> Result<Self, SkillError> {
        let mut files = Vec::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(current) = pending.pop() {
            let unreadable =
                |path: &Path, e: std::io::Error| SkillError::Read { path: path.to_owned(), message: e.to_string() };
            let entries = std::fs::read_dir(&current).map_err(|e| unreadable(&current, e))?;
            for entry in entries {
                let path = entry.map_err(|e| unreadable(&current, e))?.path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let name_refused =
                        || SkillError::Package(format!("{} has a name that is not UTF-8", path.display()));
                    let relative = path.strip_prefix(dir).map_err(|_| name_refused())?;
                    let relative = relative.to_str().ok_or_else(name_refused)?.replace('\\', "/");
                    let bytes = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
                    files.push((relative, bytes));
                }
            }
        }
        SkillPackage::new(skill_path, files)
    }

    fn uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.skill_path)
    }

    /// The skill's entry, as `skills/list` and `skills/get` give it.
    pub fn entry(&self) -> Skill {
        Skill {
            uri: self.uri(SKILL_FILE),
            frontmatter: self.frontmatter.clone(),
            resources: SkillResources::Listed(
                self.files
                    .iter()
                    .map(|(path, bytes)| SkillResource {
                        uri: self.uri(path),
                        digest: digest(bytes),
                        size: bytes.len() as u64,
                    })
                    .collect(),
            ),
            extra: Map::new(),
        }
    }

    /// Each file as a resource and its contents.
    pub(crate) fn resources(&self) -> Vec<(Resource, ResourceContents)> {
        self.files
            .iter()
            .map(|(path, bytes)| {
                let uri = self.uri(path);
                let mime = Some(mime_type(path).to_owned());
                let mut resource = Resource {
                    mime_type: mime.clone(),
                    size: Some(bytes.len() as u64),
                    ..Resource::new(uri.clone(), path.rsplit('/').next().unwrap_or(path))
                };
                if path == SKILL_FILE {
                    resource.name = self.frontmatter["name"].as_str().unwrap_or_default().to_owned();
                    resource.description = self.frontmatter["description"].as_str().map(str::to_owned);
                }
                let contents = match std::str::from_utf8(bytes) {
                    Ok(text) => ResourceContents::Text(TextResourceContents {
                        uri,
                        text: text.to_owned(),
                        mime_type: mime,
                        meta: None,
                        extra: Map::new(),
                    }),
                    Err(_) => ResourceContents::Blob(BlobResourceContents {
                        uri,
                        blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                        mime_type: mime,
                        meta: None,
                        extra: Map::new(),
                    }),
                };
                (resource, contents)
            })
            .collect()
    }
}

/// The media type of a skill file by its extension.
fn mime_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "md" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" => "text/javascript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "html" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => "application/octet-stream",
    }
}

/// The skills of a server, and the answers to the extension's methods.
#[derive(Debug, Default)]
pub(crate) struct SkillCatalog {
    packages: Vec<SkillPackage>,
}

impl SkillCatalog {
    pub(crate) fn new(packages: Vec<SkillPackage>) -> Self {
        SkillCatalog { packages }
    }

    pub(crate) fn entries(&self) -> Vec<Skill> {
        self.packages.iter().map(SkillPackage::entry).collect()
    }

    /// `skills/get`.
    pub(crate) fn get(&self, uri: &str) -> Result<Skill, ServerFault> {
        self.packages
            .iter()
            .map(SkillPackage::entry)
            .find(|e| e.uri == uri)
            .ok_or_else(|| ServerFault::Handler(HandlerError::invalid_params(format!("No skill is served at {uri}"))))
    }

    /// `resources/directory/read`: the direct children of a directory
    /// under `skill://` (a skill's root, one of its folders, or a prefix
    /// shared by skills).
    pub(crate) fn directory(&self, uri: &str) -> Result<Vec<Resource>, ServerFault> {
        let not_a_directory =
            || ServerFault::Handler(HandlerError::invalid_params(format!("{uri} is not a directory resource")));
        if uri.ends_with('/') || !uri.starts_with("skill://") {
            return Err(not_a_directory());
        }
        let prefix = format!("{uri}/");
        let mut children: BTreeMap<String, Resource> = BTreeMap::new();
        for package in &self.packages {
            for (resource, _) in package.resources() {
                let Some(rest) = resource.uri.strip_prefix(&prefix) else { continue };
                match rest.split_once('/') {
                    None => {
                        children.insert(rest.to_owned(), resource);
                    }
                    Some((folder, _)) => {
                        let dir_uri = format!("{prefix}{folder}");
                        children.entry(folder.to_owned()).or_insert_with(|| Resource {
                            mime_type: Some(DIRECTORY_MIME_TYPE.to_owned()),
                            ..Resource::new(dir_uri.clone(), folder)
                        });
                    }
                }
            }
        }
        if children.is_empty() {
            return Err(not_a_directory());
        }
        Ok(children.into_values().collect())
    }
}
