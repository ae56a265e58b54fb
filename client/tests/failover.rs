//! Failover under Redis Sentinel: several clients contend on one lock, each holder writing
//! to a resource with its fencing token, while the master is killed (SIGKILL) again and
//! again. The clients follow each new master; the resource never accepts a stale write; and
//! with the module's failover delay longer than the lease, no two holders' critical sections
//! overlap: a killed master is fenced by its death. (A master failed over while alive needs
//! `min-replicas-to-write` as well: `sentinel.rs` tests that case.) One master, two replicas,
//! three real `redis-sentinel` processes.
//!
//! The figures are printed (`cargo test -p rlock-client --test failover -- --nocapture`).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rlock_client::{Client, Guard};
use support::sentinel::Deployment;
use support::watched;
use tokio::task::block_in_place;
use tokio::time::sleep;

const KEY: &str = "lock:failover";
/// The lease the watchdog keeps renewing.
const LEASE: Duration = Duration::from_millis(1000);
/// `rlock.failover-delay`: longer than the lease.
const FAILOVER_DELAY_MS: &str = "1500";
/// What every server runs with.
const SERVER_ARGS: [&str; 2] = ["--rlock.failover-delay", FAILOVER_DELAY_MS];
const CLIENTS: usize = 5;
const FAILOVERS: usize = 3;
/// How long one acquisition may wait.
const WAIT: Duration = Duration::from_millis(2000);
/// Bounds on the deployment's reactions (a failover takes a second or two; a sentinel whose
/// timer was held up 2 s on a loaded machine enters TILT mode and does nothing for 30 s).
const PROMOTED_WITHIN: Duration = Duration::from_secs(90);
const SERVED_WITHIN: Duration = Duration::from_secs(60);

/// A resource that remembers the highest fencing token it saw and refuses lower ones.
#[derive(Default)]
struct Resource {
    highest: u64,
    writer: String,
    accepted: u64,
    /// Writes refused for a lower token.
    refused: u64,
    /// Writes with the highest token from another owner: two holdings shared a token.
    shared_token: u64,
}

impl Resource {
    fn write(&mut self, token: u64, owner: &str) -> bool {
        if token < self.highest {
            self.refused += 1;
            return false;
        }
        if token == self.highest && owner != self.writer {
            self.shared_token += 1;
        }
        self.highest = token;
        self.writer = owner.to_owned();
        self.accepted += 1;
        true
    }
}

/// What the contenders saw.
#[derive(Default)]
struct Seen {
    resource: Resource,
    /// Holders inside their critical section now.
    inside: usize,
    overlaps: Vec<String>,
    grants: Vec<Instant>,
    /// Writes refused while their writer held the lock as far as it knew.
    refused_while_held: u64,
    /// Writes tried by former holders after their loss, once a newer token was written.
    stale_tried: u64,
    stale_refused: u64,
    losses: u64,
    errors: u64,
}

type Shared = Arc<Mutex<Seen>>;

