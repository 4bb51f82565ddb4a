//! The merged lists of a toolset: what each available server shows (its
//! [`Exposure`]), under which name, and where each entry goes. No I/O here.

use std::collections::HashMap;

use mcp_bridge_protocol::types::{Prompt, Resource, Tool};

use super::exposure::{Exposure, NameFilter};
use super::names::{self, Clash};

/// A server's lists, as it gives them.
#[derive(Default, Clone)]
pub(super) struct Lists {
    pub(super) tools: Vec<Tool>,
    pub(super) prompts: Vec<Prompt>,
    pub(super) resources: Vec<Resource>,
}

/// Where a merged entry goes: its server and its own name there.
pub(super) type Routes = HashMap<String, (usize, String)>;

/// Two servers that show one tool or prompt name without a prefix, or one
/// server that shows a name twice: the first keeps it, the other entry is
/// left out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Collision {
    /// `tool` or `prompt`.
    pub what: &'static str,
    /// The name both show.
    pub name: String,
    /// The server whose entry has the name.
    pub kept: String,
    /// The server whose entry is left out.
    pub left_out: String,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.kept == self.left_out {
            return write!(
                f,
                "server {:?} shows the {} {:?} twice; the second is left out",
                self.kept, self.what, self.name
            );
        }
        write!(
            f,
            "servers {:?} and {:?} both show the {} {:?} without a prefix; {:?}'s is left out",
            self.kept, self.left_out, self.what, self.name, self.left_out
        )
    }
}

/// The merged lists and where each entry goes.
#[derive(Default)]
pub(super) struct Catalog {
    pub(super) tools: Vec<Tool>,
    pub(super) tool_routes: Routes,
    pub(super) prompts: Vec<Prompt>,
    pub(super) prompt_routes: Routes,
    pub(super) resources: Vec<Resource>,
    pub(super) resource_owners: HashMap<String, usize>,
    pub(super) collisions: Vec<Collision>,
}

/// A server as the catalog sees it: its name and what of it is shown.
pub(super) type Shown<'a> = (&'a str, &'a Exposure);

impl Catalog {
    /// The catalog of the `available` servers (each by its index into
    /// `servers`, with its lists).
    pub(super) fn of(servers: &[Shown<'_>], available: &[(usize, Lists)]) -> Catalog {
        let mut catalog = Catalog::default();
        let tools = Kind { what: "tool", items: |l| &l.tools, name: |t| &t.name, filter: |e| &e.tools };
        (catalog.tools, catalog.tool_routes) =
            merge(servers, available, &tools, |t, name| Tool { name, ..t.clone() }, &mut catalog.collisions);
        let prompts = Kind { what: "prompt", items: |l| &l.prompts, name: |p| &p.name, filter: |e| &e.prompts };
        (catalog.prompts, catalog.prompt_routes) =
            merge(servers, available, &prompts, |p, name| Prompt { name, ..p.clone() }, &mut catalog.collisions);
        for (index, lists) in available {
            for resource in lists.resources.iter().filter(|r| servers[*index].1.resources.admits(&r.uri)) {
                // Two servers with one URI: the first added keeps it.
                if !catalog.resource_owners.contains_key(&resource.uri) {
                    catalog.resource_owners.insert(resource.uri.clone(), *index);
                    catalog.resources.push(resource.clone());
                }
            }
        }
        catalog
    }
}

/// One kind of named entry: where it is in the lists, its name, its filter.
struct Kind<T> {
    what: &'static str,
    items: fn(&Lists) -> &Vec<T>,
    name: fn(&T) -> &String,
    filter: fn(&Exposure) -> &NameFilter,
}

/// The entries of one kind that the `available` servers show, under their
/// toolset names, with the route of each; collisions added to `collisions`.
fn merge<T>(
    servers: &[Shown<'_>],
    available: &[(usize, Lists)],
    kind: &Kind<T>,
    renamed: fn(&T, String) -> T,
    collisions: &mut Vec<Collision>,
) -> (Vec<T>, Routes) {
    let entries: Vec<(usize, &T)> = available
        .iter()
        .flat_map(|(i, lists)| (kind.items)(lists).iter().map(move |t| (*i, t)))
        .filter(|(i, t)| (kind.filter)(servers[*i].1).admits((kind.name)(t)))
        .collect();
    let wanted: Vec<_> = entries
        .iter()
        .map(|(i, t)| {
            let (server, exposure) = servers[*i];
            (server, exposure.renamed((kind.name)(t)), exposure.prefix)
        })
        .collect();
    let (names, clashes) = names::assign_with(&wanted);
    for Clash { kept, left_out } in clashes {
        collisions.push(Collision {
            what: kind.what,
            name: wanted[left_out].1.to_owned(),
            kept: wanted[kept].0.to_owned(),
            left_out: wanted[left_out].0.to_owned(),
        });
    }
    let mut routes = Routes::new();
    let mut merged = Vec::new();
    for ((index, entry), shown) in entries.iter().zip(names) {
        let Some(shown) = shown else { continue };
        routes.insert(shown.clone(), (*index, (kind.name)(entry).clone()));
        merged.push(renamed(entry, shown));
    }
    (merged, routes)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::toolset::exposure::Prefix;

    fn lists(tools: &[&str], uris: &[&str]) -> Lists {
        Lists {
            tools: tools.iter().map(|name| Tool::new(*name)).collect(),
            prompts: Vec::new(),
            resources: uris.iter().map(|uri| Resource::new(*uri, "r")).collect(),
        }
    }

    fn names(catalog: &Catalog) -> Vec<&str> {
        catalog.tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn filters_renames_and_prefixes_shape_the_lists_and_the_routes() {
        let files = Exposure::default()
            .with_tools(NameFilter::new(&["read_*", "write_*"], &["write_secret"]).unwrap())
            .with_resources(NameFilter::new(&["file:///public/*"], &[]).unwrap())
            .with_prefix(Prefix::Never)
            .with_rename(BTreeMap::from([("read_file".to_owned(), "cat".to_owned())]));
        let web = Exposure::default();
        let servers = [("files", &files), ("web", &web)];
        let available = [
            (0, lists(&["read_file", "write_file", "write_secret", "delete"], &["file:///public/a", "file:///etc/x"])),
            (1, lists(&["fetch"], &[])),
        ];
        let catalog = Catalog::of(&servers, &available);
        assert_eq!(names(&catalog), ["cat", "write_file", "web__fetch"]);
        assert_eq!(catalog.tool_routes["cat"], (0, "read_file".to_owned()), "a call goes by the server's own name");
        assert!(!catalog.tool_routes.contains_key("write_secret") && !catalog.tool_routes.contains_key("delete"));
        assert_eq!(catalog.resources.len(), 1);
        assert!(catalog.resource_owners.contains_key("file:///public/a"));
        assert!(catalog.collisions.is_empty());
    }

    #[test]
    fn two_servers_without_prefixes_showing_one_name_are_a_collision() {
        let never = Exposure::default().with_prefix(Prefix::Never);
        let servers = [("a", &never), ("b", &never)];
        let catalog = Catalog::of(&servers, &[(0, lists(&["echo"], &[])), (1, lists(&["echo", "add"], &[]))]);
        assert_eq!(names(&catalog), ["echo", "add"]);
        assert_eq!(catalog.tool_routes["echo"].0, 0, "the first added keeps the name");
        let collision = &catalog.collisions[0];
        assert_eq!((collision.kept.as_str(), collision.left_out.as_str()), ("a", "b"));
        assert!(collision.to_string().contains("\"a\" and \"b\" both show the tool \"echo\""), "{collision}");
    }
}
