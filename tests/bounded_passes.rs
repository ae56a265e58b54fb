//! No pass does unbounded work (docs/architecture.md): 300,000 queued tickets granted,
//! released or taken out after their receiver closed are handled a slice at a time, so that
//! another connection's `PING` is answered meanwhile and the module's own stall detector
//! counts nothing. Each test also checks what the waits got.

#[path = "tickets/receiver.rs"]
#[allow(dead_code)]
mod receiver;
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use receiver::Receiver;
use redis::Value;
use support::{info_field, int, raw, wait_until, Server};

/// Tickets queued in each test.
const N: usize = 300_000;
/// The longest a `PING` may wait: a hang limit, far above a slice's cost (under a
/// millisecond), and far under what one pass over every ticket took.
const PING_LIMIT: Duration = Duration::from_millis(250);
const LIMIT: Duration = Duration::from_secs(60);

fn rlock_info(con: &mut redis::Connection, name: &str) -> i64 {
    info_field(con, "rlock", name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Sends `n` commands made by `command` on a connection of its own, pipelined.
fn queue(server: &Server, n: usize, command: impl Fn(usize) -> Vec<String>) {
    let mut con = server.conn();
    for start in (0..n).step_by(10_000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 10_000).min(n) {
            let mut cmd = redis::Cmd::new();
            for arg in command(i) {
                cmd.arg(arg);
            }
            pipe.add_command(cmd);
        }
        let replies: Vec<Value> = pipe.query(&mut con).expect("queue");
        if let Some(Value::ServerError(e)) = replies.first() {
            panic!("queueing: {e:?}");
        }
    }
}

/// `PING`s from a connection of its own until stopped; the longest answer.
struct Pinger {
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<Duration>,
}

impl Pinger {
    fn start(server: &Server) -> Pinger {
        let mut con = server.conn();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = thread::spawn(move || {
            let mut longest = Duration::ZERO;
            while !flag.load(Ordering::Relaxed) {
                let sent = Instant::now();
                assert_eq!(raw(&mut con, &["PING"]), Value::SimpleString("PONG".into()));
                longest = longest.max(sent.elapsed());
                thread::sleep(Duration::from_millis(1));
            }
            longest
        });
        Pinger { stop, handle }
    }

    /// Stops it once `done` holds: the longest `PING` meanwhile.
    fn until(
        self,
        con: &mut redis::Connection,
        mut done: impl FnMut(&mut redis::Connection) -> bool,
    ) -> Duration {
        assert!(wait_until(LIMIT, || done(con)), "the work did not end");
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("pinger")
    }
}

/// Held while a test of this file measures: they run one at a time (each in a process of
/// its own), so that they do not take each other's CPU while a `PING` is timed.
fn alone() -> std::fs::File {
    let path = std::env::temp_dir().join("rlock-bounded-passes.lock");
    let file = std::fs::File::create(path).expect("a lock file");
    file.lock().expect("the lock file's lock");
    file
}

/// Runs `action` with a pinger beside it until `done`; asserts the pings and the stalls.
fn bounded(
    server: &Server,
    action: impl FnOnce(&mut redis::Connection),
    done: impl FnMut(&mut redis::Connection) -> bool,
) {
    let _alone = alone();
    let mut con = server.conn();
    assert_eq!(rlock_info(&mut con, "rlock_waiters"), N as i64);
    let pinger = Pinger::start(server);
    thread::sleep(Duration::from_millis(20));
    action(&mut con);
    let longest = pinger.until(&mut con, done);
    eprintln!("longest PING while the work went on: {longest:?}");
    assert!(longest < PING_LIMIT, "a PING waited {longest:?}");
    assert_eq!(rlock_info(&mut con, "rlock_stalls"), 0);
}

fn waiters_gone(con: &mut redis::Connection) -> bool {
    rlock_info(con, "rlock_waiters") == 0
}

#[test]
fn one_owners_read_tickets_are_granted_a_slice_at_a_time() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "60000"],
    );
    let r = Receiver::resp2(&server);
    let to = r.id.to_string();
    queue(&server, N, |_| {
        ["RWLOCK.WAIT", "k", "o", "READ", "LEASE", "60000", "TO", &to]
            .map(str::to_owned)
            .to_vec()
    });
    let release = |c: &mut redis::Connection| {
        assert_eq!(int(c, &["RWLOCK.RELEASE", "k", "w", "WRITE"]), 0);
    };
    bounded(&server, release, |c| {
        rlock_info(c, "rlock_unread_outcomes") == N as i64
    });
    let reads = raw(&mut con, &["HGET", "k", "o"]);
    assert_eq!(reads, Value::BulkString(N.to_string().into_bytes()));
    drop(r);
}

#[test]
fn one_owners_permit_tickets_are_granted_a_slice_at_a_time() {
    let server = Server::start();
    let mut con = server.conn();
    let total = (N + 1).to_string();
    int(&mut con, &["SEM.PERMITS", "s", &total]);
    int(
        &mut con,
        &["SEM.ACQUIRE", "s", "a", &total, "LEASE", "60000"],
    );
    let r = Receiver::resp2(&server);
    let to = r.id.to_string();
    queue(&server, N, |_| {
        ["SEM.WAIT", "s", "o", "1", "LEASE", "60000", "TO", &to]
            .map(str::to_owned)
            .to_vec()
    });
    let release = |c: &mut redis::Connection| {
        int(c, &["SEM.RELEASE", "s", "a"]);
    };
    bounded(&server, release, |c| {
        rlock_info(c, "rlock_unread_outcomes") == N as i64
    });
    assert_eq!(
        raw(&mut con, &["HGET", "s", "o"]),
        Value::BulkString(N.to_string().into_bytes())
    );
    drop(r);
}

