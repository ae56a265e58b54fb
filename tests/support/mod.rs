//! Test harness shared by the integration tests: every test gets a `redis-server` of its
//! own with the module loaded, on a free port of 127.0.0.1, in a temp dir of its own.
//! [`Server`]'s `Drop` kills and reaps the server and removes the dir.

#![allow(dead_code)]

pub mod proxy;
pub mod redisson;
pub mod sentinel;

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{ConnectionLike, Value};

/// How long a server may take to answer its first command.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);
/// How long a replica may take to finish its first sync.
const SYNC_LIMIT: Duration = Duration::from_secs(10);
/// The pause between two polls of [`wait_until`].
const POLL_PAUSE: Duration = Duration::from_millis(5);
/// Read timeout of every connection the harness opens, so no test can hang forever.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// The error text Redis itself sends when a key is not a hash.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// The error text for a hash that does not have the shape of a lock.
pub const NOT_A_LOCK: &str = "WRONGTYPE key is not a lock";
/// The default release channel prefix.
pub const DEFAULT_PREFIX: &str = "redisson_lock__channel";

/// The module under test: `$RLOCK_MODULE`, else the release build of this workspace (in
/// `$CARGO_TARGET_DIR` when that is set).
pub fn module_path() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = match std::env::var_os("RLOCK_MODULE") {
        Some(p) => PathBuf::from(p),
        None => std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| workspace.join("target"), |dir| workspace.join(dir))
            .join("release/librlock.so"),
    };
    assert!(
        path.is_file(),
        "module not found at {}: run `cargo build --release -p rlock` first \
         (or point RLOCK_MODULE at a built librlock.so)",
        path.display()
    );
    path
}

/// The server to run: `$RLOCK_SERVER` (e.g. a `valkey-server`), else `redis-server` on PATH.
pub fn server_binary() -> PathBuf {
    std::env::var_os("RLOCK_SERVER").map_or_else(|| PathBuf::from("redis-server"), PathBuf::from)
}

/// A free TCP port on 127.0.0.1, found by binding port 0.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local addr").port()
}

/// A new directory under the system's temp dir, named so that no other test of any
/// process has it.
pub fn temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    loop {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "rlock-test-{}-{}-{:08x}",
            std::process::id(),
            n,
            nanos
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create temp dir {}: {e}", dir.display()),
        }
    }
}

/// How to start a server; see [`Server::builder`].
#[derive(Debug, Clone)]
pub struct Builder {
    conf: Option<String>,
    args: Vec<String>,
    load_module: bool,
}

impl Builder {
    /// Starts the server with a config file holding `text` (written to the server's dir).
    pub fn conf(mut self, text: &str) -> Self {
        self.conf = Some(text.to_owned());
        self
    }

    /// Adds command-line arguments after `--loadmodule <path>`.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Leaves out `--loadmodule`, for tests whose config file loads the module itself.
    pub fn without_loadmodule(mut self) -> Self {
        self.load_module = false;
        self
    }

    /// Starts the server and waits until it answers, as itself, on its port.
    pub fn start(self) -> Server {
        let module = module_path();
        let mut last_failure = String::new();
        // A port found free can be taken by another test before the server binds it:
        // try a few ports before giving up.
        for _ in 0..3 {
            match self.try_start(&module) {
                Ok(server) => return server,
                Err(failure) => last_failure = failure,
            }
        }
        panic!("redis-server did not start:\n{last_failure}");
    }

    /// Starts a server that is expected to refuse its configuration and exit; returns
    /// its log. Panics if it is still running after the startup limit.
    pub fn start_expecting_failure(self) -> String {
        let module = module_path();
        let mut server = self.spawn(&module);
        let exited = wait_until(STARTUP_LIMIT, || !server.is_running());
        assert!(
            exited,
            "redis-server accepted a configuration it should refuse"
        );
        server.log()
    }

