//! A `redis-server` of its own for every test: a free loopback port, a temp dir, the rlock
//! module loaded (or not), readiness polling capped at 5 s, killed and reaped on drop; a
//! Redis Cluster of such servers (`cluster.rs`); and a master with replicas watched by
//! sentinels (`sentinel.rs`).
#![allow(dead_code)]

pub mod cluster;
pub mod sentinel;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rlock_client::{Client, LockOptions};

const REDIS_SERVER: &str = "/usr/bin/redis-server";
const READY_WITHIN: Duration = Duration::from_secs(30);

/// `LOCK.INFO`'s fields.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Info {
    pub owner: String,
    pub holds: i64,
    pub ttl: i64,
    pub token: u64,
    pub waiters: i64,
}

/// A running `redis-server`, killed when dropped.
pub struct Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

/// The module to load: `$RLOCK_MODULE`, or the workspace's release build (in
/// `$CARGO_TARGET_DIR` when that is set).
pub fn module_path() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match std::env::var_os("RLOCK_MODULE") {
        Some(path) => PathBuf::from(path),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| workspace.join("target"), |dir| workspace.join(dir))
            .join("release/librlock.so"),
    }
}

/// The server to run: `$RLOCK_SERVER` (e.g. a `valkey-server`), or Redis from apt.
fn server_binary() -> PathBuf {
    std::env::var_os("RLOCK_SERVER").map_or_else(|| PathBuf::from(REDIS_SERVER), PathBuf::from)
}

