//! Redis Sentinel: a client opened on a Sentinel URL talks to the master the sentinels name,
//! and moves to the new one after a failover. One master, two replicas
//! and three real `redis-sentinel` processes (the failover under contention is in
//! `failover.rs`).

mod support;

use std::time::{Duration, Instant};

use rlock_client::{Client, Error};
use support::sentinel::Deployment;
use tokio::task::block_in_place;

/// A failover takes seconds; a sentinel whose timer was held up 2 s (a disk stalled on its
/// config file) enters TILT mode and does nothing for 30 s more.
const SOON: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_url_opens_on_the_master() {
    support::trace();
    let deployment = block_in_place(|| Deployment::start(&[]));
    let master = deployment.master().expect("a master");
    // The sentinels are asked in turn: one that is down (first in the list) is passed over.
    let down = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let down_port = down.local_addr().expect("addr").port();
    drop(down);
    let url = deployment.url().replace(
        "redis+sentinel://",
        &format!("redis+sentinel://127.0.0.1:{down_port},"),
    );
    let client = Client::open(url).await.expect("open");
    let guard = client.lock("lock:s").acquire().await.expect("acquired");
    let info = deployment.servers[master]
        .info("lock:s")
        .expect("on the master");
    assert_eq!(info.owner, guard.owner());
    assert_eq!(guard.release().await.unwrap(), 0);

    // A master name the sentinels do not know.
    let unknown = deployment.url().replace("/rlockmaster", "/nosuchmaster");
    let err = Client::open(unknown).await.unwrap_err();
    let Error::Redis(err) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(err.kind(), redis::ErrorKind::MasterNameNotFoundBySentinel);
    assert!(
        err.to_string().contains("knows no master of that name"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn after_a_failover_the_next_commands_go_to_the_new_master() {
    support::trace();
    let deployment = block_in_place(|| Deployment::start(&[]));
    let old = deployment.master().expect("a master");
    let old_port = deployment.servers[old].port();
    let client = Client::open(deployment.url()).await.expect("open");
    assert!(!client.force_release("lock:x").await.expect("on the master"));

    // A failover the sentinels are asked for: the old master stays up, as a replica.
    let sentinel = &deployment.sentinels[0];
    let _: String = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(support::sentinel::MASTER_NAME)
        .query(&mut sentinel_conn(sentinel.port()))
        .expect("SENTINEL FAILOVER");
    let new = block_in_place(|| deployment.await_new_master(old_port, SOON));
    let new = new.unwrap_or_else(|| panic!("no new master\n{}", deployment.logs()));
    let started = Instant::now();
    while deployment.role(old).as_deref() != Some("slave") {
        assert!(started.elapsed() < SOON, "the old master was not demoted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The client still points at the old master. When the sentinels demoted it they closed
    // its clients' connections, so the first command may fail with an I/O error (it may
    // have run, so it is not sent again); if the connection was opened again meanwhile, the
    // old master answers READONLY instead, and the command is sent to the new master. Either
    // way the client asks the sentinels, and the next commands go to the new master.
    let before = deployment.servers[new].calls("lock.forcerelease");
    let first = client.force_release("lock:x").await;
    match &first {
        Ok(removed) => assert!(!removed),
        Err(Error::Redis(err)) => assert!(err.is_io_error(), "{err:?}"),
        Err(err) => panic!("{err:?}"),
    }
    assert!(!client
        .force_release("lock:x")
        .await
        .expect("on the new master"));
    let ran = if first.is_ok() { 2 } else { 1 };
    assert_eq!(
        deployment.servers[new].calls("lock.forcerelease"),
        before + ran
    );
    let guard = client.lock("lock:x").try_acquire(Duration::ZERO).await;
    let on_new = deployment.servers[new].calls("lock.acquire");
    assert!(on_new >= 1, "no acquire reached the new master: {guard:?}");
}

fn sentinel_conn(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .expect("url")
        .get_connection()
        .expect("connect to a sentinel")
}

/// A Sentinel failover that was asked for leaves the old master up, and writable until the
/// sentinels turn it into a replica (about 10 s later here): `min-replicas-to-write` fences
/// it within about a second once its replicas follow the new master, and the failover delay
/// covers that second plus the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn a_waiter_on_a_demoted_master_queues_again_on_the_new_one() {
    support::trace();
    let args = [
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "1",
        "--rlock.failover-delay",
        "4000",
    ];
    let deployment = block_in_place(|| Deployment::start(&args));
    let old = deployment.master().expect("a master");
    let old_port = deployment.servers[old].port();
    let holder = Client::open(deployment.url()).await.expect("open");
    let waiter = Client::open(deployment.url()).await.expect("open");
    let held = holder
        .lock("lock:w")
        .options(support::watched(Duration::from_millis(1000)))
        .acquire()
        .await
        .expect("held");
    let lock = waiter.lock("lock:w");
    let waiting = tokio::spawn(async move {
        let guard = lock.try_acquire(SOON).await;
        (guard, Instant::now())
    });
    let queued = support::eventually(SOON, || {
        deployment.servers[old]
            .info("lock:w")
            .is_some_and(|i| i.waiters == 1)
    });
    assert!(queued.await, "the waiter did not queue");
    let lost = held.lost_signal();
    let lost = tokio::spawn(async move { (lost.lost().await, Instant::now()) });

    // Sentinel promotes a replica (which has the lock), and later demotes the old master:
    // the module refuses the wait's ticket there (`<id> -READONLY`, pushed) and the waiter
    // queues again on the new master.
    let _: String = redis::cmd("SENTINEL")
        .arg("FAILOVER")
        .arg(support::sentinel::MASTER_NAME)
        .query(&mut sentinel_conn(deployment.sentinels[0].port()))
        .expect("SENTINEL FAILOVER");
    let new = block_in_place(|| deployment.await_new_master(old_port, SOON));
    let new = new.unwrap_or_else(|| panic!("no new master\n{}", deployment.logs()));

    let (guard, granted_at) = waiting.await.expect("no panic");
    let guard = guard.expect("no error").expect("handed the lock");
    let info = deployment.servers[new]
        .info("lock:w")
        .expect("held on the new master");
    assert_eq!(info.owner, guard.owner());
    assert!(guard.token() > held.token());
    assert!(
        deployment.servers[old].calls("lock.wait") >= 1,
        "no ticket on the old master"
    );
    // The fenced old master stopped renewing the holder's lock, which it knew to be lost
    // before the waiter got it.
    let (reason, lost_at) = lost.await.expect("no panic");
    assert!(
        lost_at < granted_at,
        "the holder lost the lock only after the grant ({reason})"
    );
    assert_eq!(guard.release().await.unwrap(), 0);
}

/// A master that dies under a waiter: the waiter's connection breaks, and it queues again
/// on the master the sentinels promote, instead of failing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: make test-all"]
async fn a_waiter_whose_master_dies_queues_again_on_the_new_one() {
    support::trace();
    // A failover delay that covers the holder's lease, short for the test.
    let args = ["--rlock.failover-delay", "3000"];
    let mut deployment = block_in_place(|| Deployment::start(&args));
    let old = deployment.master().expect("a master");
    let old_port = deployment.servers[old].port();
    let holder = Client::open(deployment.url()).await.expect("open");
    let waiter = Client::open(deployment.url()).await.expect("open");
    let lease = rlock_client::LockOptions::new().lease(Duration::from_millis(1500));
    let held = holder.lock("lock:d").options(lease).acquire().await;
    let held = held.expect("held");
    let lock = waiter.lock("lock:d");
    let waiting = tokio::spawn(async move { lock.acquire().await });
    let queued = support::eventually(SOON, || {
        deployment.servers[old]
            .info("lock:d")
            .is_some_and(|i| i.waiters == 1)
    });
    assert!(queued.await, "the waiter did not queue");
    block_in_place(|| deployment.kill(old));
    let new = block_in_place(|| deployment.await_new_master(old_port, SOON));
    let new = new.unwrap_or_else(|| panic!("no new master\n{}", deployment.logs()));
    let got = tokio::time::timeout(SOON, waiting)
        .await
        .expect("served in time");
    let guard = got.expect("no panic").expect("the waiter got the lock");
    let info = deployment.servers[new]
        .info("lock:d")
        .expect("held on the new master");
    assert_eq!(info.owner, guard.owner());
    assert!(guard.token() > held.token());
    assert_eq!(guard.release().await.unwrap(), 0);
}
