//! A stress test of RedLock with cancellation between rounds (issue #19, acceptance 1):
//! contenders cancel their acquisitions at random moments (a `timeout` of 0.2 to 30 ms
//! around `acquire()`), and whenever one holds, it checks on every server that a majority
//! shows it as the holder while it believes it holds, and that no other guard believes so
//! at the same time. 0 violations.

mod redlock_support;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redlock_support::{clients, in_canonical_order, now_us};
use rlock_client::RedLock;
use support::{watched, Server};

const TASKS: u64 = 4;
/// Checks to reach, or as many as fit in `BUDGET`.
const CHECKS: u64 = 5_000;
const BUDGET: Duration = Duration::from_secs(20);

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
    checks: AtomicU64,
    violations: AtomicU64,
    cancelled: AtomicU64,
}

/// How many of `servers` show `owner` as the holder of `job`.
fn holding_servers(servers: &[Server], owner: &str) -> usize {
    tokio::task::block_in_place(|| {
        let held = |s: &&Server| s.info("job").is_some_and(|i| i.owner == owner);
        servers.iter().filter(held).count()
    })
}

async fn contend(
    servers: Arc<Vec<Server>>,
    lock: RedLock,
    seed: u64,
    inside: Arc<AtomicBool>,
    tally: Arc<Tally>,
) {
    let mut rng = Rng(seed | 1);
    let started = Instant::now();
    let quorum = lock.quorum();
    while tally.checks.load(Ordering::SeqCst) < CHECKS && started.elapsed() < BUDGET {
        let limit = Duration::from_micros(200 + rng.below(30_000));
        let Ok(acquired) = tokio::time::timeout(limit, lock.acquire()).await else {
            tally.cancelled.fetch_add(1, Ordering::SeqCst);
            continue;
        };
        let guard = acquired.expect("acquire");
        if inside.swap(true, Ordering::SeqCst) {
            tally.violations.fetch_add(1, Ordering::SeqCst);
            eprintln!("VIOLATION: two guards believe they hold at once");
        }
        for _ in 0..1 + rng.below(3) {
            let valid_until = guard.valid_until();
            let held = holding_servers(&servers, guard.owner());
            if Instant::now() < valid_until && held < quorum {
                tally.violations.fetch_add(1, Ordering::SeqCst);
                eprintln!("VIOLATION: a guard believes it holds on {held} servers");
            }
            tally.checks.fetch_add(1, Ordering::SeqCst);
        }
        inside.store(false, Ordering::SeqCst);
        if rng.below(4) == 0 {
            drop(guard); // released in the background
        } else {
            let _ = guard.release().await;
        }
    }
}

async fn stress(n: usize) {
    let servers = Arc::new(in_canonical_order(n).await);
    let seed = std::env::var("RLOCK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(now_us);
    eprintln!("seed {seed} (RLOCK_TEST_SEED to replay)");
    let (inside, tally) = (Arc::new(AtomicBool::new(false)), Arc::new(Tally::default()));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let lock = RedLock::new(clients(&servers).await, "job").unwrap();
        let lock = lock.options(watched(Duration::from_millis(600)));
        let job = contend(
            servers.clone(),
            lock,
            seed.wrapping_add(t),
            inside.clone(),
            tally.clone(),
        );
        tasks.push(tokio::spawn(job));
    }
    for task in tasks {
        let ended = tokio::time::timeout(BUDGET * 3, task).await;
        ended.expect("a contender is stuck").expect("a contender");
    }
    let (checks, violations) = (
        tally.checks.load(Ordering::SeqCst),
        tally.violations.load(Ordering::SeqCst),
    );
    let cancelled = tally.cancelled.load(Ordering::SeqCst);
    eprintln!(
        "{n} servers: {checks} checks, {violations} violations, {cancelled} cancelled acquisitions"
    );
    assert_eq!(violations, 0, "{violations} violations in {checks} checks");
    assert!(
        checks >= 500 && cancelled >= 100,
        "too little happened: {checks} checks, {cancelled} cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_redlock_acquisitions_never_leave_two_holders() {
    stress(3).await;
}
