//! A read-write lock (`RWLOCK.*`) and Redisson's `RReadWriteLock` scripts (run with `EVAL`)
//! on the same key exclude each other: while rlock holds, in either mode, the hash says
//! `mode` = `write` and a Redisson reader or writer waits; while a Redisson client holds,
//! `RWLOCK.ACQUIRE` waits, and a queued rlock client gets the lock when the Redisson holder
//! unlocks (its unlock deletes the key and publishes on `redisson_rwlock:{key}`).

mod support;

#[path = "support/redisson_rwlock.rs"]
mod rw;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis::{ConnectionLike, Value};
use support::{hash_of, hgetall, info_field, int, pexpiretime, raw, Rng, Server, Subscriber};

const LEASE: &str = "10000";
const LEASE_MS: u64 = 10_000;

/// A Redisson client id on `lock`.
fn holder(lock: &str, id: &str) -> rw::Holder {
    rw::Holder::new(lock, id, LEASE_MS)
}

/// Runs a Redisson script with `EVAL`.
fn run(con: &mut redis::Connection, call: rw::Call) -> Value {
    con.req_command(&call.eval()).expect("EVAL")
}

fn mode(write: bool) -> &'static str {
    ["READ", "WRITE"][usize::from(write)]
}

/// `RWLOCK.ACQUIRE key owner READ|WRITE LEASE 10000 [WAIT ms]`.
fn acquire(key: &str, owner: &str, write: bool, wait: Option<&str>) -> Vec<String> {
    let args = ["RWLOCK.ACQUIRE", key, owner, mode(write), "LEASE", LEASE];
    let wait = wait.map(|ms| ["WAIT", ms]);
    args.into_iter()
        .chain(wait.into_iter().flatten())
        .map(String::from)
        .collect()
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as i64)
}

/// The hash, with `@h:<owner>` checked (`<token> <deadline>`, the deadline within the
/// lease from now and not after the key's expiry) and left out.
fn layout(con: &mut redis::Connection, key: &str, owner: &str, token: i64) -> Hash {
    let mut hash = hgetall(con, key.as_bytes());
    let holding = format!("@h:{owner}");
    let value = hash
        .remove(holding.as_bytes())
        .expect("the holder's @h field");
    let value = String::from_utf8_lossy(&value).into_owned();
    let (t, deadline) = value.split_once(' ').expect("`<token> <deadline>`");
    assert_eq!(t.parse::<i64>().ok(), Some(token), "{holding} = {value}");
    let deadline: i64 = deadline.parse().expect("deadline in ms");
    let now = now_ms();
    let within = deadline > now && deadline <= now + LEASE_MS as i64 + 1000;
    assert!(within, "{holding} = {value}, now {now}");
    let expiry = pexpiretime(con, key.as_bytes());
    assert!(
        expiry >= deadline,
        "the key expires at {expiry}, before {value}"
    );
    hash
}

type Hash = std::collections::BTreeMap<Vec<u8>, Vec<u8>>;

/// Both Redisson scripts are refused with the lock's PTTL.
fn redisson_waits(con: &mut redis::Connection, key: &str) {
    let other = holder(key, "redisson-uuid:7");
    for write in [false, true] {
        match run(con, other.lock(write)) {
            Value::Int(ttl) => assert!(ttl > 0, "PTTL {ttl}"),
            got => panic!(
                "a Redisson {} lock got {got:?} while rlock holds",
                mode(write)
            ),
        }
    }
}

