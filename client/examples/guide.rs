//! The samples of `docs/client.md`, whole: the docs quote these lines verbatim, and
//! `tests/docs.rs` checks that every Rust sample there is an excerpt of an example, so the
//! samples compile with the crate (the README's is `quickstart.rs`); `client/tests/guide.rs`
//! runs them against a server, and their asserts check the outcomes the docs state.
//!
//! ```text
//! redis-server --port 6379 --loadmodule target/release/librlock.so &
//! cargo run -p rlock-client --example guide -- redis://127.0.0.1:6379/
//! ```

use std::time::Duration;

use rlock_client::{Client, ClientOptions, Error, LockOptions};
use tracing_subscriber::fmt::format::FmtSpan;

/// The resource the lock protects: it is handed the fencing token of every write.
async fn write_order(token: u64) -> Result<(), Error> {
    println!("order written with fencing token {token}");
    Ok(())
}

/// Work that takes a while and stops when the lock is lost.
async fn work() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn guide(url: &str) -> Result<(), Error> {
    let options = ClientOptions::new() // every wait of the client is bounded
        .response_timeout(Duration::from_secs(1)) // a reply (default 2 s)
        .margin(Duration::from_millis(50)); // lease not counted on (default 20 ms + 1%)
    let client = Client::open_with(url, options).await?; // "redis://127.0.0.1:6379/"

    // Runs the work while holding the lock; drops (cancels) it if the lock is lost.
    let written = client
        .lock("lock:order:42")
        .with_lock(|held| async move { write_order(held.token()).await }) // token: fence it
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
                            // A lock is a future too: awaiting it acquires, as acquire() does (rw.read().await).
    let report = client.lock("lock:report").await?;
    report.release().await?;

    // Fenced writes: data in the lock's slot (one hash tag), run only while the holding is current.
    let order = client.lock("lock:{order:42}").acquire().await?;
    let mut hset = redis::cmd("HSET");
    hset.arg("order:{order:42}").arg("state").arg("paid");
    let added: i64 = order.fenced(&hset).await?; // Err(Error::Lost { .. }) if it is gone
    println!("{added} field(s) added");
    order.release().await?;
    // The same inside with_lock: its work gets fenced(), token() and owner().
    let mut hset = redis::cmd("HSET");
    hset.arg("order:{order:42}").arg("state").arg("shipped");
    let written = client
        .lock("lock:{order:42}")
        .with_lock(|held| async move { held.fenced::<i64>(&hset).await })
        .await?; // Err(Error::Lost { .. }) if lost before the work ended
    written?; // the fenced write's own outcome

    // Reentrant inside the holding's scope (with_lock's work, or guard.scope(...)).
    let outer = client.lock("lock:tree").acquire().await?;
    let inner = outer.scope(client.lock("lock:tree").acquire()).await?; // a second hold
    assert_eq!(inner.token(), outer.token()); // the same holding
    assert_eq!(inner.release().await?, 1); // holds remaining: still held
                                           // Outside any scope, even in the same task, an acquisition contends (tokio's Mutex too).
    let busy = client.lock("lock:tree").try_acquire(Duration::ZERO).await?;
    assert!(busy.is_none()); // the lock is held: no reentry here
    outer.release().await?;
    // An explicit owner shares one holding between tasks (`<client id>:<n>`).
    let me = client.owner();
    let outer = me.lock("lock:tree").acquire().await?;
    let shared = me.clone();
    let inner = tokio::spawn(async move { shared.lock("lock:tree").acquire().await }).await;
    assert_eq!(inner.expect("the task")?.release().await?, 1);
    outer.release().await?;
    client.close().await // before main returns: releases every guard's lock
}

async fn read_write(client: &Client) -> Result<(), Error> {
    let config = client.rw_lock("lock:config"); // a read-write lock: RWLOCK.* on its key
    let reading = config.read().acquire().await?; // shared: other owners read at once
    let other = client.owner().rw_lock("lock:config");
    let also = other.read().try_acquire(Duration::ZERO).await?; // Some: readers share
    let writer = client.owner().rw_lock("lock:config");
    assert!(writer.write().try_acquire(Duration::ZERO).await?.is_none()); // readers hold
    let upgrade = other.write().try_acquire(Duration::ZERO).await; // it reads: Err(Upgrade)
    assert!(matches!(upgrade, Err(Error::Upgrade { .. }))); // release, then write
    also.expect("a read hold").release().await?;
    reading.release().await?;
    let writing = config.write().acquire().await?; // alone; readers and writers wait
    let mut hset = redis::cmd("HSET");
    hset.arg("config").arg("mode").arg("fast");
    let _: i64 = writing.fenced(&hset).await?; // LOCK.FENCED: the writer's
    let reading = writing.downgrade().await?; // a read hold, same token: readers join
    assert_eq!(reading.release().await?, 0); // writers waited until now
    Ok(())
}

