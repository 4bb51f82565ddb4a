//! The configuration files people already have for their servers: Claude
//! Desktop's and Cursor's `mcpServers` and VS Code's `servers` (`mcp.json`),
//! read into [`ServerEntry`]s. Beside a server's entry (clients ignore keys
//! they do not know): `"tools"`, `"prompts"` and `"resources"` as
//! `{"allow": [globs], "deny": [globs]}`, `"prefix"` (`"always"`,
//! `"never"`, `"on-collision"`) and `"rename"` (`{"name": "new_name"}`),
//! read into its [`Exposure`]. `"${env:NAME}"` in a value is the
//! environment variable `NAME`, so secrets stay out of the file. No I/O
//! here but the environment lookup the caller passes.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

use super::authorize::ToolScopes;
use super::exposure::{BadGlob, Exposure, Globs, NameFilter, Prefix};

/// One server of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerEntry {
    /// Its name (the file's key).
    pub name: String,
    /// How it is reached.
    pub kind: ServerKind,
    /// What of it a toolset shows.
    pub exposure: Exposure,
    /// The scopes a caller needs for its tools (`"authorize"`), for a
    /// gateway on a protected endpoint to apply.
    pub authorize: ToolScopes,
    /// Its tools a gateway lists even under progressive discovery
    /// (`"pinned"`, globs over the server's own names).
    pub pinned: Globs,
    /// Whether a gateway's clients share it (`"sharing"`).
    pub sharing: Sharing,
    /// How long a daemon keeps it running once no client uses it
    /// (`"idle"`: `"30s"`, `"10m"`, `"1h"`); `None` leaves it to the
    /// daemon's default.
    pub idle: Option<std::time::Duration>,
}

/// Whether a gateway's clients share a server (`"sharing"` beside the
/// server's entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Sharing {
    /// One instance (one process, one connection) for every client.
    #[default]
    Shared,
    /// An instance of its own for each client: a stateful server that
    /// must not be shared.
    PerSession,
}

impl ServerEntry {
    /// A new client of this server, reached as its entry says (a child of
    /// its own on stdio, or its own Streamable HTTP connection), speaking
    /// with `options`.
    ///
    /// # Errors
    /// Why it cannot be reached: its program cannot be started, say.
    pub fn client(&self, options: crate::ClientOptions) -> crate::Result<crate::Client> {
        Ok(crate::Client::new(options, connect(&self.kind)?))
    }

    /// The URL of a server reached over HTTP whose headers give no
    /// `Authorization` and that has no [`UrlAuth`] yet: one an application
    /// may sign in to ([`Self::set_auth`]).
    #[cfg(feature = "http-client")]
    pub fn url_to_sign_in(&self) -> Option<&str> {
        match &self.kind {
            ServerKind::Url { url, headers, auth: None }
                if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization")) =>
            {
                Some(url)
            }
            _ => None,
        }
    }

    /// Gives every request to this server (a URL's) the credentials of
    /// `auth`; nothing for a command.
    #[cfg(feature = "http-client")]
    pub fn set_auth(&mut self, provider: Arc<dyn crate::transport::http::AuthProvider>) {
        if let ServerKind::Url { auth, .. } = &mut self.kind {
            *auth = Some(UrlAuth(provider));
        }
    }
}

/// The credentials of a URL server's requests beyond its headers: an OAuth
/// client that signs in, say, shared by every connection to the server.
/// Never read from a file (the application gives it, see
/// [`ServerEntry::set_auth`]); equal only to itself, so a file read again
/// keeps the connection of a server given the same one.
#[cfg(feature = "http-client")]
#[derive(Clone)]
pub struct UrlAuth(pub Arc<dyn crate::transport::http::AuthProvider>);

#[cfg(feature = "http-client")]
impl PartialEq for UrlAuth {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&other.0))
    }
}

#[cfg(feature = "http-client")]
impl Eq for UrlAuth {}

#[cfg(feature = "http-client")]
impl std::fmt::Debug for UrlAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UrlAuth")
    }
}