/// The module's path, which must exist.
fn built_module() -> String {
    let module = module_path();
    assert!(
        module.exists(),
        "the rlock module is not built at {} (run `cargo build --release` at the \
         workspace root, or set RLOCK_MODULE)",
        module.display()
    );
    module.to_string_lossy().into_owned()
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

fn temp_dir(port: u16) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "rlock-client-test-{}-{port}-{n}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

impl Server {
    /// A server with the rlock module loaded.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with the rlock module loaded and `extra` arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        let module = built_module();
        let mut args = vec!["--loadmodule", &module];
        args.extend_from_slice(extra);
        Server::spawn(&args)
    }

    /// A plain server, without the module.
    pub fn start_without_module() -> Server {
        Server::spawn(&[])
    }

    fn spawn(extra: &[&str]) -> Server {
        // A port found free can be taken by another test before the server binds it.
        let mut failure = String::new();
        for _ in 0..3 {
            let port = free_port();
            match Server::try_spawn_at(port, temp_dir(port), extra) {
                Ok(server) => return server,
                Err(why) => failure = why,
            }
        }
        panic!("{failure}");
    }

    fn spawn_at(port: u16, dir: PathBuf, extra: &[&str]) -> Server {
        Server::try_spawn_at(port, dir, extra).unwrap_or_else(|why| panic!("{why}"))
    }

    fn try_spawn_at(port: u16, dir: PathBuf, extra: &[&str]) -> Result<Server, String> {
        assert!(
            server_binary().exists(),
            "{} is missing: install redis-server with `apt-get install redis-server`, or set RLOCK_SERVER",
            server_binary().display()
        );
        let log = std::fs::File::create(dir.join("server.log")).expect("create log");
        let child = Command::new(server_binary())
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server_binary().display()));
        let mut server = Server {
            child: Some(child),
            port,
            dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "redis-server exited with {status}:\n{}",
                        self.log()
                    ));
                }
            }
            // Not a PING: another test's server may hold the port this one failed to bind.
            let client = self.redis();
            if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200)) {
                let info = redis::cmd("INFO").arg("server").query::<String>(&mut conn);
                let mine = format!("process_id:{}", self.pid());
                if info.is_ok_and(|info| info.lines().any(|line| line == mine)) {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "redis-server not ready within {READY_WITHIN:?}:\n{}",
            self.log()
        ))
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The URL of this server for a user that may do everything but listen for the ends of
    /// its holdings (`LOCK.LISTEN`): its losses are found by renewals alone.
    #[allow(dead_code)]
    pub fn unlistened_url(&self) -> String {
        let user = [
            "ACL",
            "SETUSER",
            "deaf",
            "on",
            ">pw",
            "+@all",
            "-lock.listen",
            "~*",
            "&*",
        ];
        let _: String = self.cmd(&user);
        format!("redis://deaf:pw@127.0.0.1:{}/", self.port())
    }

    /// A [`Client`] of this server.
    pub async fn client(&self) -> Client {
        Client::open(self.url()).await.expect("open a client")
    }

    /// A `redis::Client` for this server.
    pub fn redis(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("valid url")
    }

    /// A plain synchronous connection, for inspecting the server.
    pub fn conn(&self) -> redis::Connection {
        self.redis()
            .get_connection()
            .expect("connect to test server")
    }

    /// Runs a command on a fresh connection and returns its reply.
    pub fn cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut self.conn())
            .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
    }

    /// Takes `key` for `owner` with `LOCK.ACQUIRE key owner [LEASE ms] ...` (`extra`), as a
    /// test's setup does; its token. A server just started on a loaded machine may have
    /// seen a stall (its event loop held up over a second), after which the module holds
    /// fresh holdings back for a moment: the acquisition is tried again until it is granted,
    /// for 10 s at most.
    pub fn hold(&self, key: &str, owner: &str, extra: &[&str]) -> u64 {
        let mut args = vec!["LOCK.ACQUIRE", key, owner];
        args.extend_from_slice(extra);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(token) = self.cmd::<Option<u64>>(&args) {
                return token;
            }
            assert!(
                Instant::now() < deadline,
                "{args:?}: not granted within 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `calls` of `command` in `INFO commandstats` (0 if never called).
    pub fn calls(&self, command: &str) -> u64 {
        let prefix = format!("cmdstat_{}:calls=", command.to_ascii_lowercase());
        self.stat("commandstats", &prefix)
    }

    /// How many `code` error replies (`MOVED`, `ASK`, ...) the server sent, from
    /// `INFO errorstats` (0 if none).
    pub fn errors(&self, code: &str) -> u64 {
        self.stat("errorstats", &format!("errorstat_{code}:count="))
    }

    /// `rlock_<name>` in `INFO rlock`, or 0 if the server has no such line.
    pub fn rlock_stat(&self, name: &str) -> u64 {
        self.stat("rlock", &format!("rlock_{name}:"))
    }

    /// The number after `prefix` in `INFO section` (up to a `,`), or 0 if no line has it.
    fn stat(&self, section: &str, prefix: &str) -> u64 {
        let info: String = self.cmd(&["INFO", section]);
        info.lines()
            .find_map(|line| line.strip_prefix(prefix))
            .and_then(|rest| rest.split(',').next())
            .map(|n| n.trim().parse().expect("a counter is a number"))
            .unwrap_or(0)
    }

    /// `LOCK.INFO key` read on a fresh connection (RESP2 flat array), or `None` if free.
    pub fn info(&self, key: &str) -> Option<Info> {
        let reply: Option<Vec<redis::Value>> = self.cmd(&["LOCK.INFO", key]);
        let fields = reply?;
        let mut info = Info::default();
        for pair in fields.chunks(2) {
            let name: String = redis::from_redis_value(pair[0].clone()).expect("field name");
            let value = pair[1].clone();
            match name.as_str() {
                "owner" => info.owner = redis::from_redis_value(value).expect("owner"),
                "holds" => info.holds = redis::from_redis_value(value).expect("holds"),
                "ttl" => info.ttl = redis::from_redis_value(value).expect("ttl"),
                "token" => info.token = redis::from_redis_value(value).expect("token"),
                "waiters" => info.waiters = redis::from_redis_value(value).expect("waiters"),
                other => panic!("unexpected LOCK.INFO field {other}"),
            }
        }
        Some(info)
    }

    /// Stops the server's process (SIGSTOP): it keeps its connections but answers nothing.
    pub fn stop(&self) {
        self.signal("-STOP");
    }

    /// Lets a stopped server run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args([sig, &pid]).status();
        assert!(sent.expect("run kill").success(), "kill {sig} {pid} failed");
    }

    /// Kills the server now (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Options for a `lease` renewed by the watchdog.
pub fn watched(lease: Duration) -> LockOptions {
    LockOptions::new().lease(lease).watchdog(true)
}

/// Shows the client's `tracing` events with `RUST_LOG=rlock_client=debug` (and `--nocapture`).
pub fn trace() {
    let filter = tracing_subscriber::EnvFilter::from_default_env();
    let fmt = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = fmt.with_test_writer().try_init();
}

/// Polls `check` every 10 ms until it holds or `within` passes; whether it held. For code
/// without a runtime ([`eventually`] is the async form).
pub fn poll(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    loop {
        if check() {
            return true;
        }
        if started.elapsed() >= within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `check` every 10 ms until it holds or `within` passes; whether it held.
pub async fn eventually(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    loop {
        if check() {
            return true;
        }
        if started.elapsed() >= within {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
