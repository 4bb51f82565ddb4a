//! `resources/read`: the resource found by URI (or the first template it
//! matches), its handler run with the input rules, its contents wrapped in
//! the result.

use std::collections::BTreeMap;

use mcp_bridge_protocol::method::{Method, ResourcesRead};
use mcp_bridge_protocol::types::ReadResourceRequestParams;
use serde_json::{Map, Value, json};

use super::input::Retry;
use super::{Outcome, parse};
use crate::error::{HandlerError, ServerFault};
use crate::server::request_state::params_digest;
use crate::server::{RequestContext, ResourceRequest, Server, read, uri_template};

impl Server {
    pub(super) async fn read_resource(&self, params: Map<String, Value>, ctx: &RequestContext) -> Outcome {
        let digest = params_digest(&params);
        let ReadResourceRequestParams { uri, input_responses, request_state, .. } = parse(params)?;
        let found = {
            let resources = read(&self.inner.resources);
            match resources.iter().find(|r| r.resource.uri == uri) {
                Some(entry) => Some((entry.handler.clone(), BTreeMap::new())),
                None => read(&self.inner.templates).iter().find_map(|t| {
                    uri_template::match_template(&t.template.uri_template, &uri).map(|vars| (t.handler.clone(), vars))
                }),
            }
        };
        let (handler, variables) = found.ok_or_else(|| ServerFault::Handler(HandlerError::resource_not_found(&uri)))?;
        let cache = self.inner.cache;
        let retry = Retry { digest, input_responses, request_state };
        let result = self
            .with_input(ResourcesRead::NAME, retry, ctx, move |input_responses, state, handler_ctx| {
                handler(ResourceRequest { uri, variables, input_responses, state }, handler_ctx)
            })
            .await?;
        // A handler's final answer is its contents; wrap them in the result.
        Ok(if result.is_array() {
            json!({ "resultType": "complete", "contents": result, "ttlMs": cache.ttl_ms, "cacheScope": cache.scope })
        } else {
            result
        })
    }
}
