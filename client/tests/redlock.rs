//! RedLock over 3 and 5 independent servers, against real servers: exclusion under
//! contention, a minority of servers down, a majority down, and a paused holder refused by a
//! resource that checks the token.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error, RedLock};
use support::{watched, Server};
use tokio::sync::oneshot;
use tokio::time::timeout;

/// The child process of `a_paused_holder_is_refused_by_a_resource_that_checks_the_token`.
const HOLDER_ENV: &str = "RLOCK_TEST_REDLOCK_HOLDER";

fn options() -> ClientOptions {
    ClientOptions::new()
        .connect_timeout(Duration::from_millis(500))
        .response_timeout(Duration::from_millis(500))
        .keepalive(Duration::from_millis(500))
}

async fn clients(urls: &[String]) -> Vec<Client> {
    let mut clients = Vec::new();
    for url in urls {
        let client = Client::open_with(url.as_str(), options()).await;
        clients.push(client.expect("open a client"));
    }
    clients
}

fn urls(servers: &[Server]) -> Vec<String> {
    servers.iter().map(Server::url).collect()
}

fn start(n: usize) -> Vec<Server> {
    (0..n).map(|_| Server::start()).collect()
}

/// The servers in the RedLock's canonical order (by `run_id`): the first is the gate.
fn in_canonical_order(mut servers: Vec<Server>) -> Vec<Server> {
    servers.sort_by_cached_key(|s| {
        let info: String = s.cmd(&["INFO", "server"]);
        let run_id = info.lines().find_map(|l| l.strip_prefix("run_id:"));
        run_id.expect("INFO server has run_id").trim().to_owned()
    });
    servers
}

