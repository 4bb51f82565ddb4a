//! [`RedisTaskStore`]: tasks shared by a server's replicas in Redis, so
//! `tasks/get`, `tasks/update` and `tasks/cancel` work on any of them.
//!
//! A task is a hash at `PREFIX:task:{ID}` (its revision, whether it is
//! settled, its record as JSON) that expires with the task's TTL. The
//! replica running the work holds a lease at `PREFIX:lease:{ID}`, renewed
//! while the work runs; a task not settled whose lease ran out lost its
//! replica, and the next `tasks/get` anywhere settles it as failed. Every
//! write is a compare-and-set on the revision done by a Lua script, which
//! also refuses to change a settled task. The task id is the key's hash
//! tag, so a task's two keys share a Redis Cluster slot.

use std::sync::Mutex;
use std::time::Duration;

use super::record::TaskState;
use super::store::{Replaced, Stored};

/// How long a task outlives the last renewal of its lease by default: a
/// replica that died is noticed within this.
const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// Stores a new task unless the id is taken, and takes its lease.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'rev', 1, 'settled', 0, 'record', ARGV[1])
if tonumber(ARGV[2]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
return 1
";

/// Replaces the record if it is at the expected revision and not settled
/// (its expiry is kept); a settled one drops its lease.
const REPLACE: &str = r"
local current = redis.call('HMGET', KEYS[1], 'rev', 'settled')
if not current[1] then return -1 end
if current[2] == '1' or current[1] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'rev', tonumber(ARGV[1]) + 1, 'settled', ARGV[3], 'record', ARGV[2])
if ARGV[3] == '1' then redis.call('DEL', KEYS[2]) end
return 1
";

/// Why a Redis task store could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisTaskStoreError {
    /// The URL is not a Redis URL.
    #[error("not a Redis URL (redis://[user:password@]host[:port][/db]): {0}")]
    BadUrl(#[source] ::redis::RedisError),
    /// Redis could not be reached.
    #[error("cannot reach Redis for the task store: {0}")]
    Connect(#[source] ::redis::RedisError),
}

/// The tasks of one server's replicas, kept in Redis (give it to
/// [`crate::server::ServerBuilder::task_store`]).
pub struct RedisTaskStore {
    client: ::redis::Client,
    connection: Mutex<::redis::aio::MultiplexedConnection>,
    prefix: String,
    /// Written into the leases this replica holds, for people reading Redis.
    holder: String,
    lease: Duration,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the URL: it may hold a password.
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.prefix)
            .field("holder", &self.holder)
            .field("lease", &self.lease)
            .finish()
    }
}

impl RedisTaskStore {
    /// Connects to Redis at `url`; the keys start with `prefix` (the same
    /// for every replica of one server, another one for other servers).
    /// Fails when Redis cannot be reached, so a replica that could not
    /// share its tasks does not start.
    ///
    /// # Errors
    /// See [`RedisTaskStoreError`].
    pub async fn connect(url: &str, prefix: impl Into<String>) -> Result<Self, RedisTaskStoreError> {
        let client = ::redis::Client::open(url).map_err(RedisTaskStoreError::BadUrl)?;
        let connection = client.get_multiplexed_async_connection().await.map_err(RedisTaskStoreError::Connect)?;
        let mut holder = [0u8; 8];
        // Only a label: a fixed one if the OS cannot give random bytes.
        let _ = getrandom::fill(&mut holder);
        Ok(RedisTaskStore {
            client,
            connection: Mutex::new(connection),
            prefix: prefix.into(),
            holder: format!("{}-{}", std::process::id(), u64::from_le_bytes(holder)),
            lease: DEFAULT_LEASE,
        })
    }

    /// How long a task whose replica stopped stays `working` before any
    /// replica settles it as failed (10 s by default; the lease is renewed
    /// three times within it).
    pub fn with_lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    pub(crate) fn renewal(&self) -> Duration {
        self.lease / 3
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{{{id}}}", self.prefix)
    }

    fn lease_key(&self, id: &str) -> String {
        format!("{}:lease:{{{id}}}", self.prefix)
    }

