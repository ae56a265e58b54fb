//! Scenario 9's third client process: the client crate itself, `acquire` called for every
//! wait in one process (10,000 futures, one task each), to count the connections it takes.

use std::time::Duration;

use rlock_client::Client;

use crate::wait_mode::{key, Mode};

/// What the process's waits did in their first seconds.
pub struct Pending {
    /// Acquisitions still waiting.
    pub pending: usize,
    /// The first error an acquisition ended with, if any did.
    pub failure: Option<String>,
}

/// Starts `waits` acquisitions of locks held by others, on `keys` locks, and returns once
/// they had [`SETTLE`] to queue (they keep waiting while the runtime lives: it is leaked,
/// and the process ends when its stdin closes).
pub fn run(port: u16, waits: usize, keys: usize) -> Pending {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    let pending = runtime.block_on(start(port, waits, keys));
    std::mem::forget(runtime);
    pending
}

/// How long the acquisitions have to queue, or to fail.
const SETTLE: Duration = Duration::from_secs(5);

async fn start(port: u16, waits: usize, keys: usize) -> Pending {
    let client = match Client::open(format!("redis://127.0.0.1:{port}/")).await {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for i in 0..waits {
        let lock = client.lock(key(Mode::Client, keys, i));
        let tx = tx.clone();
        tokio::spawn(async move {
            let ended = lock.acquire().await;
            let _ = tx.send(ended.err().map(|e| e.to_string()));
            std::future::pending::<()>().await;
        });
    }
    tokio::time::sleep(SETTLE).await;
    let mut ended = 0;
    let mut failure = None;
    while let Ok(outcome) = rx.try_recv() {
        ended += 1;
        failure = failure.or(outcome);
    }
    Pending {
        pending: waits - ended,
        failure,
    }
}

fn failed(why: String) -> Pending {
    Pending {
        pending: 0,
        failure: Some(why),
    }
}
