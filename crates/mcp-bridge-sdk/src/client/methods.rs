//! The typed methods of the client: discovery, the lists (a page or all
//! of them), tool calls, prompts, resources and completion, each a
//! request whose result is parsed into its type.

use mcp_bridge_protocol::types::{
    CallToolResult, CompleteResult, CompletionArgument, CompletionContext, CompletionReference, DiscoverResult,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{Client, RequestOptions, parse_result, to_json};
use crate::error::Result;
use crate::limits::MAX_AUTO_PAGES;

/// The params of `tools/call`; null arguments are left out.
pub(super) fn tool_call_params(name: &str, arguments: Value) -> Map<String, Value> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    if !arguments.is_null() {
        params.insert("arguments".into(), arguments);
    }
    params
}
pub(super) fn cursor_params(cursor: Option<&str>) -> Map<String, Value> {
    let mut params = Map::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".into(), json!(cursor));
    }
    params
}

impl Client {
    /// `server/discover`: versions, capabilities and identity of the server.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn discover(&self, options: &RequestOptions) -> Result<DiscoverResult> {
        self.typed("server/discover", Map::new(), options).await
    }

    /// One page of `tools/list`. Output schemas are remembered to check the
    /// `structuredContent` of later calls.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_tools(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListToolsResult> {
        let result: ListToolsResult = self.typed("tools/list", cursor_params(cursor), options).await?;
        self.remember_output_schemas(&result.tools);
        Ok(result)
    }

    /// Every tool, following `nextCursor` for at most 64 pages.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_all_tools(&self, options: &RequestOptions) -> Result<Vec<Tool>> {
        let tools = self.all_pages("tools/list", options, |r: ListToolsResult| (r.tools, r.next_cursor)).await?;
        self.remember_output_schemas(&tools);
        Ok(tools)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_prompts(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListPromptsResult> {
        self.typed("prompts/list", cursor_params(cursor), options).await
    }

    /// Every prompt, following `nextCursor` for at most 64 pages.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_all_prompts(&self, options: &RequestOptions) -> Result<Vec<Prompt>> {
        self.all_pages("prompts/list", options, |r: ListPromptsResult| (r.prompts, r.next_cursor)).await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_resources(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListResourcesResult> {
        self.typed("resources/list", cursor_params(cursor), options).await
    }

    /// Every resource, following `nextCursor` for at most 64 pages.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_all_resources(&self, options: &RequestOptions) -> Result<Vec<Resource>> {
        self.all_pages("resources/list", options, |r: ListResourcesResult| (r.resources, r.next_cursor)).await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
        options: &RequestOptions,
    ) -> Result<ListResourceTemplatesResult> {
        self.typed("resources/templates/list", cursor_params(cursor), options).await
    }

    /// Every resource template, following `nextCursor` for at most 64 pages.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn list_all_resource_templates(&self, options: &RequestOptions) -> Result<Vec<ResourceTemplate>> {
        self.all_pages("resources/templates/list", options, |r: ListResourceTemplatesResult| {
            (r.resource_templates, r.next_cursor)
        })
        .await
    }

    /// `tools/call`, with input rounds answered by the hooks, and a task the
    /// server makes of it (Tasks extension) followed to its end. A result
    /// whose `structuredContent` breaks the tool's output schema is still
    /// returned, with a warning and `structured_content_invalid` in the
    /// diagnostics.
    ///
    /// # Errors
    /// See [`Error`](crate::Error) and [`Client::await_task`]. With
    /// `allow_input_required`, an input request comes back as
    /// [`Error::InvalidResponse`](crate::Error::InvalidResponse); use [`Client::request`] to see it.
    pub async fn call_tool(&self, name: &str, arguments: Value, options: &RequestOptions) -> Result<CallToolResult> {
        #[cfg(feature = "tasks")]
        return self.call_tool_to_the_end(name, arguments, options).await;
        #[cfg(not(feature = "tasks"))]
        {
            let value = self.request("tools/call", tool_call_params(name, arguments), options).await?;
            let result: CallToolResult = parse_result("tools/call", value)?;
            self.check_structured_content(name, &result, options);
            Ok(result)
        }
    }

    /// `prompts/get`, with input rounds answered by the hooks.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult> {
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        params.insert("arguments".into(), Value::Object(arguments));
        self.typed("prompts/get", params, options).await
    }

    /// `resources/read`, with input rounds answered by the hooks.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn read_resource(&self, uri: &str, options: &RequestOptions) -> Result<ReadResourceResult> {
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        self.typed("resources/read", params, options).await
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// See [`Error`](crate::Error).
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: CompletionArgument,
        context: Option<CompletionContext>,
        options: &RequestOptions,
    ) -> Result<CompleteResult> {
        let mut params = Map::new();
        params.insert("ref".into(), to_json(&reference)?);
        params.insert("argument".into(), to_json(&argument)?);
        if let Some(context) = context {
            params.insert("context".into(), to_json(&context)?);
        }
        self.typed("completion/complete", params, options).await
    }

    async fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<T> {
        let value = self.request(method, params, options).await?;
        parse_result(method, value)
    }

    /// Reads every page of a list, following `nextCursor` for at most
    /// [`MAX_AUTO_PAGES`] pages.
    async fn all_pages<R: DeserializeOwned, T>(
        &self,
        method: &str,
        options: &RequestOptions,
        split: impl Fn(R) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_AUTO_PAGES {
            let (mut batch, next) = split(self.typed(method, cursor_params(cursor.as_deref()), options).await?);
            items.append(&mut batch);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        tracing::warn!(method, "stopped after {MAX_AUTO_PAGES} pages");
        Ok(items)
    }
}
