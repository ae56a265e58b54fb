//! A stress test of RedLock with cancelled acquisitions: contenders cancel their
//! acquisitions at random moments (a `timeout` of 0.2 to 30 ms around `acquire()`), and
//! whenever one holds, it checks on every server that a majority shows it as the holder
//! while it believes it holds, and that no other guard believes so at the same time. It
//! runs to a count of checks and of cancelled acquisitions, however long they take (the
//! time limit only catches a hang), and prints how fast it went. 0 violations.

mod redlock_support;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redlock_support::{clients, in_canonical_order, now_us};
use rlock_client::{GroupSignal, RedLock};
use support::{watched, Server};

const TASKS: u64 = 4;
/// Cancelled acquisitions to reach (and a number of checks each test gives).
const CANCELS: u64 = 100;
/// Far more than the counts take on a slow, loaded machine: only a hang reaches it.
const HANG_LIMIT: Duration = Duration::from_secs(600);

/// A small xorshift generator, seeded from the printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[derive(Default)]
struct Tally {
    /// The checks to reach.
    target: u64,
    checks: AtomicU64,
    violations: AtomicU64,
    cancelled: AtomicU64,
}

impl Tally {
    fn done(&self) -> bool {
        self.checks.load(Ordering::SeqCst) >= self.target
            && self.cancelled.load(Ordering::SeqCst) >= CANCELS
    }

    fn violation(&self, what: &str) {
        self.violations.fetch_add(1, Ordering::SeqCst);
        eprintln!("VIOLATION: {what}");
    }
}

/// The owner `server` shows for `job` (`Some(None)`: free), or `None` if it does not answer
/// within 200 ms (stopped).
fn owner_on(server: &Server) -> Option<Option<String>> {
    let within = Duration::from_millis(200);
    let client = redis::Client::open(server.url()).ok()?;
    let mut conn = client.get_connection_with_timeout(within).ok()?;
    conn.set_read_timeout(Some(within)).ok()?;
    let reply: Option<Vec<String>> = redis::cmd("LOCK.INFO").arg("job").query(&mut conn).ok()?;
    Some(reply.and_then(|fields| fields.get(1).cloned()))
}

/// How many of `servers` surely do not show `owner` as the holder (a stopped server may).
fn servers_not_holding(servers: &[Server], owner: &str) -> usize {
    tokio::task::block_in_place(|| {
        let other = |s: &&Server| owner_on(s).is_some_and(|o| o.as_deref() != Some(owner));
        servers.iter().filter(other).count()
    })
}

/// Loops until the checks and the cancellations are counted: acquisitions cancelled at random
/// moments; each holding checks that no majority of servers shows another holder while it
/// believes it holds, and that the holder before it no longer believed so.
async fn contend(
    servers: Arc<Vec<Server>>,
    lock: RedLock,
    seed: u64,
    current: Arc<Mutex<Option<GroupSignal>>>,
    tally: Arc<Tally>,
) {
    let mut rng = Rng(seed | 1);
    let (quorum, n) = (lock.quorum(), servers.len());
    while !tally.done() {
        let limit = Duration::from_micros(200 + rng.below(30_000));
        let Ok(acquired) = tokio::time::timeout(limit, lock.acquire()).await else {
            tally.cancelled.fetch_add(1, Ordering::SeqCst);
            continue;
        };
        let Ok(guard) = acquired else { continue };
        let before = current.lock().unwrap().replace(guard.lost_signal());
        if before.is_some_and(|previous| !previous.is_lost()) {
            tally.violation("a guard was granted while the one before believed it held");
        }
        for _ in 0..1 + rng.below(3) {
            let valid_until = guard.valid_until();
            let not_ours = servers_not_holding(&servers, guard.owner());
            if Instant::now() < valid_until && not_ours > n - quorum {
                tally.violation("a guard believes it holds while a majority does not show it");
            }
            tally.checks.fetch_add(1, Ordering::SeqCst);
        }
        current.lock().unwrap().take();
        if rng.below(4) == 0 {
            drop(guard); // released in the background
        } else {
            let _ = guard.release().await;
        }
    }
}

/// Stops each server in turn for 800 ms, then lets it run 400 ms, until `done`.
async fn stop_in_turn(servers: Arc<Vec<Server>>, done: Arc<AtomicBool>) {
    for i in (0..servers.len()).cycle() {
        if done.load(Ordering::SeqCst) {
            return;
        }
        servers[i].stop();
        tokio::time::sleep(Duration::from_millis(800)).await;
        servers[i].resume();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
}

async fn stress(n: usize, stopping: bool, checks: u64) {
    let servers = Arc::new(in_canonical_order(n).await);
    let seed = std::env::var("RLOCK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(now_us);
    eprintln!("seed {seed} (RLOCK_TEST_SEED to replay)");
    let (current, tally) = (
        Arc::new(Mutex::new(None)),
        Arc::new(Tally {
            target: checks,
            ..Tally::default()
        }),
    );
    let done = Arc::new(AtomicBool::new(false));
    // Clients are opened before the servers stop: opening fails within its connect timeout.
    let mut locks = Vec::new();
    for _ in 0..TASKS {
        locks.push(RedLock::new(clients(&servers).await, "job").unwrap());
    }
    let chaos = stopping.then(|| tokio::spawn(stop_in_turn(servers.clone(), done.clone())));
    let mut tasks = Vec::new();
    for (t, lock) in (0..).zip(locks) {
        let lock = lock.options(watched(Duration::from_millis(600)));
        let job = contend(
            servers.clone(),
            lock,
            seed.wrapping_add(t),
            current.clone(),
            tally.clone(),
        );
        tasks.push(tokio::spawn(job));
    }
    let started = Instant::now();
    for task in tasks {
        let ended = tokio::time::timeout_at((started + HANG_LIMIT).into(), task).await;
        let (checks, cancelled) = (
            tally.checks.load(Ordering::SeqCst),
            tally.cancelled.load(Ordering::SeqCst),
        );
        ended
            .unwrap_or_else(|_| {
                panic!("hung: {checks} checks, {cancelled} cancelled in {HANG_LIMIT:?}")
            })
            .expect("a contender");
    }
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    if let Some(chaos) = chaos {
        chaos.await.expect("the stopping task");
    }
    let (checks, violations) = (
        tally.checks.load(Ordering::SeqCst),
        tally.violations.load(Ordering::SeqCst),
    );
    let cancelled = tally.cancelled.load(Ordering::SeqCst);
    let per_second = checks as f64 / took.as_secs_f64();
    eprintln!(
        "{n} servers: {checks} checks, {violations} violations, {cancelled} cancelled \
         acquisitions in {took:.1?} ({per_second:.0} checks/s)"
    );
    assert_eq!(violations, 0, "{violations} violations in {checks} checks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn cancelled_redlock_acquisitions_never_leave_two_holders() {
    stress(3, false, 5_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn cancelled_redlock_acquisitions_with_servers_stopped_in_turn_never_leave_two_holders() {
    stress(3, true, 1_000).await;
}