fn seen(shared: &Shared) -> MutexGuard<'_, Seen> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One contender: acquire, work with writes until done or lost, release; again until `stop`.
async fn contend(client: Client, shared: Shared, stop: Arc<AtomicBool>, n: u64) {
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let lock = client.lock(KEY).options(watched(LEASE));
        match lock.try_acquire(WAIT).await {
            Ok(Some(guard)) => {
                // Sections of 100 to 1500 ms, differing between clients and rounds: the
                // longer ones outlive the lease, so a kill can make their holder lose it.
                let work = Duration::from_millis(100 + 350 * ((n + round) % 5));
                hold(&guard, &shared, work).await;
                if guard.is_lost() {
                    seen(&shared).losses += 1;
                    tokio::spawn(write_late(
                        guard.token(),
                        guard.owner().to_owned(),
                        shared.clone(),
                        stop.clone(),
                    ));
                }
                let _ = guard.release().await;
            }
            Ok(None) => {}
            Err(err) => {
                tracing::debug!(%err, "acquire failed");
                seen(&shared).errors += 1;
                sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The critical section: three writes over `work`, ended early by a loss.
async fn hold(guard: &Guard, shared: &Shared, work: Duration) {
    {
        let mut seen = seen(shared);
        if seen.inside > 0 {
            let overlap = format!(
                "{} (token {}) entered while {} held",
                guard.owner(),
                guard.token(),
                seen.inside
            );
            seen.overlaps.push(overlap);
        }
        seen.inside += 1;
        seen.grants.push(Instant::now());
    }
    for _ in 0..3 {
        tokio::select! {
            _ = guard.lost() => break,
            () = sleep(work / 3) => {}
        }
        let mut seen = seen(shared);
        if !seen.resource.write(guard.token(), guard.owner()) {
            seen.refused_while_held += 1;
        }
    }
    seen(shared).inside -= 1;
}

/// A former holder, paused past its loss, writes with its old token once a newer one was
/// written: the resource must refuse it.
async fn write_late(token: u64, owner: String, shared: Shared, stop: Arc<AtomicBool>) {
    while seen(&shared).resource.highest <= token {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        sleep(Duration::from_millis(20)).await;
    }
    let mut seen = seen(&shared);
    seen.stale_tried += 1;
    if !seen.resource.write(token, &owner) {
        seen.stale_refused += 1;
    }
}

/// Waits until `check` holds on what was seen, up to `within`.
async fn until(shared: &Shared, within: Duration, check: impl Fn(&Seen) -> bool) -> bool {
    let started = Instant::now();
    while !check(&seen(shared)) {
        if started.elapsed() > within {
            return false;
        }
        sleep(Duration::from_millis(20)).await;
    }
    true
}

/// `rlock_failover_delay_remaining` in the server's `INFO rlock`.
fn delay_remaining(server: &support::Server) -> i64 {
    let info: String = server.cmd(&["INFO", "rlock"]);
    let field = "rlock_failover_delay_remaining:";
    let value = info.lines().find_map(|l| l.strip_prefix(field));
    value.and_then(|n| n.trim().parse().ok()).unwrap_or(-1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn clients_follow_each_new_master_with_fencing_and_no_overlap() {
    support::trace();
    let mut deployment = block_in_place(|| Deployment::start(&SERVER_ARGS));
    let url = deployment.url();
    let shared = Shared::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for n in 0..CLIENTS {
        let client = Client::open(&url)
            .await
            .expect("open through the sentinels");
        tasks.push(tokio::spawn(contend(
            client,
            shared.clone(),
            stop.clone(),
            n as u64,
        )));
    }
    assert!(
        until(&shared, SERVED_WITHIN, |s| s.grants.len() >= 10).await,
        "no contention"
    );

    let mut unavailable = Vec::new();
    for failover in 1..=FAILOVERS {
        let stable = block_in_place(|| deployment.await_stable(2, SERVED_WITHIN));
        let old = stable.unwrap_or_else(|| {
            panic!(
                "failover {failover}: no stable master\n{}",
                deployment.logs()
            )
        });
        let old_port = deployment.servers[old].port();
        let killed_at = Instant::now();
        deployment.kill(old);
        let new = block_in_place(|| deployment.await_new_master(old_port, PROMOTED_WITHIN));
        let new = new
            .unwrap_or_else(|| panic!("failover {failover}: no new master\n{}", deployment.logs()));
        let promoted = killed_at.elapsed();
        let delay_left = delay_remaining(&deployment.servers[new]);
        block_in_place(|| deployment.restart_as_replica(old, new));

        let served = until(&shared, SERVED_WITHIN, |s| {
            s.grants.last().is_some_and(|&g| g > killed_at)
        })
        .await;
        assert!(served, "failover {failover}: no grant after the kill");
        let first = seen(&shared)
            .grants
            .iter()
            .find(|&&g| g > killed_at)
            .copied();
        let gap = first.map_or(Duration::MAX, |g| g - killed_at);
        // Only a master grants, and the old one is dead: the grants came from the new one.
        assert!(
            deployment.servers[new].calls("lock.acquire") > 0,
            "failover {failover}: no acquisition reached the new master"
        );
        let new_port = deployment.servers[new].port();
        eprintln!(
            "failover {failover}: 127.0.0.1:{old_port} killed; new master 127.0.0.1:{new_port} \
             after {promoted:?} (failover delay left: {delay_left} ms); first grant {gap:?} \
             after the kill"
        );
        unavailable.push(gap);

        // The watchdog follows too: the longer sections are renewed on the new master.
        let renewed = support::eventually(SERVED_WITHIN, || {
            deployment.servers[new].calls("lock.renew") > 0
        });
        assert!(
            renewed.await,
            "failover {failover}: no renewal on the new master"
        );
        let grants = seen(&shared).grants.len();
        assert!(
            until(&shared, SERVED_WITHIN, |s| s.grants.len() >= grants + 5).await,
            "failover {failover}: no contention after"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("a contender ended")
            .expect("no panic");
    }

    let switches = deployment.switches();
    let seen = seen(&shared);
    let r = &seen.resource;
    eprintln!(
        "failover figures: {} acquisitions, {FAILOVERS} failovers ({switches} seen by the \
         sentinels), {} overlaps, {} writes accepted",
        seen.grants.len(),
        seen.overlaps.len(),
        r.accepted
    );
    eprintln!(
        "failover figures: {} stale writes refused (of {} tried by former holders), {} refused \
         while held, {} shared tokens, {} losses, {} acquire errors",
        seen.stale_refused,
        seen.stale_tried,
        seen.refused_while_held,
        r.shared_token,
        seen.losses,
        seen.errors
    );
    eprintln!("failover figures: unavailability (kill to first grant): {unavailable:?}");
    assert_eq!(
        seen.overlaps,
        Vec::<String>::new(),
        "critical sections overlapped"
    );
    assert_eq!(r.shared_token, 0, "two holdings had one token");
    assert_eq!(
        seen.refused_while_held, 0,
        "a holder's token was already surpassed"
    );
}
