//! The validated configuration of one run, made from [`crate::args::Args`].

use std::time::Duration;

use mcp_bridge::{FrontendOptions, UpstreamConfig, profile};
use mcp_sdk::transport::stdio::StdioCommand;

use crate::args::Args;

/// The log levels `--log-level` accepts.
const LOG_LEVELS: [&str; 5] = ["error", "warning", "info", "debug", "trace"];

/// What the bridge runs with.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) log_level: String,
    pub(crate) upstream: UpstreamConfig,
    pub(crate) frontend: FrontendOptions,
}

impl Config {
    /// Checks the arguments.
    ///
    /// # Errors
    /// A message for the user naming the bad argument.
    pub(crate) fn from_args(args: Args) -> Result<Config, String> {
        let profile = profile::by_name(&args.profile).ok_or_else(|| {
            let known: Vec<&str> = profile::PROFILES.iter().map(|p| p.name).collect();
            format!("unknown --profile {:?}; known profiles: {}", args.profile, known.join(", "))
        })?;
        if !LOG_LEVELS.contains(&args.log_level.as_str()) {
            return Err(format!("unknown --log-level {:?}; use one of {}", args.log_level, LOG_LEVELS.join(", ")));
        }
        if args.discover_timeout == 0 {
            return Err("--discover-timeout must be at least 1 second".into());
        }
        if args.input_timeout == 0 {
            return Err("--input-timeout must be at least 1 second".into());
        }
        if args.max_line_bytes < 1024 {
            return Err("--max-line-bytes must be at least 1024".into());
        }
        let mut words = args.command.into_iter();
        let program = words.next().ok_or("give the server command after --")?;
        let mut command = StdioCommand::new(program).args(words);
        command.max_line_bytes = args.max_line_bytes;
        let frontend = FrontendOptions {
            profile,
            max_line_bytes: args.max_line_bytes,
            discover_timeout: Duration::from_secs(args.discover_timeout),
            input_timeout: Duration::from_secs(args.input_timeout),
            ..FrontendOptions::default()
        };
        Ok(Config { log_level: args.log_level, upstream: UpstreamConfig::Stdio(command), frontend })
    }
}
