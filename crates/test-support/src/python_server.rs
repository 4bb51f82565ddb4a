//! Scripted 2026-07-28 stdio servers in Python, for tests that need a
//! server to show what it received or which process answered.

/// A 2026-07-28 stdio server (run as `python3 -c SCRIPT`) that answers
/// `server/discover` with tools, acknowledges every listen stream, lists
/// `tools` (each taking any object), and answers `tools/call` with one
/// text: `text`, a Python expression over the request `msg` (and `os`),
/// `isError` by the expression `is_error`; other requests get -32601.
pub fn python_tool_server(tools: &[&str], text: &str, is_error: &str) -> String {
    let tools = serde_json::to_string(tools).unwrap_or_default();
    format!(
        r#"
import json, os, sys
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg["method"]
    if method == "server/discover":
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": {{"tools": {{}}}}}}}})
    elif method == "subscriptions/listen":
        out({{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {{
            "_meta": {{"io.modelcontextprotocol/subscriptionId": msg["id"]}},
            "notifications": msg["params"]["notifications"]}}}})
    elif method == "tools/list":
        tools = [{{"name": name, "inputSchema": {{"type": "object"}}}} for name in {tools}]
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete", "tools": tools}}}})
    elif method == "tools/call":
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "content": [{{"type": "text", "text": {text}}}], "isError": {is_error}}}}})
    else:
        out({{"jsonrpc": "2.0", "id": msg["id"], "error": {{"code": -32601, "message": "Method not found"}}}})
"#
    )
}
