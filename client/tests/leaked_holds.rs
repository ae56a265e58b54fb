//! A hold whose release failed for its connection is not this owner's any more: its next
//! acquisition of the key waits for that release to be delivered, so it never reenters the
//! hold on its way out (jumping the queue and renewing it) and a read hold on its way out
//! never refuses the owner's write hold as an upgrade. `close()` delivers its releases the
//! same way.

mod support;

use std::time::Duration;

use rlock_client::{Client, ClientOptions, LockOptions};
use support::Server;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

/// A client whose `release()` reports the first failure: the delivery goes on behind it.
async fn impatient(server: &Server) -> Client {
    let options = ClientOptions::new().retries(0);
    Client::open_with(server.url(), options).await.unwrap()
}

/// Kills every normal connection (the client's shared ones), then releases `guard` at once:
/// the release meets the broken connection and fails, and is delivered in the background.
async fn failed_release(server: &Server, guard: rlock_client::Guard) {
    let killed: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    assert!(killed >= 1, "the shared connection was killed");
    let released = timeout(LIMIT, guard.release())
        .await
        .expect("the release hung");
    assert!(
        released.is_err(),
        "the release met the killed connection: {released:?}"
    );
}

/// The read and write holds `owner` has on `key`, as the server counts them.
async fn rw_holds(client: &Client, key: &str, owner: &str) -> (u64, u64) {
    let info = client.rw_lock(key).info().await.expect("RWLOCK.INFO");
    let holder = info.as_ref().and_then(|info| info.holder(owner));
    holder.map_or((0, 0), |h| (h.reads, h.writes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_hold_whose_release_failed_is_not_reentered() {
    support::trace();
    let server = Server::start();
    let client = impatient(&server).await;
    // One owner for both acquisitions: the leaked hold is its own.
    let rw = client.owner().rw_lock("rw");
    let first = rw.read().acquire().await.unwrap();
    let (owner, old) = (first.owner().to_owned(), first.token());
    failed_release(&server, first).await;
    let again = timeout(LIMIT, rw.read().acquire()).await.unwrap().unwrap();
    assert_ne!(
        again.token(),
        old,
        "a fresh read hold, not a reentry of the leaked one"
    );
    let mut reads = rw_holds(&client, "rw", &owner).await;
    for _ in 0..100 {
        if reads == (1, 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        reads = rw_holds(&client, "rw", &owner).await;
    }
    assert_eq!(reads, (1, 0), "one read hold: the fresh one");
    assert_eq!(again.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_after_a_failed_read_release_is_no_upgrade() {
    support::trace();
    let server = Server::start();
    let client = impatient(&server).await;
    let rw = client.owner().rw_lock("up");
    let reading = rw.read().acquire().await.unwrap();
    let owner = reading.owner().to_owned();
    failed_release(&server, reading).await;
    let writing = timeout(LIMIT, rw.write().try_acquire(LIMIT)).await.unwrap();
    let writing = writing.expect("no Upgrade: this owner holds no read guard");
    let writing = writing.expect("the write hold, once the read hold's release arrived");
    assert_eq!(rw_holds(&client, "up", &owner).await, (0, 1));
    assert_eq!(writing.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_whose_release_failed_is_not_reentered() {
    support::trace();
    let server = Server::start();
    let client = impatient(&server).await;
    let me = client.owner();
    let first = me.lock("k").acquire().await.unwrap();
    let old = first.token();
    failed_release(&server, first).await;
    let again = timeout(LIMIT, me.lock("k").acquire())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(
        again.token(),
        old,
        "a fresh holding, not a reentry of the leaked one"
    );
    let info = server.info("k").expect("held");
    assert_eq!((info.token, info.holds), (again.token(), 1));
    assert_eq!(again.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_whose_release_failed_are_not_added_to() {
    support::trace();
    let server = Server::start();
    let client = impatient(&server).await;
    let sem = client.owner().semaphore("pool");
    sem.set_permits(3).await.unwrap();
    let first = sem.acquire(2).await.unwrap();
    let (owner, old) = (first.owner().to_owned(), first.token());
    failed_release(&server, first).await;
    let again = timeout(LIMIT, sem.acquire(2)).await.unwrap().unwrap();
    assert_ne!(
        again.token(),
        old,
        "fresh permits, not added to the leaked ones"
    );
    let info = sem.info().await.unwrap().expect("the semaphore");
    assert_eq!(info.holder(&owner).map(|h| h.permits), Some(2));
    assert_eq!(again.release().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_delivers_its_releases_past_a_killed_connection() {
    support::trace();
    let server = Server::start();
    let client = server.client().await;
    let lease = LockOptions::new().lease(Duration::from_secs(30));
    let held = client.lock("c").options(lease).acquire().await.unwrap();
    let _: i64 = server.cmd(&["CLIENT", "KILL", "TYPE", "normal"]);
    let closed = timeout(LIMIT, client.close()).await.expect("close hung");
    assert!(closed.is_ok(), "{closed:?}");
    assert!(server.info("c").is_none(), "close released the lock");
    drop(held);
}
