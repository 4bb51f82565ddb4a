//! The Skills extension and MCP Apps through the SDK's client and server:
//! publishing skills, listing and getting their entries, browsing their
//! directories, verified reads (and what a tampered entry or file gets),
//! and tool views.

use mcp_bridge_protocol::types::{Implementation, Resource, SkillResources, Tool};
use mcp_bridge_sdk::apps::{self, APP_MIME_TYPE};
use mcp_bridge_sdk::server::SkillPackage;
use mcp_bridge_sdk::skills::SkillError;
use mcp_bridge_sdk::{Client, ClientOptions, Error, Reply, RequestOptions, Server, transport};
use serde_json::{Value, json};

const SKILL_MD: &str = "---\nname: refunds\ndescription: Process refund requests per policy\nlicense: MIT\nmetadata:\n  version: '1.2'\n---\n\n# Refunds\n\nPick a template in `templates/`.\n";

fn refunds() -> SkillPackage {
    SkillPackage::new(
        "acme/refunds",
        vec![
            ("templates/email.md".into(), b"Dear customer,".to_vec()),
            ("SKILL.md".into(), SKILL_MD.as_bytes().to_vec()),
            ("templates/regional/eu.md".into(), b"EU rules".to_vec()),
            ("scripts/tool.bin".into(), vec![0, 159, 146, 150, 255]),
        ],
    )
    .unwrap()
}

fn server() -> Server {
    let view: Resource = serde_json::from_value(json!({"uri": "ui://weather/dashboard", "name": "dashboard",
        "mimeType": APP_MIME_TYPE}))
    .unwrap();
    let not_a_view: Resource =
        serde_json::from_value(json!({"uri": "ui://weather/plain", "name": "plain", "mimeType": "text/html"})).unwrap();
    let weather: Tool = serde_json::from_value(json!({"name": "weather", "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": "ui://weather/dashboard"}}}))
    .unwrap();
    Server::builder(Implementation::new("skills", "1"))
        .skill(refunds())
        .tool(weather, |_call, _ctx| async move {
            Ok(Reply::Complete(
                serde_json::from_value(json!({"content": [{"type": "text", "text": "sunny"}]})).unwrap(),
            ))
        })
        .resource(view, |request, _ctx| async move {
            Ok(Reply::Complete(vec![
                serde_json::from_value(json!({"uri": request.uri, "mimeType": APP_MIME_TYPE,
                "text": "<!DOCTYPE html><html><body>sunny</body></html>",
                "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example"]}, "prefersBorder": true}}}))
                .unwrap(),
            ]))
        })
        .resource(not_a_view, |request, _ctx| async move {
            Ok(Reply::Complete(vec![
                serde_json::from_value(json!({"uri": request.uri, "mimeType": "text/html",
                "text": "<html></html>"}))
                .unwrap(),
            ]))
        })
        .build()
}

fn client(server: &Server) -> Client {
    Client::new(ClientOptions::new("skills-client", "1"), transport::memory::connect(server))
}

fn code<T: std::fmt::Debug>(result: Result<T, Error>) -> i64 {
    match result {
        Err(Error::Rpc { error }) => error.code,
        other => panic!("an RPC error was expected, got {other:?}"),
    }
}

#[tokio::test]
async fn skills_are_listed_with_manifests_and_read_verified() {
    let server = server();
    let client = client(&server);
    let o = RequestOptions::default();
    let discovered = client.discover(&o).await.unwrap();
    let extensions = discovered.capabilities.extensions.unwrap();
    assert_eq!(extensions["io.modelcontextprotocol/skills"], json!({"directoryRead": true}));
    assert!(discovered.capabilities.resources.is_some(), "the extension needs the resources capability");

    let skills = client.list_all_skills(&o).await.unwrap();
    assert_eq!(skills.len(), 1);
    let entry = &skills[0];
    assert_eq!(entry.uri, "skill://acme/refunds/SKILL.md");
    assert_eq!(
        Value::Object(entry.frontmatter.clone()),
        json!({"name": "refunds", "description": "Process refund requests per policy", "license": "MIT",
            "metadata": {"version": "1.2"}})
    );
    let SkillResources::Listed(files) = &entry.resources else { panic!("a manifest was expected") };
    assert_eq!(files[0].uri, entry.uri, "SKILL.md first");
    assert_eq!(files.len(), 4);
    assert_eq!(client.get_skill(&entry.uri, &o).await.unwrap(), *entry);
    assert_eq!(code(client.get_skill("skill://acme/chargebacks/SKILL.md", &o).await), -32602);

    for file in files {
        let bytes = client.read_skill_file(entry, &file.uri, &o).await.unwrap();
        assert_eq!(bytes.len() as u64, file.size);
    }
    let binary = client.read_skill_file(entry, "skill://acme/refunds/scripts/tool.bin", &o).await.unwrap();
    assert_eq!(binary, [0, 159, 146, 150, 255], "non-UTF-8 files travel as blobs, byte for byte");
}