#[test]
fn rlock_reader_shows_write_mode_and_redisson_waits() {
    let server = Server::start();
    let mut con = server.conn();
    let mut sub = Subscriber::plain(&server, rw::channel("rw:r").as_bytes());
    let token = int(&mut con, &acquire("rw:r", "app-1", false, None));
    let fields = layout(&mut con, "rw:r", "app-1", token);
    let expected: [(&[u8], &[u8]); 3] = [(b"@w", b""), (b"app-1", b"1"), (b"mode", b"write")];
    assert_eq!(fields, hash_of(&expected));
    redisson_waits(&mut con, "rw:r");
    assert_eq!(
        int(&mut con, &["RWLOCK.RELEASE", "rw:r", "app-1", "READ"]),
        0
    );
    assert_eq!(int(&mut con, &["EXISTS", "rw:r"]), 0);
    assert_eq!(sub.next().payload, b"1", "the release message");
    let me = holder("rw:r", "redisson-uuid:1");
    assert_eq!(
        run(&mut con, me.lock(false)),
        Value::Nil,
        "a freed lock is Redisson's to take"
    );
}

#[test]
fn rlock_writer_shows_write_mode_and_redisson_waits() {
    let server = Server::start();
    let mut con = server.conn();
    let token = int(&mut con, &acquire("rw:w", "app-1", true, None));
    let fields = layout(&mut con, "rw:w", "app-1", token);
    let expected: [(&[u8], &[u8]); 3] = [
        (b"@w", b"app-1"),
        (b"app-1:write", b"1"),
        (b"mode", b"write"),
    ];
    assert_eq!(fields, hash_of(&expected));
    redisson_waits(&mut con, "rw:w");
    // The writer takes a read hold too: its token, and both counts in the hash.
    assert_eq!(int(&mut con, &acquire("rw:w", "app-1", false, None)), token);
    let fields = layout(&mut con, "rw:w", "app-1", token);
    let expected: [(&[u8], &[u8]); 4] = [
        (b"@w", b"app-1"),
        (b"app-1", b"1"),
        (b"app-1:write", b"1"),
        (b"mode", b"write"),
    ];
    assert_eq!(fields, hash_of(&expected));
    redisson_waits(&mut con, "rw:w");
}

