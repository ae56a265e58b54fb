//! The blocking API: no panic inside an async runtime, and no owner id kept for threads that
//! hold nothing.

mod support;

use std::time::Duration;

use rlock_client::blocking::BlockingClient;
use rlock_client::Error;
use support::{poll, Server};

#[test]
fn a_blocking_release_inside_a_runtime_fails_without_panicking_and_releases() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let guard = client.lock("in-rt").acquire().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let released = rt.block_on(async move { guard.release() });
    let err = released.unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err:?}");
    assert!(
        poll(Duration::from_secs(10), || server.info("in-rt").is_none()),
        "the hold was not released in the background"
    );
    let info = rt.block_on(async { client.info("in-rt") });
    assert!(
        matches!(info, Err(Error::InvalidArgument { .. })),
        "{info:?}"
    );
}

#[test]
fn threads_that_hold_nothing_keep_no_owner_id() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let busy = client.lock("busy").acquire().unwrap();
    let threads: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                let lock = client.lock(format!("k{i}"));
                let outer = lock.acquire().unwrap();
                let inner = lock.acquire().unwrap();
                assert_eq!(inner.owner(), outer.owner(), "reentrant while held");
                assert_eq!(inner.release().unwrap(), 1);
                drop(outer);
                let tried = client.lock("busy").try_acquire(Duration::ZERO).unwrap();
                assert!(tried.is_none());
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(
        client.owners(),
        1,
        "only the thread holding 'busy' has an id"
    );
    drop(busy);
    assert_eq!(client.owners(), 0);
}