#[tokio::test]
async fn directories_list_their_direct_children() {
    let server = server();
    let client = client(&server);
    let o = RequestOptions::default();
    let names = |uri: &'static str| {
        let client = client.clone();
        async move {
            let page = client.read_directory(uri, None, &RequestOptions::default()).await.unwrap();
            page.resources.into_iter().map(|r| (r.name, r.mime_type.unwrap_or_default())).collect::<Vec<_>>()
        }
    };
    let dir = "inode/directory".to_owned();
    assert_eq!(
        names("skill://acme/refunds").await,
        [
            ("refunds".into(), "text/markdown".into()),
            ("scripts".into(), dir.clone()),
            ("templates".into(), dir.clone())
        ]
    );
    assert_eq!(
        names("skill://acme/refunds/templates").await,
        [("email.md".into(), "text/markdown".into()), ("regional".into(), dir.clone())]
    );
    assert_eq!(names("skill://acme").await, [("refunds".into(), dir)]);
    assert_eq!(code(client.read_directory("skill://acme/refunds/SKILL.md", None, &o).await), -32602);
    assert_eq!(code(client.read_directory("skill://nowhere", None, &o).await), -32602);
}

#[tokio::test]
async fn a_file_that_does_not_match_its_entry_is_refused() {
    let server = server();
    let client = client(&server);
    let o = RequestOptions::default();
    let entry = client.get_skill("skill://acme/refunds/SKILL.md", &o).await.unwrap();
    let SkillResources::Listed(files) = &entry.resources else { panic!() };
    let email = "skill://acme/refunds/templates/email.md";
    let refused = |result: Result<Vec<u8>, Error>| match result {
        Err(Error::Skill(e)) => e,
        other => panic!("a refusal was expected, got {other:?}"),
    };

    let tampered = |change: &dyn Fn(&mut mcp_bridge_protocol::types::SkillResource)| {
        let mut stale = entry.clone();
        if let SkillResources::Listed(files) = &mut stale.resources {
            files.iter_mut().filter(|f| f.uri == email).for_each(change);
        }
        stale
    };
    let other_digest = tampered(&|f| f.digest = mcp_bridge_sdk::skills::digest(b"what was approved"));
    assert_eq!(
        refused(client.read_skill_file(&other_digest, email, &o).await),
        SkillError::DigestMismatch(email.into())
    );
    let other_size = tampered(&|f| f.size += 1);
    assert!(matches!(refused(client.read_skill_file(&other_size, email, &o).await), SkillError::SizeMismatch { .. }));

    let mut fewer = entry.clone();
    fewer.resources = SkillResources::Listed(files.iter().filter(|f| f.uri != email).cloned().collect());
    assert_eq!(refused(client.read_skill_file(&fewer, email, &o).await), SkillError::Unlisted(email.into()));

    let mut approved = entry.clone();
    approved.frontmatter.insert("license".into(), json!("Apache-2.0"));
    let mismatch = refused(client.read_skill_file(&approved, &entry.uri, &o).await);
    assert!(matches!(mismatch, SkillError::FrontmatterMismatch { ref reason, .. } if reason.contains("license")));

    let mut dynamic = entry.clone();
    dynamic.resources = SkillResources::Dynamic;
    assert_eq!(refused(client.read_skill_file(&dynamic, email, &o).await), SkillError::Dynamic);

    let mut renamed = entry.clone();
    renamed.frontmatter.insert("name".into(), json!("chargebacks"));
    assert!(matches!(refused(client.read_skill_file(&renamed, email, &o).await), SkillError::InvalidEntry(_)));
}

