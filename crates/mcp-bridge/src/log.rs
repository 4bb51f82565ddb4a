//! The stderr log of the executables: one line per event,
//! `mcp-bridge: <scope>: <level>: <message>`, control characters replaced by
//! spaces so a line stays a line in the client's output channel.

use std::fmt;
use std::time::Duration;

mod stderr_queue;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The line format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineFormat {
    /// The program name at the start of each line.
    pub program: &'static str,
}

/// The scope of an event: the last part of its target
/// (`mcp_bridge_sdk::server::legacy::frontend` → `frontend`).
fn scope(target: &str) -> &str {
    let last = target.rsplit("::").next().unwrap_or(target);
    last.strip_prefix("mcp_").unwrap_or(last)
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "info",
        Level::DEBUG => "debug",
        Level::TRACE => "trace",
    }
}

/// Replaces control characters (newlines included) with spaces.
pub(crate) fn sanitize(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

struct Collect(String);

impl tracing::field::Visit for Collect {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        use fmt::Write;
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            self.record_str(field, &format!("{value:?}"));
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            self.0.push_str(&format!(" {}={}", field.name(), field_value(value)));
        }
    }
}

/// A field's value as written after `key=`: quoted when it is empty or
/// holds a space, `=` or `"`, so that a value from the network (a tool's
/// name) cannot pass for other fields of the line.
fn field_value(value: &str) -> std::borrow::Cow<'_, str> {
    let plain = !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || c == '=' || c == '"');
    if plain { value.into() } else { format!("{value:?}").into() }
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut text = Collect(String::new());
        event.record(&mut text);
        let meta = event.metadata();
        writeln!(
            writer,
            "{}: {}: {}: {}",
            self.program,
            scope(meta.target()),
            level_name(meta.level()),
            sanitize(&text.0)
        )
    }
}

/// How each log line is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `mcp-bridge: scope: level: message key=value`, for people.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`,
    /// `message` and the event's fields), for machines.
    Json,
}

/// A log line as one JSON object.
struct JsonFormat;

/// An event's fields as JSON members.
struct Members(serde_json::Map<String, serde_json::Value>);

impl tracing::field::Visit for Members {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }
}

impl<S, N> FormatEvent<S, N> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let now = time::OffsetDateTime::now_utc();
        let timestamp = now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
        let mut members = Members(serde_json::Map::new());
        members.0.insert("timestamp".into(), timestamp.into());
        members.0.insert("level".into(), level_name(meta.level()).into());
        members.0.insert("target".into(), meta.target().into());
        event.record(&mut members);
        // serde_json escapes control characters: one line per event.
        writeln!(writer, "{}", serde_json::Value::Object(members.0))
    }
}

/// The level of the installed stderr log, changeable while it runs.
#[derive(Clone)]
pub struct LogLevel(tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>);

impl LogLevel {
    /// From now on, lines at `level` and above are written (a client's
    /// `logging/setLevel`: notice counts as info; critical, alert and
    /// emergency as error).
    pub fn set(&self, level: mcp_bridge_protocol::types::LoggingLevel) {
        use mcp_bridge_protocol::types::LoggingLevel;
        let filter = match level {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info | LoggingLevel::Notice => "info",
            LoggingLevel::Warning => "warn",
            _ => "error",
        };
        if self.0.reload(tracing_subscriber::EnvFilter::new(filter)).is_err() {
            tracing::debug!("the log level could not be changed");
        }
    }
}

impl std::fmt::Debug for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogLevel").finish_non_exhaustive()
    }
}

/// Lines queued for stderr before new ones are dropped: a client that does
/// not read the bridge's stderr loses log lines, never the bridge's
/// progress; about 1 MiB at the longest lines.
const QUEUED_LINES: usize = 4096;

/// How long the end of the program waits for the queued lines to be
/// written: a stderr nobody reads must not hold the exit.
const DRAIN_AT_EXIT: Duration = Duration::from_secs(1);

/// The installed stderr log: the handle of its level, and its queue, whose
/// lines are written (for at most a second) when this is dropped.
pub struct StderrLog {
    /// Changes the level while the log runs.
    pub level: LogLevel,
    queue: stderr_queue::StderrQueue,
    drain: stderr_queue::Drain,
}

impl std::fmt::Debug for StderrLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StderrLog").finish_non_exhaustive()
    }
}

impl Drop for StderrLog {
    fn drop(&mut self) {
        let dropped = self.drain.dropped();
        if dropped > 0 {
            use std::io::Write;
            let note = format!("mcp-bridge: log: warning: {dropped} lines were dropped: stderr was not read\n");
            let _ = self.queue.write_all(note.as_bytes());
        }
        self.drain.wait(DRAIN_AT_EXIT);
    }
}

/// Installs the stderr log at `level` (`error`, `warning`, `info`,
/// `debug`, `trace`, or a tracing filter) in `format`, written by a thread
/// of its own.
/// `None` when a log was installed before.
pub fn init(program: &'static str, level: &str, format: LogFormat) -> Option<StderrLog> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = match level {
        "warning" => "warn",
        other => other,
    };
    let (filter, handle) = tracing_subscriber::reload::Layer::new(tracing_subscriber::EnvFilter::new(filter));
    let (queue, drain) = stderr_queue::StderrQueue::start(QUEUED_LINES, std::io::stderr());
    let lines = tracing_subscriber::fmt::layer().with_writer(queue.clone());
    let installed = match format {
        LogFormat::Text => {
            tracing_subscriber::registry().with(filter).with(lines.event_format(LineFormat { program })).try_init()
        }
        LogFormat::Json => tracing_subscriber::registry().with(filter).with(lines.event_format(JsonFormat)).try_init(),
    };
    installed.ok()?;
    Some(StderrLog { level: LogLevel(handle), queue, drain })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_is_the_last_part_of_the_target() {
        assert_eq!(scope("mcp_bridge_sdk::server::legacy::frontend"), "frontend");
        assert_eq!(scope("mcp_router"), "router");
        assert_eq!(scope("mcp_bridge_sdk::transport::stdio"), "stdio");
    }

    #[test]
    fn values_that_could_pass_for_fields_are_quoted() {
        assert_eq!(field_value("echo"), "echo");
        assert_eq!(field_value("x principal=admin"), r#""x principal=admin""#);
        assert_eq!(field_value(""), r#""""#);
        assert_eq!(field_value("a\"b"), r#""a\"b""#);
    }

    #[test]
    fn control_characters_become_spaces() {
        assert_eq!(sanitize("a\nb\r\tc\u{1b}[31m"), "a b  c [31m");
    }
}
