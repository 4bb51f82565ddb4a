//! Settling the era with the server at the first request: the
//! `server/discover` probe, the 2025-11-25 handshake, the era cache.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::Message;
use mcp_bridge_protocol::method::{Initialize, Initialized, LoggingSetLevel, Method, ServerDiscover};
use serde_json::{Map, Value, json};

use super::time_limit::TimeLimit;
use super::{Client, Diagnostics, Era, RequestOptions, Spoken, Verdict, era, parse_result, to_json};
use crate::error::{Error, Result};

impl Client {
    /// The era settled with the server: `None` before the first request.
    pub fn spoken(&self) -> Option<&Spoken> {
        self.inner.spoken.get()
    }

    /// Settles the era with the server, as [`ClientOptions::era`](crate::ClientOptions::era) says: no
    /// request for [`Era::Modern`], the `initialize` handshake for
    /// [`Era::Legacy`], the `server/discover` probe then, when the server
    /// does not know it, the handshake for [`Era::Auto`]. Every request
    /// does this first; call it to connect before the first one.
    ///
    /// # Errors
    /// The probe's or the handshake's failure; the next call tries again.
    pub async fn connect(&self, options: &RequestOptions) -> Result<&Spoken> {
        self.inner
            .spoken
            .get_or_try_init(|| async {
                match self.inner.options.era {
                    Era::Modern => Ok(Spoken::Modern),
                    Era::Legacy => self.handshake(options).await,
                    Era::Auto => self.negotiate(options).await,
                }
            })
            .await
    }

    /// [`Era::Auto`]: the verdict of the era cache when it has one, else
    /// the `server/discover` probe (recorded in the cache), then the
    /// handshake when the server does not know it.
    async fn negotiate(&self, options: &RequestOptions) -> Result<Spoken> {
        let cached = self.inner.options.era_cache.as_ref().zip(self.inner.address.as_deref());
        match cached.and_then(|(cache, address)| cache.verdict(address)) {
            Some(Verdict::Modern) => {
                options.diagnose(|d| d.era_from_cache = true);
                self.inner.modern_from_cache.store(true, Ordering::Relaxed);
                return Ok(Spoken::Modern);
            }
            Some(Verdict::Legacy) => match self.handshake(options).await {
                Ok(spoken) => {
                    options.diagnose(|d| d.era_from_cache = true);
                    return Ok(spoken);
                }
                // The server moved on to 2026-07-28: probe it as if new.
                Err(e) if era::handshake_says_modern(&e) => {
                    if let Some((cache, address)) = cached {
                        cache.forget(address);
                    }
                }
                Err(e) => return Err(e),
            },
            None => {}
        }
        let (outcome, status) = self.probe(options).await;
        let record = |verdict| {
            if let Some((cache, address)) = cached {
                cache.record(address, verdict);
            }
        };
        match outcome {
            Ok(result) => {
                *self.inner.probed.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
                record(Verdict::Modern);
                Ok(Spoken::Modern)
            }
            Err(answer) if era::probe_says_legacy(&answer, status) => {
                tracing::debug!("the server does not know server/discover ({answer}): 2025-11-25");
                options.diagnose(|d| d.fell_back_to_legacy = true);
                let spoken = self.handshake(options).await?;
                record(Verdict::Legacy);
                Ok(spoken)
            }
            Err(other) => Err(other),
        }
    }

    /// The `server/discover` probe: its outcome and the HTTP status of its
    /// answer, which the era's verdict reads.
    pub(super) async fn probe(&self, options: &RequestOptions) -> (Result<Value>, Option<u16>) {
        let limit = Some(TimeLimit::starting_now(options.timeout.unwrap_or(self.inner.options.request_timeout)));
        // Its own diagnostics: the verdict reads the HTTP status.
        let seen = Arc::new(Mutex::new(Diagnostics::default()));
        let probe = RequestOptions { diagnostics: Some(seen.clone()), ..options.clone() };
        let outcome = self.exchange(ServerDiscover::NAME, &Map::new(), &probe, limit, false).await;
        let (status, rpc_error) = {
            let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            (seen.http_status, seen.rpc_error.clone())
        };
        // What the probe saw is the caller's to read too (a 401 and its sign-in).
        options.diagnose(|d| {
            d.http_status = status.or(d.http_status);
            d.rpc_error = rpc_error.or(d.rpc_error.take());
        });
        (outcome, status)
    }

    /// The 2025-11-25 `initialize` handshake: the request, the result's
    /// version checked, `notifications/initialized`, and the log level of
    /// the options, once.
    async fn handshake(&self, options: &RequestOptions) -> Result<Spoken> {
        let opts = &self.inner.options;
        let params = json!({
            "protocolVersion": opts.legacy_protocol_version,
            "capabilities": opts.capabilities,
            "clientInfo": opts.info,
        });
        let Value::Object(params) = params else { return Err(Error::Closed) };
        let limit = Some(TimeLimit::starting_now(options.timeout.unwrap_or(opts.request_timeout)));
        let value = self.exchange(Initialize::NAME, &params, options, limit, true).await?;
        let result: mcp_bridge_protocol::legacy::InitializeResult = parse_result(Initialize::NAME, value)?;
        if !mcp_bridge_protocol::legacy::is_known_version(&result.protocol_version) {
            return Err(Error::InvalidResponse {
                method: Initialize::NAME.into(),
                reason: format!(
                    "the server chose version {:?}, which this client does not speak",
                    result.protocol_version
                ),
            });
        }
        let initialized = mcp_bridge_protocol::JsonRpcNotification::new(Initialized::NAME, None);
        self.inner.out.send(Message::Notification(initialized)).await.map_err(|_| Error::Closed)?;
        if let (Some(level), true) = (opts.log_level, result.capabilities.logging.is_some()) {
            let mut params = Map::new();
            params.insert("level".into(), to_json(&level)?);
            if let Err(e) = self.exchange(LoggingSetLevel::NAME, &params, options, limit, true).await {
                tracing::debug!("logging/setLevel failed: {e}");
            }
        }
        Ok(Spoken::Legacy(Box::new(result)))
    }
}
