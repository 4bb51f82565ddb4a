//! The raw command line, as clap reads it. [`crate::config`] turns it into
//! the validated configuration.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

const EXAMPLES: &str = "\
Examples:
  mcp-bridge -- mcp-example-server
  mcp-bridge --log-level debug -- python3 -m my_server --flag
  mcp-bridge --discover-timeout 120 -- npx -y some-2026-server
  mcp-bridge --protocol 2025-11-25 -- node server-everything/dist/index.js stdio
  mcp-bridge https://mcp.example.com/mcp
  mcp-bridge --header-env Authorization=MY_TOKEN_HEADER https://mcp.example.com/mcp
  mcp-bridge logout https://mcp.example.com/mcp
  mcp-bridge doctor https://mcp.example.com/mcp
  mcp-bridge doctor --json -- node server-everything/dist/index.js stdio
  mcp-bridge --listen 127.0.0.1:8931 -- mcp-example-server
  mcp-bridge attach --config ~/mcp-servers.json github memory
  mcp-bridge daemon status --config ~/mcp-servers.json

In VS Code's mcp.json:
  {\"servers\": {\"example\": {\"command\": \"mcp-bridge\", \"args\": [\"--\", \"mcp-example-server\"]}}}

Exit codes: 0 at the end of the input, 1 when the server stopped or on an
internal error, 2 for invalid arguments (a missing --header-env variable, a
--ca-file or token store that cannot be used).";

/// Lets an MCP client of revision 2025-11-25 (VS Code, Claude Desktop,
/// Cursor) use a server of revision 2026-07-28: the client starts
/// mcp-bridge as its stdio server, and mcp-bridge starts the real server.
#[derive(Debug, Parser)]
#[command(name = "mcp-bridge", version, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    /// Another action than bridging.
    #[command(subcommand)]
    pub(crate) action: Option<Action>,

    /// The client family to serve.
    #[arg(long, default_value = "vscode", value_name = "NAME")]
    pub(crate) profile: String,

    /// The level of the log on stderr: error, warning, info, debug or trace.
    #[arg(long, default_value = "info", value_name = "LEVEL")]
    pub(crate) log_level: String,

    /// The form of each stderr log line: text (for people) or json (one
    /// object per line, for a log collector).
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub(crate) log_format: LogFormatArg,

    /// The server's revision: auto (ask server/discover, fall back to
    /// 2025-11-25 when the server does not know it), 2026-07-28 (no
    /// fallback) or 2025-11-25 (no probe).
    #[arg(long, default_value = "auto", value_name = "REVISION")]
    pub(crate) protocol: String,

    /// Seconds the server gets to answer server/discover at initialize.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub(crate) discover_timeout: u64,

    /// Seconds the client gets to answer one round of the server's input
    /// requests (elicitation, sampling, roots).
    #[arg(long, default_value_t = 3600, value_name = "SECONDS")]
    pub(crate) input_timeout: u64,

    /// The longest line accepted from the client or the server, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    pub(crate) max_line_bytes: usize,

    /// How the URL is reached.
    #[command(flatten)]
    pub(crate) connection: Connection,

    /// Seconds a sign-in in the browser may take.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub(crate) sign_in_timeout: u64,

    /// The port of the sign-in redirect on 127.0.0.1.
    #[arg(long, default_value_t = mcp_bridge::signin::DEFAULT_REDIRECT_PORT, value_name = "PORT")]
    pub(crate) redirect_port: u16,

    /// Never open a browser: sign in with the link in the log.
    #[arg(long)]
    pub(crate) no_browser: bool,

    /// The URL of this client's metadata document, used as its OAuth client
    /// id where the authorization server accepts that.
    #[arg(long, value_name = "URL")]
    pub(crate) client_metadata_url: Option<String>,

    /// Sign in on another device with a code (the device authorization
    /// grant): for machines without a browser. The link and the code are
    /// written on stderr and, once the client runs, shown by the client.
    #[arg(long, conflicts_with = "idp_issuer")]
    pub(crate) device_code: bool,

    /// Ask for tokens bound to a key of the bridge (DPoP, RFC 9449), so that
    /// a stolen token is useless without the key (kept with the tokens).
    #[arg(long)]
    pub(crate) dpop: bool,

    /// A client the authorization server's administrator registered.
    #[command(flatten)]
    pub(crate) static_client: StaticClient,

    /// Sign-in through the enterprise's single sign-on.
    #[command(flatten)]
    pub(crate) enterprise: EnterpriseSignIn,

    /// Serve MCP clients of both revisions over Streamable HTTP at http://ADDR/mcp
    /// (for example 127.0.0.1:8931), or on the Unix domain socket PATH
    /// with unix:PATH, instead of one client on stdio; every client
    /// shares the one upstream. A TCP endpoint requires an access token
    /// (see --listen-token-env); a socket's folder must be yours alone
    /// (mode 0700; created so when missing).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<String>,

    /// With --listen: the variable holding the access token every request
    /// must carry (`Authorization: Bearer TOKEN`). Without it a TCP
    /// endpoint generates one at start into a file only you can read, and
    /// says where.
    #[arg(long, value_name = "VAR", requires = "listen", conflicts_with = "listen_no_auth")]
    pub(crate) listen_token_env: Option<String>,

    /// With --listen on TCP: no access token. Any account on this machine
    /// (and beyond it, for an address that is not loopback) can then use
    /// the server, with your sign-ins.
    #[arg(long, requires = "listen")]
    pub(crate) listen_no_auth: bool,

    /// With --listen: no telemetry (no /metrics, no access log, no OTLP
    /// export). A client's trace context is still passed on to the server.
    #[arg(long, requires = "listen")]
    pub(crate) listen_no_telemetry: bool,

    /// With --listen: a line on stderr for each request the bridge answers
    /// (method, name, outcome, duration, caller, trace id), at info.
    #[arg(long, requires = "listen", conflicts_with = "listen_no_telemetry")]
    pub(crate) listen_access_log: bool,

    /// With --listen: the endpoint is an OAuth protected resource; every
    /// request carries an access token of this authorization server (its
    /// issuer URL) for the endpoint, instead of the access token. A
    /// --config server's "authorize" rules then choose, by the token's
    /// scopes, which tools each caller sees and may call.
    #[arg(long, value_name = "URL", requires = "listen", conflicts_with_all = ["listen_token_env", "listen_no_auth"])]
    pub(crate) listen_auth_issuer: Option<String>,

    /// With --listen-auth-issuer: the audience the tokens must name
    /// (default: the endpoint's URL, http://ADDR/mcp).
    #[arg(long, value_name = "AUDIENCE", requires = "listen_auth_issuer")]
    pub(crate) listen_auth_audience: Option<String>,

    /// With --listen-auth-issuer: opaque tokens, checked at the issuer's
    /// introspection endpoint as the client whose id and secret are in
    /// MCP_BRIDGE_INTROSPECTION_CLIENT_ID and
    /// MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET (default: JWTs, checked
    /// against the issuer's keys).
    #[arg(long, requires = "listen_auth_issuer")]
    pub(crate) listen_auth_introspection: bool,

    /// With --listen: connections open at once (default: half the limit of
    /// open files, which the bridge raises to its hard limit, within 1024
    /// and 65536). At the cap a newcomer takes the place of a connection
    /// still sending its request head, or of the idlest one of the address
    /// holding the most.
    #[arg(long, value_name = "N", requires = "listen", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_connections: Option<u32>,

    /// With --listen: requests one caller (a token's subject with
    /// --listen-auth-issuer, else everyone with the access token) may send,
    /// as N/s or N/m, N of them at once after a quiet time; one more gets
    /// 429 with Retry-After, and other callers are not slowed.
    #[arg(long, value_name = "N/s|N/m", requires = "listen")]
    pub(crate) listen_rate_limit: Option<String>,

    /// With --listen: requests of one caller under way at once (a call and
    /// its stream until it ends); one more gets 429.
    #[arg(long, value_name = "N", requires = "listen", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) listen_max_in_flight: Option<u32>,

    /// With --listen: 2025-11-25 sessions of one caller open at once
    /// (default 100); one more ends that caller's idlest session.
    #[arg(long, value_name = "N", requires = "listen", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) listen_max_sessions: Option<u32>,

    /// Many servers as one: a configuration file in Claude Desktop's
    /// (`mcpServers`) or VS Code's (`servers`) format; their tools and
    /// prompts are served as `<server>__<name>`, their resources under
    /// their own URIs. With --listen, to every HTTP client.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["url", "command"])]
    pub(crate) config: Option<PathBuf>,

    /// Show and allow only the server's tools a glob matches (repeatable;
    /// `*`, `?` and `[...]`), as a `tools.allow` beside a server in
    /// --config
    #[arg(long = "tools-allow", value_name = "GLOB", conflicts_with = "config")]
    pub(crate) tools_allow: Vec<String>,

    /// Hide the server's tools a glob matches (repeatable): they are not
    /// listed, and a call gets the error of an unknown tool
    #[arg(long = "tools-deny", value_name = "GLOB", conflicts_with = "config")]
    pub(crate) tools_deny: Vec<String>,

    /// The URL of a 2026-07-28 server over Streamable HTTP (the URL form).
    #[arg(value_name = "URL")]
    pub(crate) url: Option<String>,

    /// The 2026-07-28 server to start, after `--`: the program and its arguments.
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

impl Args {
    /// Reads a command line. Some launchers (both MCP Inspector CLIs) drop
    /// the `--` before a server's command: when the line has no `--` and
    /// does not parse as given, or names something other than a URL where
    /// the URL goes, a `--` is put back before the first word that is a
    /// program (`is_program`: on the PATH, or a path), if the line then
    /// parses. Otherwise the error is the one of the line as given.
    pub(crate) fn from_command_line(
        line: Vec<OsString>,
        is_program: impl Fn(&std::ffi::OsStr) -> bool,
    ) -> Result<Args, clap::Error> {
        let as_given = Args::try_parse_from(&line);
        let names_a_url = |args: &Args| args.url.as_deref().is_none_or(crate::config::is_http_url);
        if as_given.as_ref().is_ok_and(names_a_url) || line.iter().any(|word| word == "--") {
            return as_given;
        }
        let starts = (1..line.len()).filter(|&i| !line[i].to_string_lossy().starts_with('-') && is_program(&line[i]));
        starts
            .map(|i| [&line[..i], &[OsString::from("--")], &line[i..]].concat())
            .find_map(|restored| Args::try_parse_from(restored).ok())
            .map_or(as_given, Ok)
    }
}

/// How a URL is reached: headers, trust, limits.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Connection {
    /// A header for every request to the URL (repeatable).
    #[arg(long = "header", value_name = "NAME:VALUE")]
    pub(crate) headers: Vec<String>,

    /// A header whose value is the environment variable VAR (repeatable);
    /// keeps secrets out of the command line.
    #[arg(long = "header-env", value_name = "NAME=VAR")]
    pub(crate) header_env: Vec<String>,

    /// More trusted CA certificates for HTTPS, a PEM file.
    #[arg(long, value_name = "FILE")]
    pub(crate) ca_file: Option<PathBuf>,

    /// Trust the CA certificates of --ca-file only, not the system's roots
    /// (for the server and its sign-in).
    #[arg(long, requires = "ca_file")]
    pub(crate) ca_file_only: bool,

    /// A certificate revocation list, PEM (repeatable): the server's
    /// certificate is refused when it is revoked, when its issuer's list
    /// has expired, or when no list is from its issuer (the sign-in's
    /// servers are refused only when revoked).
    #[arg(long = "crl-file", value_name = "FILE")]
    pub(crate) crl_files: Vec<PathBuf>,

    /// The largest JSON response, or event of a stream, from the URL.
    #[arg(long, default_value_t = 64 * 1024 * 1024, value_name = "BYTES")]
    pub(crate) max_response_bytes: usize,
}

