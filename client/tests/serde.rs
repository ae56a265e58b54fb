//! With the `serde` feature, the info types serialize (here to JSON) and read back as they
//! were. `cargo test -p rlock-client --features serde --test serde` runs it.
#![cfg(feature = "serde")]

mod support;

use std::time::Duration;

use rlock_client::{LockInfo, RwLockInfo, RwMode, SemaphoreInfo};
use support::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_info_types_serialize_and_read_back() {
    let server = Server::start();
    let client = server.client().await;
    let guard = client.lock("lock:json").acquire().await.unwrap();
    let info = client.info("lock:json").await.unwrap().expect("held");
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(json["owner"], guard.owner());
    assert_eq!(json["token"], guard.token());
    assert_eq!(json["holds"], 1);
    assert!(json["ttl"]["secs"].as_u64().is_some(), "{json}");
    assert_eq!(serde_json::from_value::<LockInfo>(json).unwrap(), info);

    let rw = client.rw_lock("rw:json");
    let reading = rw.read().acquire().await.unwrap();
    let info = rw.info().await.unwrap().expect("held");
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(json["mode"], "Read");
    assert_eq!(json["holders"][0]["reads"], 1);
    assert_eq!(serde_json::from_value::<RwLockInfo>(json).unwrap(), info);
    assert_eq!(serde_json::to_string(&RwMode::Write).unwrap(), "\"Write\"");
    reading.release().await.unwrap();

    let pool = client.semaphore("sem:json");
    pool.set_permits(3).await.unwrap();
    let permits = pool.try_acquire(2, Duration::ZERO).await.unwrap().unwrap();
    let info = pool.info().await.unwrap().expect("exists");
    let json = serde_json::to_value(&info).unwrap();
    assert_eq!(
        (json["permits"].as_u64(), json["available"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(json["holders"][0]["permits"], 2);
    assert_eq!(serde_json::from_value::<SemaphoreInfo>(json).unwrap(), info);
    permits.release().await.unwrap();
    guard.release().await.unwrap();
}
