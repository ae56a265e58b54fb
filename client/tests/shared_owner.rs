//! One [`Owner`] shared by concurrent tasks, some of whose acquisitions are cancelled: no
//! cancelled wait may release a hold another acquisition of the same owner was granted.

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rlock_client::{Client, Guard, Owner};
use support::Server;
use tokio::time::timeout;

/// How many checks the stress test makes, however long they take.
const CHECKS: u64 = 10_000;
/// Far more than the checks take on a slow, loaded machine: only a hang reaches it.
const HANG_LIMIT: Duration = Duration::from_secs(600);

/// A small xorshift generator: random moments without a dependency.
struct Rng(u64);

impl Rng {
    fn seeded(salt: u64) -> Rng {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let seed = (nanos as u64 ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
        eprintln!("shared owner seed: {seed}");
        Rng(seed)
    }

    fn micros(&mut self, from: u64, to: u64) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Duration::from_micros(from + self.0 % (to - from))
    }
}

/// The owner, a client to look with, and the checks made so far.
struct Race {
    me: Owner,
    client: Client,
    checks: AtomicU64,
    violations: AtomicU64,
}

impl Race {
    /// Compares `LOCK.INFO` with `guard`, `times` times: a guard that is not lost must be
    /// the holding the server has.
    async fn check(&self, guard: &Guard, times: usize) {
        for _ in 0..times {
            let info = self.client.info("race").await.expect("LOCK.INFO");
            self.checks.fetch_add(1, Ordering::Relaxed);
            let held = info.is_some_and(|i| i.owner == self.me.id() && i.token == guard.token());
            if !held && !guard.is_lost() {
                self.violations.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "violation: the guard of token {} believes it holds",
                    guard.token()
                );
            }
        }
    }

    fn done(&self) -> bool {
        self.checks.load(Ordering::Relaxed) >= CHECKS
    }
}

/// Loops `acquire()` under a random 0.2–2.7 ms timeout, checking the guards it gets.
async fn cancelling(race: Arc<Race>, salt: u64) {
    let mut rng = Rng::seeded(salt);
    while !race.done() {
        let limit = rng.micros(200, 2_700);
        if let Ok(Ok(guard)) = timeout(limit, race.me.lock("race").acquire()).await {
            race.check(&guard, 1).await;
            drop(guard);
        }
        // A pause, so that the owner's holds have gaps and the other client gets its turns.
        tokio::time::sleep(rng.micros(200, 2_000)).await;
    }
}

/// Another client taking the lock now and then, so that waits queue and handoffs happen.
async fn contending(other: Client, race: Arc<Race>) {
    let mut rng = Rng::seeded(7);
    while !race.done() {
        let lock = other.lock("race");
        if let Ok(Some(guard)) = lock.try_acquire(Duration::from_millis(5)).await {
            tokio::time::sleep(rng.micros(200, 3_000)).await;
            let _ = guard.release().await;
        }
        tokio::time::sleep(rng.micros(100, 1_000)).await;
    }
}

/// Takes the lock with `try_acquire(ZERO)` and checks it, until done.
async fn checking(race: Arc<Race>) {
    while !race.done() {
        let Ok(Some(guard)) = race.me.lock("race").try_acquire(Duration::ZERO).await else {
            tokio::task::yield_now().await;
            continue;
        };
        // Three times: a hold freed behind the guard's back may be freed a moment later.
        race.check(&guard, 3).await;
        let _ = guard.release().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn a_cancelled_wait_never_frees_another_acquisition_of_its_owner() {
    support::trace();
    let server = Server::start();
    let client = server.client().await;
    let race = Arc::new(Race {
        me: client.owner(),
        client: client.clone(),
        checks: AtomicU64::new(0),
        violations: AtomicU64::new(0),
    });
    let started = Instant::now();
    let mut tasks = vec![
        tokio::spawn(cancelling(race.clone(), 1)),
        tokio::spawn(cancelling(race.clone(), 2)),
        tokio::spawn(checking(race.clone())),
        tokio::spawn(contending(server.client().await, race.clone())),
    ];
    for task in tasks.drain(..) {
        let ended = tokio::time::timeout_at((started + HANG_LIMIT).into(), task).await;
        let checks = race.checks.load(Ordering::Relaxed);
        let hung = || panic!("hung: {checks} checks in {HANG_LIMIT:?}");
        ended.unwrap_or_else(|_| hung()).unwrap();
    }
    let checks = race.checks.load(Ordering::Relaxed);
    let violations = race.violations.load(Ordering::Relaxed);
    let took = started.elapsed();
    let per_second = checks as f64 / took.as_secs_f64();
    eprintln!("{checks} checks, {violations} violations in {took:.1?} ({per_second:.0} checks/s)");
    assert_eq!(violations, 0, "in {checks} checks");
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_behind_a_queued_wait_of_its_owner_is_busy_at_once() {
    let server = Server::start();
    let client = server.client().await;
    let held = server.client().await.lock("busy").acquire().await.unwrap();
    let me = client.owner();
    let waiting = me.lock("busy");
    let waiter = tokio::spawn(async move { waiting.acquire().await });
    assert!(
        support::eventually(Duration::from_secs(10), || server
            .info("busy")
            .is_some_and(|i| i.waiters == 1))
        .await
    );
    // Its turn never comes while `held` is held: a try that waited for it would hang.
    let lock = me.lock("busy");
    let tried = timeout(Duration::from_secs(10), lock.try_acquire(Duration::ZERO)).await;
    let tried = tried.expect("the try waited for its turn").unwrap();
    assert!(tried.is_none(), "the lock is busy");
    held.release().await.unwrap();
    let first = waiter.await.unwrap().unwrap();
    // Now the owner holds it: a try reenters.
    let again = me.lock("busy").try_acquire(Duration::ZERO).await.unwrap();
    assert_eq!(again.expect("reentry").token(), first.token());
    client.close().await.unwrap();
}
