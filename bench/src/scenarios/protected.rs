//! Scenario 7: what checking tokens costs a protected endpoint. The same
//! server (`mcp-example-server --http`) without authorization, with JWT
//! access tokens checked against its issuer's cached keys, and with opaque
//! tokens introspected (answers kept, or asked for on every call). The
//! issuer is node's `oidc-provider`; the tokens are its client-credentials
//! tokens for the endpoint.

use std::io;
use std::path::PathBuf;

use test_support::oidc::{INTROSPECTION_CLIENT, OidcProvider, TokenFormat};

use super::{SERVER_CONCURRENCY, SMALL_TEXT};
use crate::chart::Chart;
use crate::http_load::{self, Endpoint};
use crate::programs::{Programs, Timing};
use crate::report::{Section, Table};
use crate::stdio_peer::Dialect;

/// One way of running the server: its name, its extra arguments, and the
/// issuer whose tokens it takes.
struct Setup<'a> {
    name: &'static str,
    args: Vec<String>,
    issuer: Option<&'a OidcProvider>,
}

/// Scenario 7: `tools/call` of `echo` with authorization off and on.
pub async fn protected(p: &Programs, t: &Timing) -> io::Result<Section> {
    let jwt = OidcProvider::start(TokenFormat::Jwt).await;
    let opaque = OidcProvider::start(TokenFormat::Opaque).await;
    let issuer = |provider: &OidcProvider| vec!["--auth-issuer".to_owned(), provider.issuer.clone()];
    let introspected = |extra: &[&str]| {
        let mut args = issuer(&opaque);
        args.push("--auth-introspection".into());
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        args
    };
    let setups = [
        Setup { name: "no authorization", args: Vec::new(), issuer: None },
        Setup { name: "JWT, keys cached", args: issuer(&jwt), issuer: Some(&jwt) },
        Setup { name: "introspection, answers kept 30 s", args: introspected(&[]), issuer: Some(&opaque) },
        Setup {
            name: "introspection on every call",
            args: introspected(&["--auth-introspection-cache", "0"]),
            issuer: Some(&opaque),
        },
    ];
    let envs = [
        ("MCP_AUTH_CLIENT_ID", PathBuf::from(INTROSPECTION_CLIENT.0)),
        ("MCP_AUTH_CLIENT_SECRET", PathBuf::from(INTROSPECTION_CLIENT.1)),
    ];
    let mut served = Vec::new();
    let mut endpoints = Vec::new();
    for setup in &setups {
        let port = http_load::free_port()?;
        let mut args = vec!["--http".to_owned(), format!("127.0.0.1:{port}")];
        args.extend(setup.args.iter().cloned());
        served.push(http_load::serve(&p.example_server, &args, &envs, port)?);
        let url = format!("http://127.0.0.1:{port}/mcp");
        let mut endpoint = Endpoint::new(url.as_str(), Dialect::Modern);
        if let Some(provider) = setup.issuer {
            endpoint = endpoint.with_bearer(provider.service_token(&url, "notes:read").await);
        }
        endpoints.push(endpoint);
    }

    let mut table = Table::new(&["authorization", "clients", "calls/s", "p50", "p99", "÷ no authorization"]);
    let mut groups = Vec::new();
    let mut targets = Vec::new();
    for clients in SERVER_CONCURRENCY {
        let routes: Vec<_> = setups.iter().zip(&endpoints).map(|(s, e)| (s.name, e, "echo")).collect();
        let medians = super::medians_over_http(&routes, clients, t).await?;
        let open = medians[0].per_second;
        for (setup, run) in setups.iter().zip(&medians) {
            table.row(super::http_row(setup.name, clients, run, open));
        }
        // A verified JWT is remembered: a hash lookup per call; an introspection kept 30 s, a map lookup.
        for ((setup, run), target) in setups.iter().zip(&medians).skip(1).zip([0.9, 0.8]) {
            let r = run.per_second / open.max(f64::MIN_POSITIVE);
            targets.push(format!(
                "{clients} client{}: {} {r:.2}x the calls/s without authorization; target ≥ {target:.2}x: {}",
                if clients == 1 { "" } else { "s" },
                setup.name,
                super::verdict(r >= target)
            ));
        }
        groups.extend(super::rate_and_p99(clients, &medians));
    }
    drop(served);
    Ok(Section {
        name: "protected",
        title: "7. Protected endpoints: the cost of checking tokens".into(),
        intro: format!(
            "`tools/call` of `echo` ({} B), 2026-07-28 clients each with its own keep-alive connection, against \
             `mcp-example-server --http` without authorization and with `--auth-issuer` (node's oidc-provider on \
             loopback; each client sends one of its client-credentials tokens for the endpoint): JWT access tokens \
             (ES256) checked against the issuer's keys, fetched at start and kept; opaque tokens introspected at \
             the issuer, the answer kept 30 s (the default) or asked for on every call \
             (`--auth-introspection-cache 0`: a round trip to the Node.js provider per call). {}",
            SMALL_TEXT.len(),
            super::medians_note(t)
        ),
        tables: vec![table],
        targets,
        chart: Chart {
            title: "Protected endpoints: calls/s and p99".into(),
            series: setups.iter().map(|s| s.name.to_owned()).collect(),
            groups,
        },
    })
}
