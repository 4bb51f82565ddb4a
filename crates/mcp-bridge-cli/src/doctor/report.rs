//! What `mcp-bridge doctor` found, the problems that follows from it (each
//! with its fix), and the report as text for a person or JSON for a
//! machine. No I/O here.

use std::fmt::Write as _;

use serde::Serialize;

/// The checks made of one server.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Report {
    /// The URL (without query or credentials) or the command line.
    pub(crate) target: String,
    /// `stdio`, `streamable-http` or `http+sse`, once known.
    pub(crate) transport: Option<String>,
    /// Whether the server could be reached, and how.
    pub(crate) reach: Reach,
    /// The server's certificate, over HTTPS.
    pub(crate) tls: Option<Tls>,
    /// The proxy in effect (without credentials), over HTTP.
    pub(crate) proxy: Option<String>,
    /// The protection of an HTTP server and the stored sign-in.
    pub(crate) auth: Option<Auth>,
    /// The server's clock against ours, in seconds (positive: it is ahead).
    pub(crate) clock_skew_s: Option<i64>,
    /// The MCP session, when it could be started.
    pub(crate) mcp: Option<Mcp>,
    /// Why no MCP session could be started.
    pub(crate) mcp_error: Option<String>,
    /// What is wrong, each with its fix.
    pub(crate) problems: Vec<Problem>,
    /// Whether a client can use the server through the bridge.
    pub(crate) usable: bool,
}

/// How the server was reached.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Reach {
    /// It answered (any HTTP status), or the program started.
    pub(crate) ok: bool,
    /// The HTTP status of a first POST.
    pub(crate) http_status: Option<u16>,
    /// What failed, when it did not answer.
    pub(crate) error: Option<String>,
    /// Time to the first answer, in milliseconds (a program's start-up).
    pub(crate) first_answer_ms: Option<f64>,
}

/// The server's certificate.
#[derive(Debug, Serialize)]
pub(crate) struct Tls {
    /// Its subject.
    pub(crate) subject: String,
    /// Who issued it.
    pub(crate) issuer: String,
    /// Its end of validity (RFC 3339).
    pub(crate) not_after: String,
    /// Days of validity left (negative: expired).
    pub(crate) days_left: i64,
    /// The roots trusted: the system's, and `--ca-file` when given.
    pub(crate) trusted_by: String,
}

/// The protection of an HTTP server.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Auth {
    /// The server asks for credentials (401 with a Bearer challenge).
    pub(crate) required: bool,
    /// Its protected resource metadata: the resource named.
    pub(crate) resource: Option<String>,
    /// The authorization servers it names.
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes it lists.
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The first authorization server's metadata, when found.
    pub(crate) authorization_server: Option<AuthorizationServer>,
    /// The sign-in stored for the resource (never the token itself).
    pub(crate) stored_sign_in: Option<StoredSignIn>,
    /// Credentials given on the command line (an `Authorization` header).
    pub(crate) header_credentials: bool,
    /// What failed while looking (the metadata could not be read).
    pub(crate) error: Option<String>,
}

/// An authorization server's metadata, as far as the bridge uses it.
#[derive(Debug, Serialize)]
pub(crate) struct AuthorizationServer {
    /// Its issuer.
    pub(crate) issuer: String,
    /// It takes a URL as client id (client ID metadata documents).
    pub(crate) client_id_metadata_document: bool,
    /// It registers clients dynamically (RFC 7591).
    pub(crate) dynamic_registration: bool,
    /// It supports PKCE with S256 (required).
    pub(crate) pkce_s256: bool,
}

/// A sign-in kept in the token store.
#[derive(Debug, Serialize)]
pub(crate) struct StoredSignIn {
    /// The authorization server that issued it.
    pub(crate) issuer: String,
    /// When the access token expires (RFC 3339), if it said.
    pub(crate) expires_at: Option<String>,
    /// Seconds until then (negative: expired).
    pub(crate) expires_in_s: Option<i64>,
    /// Whether it can be refreshed without the user.
    pub(crate) refreshable: bool,
}

