//! The client side of the suite: plays a client scenario against the
//! scenario's server with our SDK's Streamable HTTP client, as any
//! application would. It discovers the server, lists what it offers and
//! uses it; the scenario's server judges the requests it receives.

use std::sync::Arc;

use mcp_bridge_protocol::types::{CreateMessageResult, ElicitResult, Root, Tool};
use mcp_bridge_sdk::auth::{
    AuthorizationRequest, AuthorizationResponse, Authorize, ClientKey, EnterpriseIdp, Grant, OAuthClient, OAuthConfig,
    PreRegistered, SigningAlgorithm, TokenSource, authorize,
};
use mcp_bridge_sdk::client::{Era, InputHooks};
use mcp_bridge_sdk::store::MemoryStore;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{BoxError, Client, ClientOptions, RequestOptions};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// What the harness tells a client: `MCP_CONFORMANCE_CONTEXT`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScenarioContext {
    /// Tool calls to make, with their exact arguments, instead of calling
    /// every listed tool with made-up ones.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSpec>,
    /// A pre-registered OAuth client (authorization scenarios).
    #[serde(default, rename = "client_id")]
    pub client_id: Option<String>,
    /// Its secret.
    #[serde(default, rename = "client_secret")]
    pub client_secret: Option<String>,
    /// Its private key, PEM PKCS #8 (`private_key_jwt` scenarios).
    #[serde(default, rename = "private_key_pem")]
    pub private_key_pem: Option<String>,
    /// The key's algorithm (`ES256`).
    #[serde(default, rename = "signing_algorithm")]
    pub signing_algorithm: Option<String>,
    /// The workload's identity token (workload identity scenarios).
    #[serde(default, rename = "valid_jwt")]
    pub workload_token: Option<String>,
    /// The enterprise identity provider's issuer (enterprise-managed
    /// authorization).
    #[serde(default, rename = "idp_issuer")]
    pub idp_issuer: Option<String>,
    /// This client's id at that provider.
    #[serde(default, rename = "idp_client_id")]
    pub idp_client_id: Option<String>,
    /// The user's ID token from that provider.
    #[serde(default, rename = "idp_id_token")]
    pub idp_id_token: Option<String>,
    /// The scenario's name.
    #[serde(default)]
    pub name: Option<String>,
}

impl ScenarioContext {
    /// Whether the scenario wants tokens bound to the client's key (DPoP).
    fn dpop(&self) -> bool {
        self.name.as_deref().is_some_and(|n| n.starts_with("auth/dpop"))
    }

    /// Whether the scenario wants the client to sign in as itself.
    fn client_credentials(&self) -> bool {
        self.name.as_deref().is_some_and(|n| n.starts_with("auth/client-credentials"))
    }
}

/// One tool call the scenario asks for.
#[derive(Debug, Deserialize)]
pub struct ToolCallSpec {
    /// The tool.
    pub name: String,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Value,
}

/// How far a scenario goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Discover and list the tools, nothing more (the scenario's server
    /// serves only that).
    ListOnly,
    /// Use everything the server offers.
    Everything,
}

impl Depth {
    /// The depth a named scenario needs.
    pub fn of(scenario: &str) -> Depth {
        match scenario {
            "request-metadata" | "json-schema-ref-no-deref" => Depth::ListOnly,
            _ => Depth::Everything,
        }
    }
}

/// The revision a scenario runs at, as the suite names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revision {
    /// None named: the client negotiates ([`Era::Auto`]).
    Negotiated,
    /// 2026-07-28.
    Modern,
    /// A 2025-11-25-era version, asked for in `initialize`.
    Legacy(String),
}

/// A value that satisfies a JSON Schema's `type` (or its `enum`,
/// `const` or `default`), for filling arguments and forms.
pub fn sample_value(schema: &Value) -> Value {
    if let Some(v) = schema.get("const").or_else(|| schema.get("default")) {
        return v.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find_map(Value::as_str).unwrap_or("string"),
        Some(Value::String(kind)) => kind.as_str(),
        _ => "string",
    };
    match kind {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "object" => Value::Object(sample_object(schema, false)),
        "array" => json!([]),
        "null" => Value::Null,
        _ => json!("conformance"),
    }
}

