//! SPEC.md §5: fencing tokens survive a restart (RDB, AOF with and without the RDB
//! preamble) and a failover (a promoted replica jumps to its clock + `rlock.token-gap`).
//!
//! Most tests first push the token counter far past the wall clock (a promotion with a huge
//! `rlock.token-gap`), so that the clock floor of the counter cannot make them pass: only
//! what the module persisted or learned can.

mod support;

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{free_port, hash_of, hgetall, info_field, int, module_path, wait_until, Server};

/// 2^50 µs, about 35 years: no clock catches up with a counter moved this far.
const HUGE_GAP: i64 = 1 << 50;
const LIMIT: Duration = Duration::from_secs(10);

/// A server that keeps its dir across restarts.
struct Durable {
    dir: PathBuf,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
}

impl Durable {
    fn start(args: &[&str]) -> Durable {
        // Not named after a free port: two tests of this process may be given the same
        // one, and the first to end would remove the other's files.
        let dir = support::temp_dir();
        let mut server = Durable {
            dir,
            port: free_port(),
            args: args.iter().map(|a| a.to_string()).collect(),
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = Command::new(support::server_binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .arg("--loadmodule")
            .arg(module_path())
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed: apt-get install -y redis-server");
        self.child = Some(child);
        let url = self.url();
        let ready = wait_until(LIMIT, || {
            redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection())
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
        });
        assert!(ready, "server did not start:\n{}", self.log());
    }

    /// Stops the server without a final save (what the files hold is what was written
    /// before) and starts it again on the same dir.
    fn restart(&mut self) {
        let _: redis::RedisResult<()> =
            redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut self.conn());
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        // A fresh port: the old one, free since the shutdown, may be another test's now.
        self.port = free_port();
        self.spawn();
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect")
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for Durable {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Moves the token counter `gap` past the highest token, the way a failover does.
fn push_counter_ahead(con: &mut redis::Connection, gap: i64) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rlock.token-gap")
        .arg(gap)
        .query(con)
        .expect("config set");
    let nobody = free_port().to_string();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(&nobody)
        .query(con)
        .expect("replicaof");
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(con)
        .expect("replicaof no one");
    no_failover_delay(con);
}

/// Ends the failover delay a promotion starts: these tests are about tokens, and take
/// fresh locks on a promoted node at once.
fn no_failover_delay(con: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rlock.failover-delay")
        .arg(0)
        .query(con)
        .expect("config set");
}

/// Acquires and releases a lock; returns its token.
fn token_of_a_released_lock(con: &mut redis::Connection, key: &str) -> i64 {
    let token = int(con, &["LOCK.ACQUIRE", key, "o"]);
    assert_eq!(int(con, &["LOCK.RELEASE", key, "o"]), 0);
    token
}

fn wait_persistence_idle(con: &mut redis::Connection) {
    let idle = wait_until(LIMIT, || {
        info_field(con, "persistence", "rdb_bgsave_in_progress").as_deref() == Some("0")
            && info_field(con, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(con, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    assert!(idle, "background save did not finish");
}

/// A server persisting with RDB only (no automatic saves).
fn rdb_server() -> Durable {
    Durable::start(&["--save", "", "--appendonly", "no"])
}

/// A server persisting with an AOF, with or without the RDB preamble.
fn aof_server(preamble: &str) -> Durable {
    Durable::start(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        preamble,
    ])
}

/// [`aof_server`] with `rlock.token-gap` at `HUGE_GAP` in every run: tokens in the data are
/// learned up to twice the gap past the clock, so a counter pushed `HUGE_GAP` ahead is
/// replayed by a server with the same gap (as a deployment keeps its gap).
fn aof_server_huge_gap(preamble: &str) -> Durable {
    let gap = HUGE_GAP.to_string();
    Durable::start(&[
        "--save",
        "",
        "--appendonly",
        "yes",
        "--aof-use-rdb-preamble",
        preamble,
        "--rlock.token-gap",
        &gap,
    ])
}

/// Issues a token, then moves the counter `HUGE_GAP` past it.
fn counter_far_past_the_clock(con: &mut redis::Connection) {
    token_of_a_released_lock(con, "a");
    push_counter_ahead(con, HUGE_GAP);
}

/// Runs `BGSAVE` or `BGREWRITEAOF` and waits until it is done.
fn in_background(con: &mut redis::Connection, command: &str) {
    let _: String = redis::cmd(command).query(con).expect(command);
    wait_persistence_idle(con);
}

/// Restarts the server and checks that its first token is past `before`.
fn assert_restart_moves_past(server: &mut Durable, before: i64) {
    let after = first_token_after_restart(server);
    assert!(
        after > before,
        "token {after} after restart ≤ {before} before"
    );
}

fn first_token_after_restart(server: &mut Durable) -> i64 {
    server.restart();
    int(&mut server.conn(), &["LOCK.ACQUIRE", "after", "o"])
}

#[test]
fn save_then_restart_never_reissues_a_token() {
    let mut server = rdb_server();
    let mut con = server.conn();
    counter_far_past_the_clock(&mut con);
    let before = token_of_a_released_lock(&mut con, "b");
    assert_eq!(int(&mut con, &["DBSIZE"]), 0, "no lock key remains");
    let _: () = redis::cmd("SAVE").query(&mut con).expect("save");
    assert_restart_moves_past(&mut server, before);
}

#[test]
fn bgsave_then_restart_never_reissues_a_token() {
    let mut server = rdb_server();
    let mut con = server.conn();
    counter_far_past_the_clock(&mut con);
    let before = token_of_a_released_lock(&mut con, "b");
    in_background(&mut con, "BGSAVE");
    assert_restart_moves_past(&mut server, before);
}

#[test]
fn aof_with_rdb_preamble_keeps_the_counter_with_no_lock_left() {
    let mut server = aof_server("yes");
    let mut con = server.conn();
    counter_far_past_the_clock(&mut con);
    let before = token_of_a_released_lock(&mut con, "b");
    in_background(&mut con, "BGREWRITEAOF");
    assert_restart_moves_past(&mut server, before);
}

#[test]
fn aof_commands_teach_the_counter_on_replay() {
    for preamble in ["yes", "no"] {
        let mut server = aof_server_huge_gap(preamble);
        let mut con = server.conn();
        counter_far_past_the_clock(&mut con);
        // Written after the last rewrite: only the AOF's commands record this token.
        let before = int(&mut con, &["LOCK.ACQUIRE", "held", "o", "LEASE", "600000"]);
        let after = first_token_after_restart(&mut server);
        assert!(after > before, "preamble {preamble}: {after} ≤ {before}");
    }
}

#[test]
fn aof_rewritten_without_preamble_keeps_tokens_of_remaining_locks() {
    let mut server = aof_server_huge_gap("no");
    let mut con = server.conn();
    counter_far_past_the_clock(&mut con);
    let before = int(&mut con, &["LOCK.ACQUIRE", "held", "o", "LEASE", "600000"]);
    in_background(&mut con, "BGREWRITEAOF");
    assert_restart_moves_past(&mut server, before);
}

#[test]
fn aof_rewritten_without_preamble_and_no_lock_left_still_moves_forward() {
    let mut server = aof_server("no");
    let mut con = server.conn();
    let before = (0..50)
        .map(|i| token_of_a_released_lock(&mut con, &format!("k{i}")))
        .max()
        .unwrap_or(0);
    in_background(&mut con, "BGREWRITEAOF");
    assert_restart_moves_past(&mut server, before);
}

/// Every byte of the server's AOF files.
fn aof_bytes(server: &Durable) -> Vec<u8> {
    let dir = server.dir.join("appendonlydir");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("appendonlydir")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| fs::read(f).unwrap_or_default())
        .collect()
}

#[test]
fn an_aof_replays_last_releases_of_leases_long_over() {
    let mut server = aof_server("no");
    let mut con = server.conn();
    for key in ["once", "twice"] {
        int(&mut con, &["LOCK.ACQUIRE", key, "o", "LEASE", "50"]);
    }
    int(&mut con, &["LOCK.ACQUIRE", "twice", "o", "LEASE", "50"]);
    int(&mut con, &["LOCK.ACQUIRE", "long", "o", "LEASE", "600000"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "long", "o"]), 0);
    let kept = int(&mut con, &["LOCK.ACQUIRE", "kept", "o", "LEASE", "600000"]);
    int(&mut con, &["LOCK.ACQUIRE", "kept", "o", "LEASE", "600000"]);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "once", "o"]), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "twice", "o"]), 1);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "twice", "o"]), 0);
    assert_eq!(int(&mut con, &["LOCK.RELEASE", "kept", "o"]), 1);
    int(&mut con, &["LOCK.ACQUIRE", "expired", "o", "LEASE", "50"]);
    let gone = wait_until(LIMIT, || int(&mut con, &["EXISTS", "expired"]) == 0);
    assert!(gone, "the 50 ms lease did not end");
    let aof = aof_bytes(&server);
    assert!(
        aof.windows(12).any(|w| w == b"LOCK.RELEASE"),
        "a last release is logged as the command"
    );
    // Every 50 ms lease above is over: the replay must still find each lock it releases
    // (and `long` shows that a replayed release deletes).
    server.restart();
    let mut con = server.conn();
    assert!(
        !server.log().contains("Bad file format"),
        "{}",
        server.log()
    );
    assert_eq!(int(&mut con, &["EXISTS", "long"]), 0);
    assert_eq!(int(&mut con, &["DBSIZE"]), 1, "only `kept` remains");
    let token = kept.to_string();
    let expected = hash_of(&[(b"o", b"1"), (b"@token", token.as_bytes())]);
    assert_eq!(hgetall(&mut con, b"kept"), expected);
}

