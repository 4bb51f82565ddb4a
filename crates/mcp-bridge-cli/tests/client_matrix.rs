//! The client libraries people use, each through both routes a desktop or
//! agent setup takes to the example server: the stdio form (`mcp-bridge --
//! mcp-example-server`) and `mcp-bridge --listen` (Streamable HTTP). A row
//! per library and route, a column per operation, printed as a table (run
//! with `--nocapture`); every cell must be `ok` (`n/a`: the library has no
//! way to do it).

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use test_support::workspace_binary;
use tokio::process::Command;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");
const OPERATIONS: [&str; 6] = ["connect", "tools/list", "tools/call", "elicitation", "prompts/get", "resources/read"];

/// A library: its name in the table, and the command that runs one row
/// (the target is appended).
struct Library {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(&'static str, PathBuf)>,
}

fn libraries() -> Vec<Library> {
    let script = |name: &str| format!("{}/tests/{name}", env!("CARGO_MANIFEST_DIR"));
    let python = |name, program: PathBuf, library: &str| Library {
        name,
        program,
        args: vec![script("python/matrix_client.py"), library.to_owned()],
        env: Vec::new(),
    };
    let node = |name, library: &str, env| Library {
        name,
        program: "node".into(),
        args: vec![script("ts/matrix_client.mjs"), library.to_owned()],
        env,
    };
    vec![
        python("Python mcp 1.30", test_support::langchain_python(), "mcp1"),
        python("Python mcp 2.3", test_support::python_peer(), "mcp2"),
        python("fastmcp 4.1", test_support::fastmcp_python(), "fastmcp"),
        python("langchain-mcp-adapters 0.3", test_support::langchain_python(), "langchain"),
        node("TypeScript SDK 1.32", "ts1", vec![("TS_SDK_DIR", test_support::ts_sdk_dir())]),
        node("TypeScript SDK 2.4", "ts2", vec![("TS_CLIENT_DIR", test_support::ts_client_v2_dir())]),
    ]
}

/// One row: what `library` reported for each operation against `target`.
async fn row(library: &Library, target: &[&str]) -> Value {
    let run = Command::new(&library.program)
        .args(&library.args)
        .args(target)
        .envs(library.env.iter().map(|(k, v)| (*k, v)))
        .stdin(Stdio::null())
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .unwrap_or_else(|_| panic!("{} did not finish", library.name))
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        serde_json::json!({"connect": format!("no report: {}", stderr.lines().last().unwrap_or_default())})
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn every_client_library_works_through_the_stdio_form_and_listen() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let server = server.to_str().unwrap();
    let (_listening, url) = test_support::listening_bridge(BRIDGE, &["--", server]).await;
    let routes: [(&str, Vec<&str>); 2] = [("stdio form", vec![BRIDGE, "--", server]), ("--listen", vec![&url])];
    let mut table = format!("| library | route | {} |\n|---|---|{}\n", OPERATIONS.join(" | "), "---|".repeat(6));
    let mut failed = Vec::new();
    for library in libraries() {
        for (route, target) in &routes {
            let cells = row(&library, target).await;
            let shown: Vec<&str> = OPERATIONS.iter().map(|op| cells[*op].as_str().unwrap_or("missing")).collect();
            for (op, cell) in OPERATIONS.iter().zip(&shown) {
                if !matches!(*cell, "ok" | "n/a") {
                    failed.push(format!("{} via {route}, {op}: {cell}", library.name));
                }
            }
            let marks: Vec<&str> = shown.iter().map(|c| if matches!(*c, "ok" | "n/a") { *c } else { "FAIL" }).collect();
            table.push_str(&format!("| {} | {route} | {} |\n", library.name, marks.join(" | ")));
        }
    }
    eprintln!("{table}");
    assert!(failed.is_empty(), "{}\n{table}", failed.join("\n"));
}
