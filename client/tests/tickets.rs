//! Waits as tickets (`LOCK.WAIT`): any number of waits over one wait connection per node,
//! granted in the one FIFO the blocking `LOCK.ACQUIRE ... WAIT` clients are in too; a
//! cancel that crosses a grant leaks nothing; a wait whose connection is killed queues
//! again.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use rlock_client::{Client, ClientOptions, Error};
use support::{eventually, Server};
use tokio::task::JoinSet;
use tokio::time::timeout;

/// How long a whole phase of a test may take on a loaded machine.
const PHASE: Duration = Duration::from_secs(120);

/// The inspecting connection of a test, and its server-side id.
struct Inspector {
    conn: MultiplexedConnection,
    id: i64,
}

impl Inspector {
    async fn open(server: &Server) -> Inspector {
        let mut conn = server
            .redis()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let id = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut conn)
            .await
            .unwrap();
        Inspector { conn, id }
    }

    /// `LOCK.INFO key`'s waiters (0 for a free lock).
    async fn waiters(&mut self, key: &str) -> i64 {
        let reply: Option<Vec<redis::Value>> = redis::cmd("LOCK.INFO")
            .arg(key)
            .query_async(&mut self.conn)
            .await
            .unwrap();
        let fields = reply.unwrap_or_default();
        let at = fields.iter().position(|f| {
            matches!(f, redis::Value::BulkString(b) if b == b"waiters")
                || matches!(f, redis::Value::SimpleString(s) if s == "waiters")
        });
        at.map_or(0, |at| {
            redis::from_redis_value(fields[at + 1].clone()).unwrap()
        })
    }

    /// Waits (bounded) until `key` has `count` waiters.
    async fn until_waiters(&mut self, key: &str, count: i64) {
        let started = Instant::now();
        while self.waiters(key).await != count {
            assert!(started.elapsed() < PHASE, "{key} never had {count} waiters");
            tokio::task::yield_now().await;
        }
    }

    /// The `CLIENT LIST` lines of every connection but this one and `others`.
    async fn connections(&mut self, others: &[i64]) -> Vec<String> {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(&mut self.conn)
            .await
            .unwrap();
        let ours = |line: &str| {
            let id = line.strip_prefix("id=").and_then(|r| r.split(' ').next());
            let id: i64 = id.and_then(|id| id.parse().ok()).unwrap_or(-1);
            id == self.id || others.contains(&id)
        };
        list.lines()
            .filter(|line| !ours(line))
            .map(str::to_owned)
            .collect()
    }
}

/// Lowers this test process's open-file limit to 1,024 (its soft limit, with `prlimit`):
/// a wait per connection would run out of descriptors long before 10,000 waits.
fn lower_fd_limit() {
    let pid = std::process::id().to_string();
    let lowered = std::process::Command::new("prlimit")
        .args(["--pid", &pid, "--nofile=1024:"])
        .status()
        .expect("run prlimit (util-linux)");
    assert!(lowered.success(), "prlimit failed");
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files"));
    let soft = line.and_then(|l| l.split_whitespace().nth(3));
    assert_eq!(soft, Some("1024"), "{limits}");
}

/// A raw connection that holds `keys` as owner `holder` (with a long lease).
async fn hold(server: &Server, keys: &[String]) -> (MultiplexedConnection, i64) {
    let mut holder = Inspector::open(server).await;
    for key in keys {
        let token: Option<u64> = redis::cmd("LOCK.ACQUIRE")
            .arg(key)
            .arg("holder")
            .arg("LEASE")
            .arg(600_000)
            .query_async(&mut holder.conn)
            .await
            .unwrap();
        assert!(token.is_some(), "{key} was free");
    }
    (holder.conn, holder.id)
}

async fn release_holder(conn: &mut MultiplexedConnection, key: &str) {
    let left: i64 = redis::cmd("LOCK.RELEASE")
        .arg(key)
        .arg("holder")
        .query_async(conn)
        .await
        .unwrap();
    assert_eq!(left, 0);
}

