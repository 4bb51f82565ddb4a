//! The sign-in at an HTTP upstream that needs OAuth: the SDK's
//! [`OAuthClient`](mcp_bridge_sdk::auth::OAuthClient) does the protocol; this
//! module is its [`Authorize`] hook for a bridge that a desktop client
//! started: it checks the authorization URL, starts the loopback
//! [`receiver`], writes the sign-in line once, and lets the [`Gate`]
//! decide how the user gets there: the browser (before
//! `notifications/initialized`), or the client's consent (a URL
//! elicitation, after it). A device sign-in (`--device-code`) goes the
//! same way with its verification URL and code, without the browser. Each
//! failure keeps its cause for the error of the request.

mod errors;
/// The loopback receiver of the sign-in's redirect: public for the
/// bridge's own tests and fuzz targets, not an interface.
#[doc(hidden)]
pub mod receiver;
pub mod tokens;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{ElicitAction, InputResponse};
use mcp_bridge_sdk::BoxError;
use mcp_bridge_sdk::auth::{
    AskUser, AuthorizationRequest, AuthorizationResponse, Authorize, DeviceAuthorization, DevicePrompt,
};
use tokio::time::Instant;

pub(crate) use errors::SignInProblem;
pub use mcp_bridge_sdk::server::legacy::frontend::{Consent, SignInPrompt};
pub use receiver::redirect_uri;
use receiver::{Delivery, Receiver};

/// The longest authorization URL accepted.
pub(crate) const MAX_URL_BYTES: usize = 8 * 1024;
/// The time one sign-in may take by default (`--sign-in-timeout`).
pub const DEFAULT_SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);
/// The wait after the client declined a sign-in.
pub(crate) const CONSENT_COOLDOWN: Duration = Duration::from_secs(60);
/// The redirect port when `--redirect-port` is not given.
pub const DEFAULT_REDIRECT_PORT: u16 = 33418;

/// Why a sign-in failed, as the cause of the request's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The user did not finish within `--sign-in-timeout`.
    Timeout,
    /// The user (or the client) declined.
    Denied,
    /// The authorization URL is not acceptable.
    InvalidUrl,
    /// No browser could be started.
    BrowserLaunchFailed,
    /// The redirect port is taken.
    RedirectPortUnavailable,
    /// The start URL was opened twice.
    StartReused,
    /// A sign-in after `notifications/initialized` with a client that
    /// cannot be asked to open a URL: it cannot reach the user.
    ReauthorizationRequired,
}

impl Failure {
    /// The cause of the error table, with its name and fixed message.
    pub fn cause(self) -> mcp_bridge_sdk::server::legacy::translate::Cause {
        use mcp_bridge_sdk::server::legacy::translate::Cause;
        match self {
            Failure::Timeout => Cause::SignInTimeout,
            Failure::Denied => Cause::SignInDenied,
            Failure::InvalidUrl => Cause::SignInInvalidUrl,
            Failure::BrowserLaunchFailed => Cause::BrowserLaunchFailed,
            Failure::RedirectPortUnavailable => Cause::RedirectPortUnavailable,
            Failure::StartReused => Cause::SignInStartReused,
            Failure::ReauthorizationRequired => Cause::ReauthorizationRequired,
        }
    }
}

/// Checks an authorization URL before anything is done with it: https, a
/// host, no user information, no fragment, only visible ASCII without
/// `"<>\^`{|}`, at most [`MAX_URL_BYTES`].
///
/// # Errors
/// The [`UrlRule`] it breaks.
pub fn check_authorization_url(url: &str) -> Result<(), UrlRule> {
    if url.len() > MAX_URL_BYTES {
        return Err(UrlRule::TooLong { max: MAX_URL_BYTES });
    }
    if let Some(bad) = url.bytes().find(|b| !(0x21..=0x7e).contains(b) || b"\"<>\\^`{|}".contains(b)) {
        return Err(UrlRule::Byte(bad));
    }
    // The URL parser forgives `https:/host` and `https:///host`; the URL
    // must be written as `https://host` itself (found by fuzzing).
    let authority = match url.get(..8) {
        Some(scheme) if scheme.eq_ignore_ascii_case("https://") => &url[8..],
        _ => return Err(UrlRule::NotHttps),
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| UrlRule::NotAUrl(e.to_string()))?;
    if authority.starts_with('/') || parsed.host_str().is_none_or(str::is_empty) {
        return Err(UrlRule::NoHost);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlRule::UserInformation);
    }
    if parsed.fragment().is_some() || url.contains('#') {
        return Err(UrlRule::Fragment);
    }
    Ok(())
}