/// An object for a schema: its required properties, or all of them.
pub fn sample_object(schema: &Value, all_properties: bool) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Map::new();
    };
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    properties
        .iter()
        .filter(|(name, _)| all_properties || required.contains(&name.as_str()))
        .map(|(name, property)| (name.clone(), sample_value(property)))
        .collect()
}

/// A client that declares elicitation, sampling and roots and answers each
/// with plausible values.
pub fn client_options() -> ClientOptions {
    let mut options = ClientOptions::new("mcp-conformance-client", env!("CARGO_PKG_VERSION"));
    options.capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}}))
        .expect("invariant: the literal capabilities are valid");
    options.hooks = InputHooks::new()
        .on_form(|params| async move {
            let schema = serde_json::to_value(&params.requested_schema)?;
            let content = sample_object(&schema, true);
            serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": content}))
        })
        .on_sampling(|_params| async move {
            serde_json::from_value::<CreateMessageResult>(json!({
                "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "mcp-conformance-client"
            }))
        })
        .on_roots(|| async move {
            serde_json::from_value::<Vec<Root>>(json!([{"uri": "file:///conformance/root", "name": "root"}]))
        });
    options
}

/// The client ID metadata document URL the client offers where the
/// authorization server accepts one (the suite does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The redirect URI registered; the sign-in below never needs a listener
/// there, as it reads the redirect itself.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// Signs in as a browser would whose user approves at once: GETs the
/// authorization URL and reads the redirect back to the client.
fn follow_authorization() -> Authorize {
    authorize(|request: AuthorizationRequest| async move {
        let http = reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build()?;
        let response = http.get(&request.url).send().await.map_err(reqwest::Error::without_url)?;
        let location =
            response.headers().get("location").and_then(|l| l.to_str().ok()).ok_or_else(|| {
                format!("the authorization endpoint answered {} without a redirect", response.status())
            })?;
        Ok::<_, BoxError>(AuthorizationResponse::from_redirect(location)?)
    })
}

/// The OAuth client of an authorization scenario.
fn oauth(url: &str, context: &ScenarioContext) -> Result<OAuthClient, String> {
    let mut config =
        OAuthConfig::new(url, REDIRECT_URI, "mcp-conformance-client").with_client_metadata_url(CLIENT_METADATA_URL);
    if let Some(client_id) = &context.client_id {
        let mut client = PreRegistered::new(client_id);
        client.client_secret = context.client_secret.clone();
        if let Some(pem) = &context.private_key_pem {
            let name = context.signing_algorithm.as_deref().unwrap_or("ES256");
            let algorithm = SigningAlgorithm::from_name(name).ok_or_else(|| format!("unknown algorithm {name}"))?;
            client = client.with_private_key(ClientKey::from_pem(pem, algorithm).map_err(|e| e.to_string())?);
        }
        config = config.with_pre_registered(client);
    }
    if context.client_credentials() {
        config = config.with_grant(Grant::ClientCredentials);
    }
    config.dpop = context.dpop();
    if let Some(token) = &context.workload_token {
        config = config.with_grant(Grant::JwtBearer(TokenSource::fixed(token)));
    }
    if let (Some(issuer), Some(id_token)) = (&context.idp_issuer, &context.idp_id_token) {
        let client = PreRegistered::new(context.idp_client_id.clone().unwrap_or_default());
        let idp = EnterpriseIdp::new(issuer, client, TokenSource::fixed(id_token));
        config = config.with_grant(Grant::EnterpriseManaged(idp));
    }
    OAuthClient::new(config, follow_authorization(), Arc::new(MemoryStore::default())).map_err(|e| e.to_string())
}