/// How a gateway lists its servers' tools (`"discovery"` at the top of
/// the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Discovery {
    /// Every tool listed.
    #[default]
    Full,
    /// A tool to search every server's tools and one to call any of them
    /// by name, plus the pinned tools; every tool stays callable by name.
    Progressive,
}

/// A configuration file: its servers, and the gateway's choices.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigFile {
    /// The servers, as [`parse`] reads them.
    pub servers: Vec<ServerEntry>,
    /// `"discovery"`.
    pub discovery: Discovery,
}

/// How a configured server is reached.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerKind {
    /// A program started as a child, spoken to on stdio.
    Command {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its extra environment.
        env: Vec<(String, String)>,
    },
    /// A server at a URL (Streamable HTTP).
    Url {
        /// The URL.
        url: String,
        /// Headers for every request.
        headers: Vec<(String, String)>,
        /// Credentials beyond the headers (an application's sign-in).
        #[cfg(feature = "http-client")]
        auth: Option<UrlAuth>,
    },
}

impl std::fmt::Debug for ServerKind {
    /// Environment and header values may be secrets: only their names.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |pairs: &[(String, String)]| pairs.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        match self {
            ServerKind::Command { command, args, env } => f
                .debug_struct("Command")
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            ServerKind::Url { url, headers, .. } => {
                f.debug_struct("Url").field("url", url).field("headers", &names(headers)).finish_non_exhaustive()
            }
        }
    }
}

impl super::ToolsetBuilder {
    /// Adds the servers of a configuration file (see [`parse`]), each
    /// reached as a client with `options` (its name, capabilities, input
    /// hooks): a child on stdio started again after it failed, or a
    /// Streamable HTTP connection.
    pub fn configured(self, entries: Vec<ServerEntry>, options: &crate::ClientOptions) -> Self {
        self.configured_each(entries, |_| options.clone())
    }

    /// [`Self::configured`] with options of each server's own
    /// (`options_for` gets its name): input hooks that know which server
    /// asks, say.
    pub fn configured_each(
        mut self,
        entries: Vec<ServerEntry>,
        options_for: impl Fn(&str) -> crate::ClientOptions,
    ) -> Self {
        for entry in &entries {
            self = self.exposure(entry.name.clone(), entry.exposure.clone());
            self.servers.push((entry.name.clone(), connector(&entry.kind, options_for(&entry.name))));
        }
        self.configured.extend(entries);
        self
    }
}

/// How the toolset connects to a configured server, again after each
/// failure: a new client with `options` on a new transport.
pub(super) fn connector(kind: &ServerKind, options: crate::ClientOptions) -> Arc<super::ConnectFn> {
    let kind = kind.clone();
    Arc::new(move || {
        let (options, kind) = (options.clone(), kind.clone());
        Box::pin(async move { Ok(crate::Client::new(options, connect(&kind)?)) })
    })
}

/// The transport of a configured server.
fn connect(kind: &ServerKind) -> crate::Result<crate::transport::Transport> {
    match kind {
        #[cfg(feature = "stdio")]
        ServerKind::Command { command, args, env } => {
            let mut stdio = crate::transport::stdio::StdioCommand::new(command).args(args);
            for (name, value) in env {
                stdio = stdio.env(name, value);
            }
            crate::transport::stdio::spawn(stdio)
        }
        #[cfg(feature = "http-client")]
        ServerKind::Url { url, headers, auth } => {
            let mut config = crate::transport::http::HttpConfig::new(url);
            config.headers = headers.clone();
            config.auth = auth.as_ref().map(|auth| auth.0.clone());
            crate::transport::http::connect(config)
        }
        #[allow(unreachable_patterns)]
        _ => Err(crate::Error::InvalidRequest {
            reason: "this build has no transport for this server (features stdio, http-client)".into(),
        }),
    }
}