async fn latch(client: &Client) -> Result<(), Error> {
    let loaded = client.latch("latch:shards"); // a countdown latch: LATCH.* on its key
    loaded.set(3).await?; // false (and the count kept) if it had one
    for shard in 0..3 {
        let done = client.latch("latch:shards");
        tokio::spawn(async move { done.count_down().await }); // shard loaded
        println!("loading shard {shard}");
    }
    loaded.wait().await?; // returns once the count is zero: every wait ends at once
    let open = loaded.wait_for(Duration::from_secs(1)).await?; // true: open
    assert!(open && loaded.count().await? == 0);
    Ok(())
}

async fn semaphore(client: &Client) -> Result<(), Error> {
    let pool = client.semaphore("sem:gpus"); // a semaphore: SEM.* on its key
    pool.set_permits(3).await?; // the total, shared by every client
    assert_eq!(pool.add_permits(1).await?, 4); // SEM.PERMITS ADD: the new total
    let training = pool.acquire(3).await?; // three of the four, renewed by the watchdog
    let more = training.scope(pool.acquire(1)).await?; // in its scope: one more, the same token
    let other = client.owner().semaphore("sem:gpus");
    assert!(other.try_acquire(1, Duration::ZERO).await?.is_none()); // none left
    assert_eq!(pool.available_permits().await?, 0); // a snapshot (SEM.INFO): all held
    assert_eq!(more.release().await?, 3); // gives back its own permit: 3 still held
    let ran = other
        .with_permits(1, |held| async move { held.token() })
        .await?;
    println!("ran on a permit with token {ran}");
    training.release().await?; // 0: this task holds nothing now
    let info = pool.info().await?.expect("it exists"); // SEM.INFO
    assert_eq!((info.permits, info.available), (4, 4));
    Ok(())
}

async fn errors(client: &Client) -> Result<(), Error> {
    let held = client.owner().lock("lock:busy").acquire().await?; // busy meanwhile
    let wait = LockOptions::new().wait(Duration::from_millis(100));
    let tried = client.lock("lock:busy").options(wait).acquire().await;
    assert!(matches!(tried, Err(Error::Timeout { .. }))); // the lock stayed busy
    match tried {
        Ok(guard) => drop(guard.release().await?),
        Err(e) if e.is_retryable() => println!("try again later: {e}"), // a passing trouble
        Err(e) => return Err(e), // a refusal that stays one: NotHeld, Upgrade, WrongType...
    }
    held.release().await?;
    Ok(())
}

async fn traced(client: &Client) -> Result<(), Error> {
    // Each acquisition is a span "acquire" (INFO): key, owner, kind, then token and waited_ms.
    let spans = tracing_subscriber::fmt().with_span_events(FmtSpan::CLOSE);
    spans.try_init().ok(); // acquire{key="lock:traced" owner=.. kind=Lock token=.. waited_ms=0}
    client.lock("lock:traced").await?.release().await?;
    Ok(())
}

async fn sentinel() -> Result<(), Error> {
    let client = Client::open("redis+sentinel://10.0.0.1,10.0.0.2,10.0.0.3/mymaster").await?;
    client.close().await
}

/// Every sample but Sentinel's, against the server at `url`.
pub async fn run(url: &str) -> Result<(), Error> {
    guide(url).await?;
    let client = Client::open(url).await?;
    read_write(&client).await?;
    latch(&client).await?;
    semaphore(&client).await?;
    errors(&client).await?;
    traced(&client).await?;
    client.close().await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let url = std::env::args().nth(1).filter(|arg| arg != "--sentinel");
    run(url.as_deref().unwrap_or("redis://127.0.0.1:6379/")).await?;
    if std::env::args().any(|arg| arg == "--sentinel") {
        sentinel().await?;
    }
    Ok(())
}
