//! Progressive discovery (`"discovery": "progressive"`): instead of every
//! server's tools, `tools/list` shows the gateway's own two tools and the
//! pinned ones. `search_tools` finds tools of every server by the words
//! of a query (their names, descriptions and input schemas come back);
//! `call_tool` calls one by name. Every tool stays callable by its own
//! name too, so a client that found one may call it directly.

use mcp_bridge_protocol::types::Tool;
use serde_json::{Map, Value, json};

/// The gateway's tool that searches the tools.
pub(super) const SEARCH_TOOLS: &str = "search_tools";
/// The gateway's tool that calls a tool by name.
pub(super) const CALL_TOOL: &str = "call_tool";
/// The gateway's own tools' names, which no server's tool takes while
/// they are offered.
pub(super) const OWN_TOOLS: [&str; 2] = [SEARCH_TOOLS, CALL_TOOL];
/// Tools a search returns when it names no limit.
const DEFAULT_LIMIT: usize = 10;
/// The most a search returns: a page the model can read.
const MAX_LIMIT: usize = 50;

/// The gateway's two tools.
pub(super) fn own_tools() -> [Tool; 2] {
    let schema = |value: Value| match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let search = Tool::new(SEARCH_TOOLS)
        .with_description(
            "Searches the tools of every server behind this gateway by words (what the tool does, its name); \
             returns the best matches with their descriptions and input schemas. Call one with call_tool, \
             or by its name.",
        )
        .with_input_schema(schema(json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "Words of what the tool should do."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                      "description": "How many tools to return at most (default 10)."}
        }, "required": ["query"]})));
    let call = Tool::new(CALL_TOOL)
        .with_description("Calls a tool that search_tools found, by its name, with its arguments.")
        .with_input_schema(schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "The tool's name, as search_tools gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments, by its input schema."}
        }, "required": ["name"]})));
    [search, call]
}

/// The words of `text`: lowercase runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The `limit` tools of `tools` that match `query` best: each word of the
/// query found in a tool's name counts two, in its title or description
/// one; tools no word matches are left out; ties keep the list's order.
pub(super) fn search<'a>(tools: &'a [Tool], query: &str, limit: Option<u64>) -> Vec<&'a Tool> {
    let wanted = words(query);
    let limit = limit.map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(MAX_LIMIT)).clamp(1, MAX_LIMIT);
    let mut scored: Vec<(usize, &Tool)> = tools
        .iter()
        .map(|tool| {
            let name = words(&tool.name);
            let prose = words(&format!(
                "{} {}",
                tool.title.as_deref().unwrap_or_default(),
                tool.description.as_deref().unwrap_or_default()
            ));
            let score = wanted
                .iter()
                .map(|w| {
                    let in_name = name.iter().any(|n| n.starts_with(w.as_str()));
                    let in_prose = prose.iter().any(|p| p.starts_with(w.as_str()));
                    2 * usize::from(in_name) + usize::from(in_prose)
                })
                .sum();
            (score, tool)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored.into_iter().take(limit).map(|(_, tool)| tool).collect()
}

/// What a search returns of a tool: its name, title, description and
/// input schema.
pub(super) fn found(tool: &Tool) -> Value {
    let mut entry = json!({"name": tool.name, "inputSchema": tool.input_schema});
    if let Some(title) = &tool.title {
        entry["title"] = json!(title);
    }
    if let Some(description) = &tool.description {
        entry["description"] = json!(description);
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> Tool {
        Tool::new(name).with_description(description)
    }

    #[test]
    fn the_best_matches_come_first_and_tools_no_word_matches_are_left_out() {
        let tools = [
            tool("notes__echo", "Returns the text it is given."),
            tool("notes__add", "Adds two numbers."),
            tool("math__add_numbers", "Adds numbers."),
            tool("web__fetch", "Fetches a page."),
        ];
        let names = |found: Vec<&Tool>| found.into_iter().map(|t| t.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(search(&tools, "add numbers", None)), ["math__add_numbers", "notes__add"]);
        assert_eq!(names(search(&tools, "FETCH", None)), ["web__fetch"], "case does not matter");
        assert_eq!(names(search(&tools, "add", Some(1))), ["notes__add"], "a tie keeps the order");
        assert!(search(&tools, "weather", None).is_empty());
        assert!(search(&tools, "", None).is_empty());
    }

    #[test]
    fn a_found_tool_carries_what_a_call_needs() {
        let found = found(&tool("notes__add", "Adds two numbers."));
        assert_eq!(found["name"], "notes__add");
        assert_eq!(found["description"], "Adds two numbers.");
        assert!(found["inputSchema"].is_object());
    }
}