fn promote(replica: &Server) -> redis::Connection {
    let mut con = replica.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut con)
        .expect("promote");
    no_failover_delay(&mut con);
    con
}

fn replicated(master: &mut redis::Connection) {
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query(master)
        .expect("WAIT");
    assert_eq!(acked, 1, "the replica did not acknowledge");
}

#[test]
fn promoted_replica_skips_past_streamed_tokens_by_the_gap() {
    let master = Server::start();
    let replica = master.replica();
    let mut m = master.conn();
    let gap: i64 = 1_000_000_000_000;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("rlock.token-gap")
        .arg(gap)
        .query(&mut replica.conn())
        .expect("config set");
    let mut highest = 0;
    for i in 0..200 {
        let key = format!("k{}", i % 7);
        highest = highest.max(int(&mut m, &["LOCK.ACQUIRE", &key, "o"]));
        int(&mut m, &["LOCK.RELEASE", &key, "o"]);
    }
    replicated(&mut m);
    let mut r = promote(&replica);
    let next = int(&mut r, &["LOCK.ACQUIRE", "new", "o"]);
    assert!(
        next >= highest + gap,
        "promoted replica issued {next}, highest replicated {highest}, gap {gap}"
    );
}

#[test]
fn replica_attached_by_full_sync_only_skips_past_the_masters_tokens() {
    let master = Server::start();
    let mut m = master.conn();
    counter_far_past_the_clock(&mut m);
    // Issued before the replica exists and gone since: only the RDB of the full sync has it.
    let highest = token_of_a_released_lock(&mut m, "b");
    let replica = master.replica();
    let mut r = replica.conn();
    assert_eq!(int(&mut r, &["DBSIZE"]), 0);
    let gap: i64 = 1 << 20;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut r)
        .expect("promote");
    no_failover_delay(&mut r);
    let next = int(&mut r, &["LOCK.ACQUIRE", "new", "o"]);
    // The promotion's jump is to the clock + gap: a counter already past that (learned
    // from the master's RDB) goes on from where it is.
    assert!(
        next > highest && next > now_us() + gap,
        "promoted replica issued {next}, master's highest {highest}"
    );
}

fn now_us() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock");
    i64::try_from(since.as_micros()).expect("µs fit in i64")
}