/// Clients blocked in a command now.
fn blocked_clients(con: &mut redis::Connection) -> i64 {
    let n = info_field(con, "clients", "blocked_clients");
    n.and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[test]
fn redisson_holder_makes_rlock_wait_until_it_unlocks() {
    let server = Server::start();
    for redisson_writes in [false, true] {
        for rlock_writes in [false, true] {
            behind_redisson(&server, redisson_writes, rlock_writes);
        }
    }
}

/// A Redisson holder (writer when `redisson_writes`) and an rlock client asking to read, or
/// to write when `rlock_writes`: refused, then queued, then granted when Redisson unlocks.
fn behind_redisson(server: &Server, redisson_writes: bool, rlock_writes: bool) {
    let mut con = server.conn();
    let key = format!("rw:q:{}:{}", mode(redisson_writes), mode(rlock_writes));
    let holder = holder(&key, "redisson-uuid:1");
    assert_eq!(run(&mut con, holder.lock(redisson_writes)), Value::Nil);
    let ask = acquire(&key, "app-1", rlock_writes, None);
    assert_eq!(raw(&mut con, &ask), Value::Nil, "{key}: taken");
    let mut waiter = server.conn();
    let args = acquire(&key, "app-1", rlock_writes, Some("20000"));
    let queued = thread::spawn(move || raw(&mut waiter, &args));
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked_clients(&mut con) < 1 && !queued.is_finished() {
        assert!(Instant::now() < deadline, "hung: {key}: never queued");
        thread::sleep(Duration::from_millis(5));
    }
    if !redisson_writes {
        let renewed = run(&mut con, holder.renew());
        assert_eq!(renewed, Value::Int(1), "{key}: the reader renews");
    }
    assert!(
        !queued.is_finished(),
        "{key}: answered while Redisson holds"
    );
    let unlocked = run(&mut con, holder.unlock(redisson_writes));
    assert_eq!(unlocked, Value::Int(1), "{key}: unlock");
    let token = match queued.join().expect("waiter thread") {
        Value::Int(t) => t,
        other => panic!("{key}: the queued RWLOCK.ACQUIRE got {other:?}"),
    };
    let fields = layout(&mut con, &key, "app-1", token);
    let mode = fields.get(&b"mode"[..]).map(|m| m.as_slice());
    assert_eq!(mode, Some(&b"write"[..]), "{key}: mode");
}

/// The contended lock's holders by family (Redisson, rlock) and mode (read, write), as
/// the contenders count themselves in after an acquisition and out before a release.
#[derive(Default)]
struct Shared {
    holders: Mutex<[[u32; 2]; 2]>,
    counts: [AtomicU64; 2],
    stop: AtomicBool,
    problems: Mutex<Vec<String>>,
}

impl Shared {
    /// Counts one holder in (`delta` 1) or out (-1); an overlap is recorded.
    fn hold(&self, redisson: bool, write: bool, delta: i32) {
        let mut h = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        let n = &mut h[usize::from(!redisson)][usize::from(write)];
        *n = n.saturating_add_signed(delta);
        let both = h.iter().all(|side| side[0] + side[1] > 0);
        let exclusive = |side: [u32; 2]| side[1] > 1 || (side[1] == 1 && side[0] > 0);
        if delta > 0 && (both || exclusive(h[0]) || exclusive(h[1])) {
            self.problem(format!(
                "[[Redisson read, write], [rlock read, write]] = {h:?}"
            ));
        }
    }

    /// Records what went wrong, and ends the run.
    fn problem(&self, what: String) {
        self.problems
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(what);
        self.stop.store(true, Ordering::SeqCst);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

const KEY: &str = "rw:mixed";
/// Acquisitions each family makes before the loop ends.
const COUNT: u64 = 1000;

fn contender(
    server: &Server,
    shared: Arc<Shared>,
    redisson: bool,
    n: u64,
) -> thread::JoinHandle<()> {
    let mut con = server.conn();
    thread::spawn(move || {
        let mut rng = Rng::new(n * 7919 + 1);
        let me = holder(KEY, &format!("redisson-uuid:{n}"));
        let owner = format!("app-{n}");
        while !shared.stopped() {
            let write = rng.chance(30);
            let got = match redisson {
                true => run(&mut con, me.lock(write)),
                false => raw(&mut con, &acquire(KEY, &owner, write, Some("2000"))),
            };
            if let Value::ServerError(_) = got {
                shared.problem(format!("{got:?}"));
            }
            let got = if redisson {
                got == Value::Nil
            } else {
                matches!(got, Value::Int(_))
            };
            if !got {
                thread::sleep(Duration::from_micros(rng.below(1000) + 200));
                continue;
            }
            shared.hold(redisson, write, 1);
            shared.counts[usize::from(!redisson)].fetch_add(1, Ordering::SeqCst);
            thread::sleep(Duration::from_micros(rng.below(500)));
            shared.hold(redisson, write, -1);
            let released = match redisson {
                true => run(&mut con, me.unlock(write)),
                false => raw(&mut con, &["RWLOCK.RELEASE", KEY, &owner, mode(write)]),
            };
            if !matches!(released, Value::Int(0 | 1)) {
                shared.problem(format!("release replied {released:?}"));
            }
            thread::sleep(Duration::from_micros(rng.below(3000)));
        }
    })
}

#[test]
fn redisson_and_rlock_contenders_never_overlap() {
    let server = Server::start();
    let shared = Arc::new(Shared::default());
    let threads: Vec<_> = (0..6)
        .map(|n| contender(&server, shared.clone(), n % 2 == 0, n))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = |i: usize| shared.counts[i].load(Ordering::SeqCst) >= COUNT;
    let finished = || shared.stopped() || (done(0) && done(1));
    while !finished() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    shared.stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().expect("contender");
    }
    let problems = shared.problems.lock().unwrap_or_else(|p| p.into_inner());
    assert!(problems.is_empty(), "overlaps or errors: {problems:?}");
    let counts = shared.counts.each_ref().map(|c| c.load(Ordering::SeqCst));
    assert!(
        done(0) && done(1),
        "hung: acquisitions (Redisson, rlock) {counts:?} after 120 s"
    );
}