/// The MCP session.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Mcp {
    /// The revision spoken: 2026-07-28, or the 2025-11-25-era version
    /// the server chose.
    pub(crate) era: String,
    /// The server did not know `server/discover`: the bridge relays it in
    /// its own revision.
    pub(crate) legacy: bool,
    /// The versions the server offers.
    pub(crate) versions_offered: Vec<String>,
    /// The server's name and version.
    pub(crate) server: Option<String>,
    /// The capabilities it announces, by name.
    pub(crate) capabilities: Vec<String>,
    /// Tools, prompts, resources listed (`None`: not offered).
    pub(crate) tools: Option<usize>,
    /// Prompts listed.
    pub(crate) prompts: Option<usize>,
    /// Resources listed.
    pub(crate) resources: Option<usize>,
    /// What a list request failed with, if one did.
    pub(crate) list_error: Option<String>,
    /// The median round trip of a small request, in milliseconds.
    pub(crate) round_trip_ms: Option<f64>,
}

/// One thing wrong, and what fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Problem {
    /// `error` (the server cannot be used) or `warning`.
    pub(crate) severity: &'static str,
    /// What is wrong.
    pub(crate) what: String,
    /// The option or setting that fixes it.
    pub(crate) fix: String,
}

/// Skews above this make tokens look expired (or not yet valid).
const SKEW_LIMIT_S: i64 = 60;

/// A certificate this close to its end gets a warning.
const CERTIFICATE_WARNING_DAYS: i64 = 14;

impl Report {
    /// Decides the problems and whether the server is usable from what was
    /// found.
    pub(crate) fn conclude(&mut self, is_url: bool) {
        let mut problems = Vec::new();
        let error = |what: String, fix: &str| Problem { severity: "error", what, fix: fix.to_owned() };
        let warning = |what: String, fix: &str| Problem { severity: "warning", what, fix: fix.to_owned() };
        if !self.reach.ok {
            let why = self.reach.error.clone().unwrap_or_default();
            problems.push(if is_url {
                error(
                    format!("the server cannot be reached: {why}"),
                    "check the URL and the network; behind a proxy set https_proxy (and no_proxy)",
                )
            } else {
                error(
                    format!("the server program does not start: {why}"),
                    "check the command after --: the program must be on the PATH, or give its full path",
                )
            });
        }
        if self.reach.error.as_deref().is_some_and(|e| e.contains("certificate")) {
            problems.push(error(
                "the server's certificate is not trusted".into(),
                "pass the certificate of the CA that issued it with --ca-file FILE (PEM)",
            ));
        }
        if let Some(tls) = &self.tls {
            if tls.days_left < 0 {
                problems.push(error(
                    format!("the server's certificate expired on {}", tls.not_after),
                    "the server's operator must renew it",
                ));
            } else if tls.days_left < CERTIFICATE_WARNING_DAYS {
                problems.push(warning(
                    format!("the server's certificate expires in {} days ({})", tls.days_left, tls.not_after),
                    "the server's operator should renew it",
                ));
            }
        }
        if self.reach.http_status == Some(404) && self.mcp.is_none() {
            problems.push(error(
                "the server answers 404 at this URL".into(),
                "check the path of the URL (MCP endpoints are often at /mcp, HTTP+SSE ones at /sse)",
            ));
        }
        if let Some(auth) = &self.auth {
            problems.extend(auth_problems(auth));
        }
        if self.clock_skew_s.is_some_and(|s| s.abs() > SKEW_LIMIT_S) {
            let skew = self.clock_skew_s.unwrap_or_default();
            problems.push(warning(
                format!("this machine's clock is {} s off the server's", skew.abs()),
                "synchronise the clock (NTP): tokens may look expired or not yet valid",
            ));
        }
        if let Some(reason) = &self.mcp.as_ref().and_then(|m| m.list_error.clone()) {
            problems.push(warning(format!("listing what the server offers failed: {reason}"), "see the server's log"));
        }
        if self.mcp.is_none() && self.reach.ok && problems.iter().all(|p| p.severity != "error") {
            let why = self.mcp_error.clone().unwrap_or_else(|| "no answer".into());
            problems.push(error(
                format!("no MCP session could be started: {why}"),
                "run with --log-level debug to see the exchange; --protocol 2025-11-25 or 2026-07-28 forces a revision",
            ));
        }
        self.usable = self.mcp.is_some();
        self.problems = problems;
    }

