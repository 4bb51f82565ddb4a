//! The client's methods of the Skills extension and of MCP Apps.

use base64::Engine;
use mcp_bridge_protocol::method::{Method, ResourcesDirectoryRead, ResourcesRead, SkillsGet, SkillsList};
use mcp_bridge_protocol::types::{ListSkillsResult, ReadResourceDirectoryResult, ResourceContents, Skill};
use serde_json::{Map, Value, json};

use super::{Client, RequestOptions, cursor_params, parse_result};
use crate::apps::{APP_MIME_TYPE, UiResource};
use crate::error::{Error, Result};

fn uri_params(uri: &str) -> Map<String, Value> {
    Map::from_iter([("uri".to_owned(), json!(uri))])
}

/// The contents of `uri` among a read's contents, as bytes.
fn bytes_of(contents: &[ResourceContents], uri: &str) -> Result<(Vec<u8>, Option<String>, Option<Value>)> {
    let invalid = |reason: String| Error::InvalidResponse { method: ResourcesRead::NAME.into(), reason };
    let item = contents.iter().find(|c| c.uri() == uri).ok_or_else(|| invalid(format!("no contents for {uri}")))?;
    Ok(match item {
        ResourceContents::Text(t) => {
            (t.text.clone().into_bytes(), t.mime_type.clone(), t.meta.clone().map(Value::Object))
        }
        ResourceContents::Blob(b) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.blob.as_bytes())
                .map_err(|_| invalid(format!("the blob of {uri} is not base64")))?;
            (bytes, b.mime_type.clone(), b.meta.clone().map(Value::Object))
        }
    })
}

impl Client {
    /// One page of `skills/list` (Skills extension).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_skills(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListSkillsResult> {
        self.request::<SkillsList>(super::methods::page(cursor), options).await
    }

    /// Every skill, following `nextCursor` for at most
    /// [`ClientOptions::max_pages`](crate::ClientOptions::max_pages) pages.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_all_skills(&self, options: &RequestOptions) -> Result<Vec<Skill>> {
        self.all_pages::<SkillsList, _>(options, |r: ListSkillsResult| (r.skills, r.next_cursor)).await
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    ///
    /// # Errors
    /// See [`Error`]; an unknown skill is an [`Error::Rpc`] -32602.
    pub async fn get_skill(&self, uri: &str, options: &RequestOptions) -> Result<Skill> {
        let value = self.request_raw(SkillsGet::NAME, uri_params(uri), options).await?;
        let skill = value.get("skill").cloned().ok_or_else(|| Error::InvalidResponse {
            method: SkillsGet::NAME.into(),
            reason: "the result has no skill".into(),
        })?;
        parse_result(SkillsGet::NAME, skill)
    }

    /// One page of `resources/directory/read`: the direct children of a
    /// directory resource (only for servers whose Skills extension says
    /// `directoryRead`).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn read_directory(
        &self,
        uri: &str,
        cursor: Option<&str>,
        options: &RequestOptions,
    ) -> Result<ReadResourceDirectoryResult> {
        let mut params = cursor_params(cursor);
        params.insert("uri".into(), json!(uri));
        let value = self.request_raw(ResourcesDirectoryRead::NAME, params, options).await?;
        parse_result(ResourcesDirectoryRead::NAME, value)
    }

    /// Reads one file of a skill and checks it against the skill's entry —
    /// listed, its size and SHA-256 digest, and for `SKILL.md` its
    /// frontmatter — before giving its bytes.
    ///
    /// # Errors
    /// [`Error::Skill`] when the file fails a check (the bytes are not
    /// given); see [`Error`] for the read itself.
    #[cfg(feature = "skills")]
    pub async fn read_skill_file(&self, entry: &Skill, uri: &str, options: &RequestOptions) -> Result<Vec<u8>> {
        crate::skills::check_entry(entry)?;
        let read = self.read_resource(uri, options).await?;
        let (bytes, _, _) = bytes_of(&read.contents, uri)?;
        crate::skills::verify_file(entry, uri, &bytes)?;
        Ok(bytes)
    }

    /// Reads a tool's view (MCP Apps): a `ui://` resource of type
    /// `text/html;profile=mcp-app`, as text or base64.
    ///
    /// # Errors
    /// [`Error::InvalidResponse`] for a URI that is not `ui://`, another
    /// media type, or HTML that is not UTF-8; see [`Error`] for the read.
    pub async fn read_ui_resource(&self, uri: &str, options: &RequestOptions) -> Result<UiResource> {
        let invalid = |reason: String| Error::InvalidResponse { method: ResourcesRead::NAME.into(), reason };
        if !uri.starts_with("ui://") {
            return Err(invalid(format!("{uri} is not a ui:// resource")));
        }
        let read = self.read_resource(uri, options).await?;
        let (bytes, mime_type, meta) = bytes_of(&read.contents, uri)?;
        let essence = |m: &str| m.replace(' ', "").to_ascii_lowercase();
        if mime_type.as_deref().map(essence) != Some(essence(APP_MIME_TYPE)) {
            return Err(invalid(format!("{uri} is {mime_type:?}, not {APP_MIME_TYPE}")));
        }
        let html = String::from_utf8(bytes).map_err(|_| invalid(format!("the HTML of {uri} is not UTF-8")))?;
        Ok(UiResource { uri: uri.to_owned(), html, ui_meta: meta.and_then(|m| m.get("ui").cloned()) })
    }
}
