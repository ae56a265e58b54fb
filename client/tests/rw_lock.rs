//! Read-write locks (`Client::rw_lock`): shared reads, exclusive writes, FIFO service,
//! reentrancy, downgrade, the refused upgrade, and the key family.

mod support;

use std::time::Duration;

use rlock_client::{Client, Error, RwLockInfo, RwMode};
use support::{eventually, Server};
use tokio::time::timeout;

const NOW: Duration = Duration::ZERO;

async fn rw_info(client: &Client, key: &str) -> Option<RwLockInfo> {
    client.rw_lock(key).info().await.unwrap()
}

/// Waits until `key` has `waiters` queued waits; panics after 10 s.
async fn queued(server: &Server, key: &str, waiters: i64) {
    let count = || {
        let info: Option<Vec<redis::Value>> = server.cmd(&["RWLOCK.INFO", key]);
        let fields = info.unwrap_or_default();
        let at = fields
            .iter()
            .position(|v| *v == redis::Value::BulkString(b"waiters".to_vec()));
        at.map_or(0, |at| {
            redis::from_redis_value::<i64>(fields[at + 1].clone()).unwrap()
        })
    };
    let reached = eventually(Duration::from_secs(10), || count() == waiters).await;
    assert!(reached, "{key}: {} waiters, not {waiters}", count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_holds_are_shared_by_two_owners() {
    let server = Server::start();
    let client = server.client().await;
    let (a, b) = (client.owner(), client.owner());
    let first = a.rw_lock("shared").read().try_acquire(NOW).await.unwrap();
    let second = b.rw_lock("shared").read().try_acquire(NOW).await.unwrap();
    let (first, second) = (first.expect("a reads"), second.expect("b reads too"));
    let info = rw_info(&client, "shared").await.unwrap();
    assert_eq!(info.mode, RwMode::Read);
    assert_eq!(info.holders.len(), 2, "{info:?}");
    assert_eq!(info.holder(a.id()).unwrap().reads, 1);
    assert_eq!(info.holder(b.id()).unwrap().reads, 1);
    assert_ne!(
        first.token(),
        second.token(),
        "each holder has its own holding"
    );
    assert_eq!(first.release().await.unwrap(), 0);
    assert_eq!(second.release().await.unwrap(), 0);
    assert_eq!(rw_info(&client, "shared").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_excludes_readers_and_other_writers() {
    let server = Server::start();
    let client = server.client().await;
    let writer = client
        .owner()
        .rw_lock("excl")
        .write()
        .acquire()
        .await
        .unwrap();
    let other = client.owner().rw_lock("excl");
    assert!(other.read().try_acquire(NOW).await.unwrap().is_none());
    assert!(other.write().try_acquire(NOW).await.unwrap().is_none());
    let waited = other.read().try_acquire(Duration::from_millis(200)).await;
    assert!(waited.unwrap().is_none(), "a reader waited past the writer");
    let info = rw_info(&client, "excl").await.unwrap();
    assert_eq!(info.mode, RwMode::Write);
    assert_eq!(info.holders.len(), 1);
    // The read waits for the writer, then gets it.
    let reader = tokio::spawn(async move { other.read().acquire().await });
    queued(&server, "excl", 1).await;
    writer.release().await.unwrap();
    let read = timeout(Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
    read.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_writer_is_not_overtaken_by_a_later_reader() {
    let server = Server::start();
    let client = server.client().await;
    let first = client
        .owner()
        .rw_lock("fifo")
        .read()
        .acquire()
        .await
        .unwrap();
    let writer = client.owner().rw_lock("fifo");
    let writer = tokio::spawn(async move { writer.write().acquire().await });
    queued(&server, "fifo", 1).await;
    // The lock is held for reading, but a writer is queued: a new reader queues behind it.
    let late = client.owner().rw_lock("fifo");
    assert!(late.read().try_acquire(NOW).await.unwrap().is_none());
    let reader = tokio::spawn(async move { late.read().acquire().await });
    queued(&server, "fifo", 2).await;
    let info = rw_info(&client, "fifo").await.unwrap();
    let modes: Vec<RwMode> = info.queue.iter().map(|(_, mode)| *mode).collect();
    assert_eq!(modes, [RwMode::Write, RwMode::Read]);
    first.release().await.unwrap();
    let writing = timeout(Duration::from_secs(5), writer)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let info = rw_info(&client, "fifo").await.unwrap();
    assert_eq!(info.mode, RwMode::Write, "the writer came first: {info:?}");
    assert_eq!(info.holders.len(), 1);
    assert!(
        !reader.is_finished(),
        "the later reader overtook the writer"
    );
    writing.release().await.unwrap();
    let reading = timeout(Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
    reading.unwrap().release().await.unwrap();
    assert!(server.calls("rwlock.wait") > 0, "the waits were tickets");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_downgrades_by_taking_a_read_hold_and_releasing_the_write() {
    let server = Server::start();
    let client = server.client().await;
    let owner = client.owner();
    let rw = owner.rw_lock("down");
    let write = rw.write().acquire().await.unwrap();
    let read = rw
        .read()
        .try_acquire(NOW)
        .await
        .unwrap()
        .expect("the writer reads");
    assert_eq!(read.token(), write.token(), "one holding");
    let other = client.owner().rw_lock("down");
    assert!(other.read().try_acquire(NOW).await.unwrap().is_none());
    assert_eq!(write.release().await.unwrap(), 0, "no write hold left");
    let holder = rw_info(&client, "down").await.unwrap();
    let holder = holder.holder(owner.id()).unwrap().clone();
    assert_eq!(
        (holder.reads, holder.writes, holder.token),
        (1, 0, read.token())
    );
    // Downgraded: other readers join, writers still wait.
    let joined = other
        .read()
        .try_acquire(NOW)
        .await
        .unwrap()
        .expect("readers join");
    assert!(client
        .owner()
        .rw_lock("down")
        .write()
        .try_acquire(NOW)
        .await
        .unwrap()
        .is_none());
    assert!(!read.is_lost());
    read.release().await.unwrap();
    joined.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_is_refused_with_its_own_error_and_changes_nothing() {
    let server = Server::start();
    let client = server.client().await;
    let owner = client.owner();
    let rw = owner.rw_lock("up");
    let read = rw.read().acquire().await.unwrap();
    for wait in [NOW, Duration::from_secs(5)] {
        let started = std::time::Instant::now();
        let refused = rw.write().try_acquire(wait).await;
        assert!(
            matches!(&refused, Err(Error::Upgrade { key, owner: o }) if key == "up" && o == owner.id()),
            "{refused:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "refused at once, not waited"
        );
    }
    let info = rw_info(&client, "up").await.unwrap();
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holder(owner.id()).unwrap().reads, 1);
    assert_eq!(info.waiters, 0);
    assert!(!read.is_lost());
    read.release().await.unwrap();
    // Without read holds, the write is granted.
    rw.write().acquire().await.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_modes_reenter_in_their_scope_and_other_tasks_wait() {
    let server = Server::start();
    let client = server.client().await;
    let rw = client.rw_lock("again");
    let outer = rw.write().acquire().await.unwrap();
    let inner = outer.scope(rw.write().acquire()).await.unwrap();
    assert_eq!(inner.token(), outer.token());
    let info = rw_info(&client, "again").await.unwrap();
    assert_eq!(info.holder(outer.owner()).unwrap().writes, 2);
    let elsewhere = client.rw_lock("again");
    let other_task = tokio::spawn(async move { elsewhere.read().try_acquire(NOW).await });
    assert!(
        other_task.await.unwrap().unwrap().is_none(),
        "another task reentered"
    );
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
    let outer = rw.read().acquire().await.unwrap();
    let inner = outer.scope(rw.read().acquire()).await.unwrap();
    assert_eq!(inner.token(), outer.token());
    let info = rw_info(&client, "again").await.unwrap();
    assert_eq!(info.holder(outer.owner()).unwrap().reads, 2);
    assert_eq!(inner.release().await.unwrap(), 1);
    assert_eq!(outer.release().await.unwrap(), 0);
    assert_eq!(rw_info(&client, "again").await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lock_runs_the_work_under_a_read_hold() {
    let server = Server::start();
    let client = server.client().await;
    let rw = client.rw_lock("work");
    let token = rw
        .read()
        .with_lock(|held| async move {
            let other = client.owner().rw_lock("work");
            let shared = other.read().try_acquire(NOW).await.unwrap();
            shared.expect("readers share").release().await.unwrap();
            held.token()
        })
        .await
        .unwrap();
    assert!(token > 0);
    assert_eq!(rw.info().await.unwrap(), None, "released after the work");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_write_lock_and_a_plain_lock_do_not_share_a_key() {
    let server = Server::start();
    let client = server.client().await;
    let read = client.rw_lock("family").read().acquire().await.unwrap();
    let plain = client.owner().lock("family").try_acquire(NOW).await;
    assert!(
        matches!(&plain, Err(Error::WrongType { detail, .. }) if detail == "WRONGTYPE key is not a lock"),
        "{plain:?}"
    );
    read.release().await.unwrap();
    let plain = client.lock("family").acquire().await.unwrap();
    let rw = client
        .owner()
        .rw_lock("family")
        .write()
        .try_acquire(NOW)
        .await;
    assert!(
        matches!(&rw, Err(Error::WrongType { detail, .. }) if detail == "WRONGTYPE key is not a read-write lock"),
        "{rw:?}"
    );
    plain.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_releases_every_read_and_write_hold() {
    let server = Server::start();
    let client = server.client().await;
    let rw = client.owner().rw_lock("closing");
    let guards = [
        rw.write().acquire().await.unwrap(),
        rw.write().acquire().await.unwrap(),
        rw.read().acquire().await.unwrap(),
    ];
    client.close().await.unwrap();
    let probe = server.client().await;
    assert_eq!(rw_info(&probe, "closing").await, None);
    drop(guards);
}
