//! The blocking API: it blocks in plain threads and `spawn_blocking`, refuses (without
//! panicking) a thread that runs async tasks, and keeps no owner id for threads that hold nothing.

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

/// The blocking API inside `spawn_blocking`, the usual home of sync code in an async
/// service: it blocks there as tokio's own `Mutex::blocking_lock` does.
fn acquires_and_excludes_inside_spawn_blocking(rt: tokio::runtime::Runtime) {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let inside = client.clone();
    let (held, hold_on) = rt.block_on(async move {
        tokio::task::spawn_blocking(move || {
            let guard = inside.lock("pool").acquire().unwrap();
            let other = inside.clone();
            let tried = std::thread::spawn(move || {
                let got = other.lock("pool").try_acquire(Duration::ZERO).unwrap();
                got.is_none()
            });
            let excluded = tried.join().unwrap();
            (excluded, guard.release())
        })
        .await
        .unwrap()
    });
    assert!(
        held,
        "another thread got the lock held inside spawn_blocking"
    );
    assert_eq!(hold_on.unwrap(), 0);
    assert!(
        server.info("pool").is_none(),
        "released before release() returned"
    );
    let dropped = client.clone();
    rt.block_on(async move {
        tokio::task::spawn_blocking(move || drop(dropped.lock("pool").acquire().unwrap()))
            .await
            .unwrap()
    });
    assert!(
        server.info("pool").is_none(),
        "released before drop returned"
    );
}

#[test]
fn blocks_inside_spawn_blocking_of_a_multi_thread_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    acquires_and_excludes_inside_spawn_blocking(rt);
}

#[test]
fn blocks_inside_spawn_blocking_of_a_current_thread_runtime() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    acquires_and_excludes_inside_spawn_blocking(rt);
}

#[test]
fn blocks_inside_block_in_place_and_under_an_entered_handle() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let inside = client.clone();
    let token = rt.block_on(async move {
        tokio::spawn(async move {
            tokio::task::block_in_place(|| inside.lock("place").acquire().map(|g| g.token()))
        })
        .await
        .unwrap()
    });
    assert!(token.unwrap() > 0);
    let _entered = rt.enter();
    assert!(client.lock("place").acquire().unwrap().token() > 0);
}

#[test]
fn a_runtime_worker_is_refused_with_where_to_call_it_from() {
    let server = Server::start();
    let client = BlockingClient::open(server.url()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let inside = client.clone();
    let in_task = rt.block_on(async move {
        tokio::spawn(async move { inside.lock("w").acquire().map(drop) })
            .await
            .unwrap()
    });
    let in_body = rt.block_on(async { client.lock("w").acquire().map(drop) });
    for refused in [in_task, in_body] {
        let Err(Error::InvalidArgument { detail }) = refused else {
            panic!("{refused:?}");
        };
        assert!(
            detail.contains("async task") && detail.contains("spawn_blocking"),
            "{detail}"
        );
    }
    assert!(server.info("w").is_none());
}