/// The rule of [`check_authorization_url`] an authorization URL breaks.
/// Never quotes the URL (it carries the sign-in's state).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlRule {
    /// Longer than `max` bytes.
    #[error("longer than {max} bytes")]
    TooLong {
        /// `MAX_URL_BYTES` (8 KiB).
        max: usize,
    },
    /// Holds a byte outside visible ASCII, or one of `"<>\^`{|}`.
    #[error("holds the byte 0x{0:02x}")]
    Byte(u8),
    /// Not written `https://host...`.
    #[error("not https")]
    NotHttps,
    /// Does not parse as a URL.
    #[error("not a URL: {0}")]
    NotAUrl(String),
    /// No host.
    #[error("no host")]
    NoHost,
    /// Holds a user name or password.
    #[error("holds user information")]
    UserInformation,
    /// Holds a fragment.
    #[error("holds a fragment")]
    Fragment,
}

/// The message of a sign-in in the browser.
const SIGN_IN_MESSAGE: &str = "The MCP server needs you to sign in. Open the link to continue.";

/// Opens a URL in the user's browser.
pub type Opener = Arc<dyn Fn(&str) -> Result<(), BoxError> + Send + Sync>;

/// How a sign-in reaches the user. A bridge's one client: the browser
/// until the client is initialized, then the client's consent; never the
/// browser after that. A daemon's many clients ([`Gate::per_request`]):
/// the client whose request needed the sign-in, else the browser.
pub struct Gate {
    initialized: AtomicBool,
    consent: Mutex<Option<Consent>>,
    opener: Option<Opener>,
    /// Until when a declined sign-in is not asked again.
    cooldown_until: Mutex<Option<Instant>>,
    /// Asks the client of each sign-in's request instead of one client.
    per_request: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").field("initialized", &self.initialized.load(Ordering::SeqCst)).finish_non_exhaustive()
    }
}

/// What the gate did with a sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivered {
    /// The browser was opened with the start URL.
    Browser,
    /// The client's user accepted; the client opens the URL.
    Consented,
    /// Nothing was opened (`--no-browser`): the sign-in line is the way.
    LineOnly,
}

impl Gate {
    /// A gate that opens the browser with `opener` (`None`: never).
    pub fn new(opener: Option<Opener>) -> Gate {
        Gate {
            initialized: AtomicBool::new(false),
            consent: Mutex::new(None),
            opener,
            cooldown_until: Mutex::new(None),
            per_request: false,
        }
    }

    /// The gate of a bridge of many clients (a daemon's): a sign-in a
    /// client's request needed asks that client to let the user open the
    /// URL (a URL elicitation); one that no request needed (a server's
    /// start), or whose client cannot show a URL, opens the browser with
    /// `opener` (`None`: the sign-in line is the way). Each of them started
    /// the sign-in with something they asked for, so a browser is not a
    /// surprise.
    pub fn per_request(opener: Option<Opener>) -> Gate {
        Gate { per_request: true, ..Gate::new(opener) }
    }

    /// The client sent `notifications/initialized`: from now on the client
    /// is asked, through `consent` (`None`: it cannot show a URL).
    pub fn client_initialized(&self, consent: Option<Consent>) {
        *self.consent.lock().unwrap_or_else(|e| e.into_inner()) = consent;
        self.initialized.store(true, Ordering::SeqCst);
    }