    fn try_start(&self, module: &Path) -> Result<Server, String> {
        let mut server = self.spawn(module);
        match server.wait_ready() {
            Ok(()) => Ok(server),
            Err(why) => Err(format!("{why}\n--- server log ---\n{}", server.log())),
        }
    }

    fn spawn(&self, module: &Path) -> Server {
        let port = free_port();
        let dir = temp_dir();
        let mut cmd = Command::new(server_binary());
        if let Some(text) = &self.conf {
            let conf = dir.join("redis.conf");
            fs::write(&conf, text).expect("write redis.conf");
            cmd.arg(conf);
        }
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--repl-diskless-sync-delay", "0"])
            .arg("--dir")
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"));
        if self.load_module {
            cmd.arg("--loadmodule").arg(module);
        }
        let output = fs::File::create(dir.join("output.log")).expect("create output.log");
        let errors = output.try_clone().expect("clone output.log");
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors);
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let _ = fs::remove_dir_all(&dir);
                panic!(
                    "{} not found: apt-get install -y redis-server, or set RLOCK_SERVER",
                    server_binary().display()
                );
            }
            Err(e) => panic!("cannot spawn redis-server: {e}"),
        };
        Server { child, port, dir }
    }
}

/// A running `redis-server` with the module loaded. Dropping it kills the server.
#[derive(Debug)]
pub struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Server {
    /// A server with the module loaded and no further options.
    pub fn start() -> Server {
        Server::builder().start()
    }

    /// A server with extra command-line arguments (after `--loadmodule`).
    pub fn start_with(args: &[&str]) -> Server {
        Server::builder().args(args.iter().copied()).start()
    }

    pub fn builder() -> Builder {
        Builder {
            conf: None,
            args: Vec::new(),
            load_module: true,
        }
    }

    /// Starts a replica of this server and waits until its link to this master is up.
    pub fn replica(&self) -> Server {
        let replica = Server::builder()
            .args([
                "--replicaof".to_owned(),
                "127.0.0.1".to_owned(),
                self.port.to_string(),
            ])
            .start();
        let mut con = replica.conn();
        let up = wait_until(SYNC_LIMIT, || {
            info_field(&mut con, "replication", "master_link_status").as_deref() == Some("up")
        });
        assert!(up, "replica did not sync:\n{}", replica.log());
        let mut master = self.conn();
        let attached = wait_until(SYNC_LIMIT, || {
            info_field(&mut master, "replication", "connected_slaves").as_deref() == Some("1")
        });
        assert!(attached, "master does not list the replica");
        replica
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A RESP2 connection.
    pub fn conn(&self) -> redis::Connection {
        connect(&self.url())
    }

    /// A RESP3 connection (`HELLO 3` is sent when it connects).
    pub fn conn_resp3(&self) -> redis::Connection {
        connect(&format!("{}?protocol=resp3", self.url()))
    }

    /// A connection authenticated as `user`.
    pub fn conn_as(&self, user: &str, password: &str) -> redis::Connection {
        connect(&format!(
            "redis://{user}:{password}@127.0.0.1:{}/",
            self.port
        ))
    }

    /// The server's log so far, with what it wrote to stdout and stderr.
    pub fn log(&self) -> String {
        let mut text = fs::read_to_string(self.dir.join("output.log")).unwrap_or_default();
        text.push_str(&fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default());
        text
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`) to the server's process.
    pub fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal} {} failed", self.pid());
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_LIMIT;
        let url = self.url();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("redis-server exited at startup: {status}"));
            }
            // Not a PING: another test's server may hold the port this one failed to bind.
            let server = redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
                .and_then(|mut c| redis::cmd("INFO").arg("server").query::<String>(&mut c));
            let mine = format!("process_id:{}", self.child.id());
            if server.is_ok_and(|info| info.lines().any(|line| line == mine)) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "redis-server on port {} did not answer within {STARTUP_LIMIT:?}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn connect(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).expect("valid redis url");
    let con = client
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    con.set_read_timeout(Some(READ_LIMIT))
        .expect("set read timeout");
    con
}

/// Polls `done` until it returns true or `timeout` passes; returns whether it did.
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL_PAUSE);
    }
}

/// A command built from raw byte arguments, the first being the command name.
pub fn command<A: AsRef<[u8]>>(args: &[A]) -> redis::Cmd {
    let mut cmd = redis::Cmd::new();
    for a in args {
        cmd.arg(a.as_ref());
    }
    cmd
}

/// Sends raw byte arguments and returns the reply; a server error is a
/// [`Value::ServerError`], a broken connection is an `Err`.
pub fn try_raw<A: AsRef<[u8]>>(
    con: &mut redis::Connection,
    args: &[A],
) -> redis::RedisResult<Value> {
    con.req_command(&command(args))
}

/// Sends raw byte arguments and returns the reply (errors included as values).
pub fn raw<A: AsRef<[u8]>>(con: &mut redis::Connection, args: &[A]) -> Value {
    try_raw(con, args).unwrap_or_else(|e| {
        let shown: Vec<String> = args
            .iter()
            .map(|a| String::from_utf8_lossy(a.as_ref()).into_owned())
            .collect();
        panic!("connection failed on {shown:?}: {e}")
    })
}

/// The full text of an error reply (`CODE detail`), or `None` for any other reply.
pub fn error_text(value: &Value) -> Option<String> {
    match value {
        Value::ServerError(e) => Some(match e.details() {
            Some(d) => format!("{} {d}", e.code()),
            None => e.code().to_owned(),
        }),
        _ => None,
    }
}

/// Asserts that `value` is the error `expected` (code and text, exactly).
#[track_caller]
pub fn assert_error(value: &Value, expected: &str) {
    match error_text(value) {
        Some(text) => assert_eq!(text, expected, "wrong error reply"),
        None => panic!("expected error {expected:?}, got {value:?}"),
    }
}

/// Sends `args` and asserts the reply is the error `expected`.
#[track_caller]
pub fn expect_error<A: AsRef<[u8]>>(con: &mut redis::Connection, args: &[A], expected: &str) {
    let reply = raw(con, args);
    match error_text(&reply) {
        Some(text) => assert_eq!(text, expected, "wrong error reply to {}", show(args)),
        None => panic!(
            "expected error {expected:?} from {}, got {reply:?}",
            show(args)
        ),
    }
}

/// Sends `args` and returns the integer reply, panicking on anything else.
#[track_caller]
pub fn int<A: AsRef<[u8]>>(con: &mut redis::Connection, args: &[A]) -> i64 {
    match raw(con, args) {
        Value::Int(n) => n,
        other => panic!("expected an integer from {}, got {other:?}", show(args)),
    }
}

/// Sends `args` and asserts the reply is nil.
#[track_caller]
pub fn expect_nil<A: AsRef<[u8]>>(con: &mut redis::Connection, args: &[A]) {
    let reply = raw(con, args);
    assert_eq!(reply, Value::Nil, "expected nil from {}", show(args));
}

/// Renders command arguments for assertion messages.
pub fn show<A: AsRef<[u8]>>(args: &[A]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|a| format!("{:?}", String::from_utf8_lossy(a.as_ref())))
        .collect();
    parts.join(" ")
}

/// The bytes of a bulk, simple or verbatim string reply.
pub fn bytes_of(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::BulkString(b) => Some(b.clone()),
        Value::SimpleString(s) => Some(s.as_bytes().to_vec()),
        Value::VerbatimString { text, .. } => Some(text.as_bytes().to_vec()),
        Value::Okay => Some(b"OK".to_vec()),
        _ => None,
    }
}

/// The text of a string reply (lossy), for names in maps and arrays.
pub fn text_of(value: &Value) -> Option<String> {
    bytes_of(value).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Pairs of a RESP3 map or of a RESP2 flat field-value array.
pub fn pairs(value: &Value) -> Vec<(Value, Value)> {
    match value {
        Value::Map(m) => m.clone(),
        Value::Array(items) => {
            assert!(items.len() % 2 == 0, "odd field-value array: {value:?}");
            items
                .chunks(2)
                .map(|c| (c[0].clone(), c[1].clone()))
                .collect()
        }
        other => panic!("expected a map or field-value array, got {other:?}"),
    }
}

/// A field of a field-value reply, looked up by name.
pub fn field<'a>(pairs: &'a [(Value, Value)], name: &str) -> Option<&'a Value> {
    pairs
        .iter()
        .find(|(k, _)| text_of(k).as_deref() == Some(name))
        .map(|(_, v)| v)
}

/// `HGETALL key` as a sorted map of raw bytes.
pub fn hgetall(con: &mut redis::Connection, key: &[u8]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let reply = raw(con, &[&b"HGETALL"[..], key]);
    pairs(&reply)
        .into_iter()
        .map(|(k, v)| {
            (
                bytes_of(&k).expect("field name"),
                bytes_of(&v).expect("field value"),
            )
        })
        .collect()
}

/// A field-value map from string pairs, to compare with [`hgetall`].
pub fn hash_of(entries: &[(&[u8], &[u8])]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    entries
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect()
}

pub fn pttl(con: &mut redis::Connection, key: &[u8]) -> i64 {
    int(con, &[&b"PTTL"[..], key])
}

pub fn pexpiretime(con: &mut redis::Connection, key: &[u8]) -> i64 {
    int(con, &[&b"PEXPIRETIME"[..], key])
}

/// What a key holds, exactly: its `DUMP` (None when absent) and its absolute expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyState {
    pub dump: Option<Vec<u8>>,
    pub expire_at: i64,
}

pub fn key_state(con: &mut redis::Connection, key: &[u8]) -> KeyState {
    let dump = match raw(con, &[&b"DUMP"[..], key]) {
        Value::Nil => None,
        Value::BulkString(b) => Some(b),
        other => panic!("unexpected DUMP reply {other:?}"),
    };
    KeyState {
        dump,
        expire_at: pexpiretime(con, key),
    }
}

/// Every key of the database with its [`KeyState`].
pub fn keyspace(con: &mut redis::Connection) -> BTreeMap<Vec<u8>, KeyState> {
    let keys = match raw(con, &["KEYS", "*"]) {
        Value::Array(items) => items,
        other => panic!("unexpected KEYS reply {other:?}"),
    };
    keys.iter()
        .map(|k| {
            let k = bytes_of(k).expect("key name");
            let state = key_state(con, &k);
            (k, state)
        })
        .collect()
}

/// One field of `INFO <section>`.
pub fn info_field(con: &mut redis::Connection, section: &str, name: &str) -> Option<String> {
    info(con, section).remove(name)
}

/// How many waits the node has queued (`INFO rlock`'s `rlock_waiters`; -1 if it says none).
pub fn waiters(con: &mut redis::Connection) -> i64 {
    info_field(con, "rlock", "rlock_waiters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Waits up to `limit` until the node has `n` waits queued.
pub fn await_waiters(con: &mut redis::Connection, n: i64, limit: Duration) {
    assert!(
        wait_until(limit, || waiters(con) == n),
        "expected {n} queued waits, have {}",
        waiters(con)
    );
}

/// The `name:value` lines of `INFO <section>`.
pub fn info(con: &mut redis::Connection, section: &str) -> BTreeMap<String, String> {
    let text = match raw(con, &["INFO", section]) {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::VerbatimString { text, .. } => text,
        other => panic!("unexpected INFO reply {other:?}"),
    };
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// The release channel of a key for `prefix` (SPEC.md §4).
pub fn channel(prefix: &str, key: &[u8]) -> Vec<u8> {
    let mut ch = format!("{prefix}:").into_bytes();
    if key.contains(&b'{') {
        ch.extend_from_slice(key);
    } else {
        ch.push(b'{');
        ch.extend_from_slice(key);
        ch.push(b'}');
    }
    ch
}

/// A message received by a [`Subscriber`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `message` or `smessage`.
    pub kind: String,
    pub channel: Vec<u8>,
    pub payload: Vec<u8>,
}

/// A RESP2 connection in subscribed mode, reading messages with a bounded wait.
pub struct Subscriber {
    con: redis::Connection,
}

impl Subscriber {
    /// Subscribes to `channel` with `SUBSCRIBE` and `SSUBSCRIBE`, so it sees messages sent
    /// with either `PUBLISH` or `SPUBLISH`.
    pub fn both(server: &Server, channel: &[u8]) -> Subscriber {
        let mut sub = Subscriber { con: server.conn() };
        sub.subscribe("SUBSCRIBE", channel);
        sub.subscribe("SSUBSCRIBE", channel);
        sub
    }

    /// Subscribes to `channel` with `SUBSCRIBE` only (in a cluster, `SSUBSCRIBE` works only
    /// on the nodes of the channel's slot).
    pub fn plain(server: &Server, channel: &[u8]) -> Subscriber {
        let mut sub = Subscriber { con: server.conn() };
        sub.subscribe("SUBSCRIBE", channel);
        sub
    }

    /// Subscribes to `channel` with `SSUBSCRIBE` only.
    pub fn shard(server: &Server, channel: &[u8]) -> Subscriber {
        let mut sub = Subscriber { con: server.conn() };
        sub.subscribe("SSUBSCRIBE", channel);
        sub
    }

    fn subscribe(&mut self, verb: &str, channel: &[u8]) {
        let packed = command(&[verb.as_bytes(), channel]).get_packed_command();
        self.con
            .send_packed_command(&packed)
            .expect("send subscribe");
        let reply = self.con.recv_response().expect("subscribe confirmation");
        match reply {
            Value::Array(items) if items.len() == 3 => {
                assert_eq!(
                    text_of(&items[0]).as_deref(),
                    Some(verb.to_ascii_lowercase().as_str())
                );
            }
            other => panic!("unexpected reply to {verb}: {other:?}"),
        }
    }

    /// The next message, waiting at most the connection's read timeout.
    pub fn next(&mut self) -> Message {
        let reply = self.con.recv_response().expect("a pub/sub message in time");
        match reply {
            Value::Array(items) if items.len() == 3 => Message {
                kind: text_of(&items[0]).expect("message kind"),
                channel: bytes_of(&items[1]).expect("channel"),
                payload: bytes_of(&items[2]).expect("payload"),
            },
            other => panic!("unexpected pub/sub reply: {other:?}"),
        }
    }

    /// Every message up to (not including) the first with payload `sentinel`.
    pub fn until(&mut self, sentinel: &[u8]) -> Vec<Message> {
        let mut seen = Vec::new();
        for _ in 0..1000 {
            let m = self.next();
            if m.payload == sentinel {
                return seen;
            }
            seen.push(m);
        }
        panic!("sentinel never arrived; got {seen:?}");
    }
}

/// A small deterministic PRNG (xorshift64*), enough for workloads and fuzzing.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// A seed from `$var` if set (decimal), else `default`.
    pub fn seed_from_env(var: &str, default: u64) -> u64 {
        std::env::var(var)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo) as u64 + 1;
        lo + self.below(span) as i64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// `HGET key field` as text, `None` when the field or key is absent.
pub fn hget(con: &mut redis::Connection, key: &str, field: &str) -> Option<String> {
    match raw(con, &["HGET", key, field]) {
        Value::Nil => None,
        other => Some(text_of(&other).unwrap_or_else(|| panic!("HGET replied {other:?}"))),
    }
}

/// Sends `args` (a command that may block) on a connection of its own, in a thread; its reply
/// arrives on the returned channel. The connection is kept open a while after: a closed one
/// would leave its queue or give its grant back.
pub fn blocked(server: &Server, args: &[&str]) -> std::sync::mpsc::Receiver<Value> {
    let mut con = server.conn();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(raw(&mut con, &args));
        std::thread::sleep(Duration::from_secs(30));
    });
    rx
}
