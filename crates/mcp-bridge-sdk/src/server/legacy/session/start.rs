//! `initialize`: the upstream started and asked `server/discover`; its
//! answer becomes the initialize result. An upstream that speaks only
//! 2025-11-25 (the SDK's client found out) answers with its own
//! `initialize` result, and the session relays to it from then on.

use std::sync::Arc;

use mcp_bridge_protocol::method::{Method, ServerDiscover};
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, JsonRpcRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::forward::forward_unrouted;
use super::{LegacySession, Lifecycle};
use crate::server::legacy::classify;
use crate::server::legacy::input;
use crate::server::legacy::notify::Declared;
use crate::server::legacy::translate::{self, Cause, ReplyMask, error_for};
use crate::server::legacy::upstream::{Speaker, Upstream, describe_exit};

impl LegacySession {
    pub(super) async fn initialize(self: Arc<Self>, request: JsonRpcRequest, token: CancellationToken) {
        let id = request.id.clone();
        let outcome = tokio::select! {
            outcome = self.start_upstream(&request) => outcome,
            _ = token.cancelled() => Err(None),
        };
        match outcome {
            Ok((upstream, result)) => {
                let lost_upstream = upstream.clone();
                self.state().lifecycle = Lifecycle::Ready(upstream);
                let frontend = self.clone();
                // The watcher ends with the slots, so it never keeps the
                // writer open after the end of the input.
                self.tasks.spawn(async move {
                    let status = tokio::select! {
                        status = lost_upstream.lost() => status,
                        _ = frontend.stop_slots.cancelled() => return,
                    };
                    if matches!(frontend.state().lifecycle, Lifecycle::Ready(_)) {
                        tracing::warn!("the MCP server stopped with {}", describe_exit(status));
                        frontend.lost.cancel();
                    }
                });
                self.respond(id, Ok(result)).await;
            }
            Err(error) => {
                self.state().lifecycle = Lifecycle::AwaitingInitialize;
                match error {
                    Some(error) => self.respond(id, Err(error)).await,
                    None => {
                        self.state().slots.finish(&id);
                    }
                }
            }
        }
    }

    /// Starts the upstream and asks it `server/discover`; stops it again on
    /// failure. `Err(None)` never comes from here (cancellation is the
    /// caller's).
    pub(super) async fn start_upstream(
        self: &Arc<Self>,
        request: &JsonRpcRequest,
    ) -> Result<(Upstream, Value), Option<ErrorObject>> {
        let params = classify::parse_initialize(request.params.as_ref())
            .map_err(|e| Some(error_for(Cause::InvalidParams, Some(json!(e.to_string())))))?;
        let out = self.out.clone();
        let log_level = self.log_level.clone();
        let session = Arc::downgrade(self);
        let on_unrouted: crate::server::legacy::upstream::OnUnrouted = Arc::new(move |n: &JsonRpcNotification| {
            // Only a 2025-11-25 upstream's changes come outside a listen stream.
            let relays_changes = session.upgrade().is_some_and(|s| s.state().legacy_upstream);
            forward_unrouted(&out, &log_level, n, relays_changes);
        });
        let upstream_capabilities = input::upstream_capabilities(&params.capabilities);
        let identity = crate::client::ClientIdentity::new(params.client_info.clone(), upstream_capabilities.clone());
        {
            let mut state = self.state();
            state.client_capabilities = params.capabilities;
            state.identity = Some(Arc::new(identity));
        }
        self.state().unrouted = Some(on_unrouted.clone());
        let speaker = Speaker {
            info: params.client_info,
            capabilities: upstream_capabilities,
            requested_version: Some(params.protocol_version),
            hooks: self.relay_hooks(None),
            era: self.options.upstream_era,
            era_cache: self.options.era_cache.clone(),
            observer: None,
        };
        let upstream = Upstream::connect(&self.config, speaker, on_unrouted).map_err(|e| {
            tracing::error!("cannot start the MCP server: {}", crate::error::report(&e));
            let cause = match &self.config {
                crate::server::legacy::upstream::UpstreamConfig::Connect(c)
                    if c.origin() == crate::server::legacy::translate::Origin::Remote =>
                {
                    Cause::ConnectFailed
                }
                _ => Cause::SpawnFailed,
            };
            Some(error_for(cause, None))
        })?;
        if let (Some(pid), Some(hook)) = (upstream.process_id(), &self.on_upstream_started) {
            hook(pid);
        }
        let limit = self.options.discover_timeout;
        match upstream.discover(limit).await {
            Ok(_) if upstream.legacy_initialize().is_some() => {
                let Some(own) = upstream.legacy_initialize() else { return Err(None) };
                tracing::info!(version = %own.protocol_version, "the MCP server speaks 2025-11-25: relaying to it");
                let caps = &own.capabilities;
                let on = |v: Option<bool>| v == Some(true);
                // Its change notifications come to the session as they are; no listen stream.
                let mut state = self.state();
                state.legacy_upstream = true;
                state.relays_per_request = upstream.is_shared();
                state.declared = Declared {
                    tools: on(caps.tools.as_ref().and_then(|c| c.list_changed)),
                    prompts: on(caps.prompts.as_ref().and_then(|c| c.list_changed)),
                    resources: on(caps.resources.as_ref().and_then(|c| c.list_changed)),
                    subscribe: on(caps.resources.as_ref().and_then(|c| c.subscribe)),
                };
                drop(state);
                let value = serde_json::to_value(own)
                    .map_err(|e| Some(error_for(Cause::InvalidResponse, Some(json!(e.to_string())))))?;
                Ok((upstream, value))
            }
            Ok(discover) => {
                let mask = ReplyMask { list_changed: true, subscribe: true };
                let result = translate::initialize_result(self.options.profile, &discover, mask);
                let caps = &result.capabilities;
                let on = |v: Option<bool>| v == Some(true);
                self.state().declared = Declared {
                    tools: on(caps.tools.as_ref().and_then(|c| c.list_changed)),
                    prompts: on(caps.prompts.as_ref().and_then(|c| c.list_changed)),
                    resources: on(caps.resources.as_ref().and_then(|c| c.list_changed)),
                    subscribe: on(caps.resources.as_ref().and_then(|c| c.subscribe)),
                };
                let value = serde_json::to_value(result)
                    .map_err(|e| Some(error_for(Cause::InvalidResponse, Some(json!(e.to_string())))))?;
                Ok((upstream, value))
            }
            Err(failed) => {
                tracing::warn!("server/discover failed: {}", failed.error);
                upstream.close().await;
                let error = match failed.error {
                    _ if failed.sign_in.is_some() || matches!(failed.http_status, Some(401 | 403)) => {
                        translate::errors::error_of_failed(&failed, ServerDiscover::NAME)
                            .unwrap_or_else(|| error_for(Cause::DiscoverFailed, None))
                    }
                    // The seed's fixed message, the server's code, its message in data.detail.
                    crate::Error::Rpc { error } => {
                        let mut failed = error_for(Cause::DiscoverFailed, Some(json!(error.message)));
                        failed.code = translate::upstream_error(&error).code;
                        failed
                    }
                    crate::Error::Timeout { .. } => {
                        error_for(Cause::DiscoverFailed, Some(json!({ "timeout_ms": limit.as_millis() })))
                    }
                    // Not discover's own failure: the cause of the SDK's error
                    // (upstream_exited, closed, transport_failed, ...).
                    _ => translate::errors::error_of_failed(&failed, ServerDiscover::NAME)
                        .unwrap_or_else(|| error_for(Cause::Closed, None)),
                };
                Err(Some(error))
            }
        }
    }
}
