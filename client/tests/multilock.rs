//! MultiLock: several locks on two servers, all or none, against real servers.

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error, LossReason, MultiLock};
use support::{watched, Server};
use tokio::sync::oneshot;
use tokio::time::timeout;

/// Two servers and a client of each; keys "a" and "b" live on the first, "c" and "d" on
/// the second.
struct Pair {
    servers: [Server; 2],
    clients: [Client; 2],
}

impl Pair {
    async fn start() -> Pair {
        let servers = [Server::start(), Server::start()];
        let options = ClientOptions::new()
            .response_timeout(Duration::from_millis(500))
            .keepalive(Duration::from_millis(500));
        let mut clients = Vec::new();
        for server in &servers {
            let client = Client::open_with(server.url(), options).await;
            clients.push(client.expect("open a client"));
        }
        let clients = [clients[0].clone(), clients[1].clone()];
        Pair { servers, clients }
    }

    /// A MultiLock over `keys`, each on the server the key lives on.
    fn multi(&self, keys: &[&str]) -> MultiLock {
        MultiLock::new(keys.iter().map(|k| self.client_of(k).lock(*k)))
    }

    fn client_of(&self, key: &str) -> &Client {
        &self.clients[usize::from(matches!(key, "c" | "d"))]
    }
}

/// Per key, whether someone is inside; fails the test on any overlap.
#[derive(Default)]
struct Occupancy {
    inside: HashMap<&'static str, AtomicBool>,
    overlaps: AtomicU32,
}