/// Why a configuration cannot be used; names the server and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Not JSON, or not of the expected shape.
    #[error("the configuration is not valid: {0}")]
    Invalid(String),
    /// Neither `mcpServers` nor `servers`, or an empty one.
    #[error("the configuration names no server (\"mcpServers\" or \"servers\")")]
    NoServers,
    /// A server with neither `command` nor `url`, or both.
    #[error("server {server:?}: give either \"command\" or \"url\"")]
    NoWay {
        /// The server.
        server: String,
    },
    /// A `type` this reader does not know.
    #[error("server {server:?}: the type {kind:?} is not supported (stdio, http)")]
    UnknownType {
        /// The server.
        server: String,
        /// The type.
        kind: String,
    },
    /// A filter's glob that is not valid.
    #[error("server {server:?}: {field}: {error}")]
    BadGlob {
        /// The server.
        server: String,
        /// Where it was written (`tools.allow`, `resources.deny`).
        field: String,
        /// The glob and what is wrong with it.
        error: BadGlob,
    },
    /// An `idle` that is not a duration.
    #[error("server {server:?}: \"idle\": {value:?} is not a duration (such as \"30s\", \"10m\", \"1h\")")]
    BadIdle {
        /// The server.
        server: String,
        /// What the file says.
        value: String,
    },
    /// `${env:NAME}` of a variable that is not set.
    #[error("server {server:?}: {field} needs the environment variable {variable}, which is not set")]
    MissingVariable {
        /// The server.
        server: String,
        /// Where it was used (`env.TOKEN`, `headers.Authorization`, `url`).
        field: String,
        /// The variable.
        variable: String,
    },
}

/// A server as the files write it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// Cursor's and Cline's way to keep a server in the file but off.
    #[serde(default)]
    disabled: bool,
    #[serde(default)]
    tools: WrittenFilter,
    #[serde(default)]
    prompts: WrittenFilter,
    #[serde(default)]
    resources: WrittenFilter,
    #[serde(default)]
    prefix: Prefix,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    #[serde(default)]
    authorize: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pinned: Vec<String>,
    #[serde(default)]
    sharing: Sharing,
    #[serde(default)]
    idle: Option<String>,
    // Members of other clients' files with no meaning here.
    #[serde(default, rename = "envFile")]
    _env_file: Option<Value>,
    #[serde(default, rename = "cwd")]
    _cwd: Option<Value>,
    #[serde(default, rename = "autoApprove")]
    _auto_approve: Option<Value>,
    #[serde(default, rename = "alwaysAllow")]
    _always_allow: Option<Value>,
    #[serde(default, rename = "timeout")]
    _timeout: Option<Value>,
}

/// A filter as the file writes it.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WrittenFilter {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

impl WrittenFilter {
    /// The filter, or the error naming `server` and `field` (`tools`).
    fn compile(&self, server: &str, field: &str) -> Result<NameFilter, ConfigError> {
        NameFilter::new(&self.allow, &self.deny).map_err(|error| {
            let list = if self.allow.contains(&error.glob) { "allow" } else { "deny" };
            ConfigError::BadGlob { server: server.to_owned(), field: format!("{field}.{list}"), error }
        })
    }
}

/// The servers of a configuration file's text, in the file's order of
/// names (sorted), disabled ones left out; `env` looks up variables.
///
/// # Errors
/// See [`ConfigError`]; texts never hold a value from the environment.
pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Vec<ServerEntry>, ConfigError> {
    parse_file(text, env).map(|file| file.servers)
}