    /// Brings a sign-in to the user: before the client is initialized the
    /// browser at `browser_url` (none for a device sign-in, which happens
    /// elsewhere), after it the client's consent to `prompt`. Per request:
    /// the consent of the client `ask_user` asks, else the browser.
    async fn deliver(
        &self,
        browser_url: Option<&str>,
        prompt: SignInPrompt,
        ask_user: Option<&AskUser>,
    ) -> Result<Delivered, Failure> {
        if self.per_request {
            if let Some(ask) = ask_user {
                self.check_cooldown()?;
                match ask.ask(prompt.input_request()).await {
                    Ok(InputResponse::Elicit(answer)) if answer.action == ElicitAction::Accept => {
                        return Ok(Delivered::Consented);
                    }
                    Ok(_) => return Err(self.declined()),
                    // Nobody's request, or a client that cannot show a URL:
                    // the browser instead.
                    Err(
                        e @ (mcp_bridge_sdk::Error::NoUserToAsk | mcp_bridge_sdk::Error::UndeclaredInputRequest { .. }),
                    ) => {
                        tracing::info!(target: "signin", "the client cannot be asked to sign in ({e}): the browser");
                    }
                    // Its call ended, or the client is gone: nobody to sign in for.
                    Err(e) => {
                        tracing::info!(target: "signin", "the sign-in was not answered: {e}");
                        return Err(Failure::Denied);
                    }
                }
            }
            return self.open(browser_url);
        }
        if !self.initialized.load(Ordering::SeqCst) {
            return self.open(browser_url);
        }
        self.check_cooldown()?;
        let consent = self.consent.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The bridge never opens a browser once the client runs; a client
        // that cannot show a URL leaves no way to the user but a restart.
        let Some(consent) = consent else { return Err(Failure::ReauthorizationRequired) };
        match consent(prompt).await {
            Ok(true) => Ok(Delivered::Consented),
            Ok(false) => Err(self.declined()),
            Err(e) => {
                tracing::warn!(target: "signin", "the client could not be asked to sign in: {e}");
                Ok(Delivered::LineOnly)
            }
        }
    }

    /// The browser at `url` (none: the sign-in line is the way).
    fn open(&self, url: Option<&str>) -> Result<Delivered, Failure> {
        match (&self.opener, url) {
            (Some(open), Some(url)) => open(url).map(|()| Delivered::Browser).map_err(|e| {
                tracing::warn!(target: "signin", "cannot open a browser: {e}");
                Failure::BrowserLaunchFailed
            }),
            _ => Ok(Delivered::LineOnly),
        }
    }

    /// Refuses while a declined sign-in cools down.
    fn check_cooldown(&self) -> Result<(), Failure> {
        let until = *self.cooldown_until.lock().unwrap_or_else(|e| e.into_inner());
        match until {
            Some(until) if Instant::now() < until => Err(Failure::Denied),
            _ => Ok(()),
        }
    }

    /// The user declined: not asked again for [`CONSENT_COOLDOWN`].
    fn declined(&self) -> Failure {
        *self.cooldown_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + CONSENT_COOLDOWN);
        Failure::Denied
    }
}

/// The settings of the sign-ins of one bridge ([`SignInOptions::new`]).
/// Its clones share the redirect port: the sign-ins of several servers
/// (a daemon's) take turns at it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SignInOptions {
    /// The redirect port of the loopback receiver.
    pub redirect_port: u16,
    /// The time one sign-in may take.
    pub timeout: Duration,
    /// Held while a sign-in listens on the redirect port.
    port_turn: Arc<tokio::sync::Mutex<()>>,
}

impl SignInOptions {
    /// Sign-ins redirected to `127.0.0.1:redirect_port`, each of at most `timeout`.
    pub fn new(redirect_port: u16, timeout: Duration) -> Self {
        SignInOptions { redirect_port, timeout, port_turn: Arc::default() }
    }
}

/// The sign-ins of one bridge: the [`Authorize`] hook of its OAuth client.
pub struct SignIn {
    options: SignInOptions,
    gate: Arc<Gate>,
    announced: AtomicBool,
    last_failure: Mutex<Option<Failure>>,
    /// Writes the sign-in line (stderr in the executable).
    announce: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn").field("options", &self.options).finish_non_exhaustive()
    }
}