/// Plays a scenario against the server at `url`, signing in with OAuth
/// when `sign_in` is set. Returns what went wrong, one line each; empty
/// when everything worked.
pub async fn play(
    url: &str,
    depth: Depth,
    sign_in: bool,
    context: &ScenarioContext,
    revision: &Revision,
) -> Vec<String> {
    let mut config = HttpConfig::new(url);
    if sign_in {
        match oauth(url, context) {
            Ok(client) => config.auth = Some(Arc::new(client)),
            Err(e) => return vec![format!("cannot make the OAuth client: {e}")],
        }
    }
    let transport = match connect(config) {
        Ok(transport) => transport,
        Err(e) => return vec![format!("cannot connect: {e}")],
    };
    let mut options = client_options();
    match revision {
        Revision::Negotiated => options.era = Era::Auto,
        Revision::Modern => options.era = Era::Modern,
        Revision::Legacy(version) => {
            options.era = Era::Legacy;
            options.legacy_protocol_version = version.clone();
        }
    }
    let client = Client::new(options, transport);
    let mut failures = Vec::new();
    let o = RequestOptions::default();
    // Discovery is optional for a client; a server without it is still used.
    let capabilities = match client.discover(&o).await {
        Ok(found) => Some(found.capabilities),
        Err(e) => {
            eprintln!("mcp-conformance-client: server/discover: {e} (going on without it)");
            None
        }
    };
    let tools = match client.list_all_tools(&o).await {
        Ok(tools) => tools,
        Err(e) => {
            failures.push(format!("tools/list: {e}"));
            Vec::new()
        }
    };
    if depth == Depth::ListOnly {
        client.close().await;
        return failures;
    }
    let calls: Vec<(String, Value)> = if let Some(calls) = scripted_calls(context.name.as_deref(), &tools) {
        calls
    } else if context.tool_calls.is_empty() {
        tools.iter().map(|t| (t.name.clone(), arguments_for(t))).collect()
    } else {
        context.tool_calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect()
    };
    for (name, arguments) in calls {
        if let Err(e) = client.call_tool(&name, arguments, &o).await {
            failures.push(format!("tools/call {name}: {e}"));
        }
    }
    let offers =
        |pick: fn(&mcp_bridge_protocol::types::ServerCapabilities) -> bool| capabilities.as_ref().is_some_and(pick);
    if offers(|c| c.resources.is_some()) {
        failures.extend(use_resources(&client, &o).await);
    }
    if offers(|c| c.prompts.is_some()) {
        failures.extend(use_prompts(&client, &o).await);
    }
    client.close().await;
    failures
}

/// The calls a scenario's instructions ask for where its context names
/// none: `json-schema-2020-12-preservation` wants the focal tool's
/// `inputSchema`, as the client holds it, echoed back through its echo tool.
fn scripted_calls(scenario: Option<&str>, tools: &[Tool]) -> Option<Vec<(String, Value)>> {
    match scenario? {
        "json-schema-2020-12-preservation" => {
            let focal = tools.iter().find(|t| t.name == "json_schema_2020_12_tool")?;
            Some(vec![("json_schema_echo".to_owned(), json!({ "schema": focal.input_schema }))])
        }
        _ => None,
    }
}

fn arguments_for(tool: &Tool) -> Value {
    let schema = serde_json::to_value(&tool.input_schema).unwrap_or(Value::Null);
    Value::Object(sample_object(&schema, false))
}

async fn use_resources(client: &Client, o: &RequestOptions) -> Vec<String> {
    let resources = match client.list_all_resources(o).await {
        Ok(resources) => resources,
        Err(e) => return vec![format!("resources/list: {e}")],
    };
    let mut failures = Vec::new();
    for resource in resources {
        if let Err(e) = client.read_resource(&resource.uri, o).await {
            failures.push(format!("resources/read {}: {e}", resource.uri));
        }
    }
    failures
}

async fn use_prompts(client: &Client, o: &RequestOptions) -> Vec<String> {
    let prompts = match client.list_all_prompts(o).await {
        Ok(prompts) => prompts,
        Err(e) => return vec![format!("prompts/list: {e}")],
    };
    let mut failures = Vec::new();
    for prompt in prompts {
        let arguments: Map<String, Value> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| (a.name.clone(), json!("conformance")))
            .collect();
        if let Err(e) = client.get_prompt(&prompt.name, arguments, o).await {
            failures.push(format!("prompts/get {}: {e}", prompt.name));
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_values_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {"type": "integer"}, "flag": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["x", "y"]}, "note": {"type": "string"}
        }, "required": ["a", "b", "mode"]});
        assert_eq!(Value::Object(sample_object(&schema, false)), json!({"a": 1, "b": 1, "mode": "x"}));
        let all = sample_object(&schema, true);
        assert_eq!(all["flag"], json!(true));
        assert_eq!(all["note"], json!("conformance"));
    }
}