/// 8 tasks, each with clients of its own, take the RedLock 5 times each: never two at
/// once, and each holder's token is higher than the one before.
async fn contend(servers: &[Server]) {
    let inside = Arc::new(AtomicBool::new(false));
    let last_token = Arc::new(Mutex::new(0u64));
    let done = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let lock = RedLock::new(clients(&urls(servers)).await, "job").unwrap();
        let (inside, last_token, done) = (inside.clone(), last_token.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let guard = lock.acquire().await.expect("acquire");
                assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
                {
                    let mut last = last_token.lock().unwrap();
                    assert!(
                        guard.token() > *last,
                        "token {} after {}",
                        guard.token(),
                        *last
                    );
                    *last = guard.token();
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
                done.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for task in tasks {
        task.await.expect("a contending task");
    }
    assert_eq!(done.load(Ordering::SeqCst), 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_contended_by_eight_tasks_never_overlap() {
    let servers = start(3);
    let within = timeout(Duration::from_secs(90), contend(&servers)).await;
    within.expect("deadlock or starvation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_servers_contended_by_eight_tasks_never_overlap() {
    let servers = start(5);
    let within = timeout(Duration::from_secs(90), contend(&servers)).await;
    within.expect("deadlock or starvation");
}

#[tokio::test]
async fn an_even_or_too_small_server_count_is_refused() {
    let servers = start(2);
    let two = RedLock::new(clients(&urls(&servers)).await, "job");
    assert!(matches!(two, Err(Error::InvalidArgument { .. })), "{two:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_of_three_down_locks_are_granted_renewed_and_handed_over() {
    let mut servers = in_canonical_order(start(3));
    let lock = RedLock::new(clients(&urls(&servers)).await, "job").unwrap();
    let lease = Duration::from_millis(600);
    let lock = lock.options(watched(lease));
    servers[0].kill(); // the gate
    let guard = timeout(Duration::from_secs(10), lock.acquire()).await;
    let guard = guard.expect("granted in time").expect("granted");
    assert_eq!(guard.held_on(), 2);
    // Three leases later it is still held on both live servers: renewed.
    tokio::time::sleep(lease * 3).await;
    assert!(!guard.is_lost(), "{:?}", guard.loss_reason());
    for server in &servers[1..] {
        let info = server.info("job").expect("held");
        assert_eq!(info.owner, guard.owner());
    }
    // A waiter queues on the live servers and is handed the lock at the release.
    let second = lock.clone();
    let waiting = tokio::spawn(async move { second.acquire().await });
    let queued = || servers[1].info("job").is_some_and(|i| i.waiters == 1);
    assert!(support::eventually(Duration::from_secs(10), queued).await);
    let first_token = guard.token();
    guard.release().await.unwrap();
    let next = timeout(Duration::from_secs(5), waiting)
        .await
        .expect("handed over");
    let next = next.unwrap().expect("granted");
    assert!(next.token() > first_token);
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_of_three_down_the_holder_is_told_and_nobody_gets_the_lock() {
    let mut servers = start(3);
    let lease = Duration::from_millis(900);
    let lock = RedLock::new(clients(&urls(&servers)).await, "job").unwrap();
    let guard = lock
        .clone()
        .options(watched(lease))
        .acquire()
        .await
        .unwrap();
    servers[0].kill();
    servers[1].kill();
    let reason = timeout(Duration::from_secs(5), guard.lost()).await;
    reason.expect("told in time");
    assert!(guard.is_lost());
    let other = RedLock::new(clients(&urls(&servers[2..])).await, "job");
    assert!(other.is_err(), "one server is no RedLock");
    let again = lock.try_acquire(Duration::from_millis(1500)).await;
    assert!(
        matches!(again, Err(Error::NoQuorum { needed: 2, .. }) | Ok(None)),
        "{again:?}"
    );
    assert!(matches!(guard.release().await, Err(Error::Lost { .. })));
}

/// A resource that keeps the highest token it has seen and refuses lower ones.
const FENCE: &str = "local seen = tonumber(redis.call('HGET', KEYS[1], 'token') or '0') \
    if tonumber(ARGV[1]) < seen then return redis.error_reply('STALE token') end \
    redis.call('HSET', KEYS[1], 'token', ARGV[1], 'body', ARGV[2]) return 1";

fn fenced_write(resource: &str, token: u64, body: &str) -> redis::RedisResult<i64> {
    let mut conn = redis::Client::open(resource)?.get_connection()?;
    redis::Script::new(FENCE)
        .key("doc")
        .arg(token)
        .arg(body)
        .invoke(&mut conn)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_is_refused_by_a_resource_that_checks_the_token() {
    let servers = start(3);
    let resource = Server::start_without_module();
    let setup = format!("{}|{}", urls(&servers).join(","), resource.url());
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "redlock_holder_process", "--nocapture"])
        .env(HOLDER_ENV, setup)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let paused_token: u64 = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("TOKEN ").map(str::to_owned))
        .expect("the holder's token")
        .parse()
        .unwrap();
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    // Its lease runs out on every server while it is stopped: the lock is ours.
    let lock = RedLock::new(clients(&urls(&servers)).await, "job").unwrap();
    let guard = lock.try_acquire(Duration::from_secs(10)).await.unwrap();
    let guard = guard.expect("granted after the paused holder's lease");
    assert!(guard.token() > paused_token);
    assert_eq!(
        fenced_write(&resource.url(), guard.token(), "new").unwrap(),
        1
    );
    assert!(Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap()
        .success());
    writeln!(child.stdin.take().unwrap(), "write").unwrap();
    // Read to the end, so the child's last words find the pipe open.
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let outcome = rest.iter().find(|l| l.starts_with("WRITE"));
    assert_eq!(outcome.map(String::as_str), Some("WRITE STALE"), "{rest:?}");
    assert!(child.wait().unwrap().success());
    guard.release().await.unwrap();
}

/// Runs only as the child of the test above (with `HOLDER_ENV` set): takes the RedLock
/// with a 600 ms watched lease, prints its token, waits for a line on stdin (it is stopped
/// meanwhile), then writes to the resource with its token, without checking the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_holder_process() {
    let Ok(setup) = std::env::var(HOLDER_ENV) else {
        return;
    };
    let (servers, resource) = setup.split_once('|').unwrap();
    let urls: Vec<String> = servers.split(',').map(str::to_owned).collect();
    let lock = RedLock::new(clients(&urls).await, "job").unwrap();
    let lock = lock.options(watched(Duration::from_millis(600)));
    let guard = lock.acquire().await.unwrap();
    println!("TOKEN {}", guard.token());
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    let read = tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line));
    read.await.unwrap().unwrap();
    match fenced_write(resource, guard.token(), "old") {
        Ok(_) => println!("WRITE OK"),
        Err(err) => println!("WRITE {}", err.code().unwrap_or("?")),
    }
    std::io::stdout().flush().unwrap();
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_naming_one_server_twice_by_two_spellings_is_refused() {
    let servers = start(3);
    let mut clients = clients(&urls(&servers)).await;
    let short = format!("redis://127.1:{}/", servers[0].port());
    clients[2] = Client::open_with(short, options())
        .await
        .expect("open a client");
    let refused = RedLock::new(clients, "job");
    assert!(
        matches!(&refused, Err(Error::InvalidArgument { detail }) if detail.contains("twice")),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_runs_the_work_and_drops_it_when_a_majority_is_lost() {
    let mut servers = start(3);
    let lock = RedLock::new(clients(&urls(&servers)).await, "job").unwrap();
    let lock = lock.options(watched(Duration::from_millis(600)));
    let token = lock.with_lock(|held| async move { held.tokens()[0] }).await;
    assert!(token.unwrap() > 0);
    assert!(servers.iter().all(|s| s.info("job").is_none()), "released");
    let (started, work_runs) = oneshot::channel();
    let running = tokio::spawn(async move {
        lock.with_lock(|held| async move {
            assert!(!held.is_lost() && held.remaining() > Duration::ZERO);
            let _ = started.send(());
            tokio::time::sleep(Duration::from_secs(30)).await;
        })
        .await
    });
    // Not the keys seen on the servers: a reply still on its way when they die would
    // fail the acquisition rather than lose the lock.
    let runs = timeout(Duration::from_secs(5), work_runs).await;
    runs.expect("the work runs in time")
        .expect("the work starts");
    servers[0].kill();
    servers[1].kill();
    let outcome = timeout(Duration::from_secs(5), running).await;
    let outcome = outcome.expect("the work is dropped in time").unwrap();
    assert!(matches!(outcome, Err(Error::Lost { .. })), "{outcome:?}");
}

/// A server that answers the acquisition only after the majority was granted: its grant,
/// on its way while the holding ends, is released before the release returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_on_its_way_when_the_holding_ends_is_released_before_it_returns() {
    for _ in 0..5 {
        let servers = in_canonical_order(start(3));
        let lock = RedLock::new(clients(&urls(&servers)).await, "job").unwrap();
        let lock = lock.options(watched(Duration::from_millis(600)));
        servers[2].stop();
        let guard = timeout(Duration::from_secs(5), lock.acquire()).await;
        let guard = guard.expect("acquired in time").expect("acquired");
        assert_eq!(guard.held_on(), 2, "the paused server has no member yet");
        servers[2].resume();
        let released = timeout(Duration::from_secs(5), guard.release()).await;
        released.expect("released in time").expect("released");
        for server in &servers {
            assert!(server.info("job").is_none(), "held after the release");
        }
    }
}
