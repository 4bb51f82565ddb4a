//! The real parts of a scaled-out deployment, for the replica tests:
//! Debian's `redis-server` (on a Unix socket in a directory of its own, so a
//! restart finds the same address) and `haproxy` in front of replicas
//! (round robin, no stickiness), both installed by `scripts/test`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::LINE_DEADLINE;
pub use crate::ScratchDir;

const REDIS_SERVER: &str = "/usr/bin/redis-server";
const HAPROXY: &str = "/usr/sbin/haproxy";

fn installed(path: &'static str, package: &str) -> &'static str {
    assert!(Path::new(path).exists(), "{path} is missing: scripts/test installs Debian's {package} package");
    path
}

/// A `redis-server` listening on a Unix socket only; killed on drop.
#[derive(Debug)]
pub struct Redis {
    dir: ScratchDir,
    child: Option<Child>,
}

impl Redis {
    /// Starts it and waits until it accepts connections.
    pub async fn start() -> Self {
        let mut redis = Redis { dir: ScratchDir::new("redis"), child: None };
        redis.restart().await;
        redis
    }

    /// The URL clients use (`redis+unix://…`).
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket().display())
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// Kills it (SIGKILL: its clients see their connections drop).
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
        let _ = std::fs::remove_file(self.socket());
    }

    /// Starts it again on the same socket (after [`Redis::kill`]).
    pub async fn restart(&mut self) {
        self.kill().await;
        let mut child = Command::new(installed(REDIS_SERVER, "redis-server"))
            .args(["--port", "0", "--unixsocket"])
            .arg(self.socket())
            .args(["--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--loglevel", "notice"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        tokio::time::timeout(LINE_DEADLINE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("ready to accept connections") {
                    return;
                }
            }
            panic!("redis-server ended before it was ready");
        })
        .await
        .expect("redis-server was not ready in time");
        crate::kept_lines(lines);
        self.child = Some(child);
    }
}

/// HAProxy balancing HTTP requests over backends round robin, with
/// health checks every 200 ms and a retry on another backend when one
/// refuses the connection; its request log (one line per request, naming
/// the backend `replicas/rN` that served it) is kept. Killed on drop.
#[derive(Debug)]
pub struct Haproxy {
    _dir: ScratchDir,
    _child: Child,
    /// The address it serves (`http://127.0.0.1:PORT`).
    pub base: String,
    log: Arc<Mutex<String>>,
}

impl Haproxy {
    /// The configuration for `backends` (`host:port` each, named `r1`,
    /// `r2`, … in order) behind `bind`: the one the book shows (docs/src/serving.md), with the
    /// log on stderr.
    pub fn config(bind: &str, backends: &[String]) -> String {
        let mut config = format!(
            "global\n    log stderr format raw local0\n\n\
             defaults\n    mode http\n    log global\n    option httplog\n\
             \x20   timeout connect 2s\n    timeout client 1h\n    timeout server 1h\n\
             \x20   retries 3\n    option redispatch 1\n    retry-on conn-failure empty-response\n\n\
             frontend mcp\n    bind {bind}\n    default_backend replicas\n\n\
             backend replicas\n    balance roundrobin\n"
        );
        for (n, backend) in backends.iter().enumerate() {
            config.push_str(&format!("    server r{} {backend} check inter 200ms fall 1 rise 2\n", n + 1));
        }
        config
    }

    /// Starts it in front of `backends` (`host:port` each) on a free
    /// loopback port, and waits until it accepts connections.
    pub async fn start(backends: &[String]) -> Self {
        let dir = ScratchDir::new("haproxy");
        let port = crate::spare_port();
        let bind = format!("127.0.0.1:{port}");
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, Haproxy::config(&bind, backends)).unwrap();
        let mut child = Command::new(installed(HAPROXY, "haproxy"))
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let log = crate::kept_lines(BufReader::new(child.stderr.take().unwrap()).lines());
        let deadline = tokio::time::Instant::now() + LINE_DEADLINE;
        while tokio::net::TcpStream::connect(&bind).await.is_err() {
            assert!(tokio::time::Instant::now() < deadline, "haproxy did not listen in time: {}", log.lock().unwrap());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Haproxy { _dir: dir, _child: child, base: format!("http://{bind}"), log }
    }

    /// The backends (`r1`, `r2`, …) that served each logged request, in
    /// order.
    pub fn served_by(&self) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.lines()
            .filter_map(|line| line.split_whitespace().find_map(|word| word.strip_prefix("replicas/")))
            .map(str::to_owned)
            .collect()
    }

    /// Everything it logged.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