/// An OAuth client registered by hand, for authorization servers without
/// dynamic registration (Entra ID, Okta, a corporate Keycloak).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StaticClient {
    /// The client id you were given: used instead of registering one.
    #[arg(long, value_name = "ID")]
    pub(crate) client_id: Option<String>,

    /// The environment variable that holds the client's secret (a secret
    /// never goes on the command line).
    #[arg(long, value_name = "VAR", requires = "client_id")]
    pub(crate) client_secret_env: Option<String>,

    /// How the client authenticates at the token endpoint: none,
    /// client_secret_basic, client_secret_post or private_key_jwt (default:
    /// private_key_jwt with --client-key-file, the server's preference with
    /// a secret, else none).
    #[arg(long, value_name = "METHOD", requires = "client_id")]
    pub(crate) client_auth_method: Option<String>,

    /// The client's private key for private_key_jwt: a PEM PKCS #8 file.
    #[arg(long, value_name = "FILE", requires = "client_id")]
    pub(crate) client_key_file: Option<PathBuf>,

    /// The algorithm of --client-key-file: ES256 or RS256.
    #[arg(long, value_name = "ALG", requires = "client_key_file")]
    pub(crate) client_key_algorithm: Option<String>,
}

/// Enterprise-managed authorization: the user's ID token from the
/// enterprise's identity provider is exchanged there for an identity
/// assertion grant, and that for the server's tokens by the --client-id
/// client; no browser, no consent screen.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct EnterpriseSignIn {
    /// The enterprise identity provider's issuer URL.
    #[arg(long, value_name = "URL", requires_all = ["idp_client_id", "idp_id_token_file", "client_id"])]
    pub(crate) idp_issuer: Option<String>,

    /// The bridge's client id at the identity provider (the ID token's
    /// audience).
    #[arg(long, value_name = "ID", requires = "idp_issuer")]
    pub(crate) idp_client_id: Option<String>,

    /// The environment variable that holds the secret of that client, when
    /// it has one.
    #[arg(long, value_name = "VAR", requires = "idp_issuer")]
    pub(crate) idp_client_secret_env: Option<String>,

    /// The file that holds the user's ID token from the identity provider
    /// (kept fresh by the single sign-on agent); read at each sign-in.
    #[arg(long, value_name = "FILE", requires = "idp_issuer")]
    pub(crate) idp_id_token_file: Option<PathBuf>,
}

