//! The README's sample, whole: a program of its own, as a new project would have it (its
//! `[dependencies]` are `rlock-client` and `tokio` with the `macros` and `rt-multi-thread`
//! features). `tests/docs.rs` checks that the README quotes these lines verbatim.
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! cargo run -p rlock-client --example quickstart -- redis://127.0.0.1:6379/
//! ```

use rlock_client::{redis, Client, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let url = std::env::args().nth(1); // e.g. redis://127.0.0.1:6380/
    let client = Client::open(url.as_deref().unwrap_or("redis://127.0.0.1:6379/")).await?;

    let guard = client.lock("lock:order:42").acquire().await?; // waits; the watchdog renews
    println!("{} held with fencing token {}", guard.key(), guard.token());
    // Reentrant: a nested acquisition in the same task adds a hold instead of waiting.
    let inner = client.lock("lock:order:42").acquire().await?;
    assert_eq!(inner.release().await?, 1); // one hold left: still held
    guard.release().await?; // Err(Error::Lost { .. }) if the lock was lost meanwhile

    // Runs the work while holding the lock, and cancels it if the lock is lost. The write
    // goes through the lock (LOCK.FENCED): it lands only while the holding is current.
    let added = client
        .lock("lock:{order:42}")
        .with_lock(|held| async move {
            let mut hset = redis::cmd("HSET"); // rlock_client::redis: the client's own
            hset.arg("order:{order:42}").arg("state").arg("paid");
            held.fenced::<i64>(&hset).await
        })
        .await??;
    println!("{added} field(s) written, fenced by the lock");
    client.close().await // before main returns: releases every lock still held
}
