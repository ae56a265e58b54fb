//! A slot is resharded (`CLUSTER SETSLOT ... IMPORTING/MIGRATING`, `MIGRATE`, `SETSLOT ...
//! NODE`) while clients contend on its locks with waits: no two holders at once, the reshard
//! finishes, and waiters are handed the locks on the new owner. Three real cluster masters
//! with the module.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rlock_client::Client;
use support::cluster::Cluster;
use support::{eventually, watched};
use tokio::task::block_in_place;
use tokio::time::sleep;

const SOON: Duration = Duration::from_secs(10);

async fn client(cluster: &Cluster) -> Client {
    Client::open(cluster.nodes[0].url())
        .await
        .expect("open a cluster client")
}

/// Critical sections per lock, from the contenders' side.
#[derive(Default)]
struct Sections {
    inside: [usize; 2],
    overlaps: Vec<String>,
    grants: u64,
    errors: Vec<String>,
}

type Shared = Arc<Mutex<Sections>>;

fn sections(shared: &Shared) -> std::sync::MutexGuard<'_, Sections> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the locks of `keys` in turn, waiting up to 3 s, and holds each for a moment.
async fn contend(
    client: Client,
    keys: [String; 2],
    shared: Shared,
    stop: Arc<AtomicBool>,
    n: usize,
) {
    let mut round = 0;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let which = (n + round) % 2;
        let options = watched(Duration::from_millis(1000));
        let lock = client.lock(keys[which].as_str()).options(options);
        match lock.try_acquire(Duration::from_secs(3)).await {
            Ok(Some(guard)) => {
                {
                    let mut s = sections(&shared);
                    if s.inside[which] > 0 {
                        let overlap = format!("{} (token {})", guard.key(), guard.token());
                        s.overlaps.push(overlap);
                    }
                    s.inside[which] += 1;
                    s.grants += 1;
                }
                sleep(Duration::from_millis(20 + 10 * (round % 5) as u64)).await;
                sections(&shared).inside[which] -= 1;
                if let Err(err) = guard.release().await {
                    sections(&shared).errors.push(format!("release: {err}"));
                }
            }
            Ok(None) => {}
            Err(err) => {
                sections(&shared).errors.push(format!("acquire: {err}"));
                sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Moves every key of `slot` from node `from` to node `to` with `MIGRATE`, as
/// `redis-cli --cluster reshard` does, while clients keep making and deleting locks there.
fn migrate_all(cluster: &Cluster, slot: u16, from: usize, to: usize) {
    let (source, port) = (&cluster.nodes[from], cluster.nodes[to].port().to_string());
    let started = Instant::now();
    loop {
        let keys: Vec<String> = source.cmd(&["CLUSTER", "GETKEYSINSLOT", &slot.to_string(), "100"]);
        if keys.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < SOON,
            "the slot's keys do not leave node {from}"
        );
        let mut migrate = redis::cmd("MIGRATE");
        migrate
            .arg("127.0.0.1")
            .arg(&port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys);
        // NOKEY when the locks were released meanwhile.
        let reply: redis::RedisResult<String> = migrate.query(&mut source.conn());
        match reply {
            Ok(ok) => assert!(ok == "OK" || ok == "NOKEY", "MIGRATE answered {ok}"),
            Err(err) => panic!("MIGRATE {keys:?} failed: {err}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_is_resharded_while_clients_wait_on_its_locks() {
    support::trace();
    let cluster = block_in_place(|| Cluster::start(3));
    let tag = cluster.key_on(0, "reshard");
    let keys = [format!("{{{tag}}}:a"), format!("{{{tag}}}:b")];
    let slot = cluster.slot(&keys[0]);
    let shared = Shared::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for n in 0..4 {
        let client = client(&cluster).await;
        let task = contend(client, keys.clone(), shared.clone(), stop.clone(), n);
        tasks.push(tokio::spawn(task));
    }
    let busy = eventually(SOON, || {
        let s = sections(&shared);
        s.grants >= 20 && cluster.nodes[0].rlock_stat("handoffs") > 0
    });
    assert!(busy.await, "no contention with handoffs on the source");

    block_in_place(|| {
        cluster.begin_migration(slot, 0, 1);
        migrate_all(&cluster, slot, 0, 1);
        cluster.finish_migration(slot, 1);
    });
    assert!(cluster.nodes[1].serves(slot) && !cluster.nodes[0].serves(slot));

    // Waiters now queue, and are handed the locks, on the new owner.
    let handoffs = cluster.nodes[1].rlock_stat("handoffs");
    let grants = sections(&shared).grants;
    let served = eventually(SOON, || {
        cluster.nodes[1].rlock_stat("handoffs") > handoffs + 5
            && sections(&shared).grants > grants + 10
    });
    assert!(served.await, "no handoffs on the new owner");
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let ended = tokio::time::timeout(SOON, task).await;
        ended.expect("a contender ended").expect("no panic");
    }

    let s = sections(&shared);
    let source = &cluster.nodes[0];
    let redirected = ["ASK", "MOVED", "TRYAGAIN"].map(|code| (code, source.errors(code)));
    eprintln!(
        "reshard figures: {} grants, {} overlaps, redirections from the source {redirected:?}, \
         {} errors {:?}",
        s.grants,
        s.overlaps.len(),
        s.errors.len(),
        s.errors.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(s.overlaps, Vec::<String>::new(), "two holders at once");
    let count: i64 = cluster.nodes[0].cmd(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]);
    assert_eq!(count, 0, "keys of the slot left on the source");
}