/// Queues `count` acquisitions one by one, the i-th on `keys[i % keys.len()]`, each after the
/// last is queued (so arrival order is known); on its grant, each records its number in its
/// key's list and releases.
async fn queue_in_order(
    server: &Server,
    client: &Client,
    keys: &[String],
    count: usize,
) -> (JoinSet<()>, Arc<Mutex<Vec<Vec<usize>>>>) {
    let mut inspector = Inspector::open(server).await;
    let granted = Arc::new(Mutex::new(vec![Vec::new(); keys.len()]));
    let mut waits = JoinSet::new();
    for i in 0..count {
        let (k, key) = (i % keys.len(), keys[i % keys.len()].clone());
        let (lock, granted) = (client.lock(&key), granted.clone());
        waits.spawn(async move {
            let guard = lock.acquire().await.unwrap();
            granted.lock().unwrap()[k].push(i);
            guard.release().await.unwrap();
        });
        let queued = (i / keys.len() + 1) as i64;
        inspector.until_waiters(&key, queued).await;
    }
    (waits, granted)
}

async fn many_waits_over_three_connections(locks: usize) {
    lower_fd_limit();
    let server = Server::start();
    let client = server.client().await;
    let keys: Vec<String> = (0..locks).map(|i| format!("many:{i}")).collect();
    let (mut holder, holder_id) = hold(&server, &keys).await;
    let started = Instant::now();
    let (mut waits, granted) = queue_in_order(&server, &client, &keys, 10_000).await;
    eprintln!(
        "10,000 waits on {locks} lock(s) queued in {:?}",
        started.elapsed()
    );
    let mut inspector = Inspector::open(&server).await;
    let theirs = inspector.connections(&[holder_id]).await;
    // The shared connection, the wait connection, the listening connection.
    assert!(
        theirs.len() <= 3,
        "the client uses more than 3 connections:\n{theirs:#?}"
    );
    assert!(
        server.calls("lock.wait") >= 10_000,
        "the waits were not tickets"
    );
    // The test's own 10,000 tasks (the callers) and a few of the client's: no task per wait.
    let tasks = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    eprintln!("{tasks} tasks alive with 10,000 waits queued");
    assert!(tasks <= 10_000 + 20, "{tasks} tasks for 10,000 waits");
    let started = Instant::now();
    for key in &keys {
        release_holder(&mut holder, key).await;
    }
    let all = async {
        while let Some(done) = waits.join_next().await {
            done.unwrap();
        }
    };
    timeout(PHASE, all).await.expect("every wait was granted");
    eprintln!("10,000 grants in {:?}", started.elapsed());
    for (k, order) in granted.lock().unwrap().iter().enumerate() {
        let expected: Vec<usize> = (k..10_000).step_by(locks).collect();
        assert_eq!(order, &expected, "lock {k} was not granted in FIFO order");
    }
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn ten_thousand_waits_on_one_lock_take_three_connections_and_are_granted_in_order() {
    many_waits_over_three_connections(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn ten_thousand_waits_on_a_thousand_locks_take_three_connections_and_are_granted_in_order() {
    many_waits_over_three_connections(1_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_connection_is_killed_queues_again_and_gets_the_lock() {
    let server = Server::start();
    let client = server.client().await;
    let (mut holder, holder_id) = hold(&server, &["killed".to_owned()]).await;
    let lock = client.lock("killed");
    let waiter = tokio::spawn(async move { lock.acquire().await });
    let mut inspector = Inspector::open(&server).await;
    inspector.until_waiters("killed", 1).await;
    let theirs = inspector.connections(&[holder_id]).await;
    // Subscribed: the wait connection, and the listening one (`cmd=subscribe`).
    let subscribed = theirs.iter().filter(|l| l.contains(" sub=1 "));
    let subscribed: Vec<&String> = subscribed
        .filter(|l| !l.contains("cmd=subscribe"))
        .collect();
    assert_eq!(subscribed.len(), 1, "one wait connection: {theirs:#?}");
    let id = subscribed[0]
        .strip_prefix("id=")
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let killed: i64 = server.cmd(&["CLIENT", "KILL", "ID", id]);
    assert_eq!(killed, 1);
    // The server dropped the ticket with its connection; the wait queues again.
    let requeued = async {
        loop {
            let list: String = server.cmd(&["CLIENT", "LIST"]);
            let id_gone = !list.contains(&format!("id={id} "));
            if id_gone && inspector.waiters("killed").await == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    timeout(Duration::from_secs(30), requeued)
        .await
        .expect("queued again");
    release_holder(&mut holder, "killed").await;
    let guard = timeout(PHASE, waiter).await.unwrap().unwrap().unwrap();
    guard.release().await.unwrap();
    assert_eq!(server.info("killed"), None);
}

/// One blocking `LOCK.ACQUIRE ... WAIT 0` client on a connection of its own, in a thread;
/// records `name` when granted, then releases.
fn blocking_waiter(server: &Server, name: &'static str, order: Arc<Mutex<Vec<&'static str>>>) {
    let mut conn = server.conn();
    std::thread::spawn(move || {
        let token: Option<u64> = redis::cmd("LOCK.ACQUIRE")
            .arg("mixed")
            .arg(name)
            .arg("WAIT")
            .arg(0)
            .query(&mut conn)
            .unwrap();
        assert!(token.is_some());
        order.lock().unwrap().push(name);
        let _: i64 = redis::cmd("LOCK.RELEASE")
            .arg("mixed")
            .arg(name)
            .query(&mut conn)
            .unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_waiters_and_tickets_are_served_in_arrival_order() {
    let server = Server::start();
    let client = server.client().await;
    let (mut holder, _) = hold(&server, &["mixed".to_owned()]).await;
    let mut inspector = Inspector::open(&server).await;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tickets = JoinSet::new();
    let names = [
        "block-1", "ticket-1", "block-2", "ticket-2", "ticket-3", "block-3",
    ];
    for (i, name) in names.into_iter().enumerate() {
        if name.starts_with("block") {
            blocking_waiter(&server, name, order.clone());
        } else {
            let (lock, order) = (client.lock("mixed"), order.clone());
            tickets.spawn(async move {
                let guard = lock.acquire().await.unwrap();
                order.lock().unwrap().push(name);
                guard.release().await.unwrap();
            });
        }
        inspector.until_waiters("mixed", i as i64 + 1).await;
    }
    assert_eq!(
        server.calls("lock.wait"),
        3,
        "the client's waits were not tickets"
    );
    release_holder(&mut holder, "mixed").await;
    let served = eventually(PHASE, || order.lock().unwrap().len() == names.len()).await;
    assert!(served, "served: {:?}", order.lock().unwrap());
    assert_eq!(*order.lock().unwrap(), names);
    while let Some(done) = tickets.join_next().await {
        done.unwrap();
    }
}

/// A small xorshift generator: random moments from a seed (`RLOCK_SEED`, or the clock).
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::env::var("RLOCK_SEED")
            .ok()
            .and_then(|s| s.parse().ok());
        let seed = seed.unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.unwrap().as_nanos() as u64
        }) | 1;
        eprintln!("seed: {seed} (RLOCK_SEED={seed} replays it)");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `total_connections_received` in `INFO stats`.
fn connections_received(server: &Server) -> u64 {
    let info: String = server.cmd(&["INFO", "stats"]);
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"));
    line.unwrap().trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_racing_a_grant_ends_each_wait_once_and_leaks_no_hold() {
    const ROUNDS: usize = 300;
    let mut rng = Rng::seeded();
    let server = Server::start();
    let client = server.client().await;
    let mut inspector = Inspector::open(&server).await;
    let (mut holder, _) = hold(&server, &[]).await;
    let before = connections_received(&server);
    let (mut granted, mut cancelled) = (0, 0);
    for round in 0..ROUNDS {
        let held: Option<u64> = redis::cmd("LOCK.ACQUIRE")
            .arg("race")
            .arg("holder")
            .query_async(&mut holder)
            .await
            .unwrap();
        assert!(held.is_some(), "round {round}: the lock was not free");
        let (cancel, cancelled_now) = tokio::sync::oneshot::channel::<()>();
        let lock = client.lock("race");
        let wait = tokio::spawn(async move {
            tokio::select! {
                guard = lock.acquire() => Some(guard.unwrap()),
                _ = cancelled_now => None,
            }
        });
        inspector.until_waiters("race", 1).await;
        // The release (and so the grant) and the cancel, in either order, a moment apart.
        let apart = Duration::from_micros(rng.below(1_500));
        if rng.below(2) == 0 {
            release_holder(&mut holder, "race").await;
            tokio::time::sleep(apart).await;
            let _ = cancel.send(());
        } else {
            let _ = cancel.send(());
            tokio::time::sleep(apart).await;
            release_holder(&mut holder, "race").await;
        }
        match timeout(PHASE, wait).await.unwrap().unwrap() {
            Some(guard) => {
                granted += 1;
                guard.release().await.unwrap();
            }
            None => cancelled += 1,
        }
        // Whichever way it ended, nobody holds the lock or waits for it now.
        let free = async {
            while server.info("race").is_some() {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        };
        let left = timeout(Duration::from_secs(10), free).await;
        assert!(
            left.is_ok(),
            "round {round}: a hold leaked: {:?}",
            server.info("race")
        );
    }
    let (cancels, releases) = (server.calls("lock.cancel"), server.calls("lock.release"));
    let crossed = releases.saturating_sub((ROUNDS + granted) as u64);
    eprintln!("{granted} granted, {cancelled} cancelled ({cancels} LOCK.CANCEL), {crossed} grants released after a cancel");
    assert_eq!(granted + cancelled, ROUNDS);
    assert!(
        cancelled > 0 && server.calls("lock.cancel") > 0,
        "no cancel was tried"
    );
    let opened = connections_received(&server) - before;
    // The tests's own `INFO`/`LOCK.INFO` connections are counted too: 2 per round at most.
    let theirs = opened.saturating_sub(2 * ROUNDS as u64 + 1);
    assert!(
        theirs <= 2,
        "the client opened {theirs} connections for {ROUNDS} waits"
    );
    client.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liveness_is_one_ping_per_keepalive_per_connection_not_per_wait() {
    const WAITS: usize = 100;
    let server = Server::start();
    let every = Duration::from_millis(100);
    let options = ClientOptions::new().keepalive(every);
    let client = Client::open_with(server.url(), options).await.unwrap();
    let (mut holder, _) = hold(&server, &["alive".to_owned()]).await;
    let mut inspector = Inspector::open(&server).await;
    let mut waits = JoinSet::new();
    for _ in 0..WAITS {
        let lock = client.lock("alive");
        waits.spawn(async move { lock.acquire().await.unwrap().release().await.unwrap() });
    }
    inspector.until_waiters("alive", WAITS as i64).await;
    let (pings, started) = (server.calls("ping"), Instant::now());
    tokio::time::sleep(10 * every).await;
    let (pings, took) = (server.calls("ping") - pings, started.elapsed());
    // One per interval per connection (the wait connection and the listening one; a few
    // more for the inspector's own `INFO` and a late tick), not one per wait per interval
    // (1,000 here).
    let most = 2 * (took.as_millis() as u64 / every.as_millis() as u64) + 3;
    eprintln!("{pings} PINGs in {took:?} for {WAITS} waits");
    assert!(pings >= 1 && pings <= most, "{pings} PINGs in {took:?}");
    release_holder(&mut holder, "alive").await;
    while let Some(done) = timeout(PHASE, waits.join_next()).await.unwrap() {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_refused_as_readonly_after_a_demotion_fails_as_readonly() {
    let server = Server::start();
    let master = Server::start();
    // The demoted server loads its master's data meanwhile, which on a busy machine can
    // hold a reply past the default 2 s: the refusal, not the timing, is under test.
    let options = ClientOptions::new().response_timeout(Duration::from_secs(10));
    let client = Client::open_with(server.url(), options).await.unwrap();
    let (_holder, _) = hold(&server, &["demoted".to_owned()]).await;
    let lock = client.lock("demoted");
    let waiter = tokio::spawn(async move { lock.try_acquire(Duration::from_secs(60)).await });
    let mut inspector = Inspector::open(&server).await;
    inspector.until_waiters("demoted", 1).await;
    assert_eq!(server.calls("lock.wait"), 1, "the wait is not a ticket");
    let port = master.port().to_string();
    server.cmd::<String>(&["REPLICAOF", "127.0.0.1", &port]);
    // Refused by a push (`<id> -READONLY ...`); a lone server has no other master to queue
    // on, so after its requeues the acquisition fails with the refusal.
    let err = timeout(PHASE, waiter).await.unwrap().unwrap().unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnly { key, .. } if key == "demoted"),
        "{err:?}"
    );
}
