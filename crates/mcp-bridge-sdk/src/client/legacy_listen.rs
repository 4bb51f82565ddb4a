//! A listen stream on a 2025-11-25 session, which has no
//! `subscriptions/listen`: the filter is granted as far as the server's
//! `initialize` capabilities reach (list changes it announces, resource
//! updates when it takes `resources/subscribe`; no tasks), the resources
//! are subscribed one by one, and the session's change notifications that
//! the grant covers are the stream's events, marked with its subscription
//! id as a 2026-07-28 server marks them. The rules are pure; the client
//! runs them.

use mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY;
use mcp_bridge_protocol::method::{
    Method, PromptsListChanged, ResourcesListChanged, ResourcesUpdated, SubscriptionsAcknowledged, ToolsListChanged,
};
use mcp_bridge_protocol::types::{ServerCapabilities, SubscriptionFilter, SubscriptionsAcknowledgedNotificationParams};
use mcp_bridge_protocol::{JsonRpcNotification, RequestId};
use serde_json::{Map, Value, json};

/// The part of `wanted` a 2025-11-25 server with `capabilities` can give.
pub(crate) fn grant(wanted: &SubscriptionFilter, capabilities: &ServerCapabilities) -> SubscriptionFilter {
    let announces = |flag: Option<bool>| flag == Some(true);
    let yes = |wanted: Option<bool>, offered: bool| (wanted == Some(true) && offered).then_some(true);
    let resources = capabilities.resources.as_ref();
    let subscribes = resources.is_some_and(|r| announces(r.subscribe));
    SubscriptionFilter {
        tools_list_changed: yes(
            wanted.tools_list_changed,
            capabilities.tools.as_ref().is_some_and(|t| announces(t.list_changed)),
        ),
        prompts_list_changed: yes(
            wanted.prompts_list_changed,
            capabilities.prompts.as_ref().is_some_and(|p| announces(p.list_changed)),
        ),
        resources_list_changed: yes(
            wanted.resources_list_changed,
            resources.is_some_and(|r| announces(r.list_changed)),
        ),
        resource_subscriptions: wanted.resource_subscriptions.clone().filter(|uris| subscribes && !uris.is_empty()),
        task_ids: None,
        extra: Map::new(),
    }
}

/// Whether a notification of the session is an event of a stream with
/// this grant.
pub(crate) fn covers(granted: &SubscriptionFilter, notification: &JsonRpcNotification) -> bool {
    let on = |flag: Option<bool>| flag == Some(true);
    match notification.method.as_str() {
        ToolsListChanged::NAME => on(granted.tools_list_changed),
        PromptsListChanged::NAME => on(granted.prompts_list_changed),
        ResourcesListChanged::NAME => on(granted.resources_list_changed),
        ResourcesUpdated::NAME => {
            let uri = notification.params.as_ref().and_then(|p| p.get("uri")).and_then(Value::as_str);
            let subscribed = granted.resource_subscriptions.as_deref().unwrap_or_default();
            uri.is_some_and(|uri| subscribed.iter().any(|s| s == uri))
        }
        _ => false,
    }
}

/// `notification` as the event of stream `id`: its subscription id in
/// `_meta`.
pub(crate) fn as_event(notification: &JsonRpcNotification, id: &RequestId) -> JsonRpcNotification {
    let mut params = match &notification.params {
        Some(Value::Object(params)) => params.clone(),
        _ => Map::new(),
    };
    let meta = params.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(SUBSCRIPTION_ID_KEY.into(), id.to_value());
    }
    JsonRpcNotification::new(notification.method.clone(), Some(Value::Object(params)))
}

/// The acknowledgment a stream begins with: what was granted.
pub(crate) fn acknowledgment(granted: &SubscriptionFilter, id: &RequestId) -> JsonRpcNotification {
    let params =
        SubscriptionsAcknowledgedNotificationParams { notifications: granted.clone(), meta: None, extra: Map::new() };
    let bare = JsonRpcNotification::new(SubscriptionsAcknowledged::NAME, serde_json::to_value(params).ok());
    as_event(&bare, id)
}

/// How many listen streams of one 2025-11-25 session want each resource's
/// updates: the session has one subscription per URI, so it subscribes a
/// URI for the first stream that wants it and unsubscribes it after the
/// last (the end of one stream must not end another's updates).
#[derive(Debug, Default)]
pub(crate) struct SubscriptionCounts(std::collections::HashMap<String, usize>);