impl SignIn {
    /// Sign-ins with these options through `gate`; `announce` writes the
    /// sign-in line.
    pub fn new(options: SignInOptions, gate: Arc<Gate>, announce: Arc<dyn Fn(&str) + Send + Sync>) -> Arc<SignIn> {
        Arc::new(SignIn { options, gate, announced: AtomicBool::new(false), last_failure: Mutex::new(None), announce })
    }

    /// The redirect URI to register for these sign-ins.
    pub fn redirect_uri(&self) -> String {
        receiver::redirect_uri(self.options.redirect_port)
    }

    /// Why the last sign-in failed, if it did.
    pub fn last_failure(&self) -> Option<Failure> {
        *self.last_failure.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The hook to give the OAuth client.
    pub fn authorize(self: &Arc<Self>) -> Authorize {
        let me = self.clone();
        Arc::new(move |request: AuthorizationRequest| {
            let me = me.clone();
            Box::pin(async move {
                let outcome = me.run(&request).await;
                me.noted(outcome).map_err(Into::into)
            })
        })
    }

    /// The prompt of device sign-ins (`--device-code`): each code is
    /// written on stderr, and once the client runs it is asked to show it
    /// (a URL elicitation); the browser is never opened.
    pub fn device_prompt(self: &Arc<Self>) -> DevicePrompt {
        let me = self.clone();
        DevicePrompt::new(move |device: DeviceAuthorization| {
            let me = me.clone();
            async move {
                let outcome = me.show_device(&device).await;
                me.noted(outcome)
            }
        })
    }

    /// Keeps a sign-in's failure (for the request's error) and gives its
    /// message to the OAuth client.
    fn noted<T>(&self, outcome: Result<T, Failure>) -> Result<T, String> {
        *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) = outcome.as_ref().err().copied();
        outcome.map_err(|failure| failure.cause().text())
    }

    async fn show_device(&self, device: &DeviceAuthorization) -> Result<(), Failure> {
        let url = device.verification_uri_complete.as_deref().unwrap_or(&device.verification_uri);
        for checked in [url, &device.verification_uri] {
            check_authorization_url(checked).map_err(|why| {
                tracing::warn!(target: "signin", "the verification URL is refused: {why}");
                Failure::InvalidUrl
            })?;
        }
        let code = &device.user_code;
        let mut line = format!("{} and enter the code {code}", device.verification_uri);
        if let Some(complete) = &device.verification_uri_complete {
            line.push_str(&format!(" (or open {complete})"));
        }
        (self.announce)(&line);
        let message =
            format!("The MCP server needs you to sign in: open the link on any device and enter the code {code}.");
        let prompt = SignInPrompt { url: url.to_owned(), message };
        tokio::time::timeout(self.options.timeout, self.gate.deliver(None, prompt, None))
            .await
            .map_err(|_| Failure::Timeout)??;
        Ok(())
    }

    async fn run(&self, request: &AuthorizationRequest) -> Result<AuthorizationResponse, Failure> {
        check_authorization_url(&request.url).map_err(|why| {
            tracing::warn!(target: "signin", "the authorization URL is refused: {why}");
            Failure::InvalidUrl
        })?;
        // Another server's sign-in may hold the port: this one waits its
        // turn, within its own time.
        let deadline = tokio::time::Instant::now() + self.options.timeout;
        let turn = self.options.port_turn.clone();
        let _turn = tokio::time::timeout_at(deadline, turn.lock_owned()).await.map_err(|_| Failure::Timeout)?;
        let mut receiver =
            Receiver::start(self.options.redirect_port, &request.url, &request.state).await.map_err(|e| {
                tracing::warn!(target: "signin", "cannot listen on 127.0.0.1:{}: {e}", self.options.redirect_port);
                Failure::RedirectPortUnavailable
            })?;
        if !self.announced.swap(true, Ordering::SeqCst) {
            (self.announce)(&request.url);
        }
        let wait = async {
            let prompt = SignInPrompt { url: request.url.clone(), message: SIGN_IN_MESSAGE.to_owned() };
            self.gate.deliver(Some(&receiver.start_url()), prompt, request.ask_user.as_ref()).await?;
            match receiver.wait().await {
                Some(Delivery::Callback(response)) => Ok(response),
                Some(Delivery::StartReused) => Err(Failure::StartReused),
                None => Err(Failure::Timeout),
            }
        };
        let response = tokio::time::timeout_at(deadline, wait).await.map_err(|_| Failure::Timeout)??;
        if response.error.as_deref() == Some("access_denied") {
            return Err(Failure::Denied);
        }
        Ok(response)
    }
}

