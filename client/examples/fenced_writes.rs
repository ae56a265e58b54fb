//! Fenced writes: the data lives in the lock's own Redis, in the lock's slot, and every write
//! goes through the guard (`LOCK.FENCED`). The server runs a write only while the writer's
//! holding is the lock's current one, so a holder paused past its lease cannot write at all.
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! cargo run -p rlock-client --example fenced_writes -- redis://127.0.0.1:6379/
//! ```
//!
//! Worker A takes the lock with a short lease, writes, then stalls past its lease. Worker B
//! gets the lock and writes. When A wakes up, its write is refused by the server and its
//! guard reports the loss.

use std::time::Duration;

use rlock_client::{Client, Error, LockOptions};
use tokio::time::sleep;

/// The lock and the data it guards share the hash tag `{order:42}`: one slot in a cluster.
const LOCK: &str = "lock:{order:42}";
const ORDER: &str = "order:{order:42}";
const LEASE: Duration = Duration::from_millis(500);
const PAUSE: Duration = Duration::from_millis(1200);

fn set_state(state: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(ORDER).arg("state").arg(state);
    cmd
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let (a, b) = (
        Client::open(url.as_str()).await?,
        Client::open(url.as_str()).await?,
    );

    // A: a fixed lease, so nobody renews it while A is stalled.
    let guard_a = a
        .lock(LOCK)
        .options(LockOptions::new().lease(LEASE))
        .acquire()
        .await?;
    let _: i64 = guard_a.fenced(&set_state("paid")).await?;
    println!(
        "A: holding with token {}, wrote state=paid",
        guard_a.token()
    );

    let worker_b = tokio::spawn(async move {
        // Queued on the server; handed the lock when A's lease runs out.
        let guard_b = b.lock(LOCK).acquire().await?;
        let _: i64 = guard_b.fenced(&set_state("shipped")).await?;
        println!(
            "B: holding with token {}, wrote state=shipped",
            guard_b.token()
        );
        guard_b.release().await
    });

    println!("A: stalls for {PAUSE:?} (its lease is {LEASE:?})");
    sleep(PAUSE).await;
    worker_b.await??;
    // A resumes as if it still held the lock: the server refuses its write.
    match guard_a.fenced::<i64>(&set_state("refunded")).await {
        Err(Error::Lost { reason, .. }) => println!("A: late write refused: {reason}"),
        Ok(_) => return Err("A's late write was accepted".into()),
        Err(other) => return Err(other.into()),
    }
    let mut hget = redis::cmd("HGET");
    hget.arg(ORDER).arg("state");
    let mut con = redis::Client::open(url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let state: String = hget.query_async(&mut con).await?;
    println!("the order's state: {state}");
    Ok(())
}