impl SubscriptionCounts {
    /// Counts a stream wanting `uris`; the ones no stream wanted before,
    /// to subscribe.
    pub(crate) fn want(&mut self, uris: &[String]) -> Vec<String> {
        let mut first = Vec::new();
        for uri in uris {
            let count = self.0.entry(uri.clone()).or_default();
            *count += 1;
            if *count == 1 {
                first.push(uri.clone());
            }
        }
        first
    }

    /// Counts a stream that no longer wants `uris`; the ones no stream
    /// wants now, to unsubscribe.
    pub(crate) fn release(&mut self, uris: &[String]) -> Vec<String> {
        let mut last = Vec::new();
        for uri in uris {
            if let Some(count) = self.0.get_mut(uri) {
                *count -= 1;
                if *count == 0 {
                    self.0.remove(uri);
                    last.push(uri.clone());
                }
            }
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uri_is_subscribed_for_its_first_stream_and_unsubscribed_after_its_last() {
        let uris = |list: &[&str]| list.iter().map(|u| (*u).to_owned()).collect::<Vec<String>>();
        let mut counts = SubscriptionCounts::default();
        assert_eq!(counts.want(&uris(&["note://a"])), uris(&["note://a"]));
        assert_eq!(counts.want(&uris(&["note://a", "note://b"])), uris(&["note://b"]), "a is subscribed already");
        assert!(counts.release(&uris(&["note://a"])).is_empty(), "the second stream still wants a");
        assert_eq!(counts.release(&uris(&["note://a", "note://b"])), uris(&["note://a", "note://b"]));
        assert!(counts.release(&uris(&["note://never"])).is_empty());
    }

    fn capabilities(value: Value) -> ServerCapabilities {
        serde_json::from_value(value).unwrap()
    }

    fn everything_wanted() -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resources_list_changed: Some(true),
            resource_subscriptions: Some(vec!["file:///a".into()]),
            task_ids: Some(vec!["t1".into()]),
            extra: Map::new(),
        }
    }

    #[test]
    fn only_what_the_server_announces_is_granted() {
        let all = capabilities(json!({
            "tools": {"listChanged": true}, "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": true}
        }));
        let granted = grant(&everything_wanted(), &all);
        assert_eq!(granted.tools_list_changed, Some(true));
        assert_eq!(granted.resource_subscriptions.as_deref(), Some(&["file:///a".to_owned()][..]));
        assert_eq!(granted.task_ids, None, "no tasks in 2025-11-25");

        let quiet = capabilities(json!({"tools": {}, "resources": {"subscribe": false}}));
        assert_eq!(grant(&everything_wanted(), &quiet), SubscriptionFilter::default());
        assert_eq!(grant(&SubscriptionFilter::default(), &all), SubscriptionFilter::default(), "nothing wanted");
    }

    #[test]
    fn a_stream_carries_the_changes_it_was_granted_marked_with_its_id() {
        let granted = SubscriptionFilter {
            tools_list_changed: Some(true),
            resource_subscriptions: Some(vec!["file:///a".into()]),
            ..Default::default()
        };
        let note = |method: &str, params: Option<Value>| JsonRpcNotification::new(method, params);
        assert!(covers(&granted, &note("notifications/tools/list_changed", None)));
        assert!(!covers(&granted, &note("notifications/prompts/list_changed", None)));
        assert!(covers(&granted, &note("notifications/resources/updated", Some(json!({"uri": "file:///a"})))));
        assert!(!covers(&granted, &note("notifications/resources/updated", Some(json!({"uri": "file:///b"})))));
        assert!(!covers(&granted, &note("notifications/message", Some(json!({"level": "info"})))));

        let event = as_event(
            &note("notifications/resources/updated", Some(json!({"uri": "file:///a"}))),
            &RequestId::Number(7),
        );
        let params = event.params.unwrap();
        assert_eq!(params["uri"], "file:///a");
        assert_eq!(params["_meta"][SUBSCRIPTION_ID_KEY], 7);
        let ack = acknowledgment(&granted, &RequestId::Number(7)).params.unwrap();
        assert_eq!(ack["notifications"]["toolsListChanged"], true);
        assert_eq!(ack["_meta"][SUBSCRIPTION_ID_KEY], 7);
    }
}
