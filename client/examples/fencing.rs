//! Fencing tokens: a resource that remembers the highest token it has seen refuses the late
//! write of a former holder that was paused past its lease (Kleppmann's point about Redlock).
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! cargo run -p rlock-client --example fencing -- redis://127.0.0.1:6379/
//! ```
//!
//! Worker A takes the lock with a short lease, writes, then stalls (a GC pause, a swapped-out
//! VM) past its lease. Worker B gets the lock the moment A's lease ends and writes. When A
//! wakes up it still believes it holds the lock, but its write carries the older token and
//! the store refuses it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rlock_client::{Client, LockOptions};
use tokio::time::sleep;

/// A storage service protected by the lock: it keeps the highest fencing token it has seen
/// and refuses writes that carry a lower one.
#[derive(Default)]
struct FencedStore {
    state: Mutex<StoreState>,
}

#[derive(Default)]
struct StoreState {
    highest_token: u64,
    rows: Vec<String>,
}

/// A write refused because a newer holder has written since.
#[derive(Debug)]
struct StaleToken {
    token: u64,
    highest: u64,
}

impl FencedStore {
    /// Writes `row` on behalf of the holder of `token`, unless a higher token was seen.
    fn write(&self, token: u64, row: &str) -> Result<(), StaleToken> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if token < state.highest_token {
            return Err(StaleToken {
                token,
                highest: state.highest_token,
            });
        }
        state.highest_token = token;
        state.rows.push(row.to_owned());
        Ok(())
    }

    fn rows(&self) -> Vec<String> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.rows.clone()
    }
}

const KEY: &str = "example:fencing";
const LEASE: Duration = Duration::from_millis(500);
const PAUSE: Duration = Duration::from_millis(1200);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let store = Arc::new(FencedStore::default());
    let (a, b) = (
        Client::open(url.as_str()).await?,
        Client::open(url.as_str()).await?,
    );

    // A: a fixed 500 ms lease, so nobody renews it while A is stalled.
    let lock_a = a.lock(KEY).options(LockOptions::new().lease(LEASE));
    let guard_a = lock_a.acquire().await?;
    println!("A: holding with token {}", guard_a.token());
    store
        .write(guard_a.token(), "A: first write")
        .expect("the first write is fresh");

    let worker_b = {
        let (lock_b, store) = (b.lock(KEY), store.clone());
        tokio::spawn(async move {
            // Queued on the server; handed the lock when A's lease runs out.
            let guard_b = lock_b.acquire().await?;
            println!("B: holding with token {}", guard_b.token());
            match store.write(guard_b.token(), "B: write after A's lease") {
                Ok(()) => println!("B: write accepted"),
                Err(stale) => println!("B: write refused: {stale:?}"),
            }
            guard_b.release().await
        })
    };

    println!("A: stalls for {PAUSE:?} (its lease is {LEASE:?})");
    sleep(PAUSE).await;
    // A resumes and goes on as if it still held the lock: its token is now stale.
    match store.write(guard_a.token(), "A: late write after the pause") {
        Ok(()) => return Err("A's late write was accepted: the store is not fenced".into()),
        Err(StaleToken { token, highest }) => {
            println!("A: late write refused: token {token} is lower than {highest}, already seen")
        }
    }
    match guard_a.release().await {
        Ok(_) => println!("A: released"),
        Err(err) => println!("A: release says: {err}"),
    }
    worker_b.await??;

    println!("store holds: {:?}", store.rows());
    Ok(())
}