    /// The report for a person.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        // Values carry what the server sent (its name, its errors): escaped,
        // so they cannot move the cursor or add a line of their own.
        let mut line = |label: &str, value: String| {
            let _ = writeln!(out, "{label:<24}{}", terminal_safe(&value));
        };
        line("server", self.target.clone());
        if let Some(transport) = &self.transport {
            line("transport", transport.clone());
        }
        let reach = match (&self.reach.error, self.reach.http_status, self.reach.first_answer_ms) {
            (Some(error), _, _) => format!("no: {error}"),
            (None, Some(status), ms) => {
                format!("yes (HTTP {status}{})", ms.map(|m| format!(", {m:.1} ms")).unwrap_or_default())
            }
            (None, None, ms) => {
                format!("yes{}", ms.map(|m| format!(" (first answer after {m:.1} ms)")).unwrap_or_default())
            }
        };
        line("reachable", reach);
        if let Some(tls) = &self.tls {
            line("certificate", format!("{} (issuer {})", tls.subject, tls.issuer));
            line("  valid until", format!("{} ({} days left)", tls.not_after, tls.days_left));
            line("  trusted by", tls.trusted_by.clone());
        }
        if let Some(proxy) = &self.proxy {
            line("proxy", proxy.clone());
        }
        if let Some(auth) = &self.auth {
            let protection = match (auth.required, &auth.resource) {
                (true, Some(resource)) => format!("sign-in required (resource {resource})"),
                (true, None) => "sign-in required".into(),
                (false, _) => "none required".into(),
            };
            line("authorization", protection);
            for issuer in &auth.authorization_servers {
                line("  authorization server", issuer.clone());
            }
            if let Some(scopes) = &auth.scopes_supported {
                line("  scopes", scopes.join(" "));
            }
            if let Some(server) = &auth.authorization_server {
                let mut ways = Vec::new();
                if server.client_id_metadata_document {
                    ways.push("client ID metadata document");
                }
                if server.dynamic_registration {
                    ways.push("dynamic registration");
                }
                ways.push("pre-registered client (not configurable yet)");
                line("  registration", ways.join(", "));
            }
            let stored = match &auth.stored_sign_in {
                Some(s) => match (&s.expires_at, s.expires_in_s) {
                    (Some(at), Some(left)) if left < 0 => {
                        format!("yes, expired at {at}{}", if s.refreshable { " (refreshable)" } else { "" })
                    }
                    (Some(at), _) => format!("yes, valid until {at}"),
                    _ => "yes".into(),
                },
                None if auth.header_credentials => "given with --header / --header-env".into(),
                None => "none".into(),
            };
            line("  stored sign-in", stored);
            if let Some(error) = &auth.error {
                line("  metadata", format!("not readable: {error}"));
            }
        }
        if let Some(skew) = self.clock_skew_s {
            line("clock skew", format!("{skew:+} s against the server's Date"));
        }
        match (&self.mcp, &self.mcp_error) {
            (Some(mcp), _) => {
                let era = if mcp.legacy { format!("{} (relayed as is)", mcp.era) } else { mcp.era.clone() };
                line("revision", era);
                line("versions offered", mcp.versions_offered.join(", "));
                if let Some(server) = &mcp.server {
                    line("server info", server.clone());
                }
                line("capabilities", mcp.capabilities.join(", "));
                let count = |n: Option<usize>| n.map_or("not offered".to_owned(), |n| n.to_string());
                line("tools", count(mcp.tools));
                line("prompts", count(mcp.prompts));
                line("resources", count(mcp.resources));
                if let Some(rtt) = mcp.round_trip_ms {
                    line("round trip", format!("{rtt:.2} ms (median of 5)"));
                }
            }
            (None, Some(error)) => line("MCP session", format!("failed: {error}")),
            (None, None) => {}
        }
        if self.problems.is_empty() {
            out.push_str("\nno problems found\n");
        } else {
            out.push('\n');
            for problem in &self.problems {
                let (what, fix) = (terminal_safe(&problem.what), terminal_safe(&problem.fix));
                let _ = writeln!(out, "{}: {what}\n  fix: {fix}", problem.severity);
            }
        }
        let _ = writeln!(out, "{}", if self.usable { "usable: yes" } else { "usable: no" });
        out
    }
}

