//! `Guard::downgrade`: a write guard becomes a read guard of the same holding (the same
//! owner and token), and queued readers come in; other guards are refused.

mod support;

use std::time::Duration;

use rlock_client::Error;
use support::{eventually, Server};

/// `RWLOCK.INFO key`'s waiters (0 when the key does not exist).
fn waiters(server: &Server, key: &str) -> i64 {
    let info: Option<Vec<redis::Value>> = server.cmd(&["RWLOCK.INFO", key]);
    let fields = info.unwrap_or_default();
    let at = fields
        .iter()
        .position(|v| *v == redis::Value::BulkString(b"waiters".to_vec()));
    at.map_or(0, |at| {
        redis::from_redis_value(fields[at + 1].clone()).unwrap()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_guard_downgrades_to_a_read_guard_and_queued_readers_come_in() {
    let server = Server::start();
    let client = server.client().await;
    let config = client.rw_lock("config");
    let writing = config.write().acquire().await.unwrap();
    let (owner, token) = (writing.owner().to_owned(), writing.token());
    let other = client.owner().rw_lock("config");
    let reader = tokio::spawn(async move { other.read().acquire().await });
    let queued = eventually(Duration::from_secs(10), || waiters(&server, "config") == 1).await;
    assert!(queued, "the reader never queued");
    let reading = writing.downgrade().await.unwrap();
    assert_eq!((reading.owner(), reading.token()), (owner.as_str(), token));
    let joined = tokio::time::timeout(Duration::from_secs(10), reader)
        .await
        .expect("the queued reader comes in")
        .unwrap()
        .unwrap();
    let info = config.info().await.unwrap().expect("held");
    let mine = info.holder(&owner).expect("still a holder");
    assert_eq!((mine.reads, mine.writes, mine.token), (1, 0, token));
    assert!(info.holder(joined.owner()).is_some());
    assert!(!reading.is_lost());
    assert_eq!(reading.release().await.unwrap(), 0);
    joined.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_write_guard_downgrades() {
    let server = Server::start();
    let client = server.client().await;
    let plain = client.lock("plain").acquire().await.unwrap();
    let read = client.rw_lock("rw").read().acquire().await.unwrap();
    for guard in [plain, read] {
        let refused = guard.downgrade().await;
        assert!(
            matches!(&refused, Err(Error::InvalidArgument { detail }) if detail.contains("write")),
            "{refused:?}"
        );
    }
    assert!(
        server.info("plain").is_none(),
        "a refused guard is released"
    );
}