/// Actions besides bridging.
#[derive(Debug, Subcommand)]
pub(crate) enum Action {
    /// Serves this client the servers of a configuration file from the
    /// one daemon of this user and file, started when none runs: every
    /// client on the machine shares one process per server. What a
    /// client's configuration runs: "args": ["attach", "github"].
    Attach {
        /// The configuration file (default: servers.json in mcp-bridge's
        /// configuration folder; `mcp-bridge daemon status` names it).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Every server of the file.
        #[arg(long, conflicts_with = "servers")]
        all: bool,
        /// The servers, by their names in the file.
        #[arg(value_name = "SERVER", required_unless_present = "all")]
        servers: Vec<String>,
    },
    /// The daemon `attach` starts: run it, see what it runs, stop it.
    Daemon {
        /// What to do.
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Forgets the stored sign-in of a URL, or every one with --all.
    Logout {
        /// The server URL.
        #[arg(value_name = "URL", required_unless_present = "all")]
        url: Option<String>,
        /// Forget every stored sign-in.
        #[arg(long, conflicts_with = "url")]
        all: bool,
    },
    /// Checks a server and prints what a person needs to know: reachability,
    /// certificate, proxy, sign-in, revision, what it offers, round trip;
    /// each problem with its fix. Exits 0 when the server is usable.
    Doctor {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// How the URL is reached.
        #[command(flatten)]
        connection: Connection,
        /// The server's URL.
        #[arg(value_name = "URL")]
        url: Option<String>,
        /// The server to start, after `--`: the program and its arguments.
        #[arg(last = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
}

/// What `mcp-bridge daemon` does.
#[derive(Debug, Subcommand)]
pub(crate) enum DaemonAction {
    /// Runs the daemon of the file in this process (what `attach` starts
    /// in the background).
    Run {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The level of its log (the file daemon-*.log beside its socket).
        #[arg(long, default_value = "info", value_name = "LEVEL")]
        log_level: String,
        /// The port of the sign-in redirect on 127.0.0.1 (servers at a URL
        /// take turns at it).
        #[arg(long, default_value_t = mcp_bridge::signin::DEFAULT_REDIRECT_PORT, value_name = "PORT")]
        redirect_port: u16,
        /// Seconds a sign-in may take.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        sign_in_timeout: u64,
        /// Never open a browser: a sign-in no client can show is done with
        /// the link in the log.
        #[arg(long)]
        no_browser: bool,
    },
    /// Lists the attached clients and the servers, with their processes
    /// and memory.
    Status {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ends the daemon: its clients are disconnected, its servers stopped.
    Stop {
        /// The configuration file.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, clap::Error> {
        let words = line.split(' ').map(OsString::from).collect();
        Args::from_command_line(words, |word| word == "node" || word == "./server")
    }

    fn command(args: &Args) -> Vec<&str> {
        args.command.iter().filter_map(|w| w.to_str()).collect()
    }

    #[test]
    fn a_command_whose_dashes_a_launcher_dropped_gets_them_back() {
        let args = parse("mcp-bridge node server.js --flag").unwrap();
        assert_eq!((args.url.as_deref(), command(&args)), (None, vec!["node", "server.js", "--flag"]));
        let args = parse("mcp-bridge --log-level debug ./server").unwrap();
        assert_eq!((args.log_level.as_str(), command(&args)), ("debug", vec!["./server"]));
        let args = parse("mcp-bridge node -- x").unwrap();
        assert_eq!((args.url.as_deref(), command(&args)), (Some("node"), vec!["x"]), "a line with -- is as given");
        let args = parse("mcp-bridge https://mcp.example/mcp").unwrap();
        assert_eq!((args.url.as_deref(), command(&args)), (Some("https://mcp.example/mcp"), vec![]));
        assert!(matches!(parse("mcp-bridge doctor node x.js").unwrap().action, Some(Action::Doctor { .. })));
    }

    #[test]
    fn a_line_with_no_program_keeps_its_own_error() {
        assert!(parse("mcp-bridge nodee x.js").is_err());
        let args = parse("mcp-bridge mcp.example/mcp").unwrap();
        assert_eq!(args.url.as_deref(), Some("mcp.example/mcp"), "the URL check names it");
    }
}

/// `--log-format`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormatArg {
    /// `mcp-bridge: scope: level: message`.
    Text,
    /// One JSON object per line.
    Json,
}

impl From<LogFormatArg> for mcp_bridge::log::LogFormat {
    fn from(format: LogFormatArg) -> Self {
        match format {
            LogFormatArg::Text => mcp_bridge::log::LogFormat::Text,
            LogFormatArg::Json => mcp_bridge::log::LogFormat::Json,
        }
    }
}
