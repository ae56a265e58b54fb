//! The samples of the README and of `docs/client.md`, whole: the docs quote these lines
//! verbatim, and `tests/docs.rs` checks that every Rust sample there is an excerpt of an
//! example, so the samples compile with the crate.
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! cargo run -p rlock-client --example guide
//! ```

use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error};

/// The resource the lock protects: it is handed the fencing token of every write.
async fn write_order(token: u64) -> Result<(), Error> {
    println!("order written with fencing token {token}");
    Ok(())
}

/// Work that takes a while and stops when the lock is lost.
async fn work() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn readme() -> Result<(), Error> {
    let client = Client::open("redis://127.0.0.1:6379/").await?;

    let guard = client.lock("lock:order:42").acquire().await?; // waits; the watchdog renews
    write_order(guard.token()).await?; // the resource refuses tokens older than the last
    guard.release().await?; // Err(Error::Lost { .. }) if the lock was lost meanwhile

    let written = client
        .lock("lock:order:42")
        .with_lock(|held| async move { write_order(held.token()).await }) // cancelled if lost
        .await?;
    written?;
    client.close().await // before main returns: releases every lock still held
}

async fn guide() -> Result<(), Error> {
    let options = ClientOptions::new() // every wait of the client is bounded
        .response_timeout(Duration::from_secs(1)) // a reply (default 2 s)
        .margin(Duration::from_millis(50)); // lease not counted on (default 20 ms + 1%)
    let client = Client::open_with("redis://127.0.0.1:6379/", options).await?;

    // Runs the work while holding the lock; drops (cancels) it if the lock is lost.
    let written = client
        .lock("lock:order:42")
        .with_lock(|held| async move { write_order(held.token()).await }) // fence it
        .await?; // Err(Error::Lost { .. }) if lost
    written?;

    // Or by hand: a guard, its deadline, and a loss signal to move into spawned work.
    let guard = client.lock("lock:report").acquire().await?; // waits; watchdog on
    let lost = guard.lost_signal(); // Clone + Send + 'static
    let task = tokio::spawn(async move {
        tokio::select! { _ = lost.lost() => {}, _ = work() => {} }
    });
    println!(
        "held for at least {:?} more (until {:?})",
        guard.remaining(),
        guard.valid_until()
    );
    task.await.ok();
    guard.release().await?; // Err(Lost) if it was lost

    // Fenced writes: data in the lock's slot (one hash tag), run only while the holding is current.
    let order = client.lock("lock:{order:42}").acquire().await?;
    let mut hset = redis::cmd("HSET");
    hset.arg("order:{order:42}").arg("state").arg("paid");
    let added: i64 = order.fenced(&hset).await?; // Err(Error::Lost { .. }) if it is gone
    println!("{added} field(s) added");
    order.release().await?;

    let me = client.owner(); // reentrant: the same owner takes a lock it holds again
    let outer = me.lock("lock:tree").acquire().await?;
    let inner = me.lock("lock:tree").acquire().await?;
    assert_eq!(inner.release().await?, 1); // holds remaining
    outer.release().await?;
    client.close().await // before main returns: releases every guard's lock
}

async fn sentinel() -> Result<(), Error> {
    let client = Client::open("redis+sentinel://10.0.0.1,10.0.0.2,10.0.0.3/mymaster").await?;
    client.close().await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    readme().await?;
    guide().await?;
    if std::env::args().any(|arg| arg == "--sentinel") {
        sentinel().await?;
    }
    Ok(())
}
