//! A slot moves back and forth under load, its end told to the nodes in either order that
//! resharding tools use: the source first (the nodes then disagree for a moment, and answer
//! `MOVED` back and forth), or the target first (`redis-cli --cluster` since 7.0). The
//! client rides the redirections out: no operation fails, and once the workers stop
//! nothing is held. Three real cluster masters with the module.

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rlock_client::{Client, Guard};
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::task::block_in_place;
use tokio::time::sleep;

const LIMIT: Duration = Duration::from_secs(10);
/// How long the nodes disagree when the source is told first.
const DISAGREEMENT: Duration = Duration::from_millis(40);

#[derive(Default)]
struct Load {
    done: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl Load {
    fn failed(&self, what: &str, err: &rlock_client::Error) {
        let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        errors.push(format!("{what}: {err}"));
    }
}

/// One worker: a lock, a read or write hold, or a permit of the slot's keys in turn.
async fn work(client: Client, keys: [String; 3], load: Arc<Load>, stop: Arc<AtomicBool>, n: u64) {
    let mut round = n;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let options = watched(Duration::from_millis(1000));
        let wait = Duration::from_secs(3);
        let acquired = match round % 4 {
            0 => {
                client
                    .lock(keys[0].as_str())
                    .options(options)
                    .try_acquire(wait)
                    .await
            }
            1 => {
                client
                    .rw_lock(keys[1].as_str())
                    .read()
                    .options(options)
                    .try_acquire(wait)
                    .await
            }
            2 => {
                client
                    .rw_lock(keys[1].as_str())
                    .write()
                    .options(options)
                    .try_acquire(wait)
                    .await
            }
            _ => {
                client
                    .semaphore(keys[2].as_str())
                    .options(options)
                    .try_acquire(1, wait)
                    .await
            }
        };
        match acquired {
            Ok(Some(guard)) => hold(guard, &load, round).await,
            Ok(None) => {}
            Err(err) => load.failed("acquire", &err),
        }
    }
}

async fn hold(guard: Guard, load: &Load, round: u64) {
    sleep(Duration::from_millis(5 + 5 * (round % 3))).await;
    match guard.release().await {
        Ok(_) => drop(load.done.fetch_add(1, Ordering::Relaxed)),
        Err(err) => load.failed("release", &err),
    }
}

/// Moves `slot` from node `from` to node `to` (`IMPORTING`, `MIGRATING`, `MIGRATE` of every
/// key), then tells the nodes its new owner: the source first if `source_first`, else the
/// target first; the third node last.
fn move_slot(cluster: &Cluster, slot: u16, from: usize, to: usize, source_first: bool) {
    cluster.begin_migration(slot, from, to);
    let text = slot.to_string();
    for _ in 0..200 {
        let keys: Vec<String> =
            cluster.nodes[from].cmd(&["CLUSTER", "GETKEYSINSLOT", &text, "100"]);
        if keys.is_empty() {
            break;
        }
        let port = cluster.nodes[to].port().to_string();
        let mut migrate = redis::cmd("MIGRATE");
        migrate
            .arg("127.0.0.1")
            .arg(&port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys);
        let _: redis::RedisResult<String> = migrate.query(&mut cluster.nodes[from].conn());
    }
    let to_id = cluster.nodes[to].node_id();
    let other = 3 - from - to;
    let order = if source_first {
        [from, to, other]
    } else {
        [to, from, other]
    };
    for (i, node) in order.into_iter().enumerate() {
        let _: String = cluster.nodes[node].cmd(&["CLUSTER", "SETSLOT", &text, "NODE", &to_id]);
        if i == 0 {
            std::thread::sleep(DISAGREEMENT);
        }
    }
}

/// Whether any of `keys` is held on the node that serves them.
async fn anything_held(client: &Client, keys: &[String; 3]) -> bool {
    let lock = client
        .lock(keys[0].as_str())
        .info()
        .await
        .expect("LOCK.INFO");
    let rw = client
        .rw_lock(keys[1].as_str())
        .info()
        .await
        .expect("RWLOCK.INFO");
    let sem = client
        .semaphore(keys[2].as_str())
        .info()
        .await
        .expect("SEM.INFO");
    let permits = sem.map_or(0, |s| s.holders.len());
    if lock.is_some() || rw.is_some() || permits > 0 {
        eprintln!("still held: {lock:?} {rw:?} {permits} semaphore holders");
        return true;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_moves_in_either_order_fail_no_operation_and_leave_nothing_held() {
    support::trace();
    let cluster = block_in_place(|| Cluster::start(3));
    let tag = cluster.key_on(0, "moving");
    let keys = ["lock", "rw", "sem"].map(|k| format!("{{{tag}}}:{k}"));
    let slot = cluster.slot(&keys[0]);
    let admin = Client::open(cluster.nodes[0].url()).await.unwrap();
    admin
        .semaphore(keys[2].as_str())
        .set_permits(3)
        .await
        .unwrap();
    let (load, stop) = (Arc::new(Load::default()), Arc::new(AtomicBool::new(false)));
    let mut workers = Vec::new();
    for n in 0..4 {
        let client = Client::open(cluster.nodes[n % 3].url()).await.unwrap();
        let work = work(client, keys.clone(), load.clone(), stop.clone(), n as u64);
        workers.push(tokio::spawn(work));
    }
    assert!(eventually(LIMIT, || load.done.load(Ordering::Relaxed) >= 20).await);
    let mut at = 0;
    for round in 0..6 {
        let to = 1 - at;
        block_in_place(|| move_slot(&cluster, slot, at, to, round % 2 == 0));
        at = to;
        sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        let ended = tokio::time::timeout(LIMIT, worker).await;
        ended.expect("a worker ended").expect("no panic");
    }
    let errors = load
        .errors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let done = load.done.load(Ordering::Relaxed);
    eprintln!("{done} operations, {} errors", errors.len());
    let first: Vec<_> = errors.iter().take(5).collect();
    assert!(
        errors.is_empty(),
        "{} operations failed while the slot moved: {first:?}",
        errors.len()
    );
    let mut held = true;
    for _ in 0..20 {
        held = anything_held(&admin, &keys).await;
        if !held {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    assert!(!held, "a hold was left after the workers stopped");
}
