//! The legacy sessions of the HTTP endpoint: one [`LegacySession`] per
//! `Mcp-Session-Id`, and the routing of what it sends: a message that
//! belongs to a client request goes to the SSE stream of the POST that
//! carried it; the rest (list changes, `resources/updated`, messages whose
//! POST stream is gone) to the session's GET stream, each with an event id,
//! the last ones kept for `Last-Event-ID`.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::server::protect::CallerSlot;
use crate::server::shares::{self, Caps, Held, Verdict};
use crate::task_group::TaskGroup;
use mcp_bridge_protocol::{Message, RequestId};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::server::legacy::session::{LegacySession, Outgoing};

/// Messages queued for one POST's stream.
const REQUEST_STREAM_QUEUE: usize = 256;

/// One message of the GET stream, with its event id.
pub(super) type Event = (u64, Message);

/// What the GET stream of a session holds.
#[derive(Default)]
struct GetStream {
    /// The last events, for a client that comes back with `Last-Event-ID`.
    kept: VecDeque<Event>,
    next_id: u64,
    /// The open stream, if any.
    live: Option<mpsc::Sender<Event>>,
}

/// The routes of one session, under one lock.
#[derive(Default)]
struct Routes {
    /// The open POST streams, by the id of their request.
    requests: HashMap<RequestId, mpsc::Sender<Message>>,
    get: GetStream,
    last_used: Option<Instant>,
}

/// Who holds a session, for the fair shares of the session cap.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Holder {
    /// The subject of the token that started it, on a protected endpoint.
    Subject(String),
    /// The address of the client that started it.
    Address(IpAddr),
    /// Neither is known (a router mounted without the client's address).
    Unknown,
}

/// One legacy client over HTTP.
pub(super) struct HttpSession {
    pub(super) session: Arc<LegacySession>,
    routes: Mutex<Routes>,
    /// Events of the GET stream kept for resumption.
    keep: usize,
    /// The subject of the token that started it, on a protected endpoint:
    /// the session is that caller's only.
    pub(super) owner: Option<String>,
    /// The caller of its latest request, which the server's handlers see.
    pub(super) caller: CallerSlot,
    /// Who started it, for the fair shares of the session cap.
    holder: Holder,
    /// Counts it among the open sessions while it lives.
    _counted: Option<crate::telemetry::SessionCount>,
}