#[test]
fn a_latch_at_zero_releases_its_tickets_a_slice_at_a_time() {
    let server = Server::start();
    let mut con = server.conn();
    int(&mut con, &["LATCH.SET", "L", "1"]);
    let r = Receiver::resp2(&server);
    let to = r.id.to_string();
    queue(&server, N, |_| {
        ["LATCH.WAIT", "L", "TO", &to].map(str::to_owned).to_vec()
    });
    let count_down = |c: &mut redis::Connection| {
        assert_eq!(int(c, &["LATCH.COUNTDOWN", "L"]), 0);
    };
    bounded(&server, count_down, |c| {
        rlock_info(c, "rlock_unread_outcomes") == N as i64
    });
    assert_eq!(rlock_info(&mut con, "rlock_latch_releases"), N as i64);
    drop(r);
}

#[test]
fn a_closed_receivers_tickets_leave_a_slice_at_a_time_and_are_never_granted() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "60000"],
    );
    let r = Receiver::resp2(&server);
    let to = r.id.to_string();
    queue(&server, N, |i| {
        let owner = format!("o{i}");
        [
            "RWLOCK.WAIT",
            "k",
            &owner,
            "READ",
            "LEASE",
            "60000",
            "TO",
            &to,
        ]
        .map(str::to_owned)
        .to_vec()
    });
    let close = |c: &mut redis::Connection| {
        drop(r);
        // The holder leaves while the closed receiver's tickets are being taken out:
        // none of them may be granted.
        thread::sleep(Duration::from_millis(5));
        assert_eq!(int(c, &["RWLOCK.RELEASE", "k", "w", "WRITE"]), 0);
    };
    bounded(&server, close, waiters_gone);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    assert_eq!(rlock_info(&mut con, "rlock_rw_read_holdings"), 0);
}

#[test]
fn a_deaf_push_receivers_read_tickets_are_skipped_without_a_grant_each() {
    let server = Server::start();
    let mut con = server.conn();
    int(
        &mut con,
        &["RWLOCK.ACQUIRE", "k", "w", "WRITE", "LEASE", "60000"],
    );
    let mut r = Receiver::push(&server);
    for start in (0..N).step_by(10_000) {
        for i in start..start + 10_000 {
            let owner = format!("o{i}");
            r.send(&["RWLOCK.WAIT", "k", &owner, "READ", "LEASE", "60000"]);
        }
        for _ in start..start + 10_000 {
            r.reply();
        }
    }
    let channel = format!("__rlock__:{}", r.id);
    r.send(&["UNSUBSCRIBE", &channel]);
    r.frame();
    let holdings = rlock_info(&mut con, "rlock_rw_read_holdings");
    let release = |c: &mut redis::Connection| {
        assert_eq!(int(c, &["RWLOCK.RELEASE", "k", "w", "WRITE"]), 0);
    };
    bounded(&server, release, waiters_gone);
    // The first grant found it deaf; the rest were skipped, not granted and undone.
    assert!(rlock_info(&mut con, "rlock_rw_read_holdings") <= holdings + 1);
    assert_eq!(raw(&mut con, &["EXISTS", "k"]), Value::Int(0));
    drop(r);
}

#[test]
fn an_evicted_locks_tickets_are_refused_a_slice_at_a_time() {
    let server = Server::start_with(&["--maxmemory-policy", "volatile-ttl"]);
    let mut con = server.conn();
    int(&mut con, &["LOCK.ACQUIRE", "L", "a", "LEASE", "600000"]);
    let r = Receiver::resp2(&server);
    let to = r.id.to_string();
    queue(&server, N, |i| {
        let owner = format!("o{i}");
        ["LOCK.WAIT", "L", &owner, "TO", &to]
            .map(str::to_owned)
            .to_vec()
    });
    let squeeze = |c: &mut redis::Connection| {
        let used: i64 = info_field(c, "memory", "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory");
        let limit = (used - 100_000).to_string();
        assert_eq!(raw(c, &["CONFIG", "SET", "maxmemory", &limit]), Value::Okay);
    };
    // Every command makes Redis evict while memory is over the limit.
    bounded(&server, squeeze, |c| {
        raw(c, &["PING"]);
        rlock_info(c, "rlock_unread_outcomes") == N as i64
    });
    assert_eq!(
        raw(&mut con, &["CONFIG", "SET", "maxmemory", "0"]),
        Value::Okay
    );
    assert_eq!(rlock_info(&mut con, "rlock_handoffs"), 0);
    let mut mail = r;
    let Value::Array(outcomes) = mail.call(&["LOCK.GRANTS", "COUNT", "5"]) else {
        panic!("LOCK.GRANTS");
    };
    assert!(format!("{outcomes:?}").contains("OOM"), "{outcomes:?}");
}
