//! The typed methods of the client: discovery, the lists (a page or all
//! of them), tool calls, prompts, resources and completion, each a
//! request whose result is parsed into its type.

use std::borrow::Cow;

use mcp_bridge_protocol::meta::is_sdk_owned_request_key;
use mcp_bridge_protocol::method::{
    CompletionComplete, Method, PromptsGet, PromptsList, RequestMethod, ResourcesList, ResourcesRead,
    ResourcesTemplatesList, ServerDiscover, ToolsList,
};
use mcp_bridge_protocol::types::{
    CallToolResult, CompleteRequestParams, CompleteResult, CompletionArgument, CompletionContext, CompletionReference,
    DiscoverResult, GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, Outcome, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use serde_json::{Map, Value, json};

use super::{Client, RequestOptions, parse_result, to_json};
use crate::error::{Error, Result};

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

/// A page's params.
pub(super) fn page(cursor: Option<&str>) -> PaginatedRequestParams {
    PaginatedRequestParams { cursor: cursor.map(str::to_owned), ..Default::default() }
}

impl Client {
    /// A request of method `M` with its params as their type and its result
    /// parsed into its type, after the input rounds (a result that may
    /// ask for input, an [`Outcome`], is then complete unless
    /// `allow_input_required`). The SDK fills in the params' `_meta`
    /// (version, capabilities, client, progress token); other keys there
    /// are sent as [`RequestOptions::meta`] would send them. The methods
    /// below cover the common requests in fewer words;
    /// [`Client::request_raw`] sends one by name.
    ///
    /// ```no_run
    /// # async fn run(client: mcp_bridge_sdk::Client) -> mcp_bridge_sdk::Result<()> {
    /// use mcp_bridge_sdk::protocol::method::ToolsList;
    /// let page = client.request::<ToolsList>(Default::default(), &Default::default()).await?;
    /// println!("{} tools", page.tools.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// See [`Error`]; [`Error::InvalidRequest`] when the params are not a
    /// JSON object.
    pub async fn request<M: RequestMethod>(&self, params: M::Params, options: &RequestOptions) -> Result<M::Result> {
        let mut params = match to_json(&params)? {
            Value::Object(params) => params,
            Value::Null => Map::new(),
            _ => {
                return Err(Error::InvalidRequest {
                    reason: format!("the params of {} are not a JSON object", M::NAME),
                });
            }
        };
        let options = match params.remove("_meta") {
            Some(Value::Object(meta)) if meta.keys().any(|key| !is_sdk_owned_request_key(key)) => {
                let mut options = options.clone();
                for (key, value) in meta.into_iter().filter(|(key, _)| !is_sdk_owned_request_key(key)) {
                    options.meta.entry(key).or_insert(value);
                }
                Cow::Owned(options)
            }
            _ => Cow::Borrowed(options),
        };
        let value = self.request_raw(M::NAME, params, &options).await?;
        parse_result(M::NAME, value)
    }

    /// `server/discover`: versions, capabilities and identity of the server.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn discover(&self, options: &RequestOptions) -> Result<DiscoverResult> {
        self.request::<ServerDiscover>(Default::default(), options).await
    }

    /// One page of `tools/list`. Output schemas are remembered to check the
    /// `structuredContent` of later calls.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_tools(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListToolsResult> {
        let result = self.request::<ToolsList>(page(cursor), options).await?;
        self.remember_output_schemas(&result.tools);
        Ok(result)
    }

    /// Every tool, following `nextCursor` for at most `max_pages` pages (64 unless the options say otherwise).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_all_tools(&self, options: &RequestOptions) -> Result<Vec<Tool>> {
        let tools = self.all_pages::<ToolsList, _>(options, |r: ListToolsResult| (r.tools, r.next_cursor)).await?;
        self.remember_output_schemas(&tools);
        Ok(tools)
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_prompts(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListPromptsResult> {
        self.request::<PromptsList>(page(cursor), options).await
    }

    /// Every prompt, following `nextCursor` for at most `max_pages` pages (64 unless the options say otherwise).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_all_prompts(&self, options: &RequestOptions) -> Result<Vec<Prompt>> {
        self.all_pages::<PromptsList, _>(options, |r: ListPromptsResult| (r.prompts, r.next_cursor)).await
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_resources(&self, cursor: Option<&str>, options: &RequestOptions) -> Result<ListResourcesResult> {
        self.request::<ResourcesList>(page(cursor), options).await
    }

    /// Every resource, following `nextCursor` for at most `max_pages` pages (64 unless the options say otherwise).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_all_resources(&self, options: &RequestOptions) -> Result<Vec<Resource>> {
        self.all_pages::<ResourcesList, _>(options, |r: ListResourcesResult| (r.resources, r.next_cursor)).await
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_resource_templates(
        &self,
        cursor: Option<&str>,
        options: &RequestOptions,
    ) -> Result<ListResourceTemplatesResult> {
        self.request::<ResourcesTemplatesList>(page(cursor), options).await
    }

    /// Every resource template, following `nextCursor` for at most `max_pages` pages (64 unless the options say otherwise).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn list_all_resource_templates(&self, options: &RequestOptions) -> Result<Vec<ResourceTemplate>> {
        self.all_pages::<ResourcesTemplatesList, _>(options, |r: ListResourceTemplatesResult| {
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
    /// See [`Error`] and [`Client::await_task`]. With
    /// `allow_input_required`, an input request comes back as
    /// [`Error::InvalidResponse`]; use [`Client::request`] to see it.
    pub async fn call_tool(&self, name: &str, arguments: Value, options: &RequestOptions) -> Result<CallToolResult> {
        #[cfg(feature = "tasks")]
        return self.call_tool_to_the_end(name, arguments, options).await;
        #[cfg(not(feature = "tasks"))]
        {
            use mcp_bridge_protocol::method::ToolsCall;
            let value = self.request_raw(ToolsCall::NAME, tool_call_params(name, arguments), options).await?;
            let result: CallToolResult = parse_result(ToolsCall::NAME, value)?;
            self.check_structured_content(name, &result, options);
            Ok(result)
        }
    }

    /// One round of `tools/call` for a caller that runs the input rounds
    /// itself (a gateway relaying them): `input_responses` and
    /// `request_state` are the answers and the server's state of the round
    /// before; an `InputRequiredResult` comes back as it is.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn call_tool_round(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        input_responses: Option<mcp_bridge_protocol::types::InputResponses>,
        request_state: Option<String>,
        options: &RequestOptions,
    ) -> Result<mcp_bridge_protocol::types::Outcome<CallToolResult>> {
        let params = mcp_bridge_protocol::types::CallToolRequestParams {
            name: name.to_owned(),
            arguments: Some(arguments),
            input_responses,
            request_state,
            ..Default::default()
        };
        let options = options.clone().with_allow_input_required(true);
        self.request::<mcp_bridge_protocol::method::ToolsCall>(params, &options).await
    }

    /// `prompts/get`, with input rounds answered by the hooks.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<GetPromptResult> {
        let params = GetPromptRequestParams { name: name.to_owned(), arguments: Some(arguments), ..Default::default() };
        complete(PromptsGet::NAME, self.request::<PromptsGet>(params, options).await?)
    }

    /// `resources/read`, with input rounds answered by the hooks.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn read_resource(&self, uri: &str, options: &RequestOptions) -> Result<ReadResourceResult> {
        let params = ReadResourceRequestParams { uri: uri.to_owned(), ..Default::default() };
        complete(ResourcesRead::NAME, self.request::<ResourcesRead>(params, options).await?)
    }

    /// `completion/complete`.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: CompletionArgument,
        context: Option<CompletionContext>,
        options: &RequestOptions,
    ) -> Result<CompleteResult> {
        let params =
            CompleteRequestParams { meta: Default::default(), reference, argument, context, extra: Map::new() };
        self.request::<CompletionComplete>(params, options).await
    }

    /// Reads every page of a list, following `nextCursor` for at most
    /// [`ClientOptions::max_pages`](crate::ClientOptions::max_pages) pages.
    pub(super) async fn all_pages<M: RequestMethod<Params = PaginatedRequestParams>, T>(
        &self,
        options: &RequestOptions,
        split: impl Fn(M::Result) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let max_pages = self.inner.options.max_pages;
        for _ in 0..max_pages {
            let (mut batch, next) = split(self.request::<M>(page(cursor.as_deref()), options).await?);
            items.append(&mut batch);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        tracing::warn!(method = M::NAME, "stopped after {max_pages} pages");
        Ok(items)
    }
}

/// The result of a request the client ran the input rounds of: complete,
/// or (with `allow_input_required`) an input request the caller must see
/// through [`Client::request`] instead.
fn complete<R>(method: &str, outcome: Outcome<R>) -> Result<R> {
    match outcome {
        Outcome::Complete(result) => Ok(result),
        Outcome::InputRequired(_) => Err(Error::InvalidResponse {
            method: method.to_owned(),
            reason: "the server asked for input; send the request with Client::request to answer it".into(),
        }),
    }
}
