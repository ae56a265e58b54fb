//! Announced losses beyond one server: in a Redis Cluster (one listening connection per
//! node), for the members of a MultiLock and a RedLock, and after a Sentinel failover (the
//! listening connection breaks: the holdings are renewed at once on the new master).

mod support;

use std::time::Duration;

use rlock_client::{Client, EndCause, LossReason, MultiLock, RedLock};
use support::cluster::Cluster;
use support::sentinel::Deployment;
use support::{poll, Server};
use tokio::task::block_in_place;

/// A hang limit: the announcement comes at once, the next renewal 10 s later.
const AT_ONCE: Duration = Duration::from_millis(50);

/// A failover takes seconds (see `sentinel.rs`).
const SOON: Duration = Duration::from_secs(90);

/// A hang limit after a failover: the holdings are renewed at once, not 10 s later.
const PROMPTLY: Duration = Duration::from_secs(3);

const FORCED: LossReason = LossReason::Ended(EndCause::ForceReleased);

async fn lost_within(
    limit: Duration,
    lost: impl std::future::Future<Output = LossReason>,
) -> LossReason {
    let lost = tokio::time::timeout(limit, lost).await;
    lost.unwrap_or_else(|_| panic!("lost() did not resolve within {limit:?}"))
}

fn force_release(server: &Server, key: &str) {
    let removed: i64 = server.cmd(&["LOCK.FORCERELEASE", key]);
    assert_eq!(removed, 1, "{key} was held");
}

/// Gives `job` on `server` to another owner, in one step.
fn take_over(server: &Server) {
    let mut take = redis::pipe();
    take.atomic().cmd("LOCK.FORCERELEASE").arg("job");
    take.cmd("LOCK.ACQUIRE").arg("job").arg("intruder");
    let _: (u64, u64) = take.query(&mut server.conn()).expect("take the lock over");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_cluster_a_loss_on_any_node_is_seen_at_once() {
    let cluster = block_in_place(|| Cluster::start(3));
    let client = Client::open(cluster.nodes[0].url()).await.expect("open");
    for node in 0..3 {
        let key = cluster.key_on(node, "ended");
        let guard = client.lock(&key).acquire().await.expect("acquire");
        force_release(&cluster.nodes[node], &key);
        assert_eq!(
            lost_within(AT_ONCE, guard.lost()).await,
            FORCED,
            "node {node}"
        );
    }
    // A key announced deleted is looked up where its slot is served (a migration deletes
    // it on the old node) before the loss counts: it is gone there too.
    let key = cluster.key_on(1, "deleted");
    let guard = client.lock(&key).acquire().await.expect("acquire");
    let _: i64 = cluster.nodes[1].cmd(&["DEL", &key]);
    let deleted = LossReason::Ended(EndCause::Deleted);
    assert_eq!(lost_within(AT_ONCE, guard.lost()).await, deleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_listening_connection_is_opened_again_and_its_holdings_tracked_again() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("kept").acquire().await.expect("acquire");
    let renewals = server.calls("lock.renew");
    let killed: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]);
    assert_eq!(killed, 1, "the listening connection");
    // The holdings are renewed at once (not 10 s later), after listening again.
    let channel = format!("__rlock_lost__:{}", client.id());
    let listened = || {
        let subscribers: (String, i64) = server.cmd(&["PUBSUB", "NUMSUB", &channel]);
        subscribers.1 == 1 && server.calls("lock.renew") > renewals
    };
    assert!(block_in_place(|| poll(Duration::from_secs(5), listened)));
    assert!(!guard.is_lost());
    force_release(&server, "kept");
    assert_eq!(lost_within(AT_ONCE, guard.lost()).await, FORCED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_the_server_cannot_announce_the_watchdog_finds_the_loss() {
    let server = Server::start();
    let url = server.unlistened_url();
    let client = Client::open(url).await.expect("open");
    let lease = Duration::from_millis(300);
    let lock = client.lock("unheard").options(support::watched(lease));
    let guard = lock.acquire().await.expect("acquired without listening");
    force_release(&server, "unheard");
    let reason = lost_within(Duration::from_secs(5), guard.lost()).await;
    assert_eq!(reason, LossReason::NotHeld, "found by a renewal");
    let again = lock.acquire().await.expect("acquired again");
    again.release().await.expect("released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multilock_is_lost_at_once_with_one_of_its_members() {
    let server = Server::start();
    let client = server.client().await;
    let multi = MultiLock::new([client.lock("a"), client.lock("b")]);
    let guard = multi.acquire().await.expect("acquire");
    force_release(&server, "b");
    assert_eq!(lost_within(AT_ONCE, guard.lost()).await, FORCED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_is_lost_at_once_with_its_majority() {
    let servers = [Server::start(), Server::start(), Server::start()];
    let mut clients = Vec::new();
    for server in &servers {
        clients.push(server.client().await);
    }
    let redlock = RedLock::new(clients, "job").expect("three servers");
    let guard = redlock.acquire().await.expect("acquire");
    // Every server tracks the holding for a listening client: before that (a RedLock's
    // member on another client's server is tracked from the renewal after its prefix is
    // registered), an end is found by that renewal, as `NotHeld`.
    assert!(poll(Duration::from_secs(5), || servers
        .iter()
        .all(
            |s| s.info("job").is_some() && s.rlock_stat("listened_holdings") > 0
        )));
    // One of three taken by another owner (the RedLock cannot take it back): the majority
    // holds on.
    take_over(&servers[0]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!guard.is_lost(), "lost with a majority holding");
    // Two of three, the second on a server whose client is not the RedLock's first.
    take_over(&servers[2]);
    let reason = lost_within(AT_ONCE, guard.lost()).await;
    assert_eq!(reason, FORCED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn after_a_failover_a_holding_the_new_master_lacks_is_lost_promptly() {
    support::trace();
    let mut deployment = block_in_place(|| Deployment::start(&[]));
    let old = deployment.master().expect("a master");
    let old_port = deployment.servers[old].port();
    let client = Client::open(deployment.url()).await.expect("open");
    let gone = client.lock("lock:gone").acquire().await.expect("acquire");
    let kept = client.lock("lock:kept").acquire().await.expect("acquire");
    // The replicas have both; "lock:gone" is taken from them, as if its replication had
    // not reached them.
    for i in (0..deployment.servers.len()).filter(|&i| i != old) {
        let replica = &deployment.servers[i];
        let replicated = || replica.cmd::<i64>(&["EXISTS", "lock:gone", "lock:kept"]) == 2;
        assert!(block_in_place(|| poll(Duration::from_secs(5), replicated)));
        let _: String = replica.cmd(&["CONFIG", "SET", "replica-read-only", "no"]);
        let _: i64 = replica.cmd(&["DEL", "lock:gone"]);
    }
    block_in_place(|| deployment.kill(old));
    let new = block_in_place(|| deployment.await_new_master(old_port, SOON));
    let new = new.unwrap_or_else(|| panic!("no new master\n{}", deployment.logs()));
    let reason = lost_within(PROMPTLY, gone.lost()).await;
    assert_eq!(reason, LossReason::NotHeld);
    assert!(!kept.is_lost(), "the new master has it");
    // Renewed on the new master after its listener was registered: tracked there.
    force_release(&deployment.servers[new], "lock:kept");
    assert_eq!(lost_within(AT_ONCE, kept.lost()).await, FORCED);
}
