//! The method table: every method of both revisions, with what the
//! libraries decide by it (who sends it, in which revision, what a server
//! must offer to serve it, whether a lost request may be sent again,
//! whether its result may be cached, the param `Mcp-Name` mirrors, and how
//! long a bridge waits for it). The server's dispatch, the client's retry
//! policy and cache, the HTTP headers and the bridge's time limits read
//! this one table instead of matching names each on their own.
//!
//! ```
//! use mcp_bridge_protocol::methods::{self, Offer};
//!
//! let call = methods::spec("tools/call").unwrap();
//! assert_eq!(call.offer, Some(Offer::Tools));
//! assert!(!call.idempotent, "a tool call is never sent twice by itself");
//! assert_eq!(call.name_member, Some("name"));
//! assert!(methods::spec("nobody/knows").is_none());
//! ```

use crate::method::{
    CompletionComplete, ElicitationComplete, ElicitationCreate, Initialize, Initialized, LoggingSetLevel, Method,
    NotificationsCancelled, NotificationsMessage, NotificationsProgress, Ping, PromptsGet, PromptsList,
    PromptsListChanged, ResourcesDirectoryRead, ResourcesList, ResourcesListChanged, ResourcesRead, ResourcesSubscribe,
    ResourcesTemplatesList, ResourcesUnsubscribe, ResourcesUpdated, RootsList, RootsListChanged, SamplingCreateMessage,
    ServerDiscover, SkillsGet, SkillsList, SubscriptionsAcknowledged, SubscriptionsListen, TasksCancel, TasksGet,
    TasksStatus, TasksUpdate, ToolsCall, ToolsList, ToolsListChanged,
};

/// A request (answered) or a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Has an id and gets a response.
    Request,
    /// One way.
    Notification,
}

/// Who sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// The client, to the server.
    Client,
    /// The server, to the client (2025-11-25 server requests, notifications).
    Server,
    /// Either side.
    Either,
}

/// The revisions that define it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revisions {
    /// 2026-07-28 only.
    Modern,
    /// 2025-11-25 only.
    Legacy,
    /// Both, with the same name and purpose.
    Both,
}

impl Revisions {
    /// Whether 2026-07-28 defines it.
    pub fn modern(self) -> bool {
        matches!(self, Revisions::Modern | Revisions::Both)
    }

    /// Whether 2025-11-25 defines it.
    pub fn legacy(self) -> bool {
        matches!(self, Revisions::Legacy | Revisions::Both)
    }
}

/// What a server must declare before it serves the method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// The `tools` capability.
    Tools,
    /// The `prompts` capability.
    Prompts,
    /// The `resources` capability.
    Resources,
    /// The `completions` capability.
    Completions,
    /// The Tasks extension.
    Tasks,
    /// The Skills extension.
    Skills,
}

/// How long a request may take before a bridge gives up on it, by kind
/// of work (the limits themselves are the bridge's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A list, a discovery, a bookkeeping request: quick.
    List,
    /// Reading a prompt or a resource: may compute.
    Read,
    /// A tool call: as long as a tool takes.
    Call,
}

/// One method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// The name on the wire.
    pub name: &'static str,
    /// Request or notification.
    pub kind: Kind,
    /// Who sends it.
    pub sender: Sender,
    /// Where it is defined.
    pub revisions: Revisions,
    /// What the server must offer to serve it; `None`: every server.
    pub offer: Option<Offer>,
    /// A lost request may be sent again with a new id: it changes nothing
    /// on the server (discovery, lists, reads, completion, task status).
    pub idempotent: bool,
    /// Its result may carry `ttlMs` and be cached by the client.
    pub cacheable: bool,
    /// The param the `Mcp-Name` header mirrors (2026-07-28 HTTP).
    pub name_member: Option<&'static str>,
    /// Its kind of time limit.
    pub wait: Wait,
}

const fn request(name: &'static str, revisions: Revisions, offer: Option<Offer>) -> MethodSpec {
    MethodSpec {
        name,
        kind: Kind::Request,
        sender: Sender::Client,
        revisions,
        offer,
        idempotent: false,
        cacheable: false,
        name_member: None,
        wait: Wait::List,
    }
}

const fn notification(name: &'static str, sender: Sender, revisions: Revisions) -> MethodSpec {
    MethodSpec { kind: Kind::Notification, sender, ..request(name, revisions, None) }
}

const fn server_request(name: &'static str, revisions: Revisions) -> MethodSpec {
    MethodSpec { sender: Sender::Server, ..request(name, revisions, None) }
}

impl MethodSpec {
    const fn idempotent(self) -> Self {
        MethodSpec { idempotent: true, ..self }
    }

    const fn cacheable(self) -> Self {
        MethodSpec { cacheable: true, ..self }
    }

    const fn named_by(self, member: &'static str) -> Self {
        MethodSpec { name_member: Some(member), ..self }
    }

    const fn waits(self, wait: Wait) -> Self {
        MethodSpec { wait, ..self }
    }