impl Occupancy {
    fn new(keys: &[&'static str]) -> Arc<Occupancy> {
        let inside = keys.iter().map(|k| (*k, AtomicBool::new(false))).collect();
        Arc::new(Occupancy {
            inside,
            overlaps: AtomicU32::new(0),
        })
    }

    fn enter(&self, keys: &[&str]) {
        for key in keys {
            if self.inside[key].swap(true, Ordering::SeqCst) {
                self.overlaps.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn leave(&self, keys: &[&str]) {
        for key in keys {
            self.inside[key].store(false, Ordering::SeqCst);
        }
    }
}

/// 8 tasks, each taking its key set `rounds` times; returns the number of holdings.
async fn contend(pair: &Arc<Pair>, sets: &[&'static [&'static str]], rounds: u32) -> u32 {
    let occupancy = Occupancy::new(&["a", "b", "c", "d"]);
    let done = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for task in 0..8 {
        let keys = sets[task % sets.len()];
        let (pair, occupancy, done) = (pair.clone(), occupancy.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let multi = pair.multi(keys);
            for _ in 0..rounds {
                let guard = multi.acquire().await.expect("acquire");
                occupancy.enter(keys);
                tokio::time::sleep(Duration::from_millis(2)).await;
                occupancy.leave(keys);
                guard.release().await.expect("release");
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for task in tasks {
        task.await.expect("a contending task");
    }
    assert_eq!(occupancy.overlaps.load(Ordering::SeqCst), 0, "overlap");
    done.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_keys_on_two_servers_contended_by_eight_tasks_never_overlap() {
    let pair = Arc::new(Pair::start().await);
    let all: &'static [&'static str] = &["a", "b", "c"];
    let held = timeout(Duration::from_secs(60), contend(&pair, &[all], 10)).await;
    assert_eq!(held.expect("deadlock or starvation"), 80);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_key_sets_in_different_orders_never_deadlock() {
    let pair = Arc::new(Pair::start().await);
    let sets: &[&'static [&'static str]] = &[
        &["a", "b", "c"],
        &["c", "b", "a"],
        &["d", "a"],
        &["b", "d", "c"],
        &["c", "a"],
        &["d", "c", "b", "a"],
    ];
    let held = timeout(Duration::from_secs(60), contend(&pair, sets, 10)).await;
    assert_eq!(held.expect("deadlock"), 80);
}

#[tokio::test]
async fn release_frees_every_member_and_tokens_are_exposed() {
    let pair = Pair::start().await;
    let guard = pair.multi(&["c", "a", "b"]).acquire().await.unwrap();
    let keys: Vec<&str> = guard.guards().iter().map(|g| g.key()).collect();
    assert_eq!(keys, ["a", "b", "c"], "the canonical order");
    let on_server = [
        pair.servers[0].info("a").unwrap().token,
        pair.servers[0].info("b").unwrap().token,
        pair.servers[1].info("c").unwrap().token,
    ];
    assert_eq!(guard.tokens(), on_server);
    guard.release().await.unwrap();
    assert_eq!(pair.servers[0].info("a"), None);
    assert_eq!(pair.servers[0].info("b"), None);
    assert_eq!(pair.servers[1].info("c"), None);
}

#[tokio::test]
async fn a_busy_member_leaves_nothing_held() {
    let pair = Pair::start().await;
    let other = pair.clients[1].owner().lock("c").acquire().await.unwrap();
    let multi = pair.multi(&["a", "b", "c"]);
    let got = multi.try_acquire(Duration::from_millis(300)).await.unwrap();
    assert!(got.is_none(), "c is held by another");
    assert_eq!(pair.servers[0].info("a"), None, "a was released");
    assert_eq!(pair.servers[0].info("b"), None, "b was released");
    // The wait is on the server: a release hands c over to a waiting MultiLock.
    let waiting = tokio::spawn(async move { multi.acquire().await });
    assert!(
        support::eventually(Duration::from_secs(10), || pair.servers[1]
            .info("c")
            .unwrap()
            .waiters
            == 1)
        .await
    );
    other.release().await.unwrap();
    let guard = timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    guard.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn killing_a_server_marks_the_holder_lost() {
    let mut pair = Pair::start().await;
    let lease = Duration::from_millis(900);
    let locks = ["a", "b", "c"].map(|k| pair.client_of(k).lock(k).options(watched(lease)));
    let guard = MultiLock::new(locks).acquire().await.unwrap();
    assert!(!guard.is_lost());
    pair.servers[1].kill();
    let reason = timeout(Duration::from_secs(5), guard.lost()).await;
    assert_eq!(reason.expect("lost in time"), LossReason::Expired);
    assert!(guard.is_lost());
    let released = guard.release().await;
    assert!(
        matches!(released, Err(Error::Lost { ref key, .. }) if key == "c"),
        "{released:?}"
    );
    // The members on the live server were released all the same.
    assert_eq!(pair.servers[0].info("a"), None);
}

/// Two MultiLocks on key "k" on two servers, one naming the first server `127.1`: both
/// take the members in one order (by what the servers report), so they never deadlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_spellings_of_one_server_do_not_deadlock_two_multilocks() {
    let mut servers = [Server::start(), Server::start()];
    // By address text, 127.0.0.1:<first> comes before 127.0.0.1:<second>, and 127.1:<first>
    // after both: the two MultiLocks would take the members in opposite orders.
    servers.sort_by_key(|s| format!("127.0.0.1:{}", s.port()));
    let open = |url: String| async move { Client::open(url).await.expect("open a client") };
    let plain = open(servers[0].url()).await;
    let short = open(format!("redis://127.1:{}/", servers[0].port())).await;
    let second = open(servers[1].url()).await;
    let one = MultiLock::new([plain.lock("k"), second.lock("k")]);
    let other = MultiLock::new([short.lock("k"), second.lock("k")]);
    let inside = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for multi in [one, other] {
        let inside = inside.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..40 {
                let guard = multi.acquire().await.expect("acquire");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                tokio::time::sleep(Duration::from_millis(2)).await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        let done = timeout(Duration::from_secs(30), task).await;
        done.expect("deadlock").expect("a contender");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_gives_a_signal_and_drops_the_work_when_a_member_is_lost() {
    let mut pair = Pair::start().await;
    let lease = Duration::from_millis(900);
    let locks = ["a", "c"].map(|k| pair.client_of(k).lock(k).options(watched(lease)));
    let multi = MultiLock::new(locks);
    let tokens = multi.with_lock(|held| async move { held.tokens() }).await;
    assert_eq!(tokens.unwrap().len(), 2);
    let (started, work_runs) = oneshot::channel();
    let running = tokio::spawn(async move {
        multi
            .with_lock(|held| async move {
                assert!(!held.is_lost());
                let _ = started.send(());
                tokio::time::sleep(Duration::from_secs(30)).await;
            })
            .await
    });
    // The work itself says it runs: a key seen on the server may still have its reply
    // on the way, and a kill then fails the acquisition instead of losing the lock.
    let runs = timeout(Duration::from_secs(5), work_runs).await;
    runs.expect("the work runs in time")
        .expect("the work starts");
    pair.servers[1].kill();
    let outcome = timeout(Duration::from_secs(5), running).await;
    let outcome = outcome.expect("the work is dropped in time").unwrap();
    assert!(matches!(outcome, Err(Error::Lost { .. })), "{outcome:?}");
}