    /// Runs `query` on the shared connection; when that connection broke
    /// (Redis restarted), once more on a new one.
    async fn query<T, F, Fut>(&self, query: F) -> ::redis::RedisResult<T>
    where
        F: Fn(::redis::aio::MultiplexedConnection) -> Fut,
        Fut: Future<Output = ::redis::RedisResult<T>>,
    {
        let connection = self.connection.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match query(connection).await {
            Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() => {
                tracing::debug!("the task store's Redis connection broke ({e}); connecting again");
                let fresh = self.client.get_multiplexed_async_connection().await?;
                *self.connection.lock().unwrap_or_else(|e| e.into_inner()) = fresh.clone();
                query(fresh).await
            }
            other => other,
        }
    }

    pub(crate) async fn create(&self, id: &str, record: &TaskState, ttl: Option<Duration>) -> ::redis::RedisResult<()> {
        let json = to_json(record)?;
        let (task, lease) = (self.task_key(id), self.lease_key(id));
        let ttl_ms = ttl.map_or(0, |t| t.as_millis().max(1) as u64);
        let lease_ms = self.lease.as_millis() as u64;
        let created: i64 = self
            .query(|mut c| {
                let mut cmd = ::redis::cmd("EVAL");
                cmd.arg(CREATE).arg(2).arg(&task).arg(&lease).arg(&json).arg(ttl_ms).arg(&self.holder).arg(lease_ms);
                async move { cmd.query_async(&mut c).await }
            })
            .await?;
        match created {
            1 => Ok(()),
            // 128 random bits met an existing id.
            _ => Err(store_error("a task with this id exists already")),
        }
    }

    pub(crate) async fn load(&self, id: &str) -> ::redis::RedisResult<Option<Stored>> {
        let (task, lease) = (self.task_key(id), self.lease_key(id));
        type Fields = (Option<u64>, Option<u8>, Option<String>);
        let ((revision, settled, json), leased): (Fields, bool) = self
            .query(|mut c| {
                let mut pipe = ::redis::pipe();
                pipe.cmd("HMGET").arg(&task).arg("rev").arg("settled").arg("record").cmd("EXISTS").arg(&lease);
                async move { pipe.query_async(&mut c).await }
            })
            .await?;
        let (Some(revision), Some(json)) = (revision, json) else { return Ok(None) };
        let record: TaskState = serde_json::from_str(&json)
            .map_err(|e| store_error(format!("the stored task is not a task record ({e})")))?;
        let settled = settled == Some(1) || record.status.is_terminal();
        Ok(Some(Stored { record, revision, orphaned: !settled && !leased }))
    }

    pub(crate) async fn replace(&self, id: &str, revision: u64, record: &TaskState) -> ::redis::RedisResult<Replaced> {
        let json = to_json(record)?;
        let (task, lease) = (self.task_key(id), self.lease_key(id));
        let settled = u8::from(record.status.is_terminal());
        let replaced: i64 = self
            .query(|mut c| {
                let mut cmd = ::redis::cmd("EVAL");
                cmd.arg(REPLACE).arg(2).arg(&task).arg(&lease).arg(revision).arg(&json).arg(settled);
                async move { cmd.query_async(&mut c).await }
            })
            .await?;
        Ok(match replaced {
            1 => Replaced::Done,
            0 => Replaced::Conflict,
            _ => Replaced::Gone,
        })
    }

    pub(crate) async fn hold(&self, id: &str) -> ::redis::RedisResult<()> {
        let lease = self.lease_key(id);
        let lease_ms = self.lease.as_millis() as u64;
        self.query(|mut c| {
            let mut cmd = ::redis::cmd("SET");
            cmd.arg(&lease).arg(&self.holder).arg("PX").arg(lease_ms);
            async move { cmd.query_async::<()>(&mut c).await }
        })
        .await
    }
}

fn to_json(record: &TaskState) -> ::redis::RedisResult<String> {
    serde_json::to_string(record).map_err(|e| store_error(format!("a task record cannot be written ({e})")))
}

fn store_error(detail: impl Into<String>) -> ::redis::RedisError {
    ::redis::RedisError::from((::redis::ErrorKind::Client, "task store", detail.into()))
}
