//! A tour of rlock-client against a server with the rlock module.
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! RUST_LOG=rlock_client=debug cargo run -p rlock-client --example basic -- redis://127.0.0.1:6379/
//! ```

use std::time::Duration;

use rlock_client::{Client, LockOptions};

#[tokio::main]
async fn main() -> Result<(), rlock_client::Error> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let client = Client::open(url.as_str()).await?;

    // 1. Acquire, waiting as long as it takes; the watchdog keeps the lock meanwhile.
    let guard = client.lock("example:order:42").acquire().await?;
    println!(
        "holding {} as {} with fencing token {}",
        guard.key(),
        guard.owner(),
        guard.token()
    );

    // 2. Another owner cannot have it; it gets `None` after waiting 200 ms. (Here, in the
    //    same task, `client.lock` would reenter: another owner is another task, or a handle.)
    let other = client.owner().lock("example:order:42");
    let busy = other.try_acquire(Duration::from_millis(200)).await?;
    println!("a second owner got it: {}", busy.is_some());

    // 3. A waiter gets the lock handed over the moment it is released.
    let waiter = tokio::spawn(async move { other.acquire().await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    if let Some(info) = client.info("example:order:42").await? {
        println!("{} waiter(s) queued behind {}", info.waiters, info.owner);
    }
    guard.release().await?;
    let next = waiter.await.expect("waiter task")?;
    println!("handed over with token {}", next.token());
    drop(next); // released in the background

    // 4. Reentrancy: the acquisitions of one task (here, outside any task, of one thread)
    //    reenter through `client.lock`; an owner handle shares a holding between tasks.
    let me = client.owner();
    let outer = me.lock("example:tree").acquire().await?;
    let inner = me.lock("example:tree").acquire().await?;
    println!(
        "reentered: {} hold(s) left after one release",
        inner.release().await?
    );
    outer.release().await?;

    // 5. A watched short lease outlives itself; losing the lock is reported.
    let watched = LockOptions::new()
        .lease(Duration::from_millis(300))
        .watchdog(true);
    let guard = client
        .lock("example:job")
        .options(watched)
        .acquire()
        .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!("after 1 s with a 300 ms lease, lost: {}", guard.is_lost());
    client.force_release("example:job").await?;
    let reason = guard.lost().await;
    println!(
        "lost it: {reason}; release says: {}",
        guard.release().await.unwrap_err()
    );

    // 6. Work under a lock in one call: cancelled if the lock is lost, released after.
    let answer = client
        .lock("example:report")
        .with_lock(|held| async move {
            println!(
                "working with token {}, {:?} left at least",
                held.token(),
                held.remaining()
            );
            42
        })
        .await?;
    println!("the work answered {answer}");

    // 7. Before main returns (the runtime ends with it): release whatever is still held.
    client.close().await
}