/// `text` with its control characters (escape sequences, line breaks) and
/// bidirectional overrides escaped as Rust writes them (`\u{1b}`, `\n`).
fn terminal_safe(text: &str) -> String {
    let unsafe_char = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    text.chars().map(|c| if unsafe_char(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

fn auth_problems(auth: &Auth) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut error = |what: &str, fix: &str| {
        problems.push(Problem { severity: "error", what: what.to_owned(), fix: fix.to_owned() });
    };
    if !auth.required || auth.header_credentials {
        return problems;
    }
    if let Some(server) = &auth.authorization_server {
        if !server.pkce_s256 {
            error(
                "the authorization server does not announce PKCE with S256, which MCP requires",
                "the authorization server's operator must enable it",
            );
        }
        if !server.client_id_metadata_document && !server.dynamic_registration {
            error(
                "the authorization server allows neither client ID metadata documents nor dynamic registration",
                "ask its operator for a client id; until mcp-bridge takes one, pass a token with --header-env Authorization=VAR",
            );
        }
    } else if auth.authorization_servers.is_empty() {
        error(
            "the server asks for a sign-in but names no authorization server (no protected resource metadata)",
            "pass a token with --header-env Authorization=VAR, or ask the server's operator to publish /.well-known/oauth-protected-resource",
        );
    }
    match &auth.stored_sign_in {
        None => error(
            "the server needs a sign-in and none is stored",
            "run `mcp-bridge URL` once from a terminal (it opens the browser), or let the client start it",
        ),
        Some(s) if s.expires_in_s.is_some_and(|left| left < 0) && !s.refreshable => error(
            "the stored sign-in has expired and cannot be refreshed",
            "run `mcp-bridge logout URL`, then sign in again",
        ),
        Some(_) => {}
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reached() -> Report {
        Report {
            target: "https://example.test/mcp".into(),
            reach: Reach { ok: true, http_status: Some(200), error: None, first_answer_ms: Some(3.0) },
            mcp: Some(Mcp { era: "2026-07-28".into(), ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn a_server_that_answers_is_usable_without_problems() {
        let mut report = reached();
        report.conclude(true);
        assert!(report.usable && report.problems.is_empty(), "{:?}", report.problems);
        assert!(report.to_text().contains("usable: yes"));
    }

    #[test]
    fn an_unreachable_server_names_the_fix() {
        let mut report = Report {
            reach: Reach { ok: false, error: Some("cannot connect: connection refused".into()), ..Default::default() },
            ..Default::default()
        };
        report.conclude(true);
        assert!(!report.usable);
        assert!(report.problems[0].fix.contains("https_proxy"), "{:?}", report.problems);
        report.conclude(false);
        assert!(report.problems[0].fix.contains("PATH"), "{:?}", report.problems);
    }

    #[test]
    fn an_untrusted_or_expiring_certificate_is_a_problem_with_its_fix() {
        let mut report = Report {
            reach: Reach {
                ok: false,
                error: Some("invalid peer certificate: UnknownIssuer".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        report.conclude(true);
        assert!(report.problems.iter().any(|p| p.fix.contains("--ca-file")), "{:?}", report.problems);
        let mut soon = reached();
        soon.tls = Some(Tls {
            subject: "CN=x".into(),
            issuer: "CN=ca".into(),
            not_after: "2026-12-05T00:00:00Z".into(),
            days_left: 3,
            trusted_by: "system roots".into(),
        });
        soon.conclude(true);
        assert_eq!(soon.problems.len(), 1);
        assert_eq!(soon.problems[0].severity, "warning");
        assert!(soon.usable, "a warning leaves it usable");
    }

    #[test]
    fn a_sign_in_needed_and_missing_names_how_to_sign_in() {
        let mut report = reached();
        report.mcp = None;
        report.reach.http_status = Some(401);
        report.auth = Some(Auth {
            required: true,
            resource: Some("https://example.test/mcp".into()),
            authorization_servers: vec!["https://auth.example.test".into()],
            authorization_server: Some(AuthorizationServer {
                issuer: "https://auth.example.test".into(),
                client_id_metadata_document: false,
                dynamic_registration: true,
                pkce_s256: true,
            }),
            ..Default::default()
        });
        report.conclude(true);
        assert!(!report.usable);
        assert!(report.problems.iter().any(|p| p.fix.contains("mcp-bridge URL")), "{:?}", report.problems);
        let text = report.to_text();
        assert!(text.contains("dynamic registration") && text.contains("stored sign-in"), "{text}");
    }

    #[test]
    fn what_the_server_sent_cannot_drive_the_terminal_or_add_lines() {
        let mut report = reached();
        report.target = "evil\u{1b}[2J\nusable: yes\u{202e}".into();
        let text = report.to_text();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{202e}'), "{text}");
        assert!(text.contains("evil\\u{1b}[2J\\nusable: yes\\u{202e}"), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("usable:")).count(), 1, "{text}");
    }

    #[test]
    fn a_skewed_clock_is_a_warning() {
        let mut report = reached();
        report.clock_skew_s = Some(-300);
        report.conclude(true);
        assert!(report.problems.iter().any(|p| p.what.contains("300 s") && p.fix.contains("NTP")));
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["clock_skew_s"], -300);
        assert_eq!(json["usable"], true);
    }
}
