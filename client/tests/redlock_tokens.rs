//! RedLock fencing tokens grow over contended holdings while every server is up, even when
//! one server's counter is far ahead of the others' (issue item 3): the holding's token is
//! the largest member token, and every member's server is raised to it.

mod redlock_support;
mod support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redlock_support::{clients, in_canonical_order, push_counter_ahead};
use rlock_client::RedLock;
use tokio::time::timeout;

/// Tasks contending for the holdings, each with clients of its own.
const TASKS: usize = 4;
/// Contended holdings to check.
const HOLDINGS: u32 = 500;

/// What the contenders saw: holdings, tokens that were not above the one before.
#[derive(Default)]
struct Seen {
    last: u64,
    regressions: Vec<(u64, u64)>,
}

/// `TASKS` tasks take the RedLock over `n` servers, whose server `ahead` has its counter
/// pushed an hour ahead, until `HOLDINGS` holdings: never two at once, and every token
/// above the one before.
async fn tokens_grow(n: usize, ahead: usize) {
    let servers = in_canonical_order(n).await;
    push_counter_ahead(&servers[ahead], Duration::from_secs(3600));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (inside, done) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU32::new(0)),
    );
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let lock = RedLock::new(clients(&servers).await, "job").unwrap();
        let (seen, inside, done) = (seen.clone(), inside.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < HOLDINGS {
                let guard = lock.acquire().await.expect("acquire");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                {
                    let mut seen = seen.lock().unwrap();
                    if guard.token() <= seen.last {
                        let last = seen.last;
                        seen.regressions.push((last, guard.token()));
                    }
                    seen.last = seen.last.max(guard.token());
                }
                inside.store(false, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        let finished = timeout(Duration::from_secs(240), task).await;
        finished
            .expect("deadlock or starvation")
            .expect("a contender");
    }
    let seen = seen.lock().unwrap();
    let holdings = done.load(Ordering::SeqCst);
    assert!(holdings >= HOLDINGS);
    assert!(
        seen.regressions.is_empty(),
        "{} of {holdings} holdings got a token not above the one before, e.g. {:?}",
        seen.regressions.len(),
        &seen.regressions[..seen.regressions.len().min(5)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_one_counter_ahead_tokens_strictly_increase() {
    tokens_grow(3, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_servers_one_counter_ahead_tokens_strictly_increase() {
    tokens_grow(5, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_raised_by_the_holder_issues_more_than_the_holding_token() {
    let servers = in_canonical_order(3).await;
    // The gate: every win includes it, so the holding's token is at least its counter.
    let pushed = push_counter_ahead(&servers[0], Duration::from_secs(3600));
    let lock = RedLock::new(clients(&servers).await, "job").unwrap();
    let guard = lock.acquire().await.unwrap();
    assert!(guard.token() >= pushed, "{} < {pushed}", guard.token());
    // Every server now issues more than the holding's token (a member granted after the
    // win is raised by its own task, a moment later).
    for (i, server) in servers.iter().enumerate() {
        let mut n = 0;
        let raised = support::eventually(Duration::from_secs(5), || {
            n += 1;
            let other = format!("other:{n}");
            let token: u64 = server.cmd(&["LOCK.ACQUIRE", &other, "someone:1"]);
            token > guard.token()
        });
        assert!(
            raised.await,
            "server {i} issues no more than {}",
            guard.token()
        );
    }
    guard.release().await.unwrap();
}

/// A contender queued on the gate is not overtaken by a newcomer that finds the other
/// servers free: winning at once needs the gate too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_does_not_overtake_a_contender_queued_on_the_gate() {
    let servers = in_canonical_order(3).await;
    for server in &servers {
        let _: u64 = server.cmd(&["LOCK.ACQUIRE", "job", "other:1", "LEASE", "60000"]);
    }
    let queued = RedLock::new(clients(&servers).await, "job").unwrap();
    let waiting = tokio::spawn(async move { queued.acquire().await });
    let on_gate = || servers[0].info("job").is_some_and(|i| i.waiters == 1);
    assert!(support::eventually(Duration::from_secs(10), on_gate).await);
    // The other servers become free; the gate stays busy, with the contender queued.
    for server in &servers[1..] {
        let _: i64 = server.cmd(&["LOCK.FORCERELEASE", "job"]);
    }
    let newcomer = RedLock::new(clients(&servers).await, "job").unwrap();
    let overtaking = newcomer.try_acquire(Duration::from_millis(300)).await;
    assert!(
        matches!(overtaking, Ok(None)),
        "the newcomer overtook: {overtaking:?}"
    );
    let _: i64 = servers[0].cmd(&["LOCK.FORCERELEASE", "job"]);
    let first = timeout(Duration::from_secs(5), waiting).await;
    let first = first.expect("served").unwrap().expect("granted");
    first.release().await.unwrap();
}