/// Environment variables whose names suggest a secret: a browser started
/// by the bridge does not get them.
pub(crate) fn is_secret_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "AUTH", "CREDENTIAL", "COOKIE", "SESSION"]
        .iter()
        .any(|word| upper.contains(word))
}

/// The browser opener of the platform: `browser` (the command line
/// passes `$BROWSER`), else the system's openers from the `open` crate, in
/// its order (`xdg-open`, `gio`, … on
/// Linux; `open` on macOS; PowerShell's `Start-Process`, then
/// `explorer.exe` on Windows), each tried until one starts; the URL as an
/// argument, never through a shell; null stdio, and the environment
/// without secret variables (nor `extra_secrets`).
pub fn system_opener(browser: Option<std::ffi::OsString>, extra_secrets: Vec<String>) -> Opener {
    Arc::new(move |url: &str| {
        let candidates = match &browser {
            Some(browser) => {
                let mut command = std::process::Command::new(browser);
                command.arg(url);
                vec![command]
            }
            None => open::commands(url),
        };
        let mut last = String::from("no browser program");
        for mut command in candidates {
            command
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            for (name, _) in std::env::vars_os() {
                let name = name.to_string_lossy().into_owned();
                if is_secret_variable(&name) || extra_secrets.contains(&name) {
                    command.env_remove(&name);
                }
            }
            match command.spawn() {
                Ok(mut child) => {
                    // Reaped in the background; the browser may outlive us.
                    std::thread::spawn(move || child.wait());
                    return Ok(());
                }
                Err(e) => last = format!("{}: {e}", command.get_program().to_string_lossy()),
            }
        }
        Err(last.into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_urls_are_checked() {
        assert_eq!(check_authorization_url("https://auth.example.com/authorize?client_id=a&state=b"), Ok(()));
        for bad in [
            "http://auth.example.com/authorize",
            "https://user:pw@auth.example.com/authorize",
            "https://auth.example.com/authorize#frag",
            "https://auth.example.com/a b",
            "https://auth.example.com/a\r\nSet-Cookie:x",
            "https://auth.example.com/<script>",
            "https:///path",
            "https:/auth.example.com/authorize",
            "https:auth.example.com/authorize",
            "javascript:alert(1)",
        ] {
            assert!(check_authorization_url(bad).is_err(), "{bad}");
        }
        let long = format!("https://auth.example.com/?q={}", "a".repeat(MAX_URL_BYTES));
        assert_eq!(check_authorization_url(&long), Err(UrlRule::TooLong { max: MAX_URL_BYTES }));
        assert_eq!(check_authorization_url("http://a.example/"), Err(UrlRule::NotHttps));
        assert_eq!(check_authorization_url("https://a.example/#f"), Err(UrlRule::Fragment));
    }

    #[test]
    fn secret_variables_are_recognised() {
        for name in ["GITHUB_TOKEN", "aws_secret_access_key", "MY_API_KEY", "PGPASSWORD", "HTTP_AUTHORIZATION"] {
            assert!(is_secret_variable(name), "{name}");
        }
        for name in ["PATH", "HOME", "DISPLAY", "LANG"] {
            assert!(!is_secret_variable(name), "{name}");
        }
    }

    #[test]
    fn every_failure_has_a_cause_and_the_helpful_ones_name_their_option() {
        assert!(Failure::Timeout.cause().message().contains("try again"));
        assert!(Failure::RedirectPortUnavailable.cause().message().contains("redirect is in use"));
        assert!(Failure::StartReused.cause().message().contains("the computer that runs mcp-bridge"));
        assert_eq!(Failure::StartReused.cause().name(), "sign_in_start_reused");
    }
}