#[test]
fn packages_that_break_the_rules_are_refused() {
    let skill_md = |name: &str| format!("---\nname: {name}\ndescription: d\n---\n").into_bytes();
    type Files = Vec<(String, Vec<u8>)>;
    let cases: Vec<(&str, Files, &str)> = vec![
        ("a", vec![("README.md".into(), b"x".to_vec())], "no SKILL.md"),
        ("a", vec![("SKILL.md".into(), skill_md("b"))], "end its path"),
        ("Bad_Name", vec![("SKILL.md".into(), skill_md("Bad_Name"))], "must be valid"),
        ("a", vec![("SKILL.md".into(), skill_md("a")), ("../x".into(), vec![])], "not a file path"),
        ("a", vec![("SKILL.md".into(), skill_md("a")), ("SKILL.md".into(), skill_md("a"))], "not a file path"),
        ("../a", vec![("SKILL.md".into(), skill_md("a"))], "not a skill path"),
        ("a", vec![("SKILL.md".into(), b"no frontmatter".to_vec())], "begin with"),
    ];
    for (path, files, why) in cases {
        let err = SkillPackage::new(path, files).unwrap_err().to_string();
        assert!(err.contains(why), "{path}: {err}");
    }
    let mut many = vec![("SKILL.md".to_owned(), skill_md("a"))];
    many.extend((0..512).map(|i| (format!("f{i}"), Vec::new())));
    assert!(SkillPackage::new("a", many).unwrap_err().to_string().contains("over the limits"));
}

#[tokio::test]
async fn tool_views_are_found_and_checked() {
    let server = server();
    let mut options = ClientOptions::new("apps-client", "1");
    apps::declare(&mut options.capabilities);
    assert_eq!(
        options.capabilities.extensions.as_ref().unwrap()["io.modelcontextprotocol/ui"],
        json!({"mimeTypes": [APP_MIME_TYPE]})
    );
    let client = Client::new(options, transport::memory::connect(&server));
    let o = RequestOptions::default();
    let tools = client.list_all_tools(&o).await.unwrap();
    let ui = apps::tool_ui(&tools[0]).unwrap();
    assert_eq!(ui.resource_uri.as_deref(), Some("ui://weather/dashboard"));
    assert!(ui.visible_to_model() && ui.callable_by_app());
    let view = client.read_ui_resource("ui://weather/dashboard", &o).await.unwrap();
    assert!(view.html.starts_with("<!DOCTYPE html>"));
    assert_eq!(view.ui_meta.unwrap()["csp"]["connectDomains"], json!(["https://api.example"]));
    let wrong_type = client.read_ui_resource("ui://weather/plain", &o).await.unwrap_err();
    assert!(matches!(&wrong_type, Error::InvalidResponse { reason, .. } if reason.contains("profile=mcp-app")));
    let not_ui = client.read_ui_resource("skill://acme/refunds/SKILL.md", &o).await.unwrap_err();
    assert!(matches!(not_ui, Error::InvalidResponse { .. }));

    let app_only: Tool = serde_json::from_value(json!({"name": "refresh", "inputSchema": {"type": "object"},
        "_meta": {"ui": {"resourceUri": "ui://weather/dashboard", "visibility": ["app"]}}}))
    .unwrap();
    assert!(!apps::tool_ui(&app_only).unwrap().visible_to_model());
    let legacy: Tool = serde_json::from_value(json!({"name": "old", "inputSchema": {"type": "object"},
        "_meta": {"ui/resourceUri": "ui://weather/dashboard"}}))
    .unwrap();
    assert_eq!(apps::tool_ui(&legacy).unwrap().resource_uri.as_deref(), Some("ui://weather/dashboard"));
    let plain: Tool = serde_json::from_value(json!({"name": "p", "inputSchema": {"type": "object"}})).unwrap();
    assert_eq!(apps::tool_ui(&plain), None);
}