/// [`parse`], with the gateway's choices of the file (`"discovery"`).
///
/// # Errors
/// As [`parse`].
pub fn parse_file(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<ConfigFile, ConfigError> {
    let file: Value = serde_json::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let discovery = match file.get("discovery") {
        None => Discovery::default(),
        Some(value) => Discovery::deserialize(value)
            .map_err(|e| ConfigError::Invalid(format!("\"discovery\": {e} (full or progressive)")))?,
    };
    let servers = file.get("mcpServers").or_else(|| file.get("servers")).ok_or(ConfigError::NoServers)?;
    let servers: BTreeMap<String, Written> =
        serde_json::from_value(servers.clone()).map_err(|e| ConfigError::Invalid(e.to_string()))?;
    let mut entries = Vec::new();
    for (name, written) in servers {
        if written.disabled {
            continue;
        }
        entries.push(entry(name, written, &env)?);
    }
    if entries.is_empty() {
        return Err(ConfigError::NoServers);
    }
    Ok(ConfigFile { servers: entries, discovery })
}

fn entry(name: String, written: Written, env: &impl Fn(&str) -> Option<String>) -> Result<ServerEntry, ConfigError> {
    let expand = |field: String, value: &str| expand(&name, &field, value, env);
    let kind = match (written.kind.as_deref(), written.command, written.url) {
        (None | Some("stdio"), Some(command), None) => ServerKind::Command {
            command: expand("command".into(), &command)?,
            args: written.args.iter().map(|a| expand("args".into(), a)).collect::<Result<_, _>>()?,
            env: written
                .env
                .iter()
                .map(|(k, v)| Ok((k.clone(), expand(format!("env.{k}"), v)?)))
                .collect::<Result<_, _>>()?,
        },
        (None | Some("http" | "streamableHttp" | "streamable-http"), None, Some(url)) => ServerKind::Url {
            url: expand("url".into(), &url)?,
            headers: written
                .headers
                .iter()
                .map(|(k, v)| Ok((k.clone(), expand(format!("headers.{k}"), v)?)))
                .collect::<Result<_, _>>()?,
            #[cfg(feature = "http-client")]
            auth: None,
        },
        (Some(kind), _, _) if !["stdio", "http", "streamableHttp", "streamable-http"].contains(&kind) => {
            return Err(ConfigError::UnknownType { server: name, kind: kind.to_owned() });
        }
        _ => return Err(ConfigError::NoWay { server: name }),
    };
    let exposure = Exposure {
        tools: written.tools.compile(&name, "tools")?,
        prompts: written.prompts.compile(&name, "prompts")?,
        resources: written.resources.compile(&name, "resources")?,
        prefix: written.prefix,
        rename: written.rename,
    };
    let authorize = ToolScopes::new(written.authorize).map_err(|error| ConfigError::BadGlob {
        server: name.clone(),
        field: "authorize".into(),
        error,
    })?;
    let pinned = Globs::new(&written.pinned).map_err(|error| ConfigError::BadGlob {
        server: name.clone(),
        field: "pinned".into(),
        error,
    })?;
    let idle = written
        .idle
        .map(|value| {
            humantime::parse_duration(&value).map_err(|_| ConfigError::BadIdle { server: name.clone(), value })
        })
        .transpose()?;
    Ok(ServerEntry { name, kind, exposure, authorize, pinned, sharing: written.sharing, idle })
}

/// `value` with each `${env:NAME}` replaced by the variable.
fn expand(
    server: &str,
    field: &str,
    value: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${env:") {
        let Some(end) = rest[start..].find('}') else { break };
        let variable = &rest[start + 6..start + end];
        let found = env(variable).ok_or_else(|| ConfigError::MissingVariable {
            server: server.to_owned(),
            field: field.to_owned(),
            variable: variable.to_owned(),
        })?;
        out.push_str(&rest[..start]);
        out.push_str(&found);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "NOTES_TOKEN").then(|| "s3cret".to_owned())
    }

    #[test]
    fn claude_desktops_file_is_read_with_variables_from_the_environment() {
        let text = r#"{"mcpServers": {
            "notes": {"command": "mcp-example-server", "args": ["--flag"], "env": {"TOKEN": "${env:NOTES_TOKEN}"}},
            "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:NOTES_TOKEN}"}},
            "old": {"command": "x", "disabled": true}
        }}"#;
        let entries = parse(text, env).unwrap();
        assert_eq!(entries.len(), 2, "the disabled one is left out");
        assert_eq!(
            entries[0].kind,
            ServerKind::Command {
                command: "mcp-example-server".into(),
                args: vec!["--flag".into()],
                env: vec![("TOKEN".into(), "s3cret".into())]
            }
        );
        let ServerKind::Url { headers, .. } = &entries[1].kind else { panic!("{:?}", entries[1]) };
        assert_eq!(headers[0].1, "Bearer s3cret");
        assert!(!format!("{entries:?}").contains("s3cret"), "values stay out of Debug");
    }

    #[test]
    fn vs_codes_file_is_read_too() {
        let text = r#"{"servers": {"a": {"type": "stdio", "command": "a"}, "b": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#;
        let entries = parse(text, env).unwrap();
        assert!(matches!(entries[1].kind, ServerKind::Url { .. }));
    }

    #[test]
    fn filters_prefixes_and_renames_sit_beside_a_servers_entry() {
        let text = r#"{"mcpServers": {"files": {"command": "x",
            "tools": {"allow": ["read_*"], "deny": ["read_secret"]}, "resources": {"deny": ["file:///etc/*"]},
            "prefix": "on-collision", "rename": {"read_file": "cat"}}}}"#;
        let exposure = &parse(text, env).unwrap()[0].exposure;
        assert!(exposure.tools.admits("read_file") && !exposure.tools.admits("read_secret"));
        assert!(!exposure.tools.admits("write_file") && exposure.prompts.admits("any"));
        assert!(!exposure.resources.admits("file:///etc/passwd"));
        assert_eq!(exposure.prefix, Prefix::OnCollision);
        assert_eq!(exposure.rename["read_file"], "cat");
        let progressive =
            r#"{"discovery": "progressive", "mcpServers": {"n": {"command": "x", "pinned": ["read_*"]}}}"#;
        let file = parse_file(progressive, env).unwrap();
        assert_eq!(file.discovery, Discovery::Progressive);
        assert!(file.servers[0].pinned.matches("read_file") && !file.servers[0].pinned.matches("write"));
        assert!(!parse(text, env).unwrap()[0].pinned.matches("read_file"), "nothing pinned by default");
        let unknown = parse_file(r#"{"discovery": "lazy", "mcpServers": {"n": {"command": "x"}}}"#, env).unwrap_err();
        assert!(unknown.to_string().contains("lazy") && unknown.to_string().contains("progressive"), "{unknown}");
        let guarded = r#"{"mcpServers": {"n": {"command": "x", "authorize": {"delete_*": ["admin"]}}}}"#;
        assert_eq!(parse(guarded, env).unwrap()[0].authorize.of("delete_all"), ["admin"]);
        let bad = parse(r#"{"mcpServers": {"n": {"command": "x", "authorize": {"[x": ["a"]}}}}"#, env).unwrap_err();
        assert!(bad.to_string().starts_with("server \"n\": authorize: the glob \"[x\""), "{bad}");
        let bad = parse(r#"{"mcpServers": {"n": {"command": "x", "tools": {"deny": ["[oops"]}}}}"#, env).unwrap_err();
        assert!(bad.to_string().starts_with("server \"n\": tools.deny: the glob \"[oops\""), "{bad}");
        let mode = parse(r#"{"mcpServers": {"n": {"command": "x", "prefix": "sometimes"}}}"#, env).unwrap_err();
        assert!(mode.to_string().contains("sometimes"), "{mode}");
    }

    #[test]
    fn bad_files_name_the_server_and_the_field() {
        let missing = parse(r#"{"mcpServers": {"n": {"command": "x", "env": {"K": "${env:UNSET_X}"}}}}"#, env);
        assert_eq!(
            missing.unwrap_err().to_string(),
            "server \"n\": env.K needs the environment variable UNSET_X, which is not set"
        );
        let both = parse(r#"{"mcpServers": {"n": {"command": "x", "url": "http://h/"}}}"#, env);
        assert_eq!(both.unwrap_err(), ConfigError::NoWay { server: "n".into() });
        let sse = parse(r#"{"servers": {"n": {"type": "sse", "url": "http://h/"}}}"#, env);
        assert!(matches!(sse.unwrap_err(), ConfigError::UnknownType { .. }));
        assert_eq!(parse(r#"{"mcpServers": {}}"#, env).unwrap_err(), ConfigError::NoServers);
        assert!(matches!(parse("{", env).unwrap_err(), ConfigError::Invalid(_)));
        let typo = parse(r#"{"mcpServers": {"n": {"comand": "x"}}}"#, env).unwrap_err();
        assert!(typo.to_string().contains("comand"), "{typo}");
    }
}