impl HttpSession {
    /// A session of `owner` (and its caller now), started by `holder`, and
    /// the task (in `tasks`) that routes what it sends; the task ends when
    /// the session is dropped.
    pub(super) fn start(
        make: impl FnOnce(mpsc::Sender<Outgoing>) -> Arc<LegacySession>,
        (queue, keep): (usize, usize),
        (owner, holder): (Option<String>, Holder),
        caller: CallerSlot,
        tasks: &TaskGroup,
        observer: Option<&Arc<dyn crate::telemetry::Observer>>,
    ) -> Arc<HttpSession> {
        let (out, mut sent) = mpsc::channel::<Outgoing>(queue);
        let routes = Mutex::default();
        let _counted = observer.map(|o| crate::telemetry::SessionCount::new(o.clone()));
        let legacy = Arc::new(HttpSession { session: make(out), routes, keep, owner, caller, holder, _counted });
        legacy.touch();
        let weak = Arc::downgrade(&legacy);
        tasks.spawn(async move {
            while let Some(outgoing) = sent.recv().await {
                let Some(legacy) = weak.upgrade() else { return };
                legacy.route(outgoing);
            }
        });
        legacy
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes a use of the session (for its idle time).
    pub(super) fn touch(&self) {
        self.routes().last_used = Some(Instant::now());
    }

    /// When the session was last used.
    fn last_used(&self) -> Instant {
        self.routes().last_used.unwrap_or_else(Instant::now)
    }

    /// Whether the session has been unused for `idle` with no stream open.
    pub(super) fn expired(&self, idle: Duration) -> bool {
        let routes = self.routes();
        routes.requests.is_empty()
            && routes.get.live.as_ref().is_none_or(mpsc::Sender::is_closed)
            && routes.last_used.is_none_or(|t| t.elapsed() >= idle)
    }

    /// Opens the stream of the POST that carries request `id`; `None` while
    /// a request of the session with that id is under way.
    pub(super) fn open_request_stream(&self, id: &RequestId) -> Option<mpsc::Receiver<Message>> {
        let mut routes = self.routes();
        if routes.requests.get(id).is_some_and(|open| !open.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(REQUEST_STREAM_QUEUE);
        routes.requests.insert(id.clone(), tx);
        Some(rx)
    }

    /// Closes the stream of request `id` (its response went out, or the
    /// client went away).
    pub(super) fn close_request_stream(&self, id: &RequestId) {
        self.routes().requests.remove(id);
    }

    /// Opens the GET stream, replaying the kept events after `last_event_id`;
    /// `None` while another GET stream is open.
    pub(super) fn open_get_stream(&self, last_event_id: Option<u64>) -> Option<mpsc::Receiver<Event>> {
        let mut routes = self.routes();
        if routes.get.live.as_ref().is_some_and(|live| !live.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(self.keep.max(1) * 2);
        for event in routes.get.kept.iter().filter(|(id, _)| last_event_id.is_none_or(|last| *id > last)) {
            // The queue holds twice what is kept: the replay fits.
            let _ = tx.try_send(event.clone());
        }
        routes.get.live = Some(tx);
        Some(rx)
    }

    /// Sends one message of the session where it belongs. Never waits: a
    /// stream that does not read is closed (a POST's) or cut off (the GET
    /// stream's client resumes with `Last-Event-ID`).
    fn route(&self, outgoing: Outgoing) {
        let related = outgoing.related.clone();
        let Some(message) = outgoing.into_message() else { return };
        let mut routes = self.routes();
        let message = match related.as_ref().and_then(|id| routes.requests.get(id).map(|tx| (id, tx))) {
            Some((id, tx)) => match tx.try_send(message) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(message) | mpsc::error::TrySendError::Closed(message)) => {
                    tracing::debug!(%id, "a request's stream is gone or full; its message goes to the GET stream");
                    let id = id.clone();
                    routes.requests.remove(&id);
                    message
                }
            },
            None => message,
        };
        let get = &mut routes.get;
        get.next_id += 1;
        let event = (get.next_id, message);
        if let Some(live) = &get.live
            && live.try_send(event.clone()).is_err()
        {
            tracing::debug!("the GET stream does not read; it is closed (the client may resume it)");
            get.live = None;
        }
        get.kept.push_back(event);
        while get.kept.len() > self.keep {
            get.kept.pop_front();
        }
    }
}

/// Every legacy session of an endpoint, by id.
#[derive(Default)]
pub(super) struct Sessions {
    by_id: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Each session's router and the endings of expired sessions.
    pub(super) tasks: TaskGroup,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session `id`, marked used.
    pub(super) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let found = self.lock().get(id).cloned();
        if let Some(session) = &found {
            session.touch();
        }
        found
    }

    /// Adds a session under a new random id, after dropping the expired
    /// ones and, under `caps`, the one it replaces (the idlest of its own
    /// holder at that holder's cap, else at the total cap the idlest of the
    /// biggest holder: [`shares::admit`]); `None` when it is refused.
    /// Returns the sessions taken out for the caller to end.
    pub(super) fn insert(
        &self,
        session: Arc<HttpSession>,
        caps: Caps,
        idle: Duration,
    ) -> (Option<String>, Vec<Arc<HttpSession>>) {
        let mut ended = self.take_expired(idle);
        let mut by_id = self.lock();
        let places: Vec<Held<&Holder, &String>> = by_id
            .iter()
            .map(|(id, s)| Held { id, holder: &s.holder, quiet_since: s.last_used().into_std(), reading_head: false })
            .collect();
        match shares::admit(&&session.holder, &places, caps) {
            Verdict::Admit => {}
            Verdict::Shed(id) => {
                let id = id.clone();
                if let Some(shed) = by_id.remove(&id) {
                    tracing::debug!("ending the idlest legacy HTTP session of a client holding many, for another");
                    ended.push(shed);
                }
            }
            Verdict::Refuse => return (None, ended),
        }
        let Some(id) = new_session_id() else { return (None, ended) };
        by_id.insert(id.clone(), session);
        (Some(id), ended)
    }

    /// Takes out the sessions unused for `idle` with no stream open.
    pub(super) fn take_expired(&self, idle: Duration) -> Vec<Arc<HttpSession>> {
        let mut by_id = self.lock();
        let expired: Vec<String> = by_id.iter().filter(|(_, s)| s.expired(idle)).map(|(id, _)| id.clone()).collect();
        expired.iter().filter_map(|id| by_id.remove(id)).collect()
    }

    /// Removes the session `id`.
    pub(super) fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.lock().remove(id)
    }
}

/// 128 random bits in hex (visible ASCII, as the transport wants); `None`
/// without a source of randomness: a guessable id would let others in.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}