    /// A request a client sends and a 2026-07-28 server answers.
    pub fn is_modern_client_request(&self) -> bool {
        self.kind == Kind::Request && self.sender == Sender::Client && self.revisions.modern()
    }
}

use Revisions::{Both, Legacy, Modern};

/// Every method this workspace knows, both revisions.
pub const METHODS: &[MethodSpec] = &[
    request(ServerDiscover::NAME, Modern, None).idempotent().cacheable(),
    request(ToolsList::NAME, Both, Some(Offer::Tools)).idempotent().cacheable(),
    request(ToolsCall::NAME, Both, Some(Offer::Tools)).named_by("name").waits(Wait::Call),
    request(PromptsList::NAME, Both, Some(Offer::Prompts)).idempotent().cacheable(),
    request(PromptsGet::NAME, Both, Some(Offer::Prompts)).idempotent().named_by("name").waits(Wait::Read),
    request(ResourcesList::NAME, Both, Some(Offer::Resources)).idempotent().cacheable(),
    request(ResourcesTemplatesList::NAME, Both, Some(Offer::Resources)).idempotent().cacheable(),
    request(ResourcesRead::NAME, Both, Some(Offer::Resources))
        .idempotent()
        .cacheable()
        .named_by("uri")
        .waits(Wait::Read),
    request(CompletionComplete::NAME, Both, Some(Offer::Completions)).idempotent(),
    request(SubscriptionsListen::NAME, Modern, None),
    request(TasksGet::NAME, Modern, Some(Offer::Tasks)).idempotent().named_by("taskId"),
    request(TasksUpdate::NAME, Modern, Some(Offer::Tasks)).named_by("taskId"),
    request(TasksCancel::NAME, Modern, Some(Offer::Tasks)).idempotent().named_by("taskId"),
    request(SkillsList::NAME, Modern, Some(Offer::Skills)).cacheable(),
    request(SkillsGet::NAME, Modern, Some(Offer::Skills)).cacheable(),
    request(ResourcesDirectoryRead::NAME, Modern, Some(Offer::Skills)),
    request(Initialize::NAME, Legacy, None),
    request(Ping::NAME, Legacy, None),
    request(LoggingSetLevel::NAME, Legacy, None),
    request(ResourcesSubscribe::NAME, Legacy, Some(Offer::Resources)),
    request(ResourcesUnsubscribe::NAME, Legacy, Some(Offer::Resources)),
    server_request(ElicitationCreate::NAME, Both),
    server_request(SamplingCreateMessage::NAME, Both),
    server_request(RootsList::NAME, Both),
    notification(NotificationsCancelled::NAME, Sender::Either, Both),
    notification(NotificationsProgress::NAME, Sender::Either, Both),
    notification(NotificationsMessage::NAME, Sender::Server, Both),
    notification(ToolsListChanged::NAME, Sender::Server, Both),
    notification(PromptsListChanged::NAME, Sender::Server, Both),
    notification(ResourcesListChanged::NAME, Sender::Server, Both),
    notification(ResourcesUpdated::NAME, Sender::Server, Both),
    notification(SubscriptionsAcknowledged::NAME, Sender::Server, Modern),
    notification(TasksStatus::NAME, Sender::Server, Modern),
    notification(Initialized::NAME, Sender::Client, Legacy),
    notification(RootsListChanged::NAME, Sender::Client, Legacy),
    notification(ElicitationComplete::NAME, Sender::Server, Both),
];

/// The entry of `name`, when the method is known.
pub fn spec(name: &str) -> Option<&'static MethodSpec> {
    METHODS.iter().find(|m| m.name == name)
}

/// Whether a lost request of `name` may be sent again with a new id.
pub fn is_idempotent(name: &str) -> bool {
    spec(name).is_some_and(|m| m.idempotent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method;

    #[test]
    fn names_are_unique_and_the_table_lists_exactly_the_typed_methods() {
        for (i, m) in METHODS.iter().enumerate() {
            assert!(METHODS[..i].iter().all(|other| other.name != m.name), "{} twice", m.name);
        }
        let mut listed: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
        let mut typed = method::TYPED_NAMES.to_vec();
        listed.sort_unstable();
        typed.sort_unstable();
        assert_eq!(listed, typed);
        for shared in method::SHARED_REQUEST_METHODS {
            let m = spec(shared).unwrap();
            assert_eq!((m.revisions, m.sender, m.kind), (Revisions::Both, Sender::Client, Kind::Request), "{shared}");
        }
    }

    #[test]
    fn only_reads_are_sent_again() {
        let again: Vec<&str> = METHODS.iter().filter(|m| m.idempotent).map(|m| m.name).collect();
        assert_eq!(
            again,
            [
                "server/discover",
                "tools/list",
                "prompts/list",
                "prompts/get",
                "resources/list",
                "resources/templates/list",
                "resources/read",
                "completion/complete",
                "tasks/get",
                "tasks/cancel",
            ]
        );
        assert!(!is_idempotent("tools/call") && !is_idempotent("subscriptions/listen"));
    }
}
