//! Scenario 7: one lock contended by several tasks of one process through the client crate,
//! held by one server (`Lock`) or by a majority of three independent servers (`RedLock`).
//! Each task acquires (waiting server-side), releases at once, and acquires again; the
//! handoff time is from a holder's release being sent to the next holder's grant.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rlock_client::{Client, LockOptions, RedLock};

use crate::clock::percentile;
use crate::server::BenchServer;

/// Contending tasks.
const TASKS: usize = 8;
/// A fixed lease, so that no watchdog renews during the measurement.
const LEASE: Duration = Duration::from_secs(10);
const KEY: &str = "bench:redlock";

/// What one side measured.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub acquisitions: u64,
    pub per_s: f64,
    /// Release sent → next grant, in ms.
    pub handoff_ms: Vec<f64>,
}

impl Run {
    pub fn handoff_p(&self, p: f64) -> f64 {
        percentile(&self.handoff_ms, p)
    }
}

/// The last release's send time, and the handoffs seen.
#[derive(Default)]
struct Shared {
    released_at: Option<Instant>,
    handoff_ms: Vec<f64>,
    acquisitions: u64,
}

/// Runs both sides: index 0 one server (the first of `servers`), index 1 a RedLock over all.
pub fn run(servers: &[&BenchServer; 3], duration: Duration) -> Result<[Run; 2], String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let mut clients = Vec::new();
        for server in servers.iter() {
            let url = format!("redis://127.0.0.1:{}/", server.port());
            clients.push(Client::open(&url).await.map_err(|e| e.to_string())?);
        }
        let one = side(duration, {
            let client = clients[0].clone();
            move || Contender::One(client.clone())
        })
        .await?;
        let quorum = side(duration, move || Contender::Quorum(clients.clone())).await?;
        Ok([one, quorum])
    })
}

#[derive(Clone)]
enum Contender {
    One(Client),
    Quorum(Vec<Client>),
}

impl Contender {
    /// Acquires, then releases at once.
    async fn once(&self, shared: &Mutex<Shared>) -> Result<(), String> {
        let options = LockOptions::new().lease(LEASE);
        let release = match self {
            Contender::One(client) => {
                let lock = client.lock(KEY).options(options);
                let guard = lock.acquire().await.map_err(|e| e.to_string())?;
                granted_and_releasing(shared);
                guard.release().await.map(drop)
            }
            Contender::Quorum(clients) => {
                let lock = RedLock::new(clients.clone(), KEY).map_err(|e| e.to_string())?;
                let lock = lock.options(options);
                let guard = lock.acquire().await.map_err(|e| e.to_string())?;
                granted_and_releasing(shared);
                guard.release().await
            }
        };
        release.map_err(|e| e.to_string())
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A grant came (the handoff from the last release is measured), and is released at once.
fn granted_and_releasing(shared: &Mutex<Shared>) {
    let mut s = lock(shared);
    s.acquisitions += 1;
    if let Some(at) = s.released_at.take() {
        s.handoff_ms.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    s.released_at = Some(Instant::now());
}

async fn side(duration: Duration, make: impl Fn() -> Contender) -> Result<Run, String> {
    let shared = Arc::new(Mutex::new(Shared::default()));
    let started = Instant::now();
    let end = started + duration;
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (contender, shared) = (make(), shared.clone());
        tasks.push(tokio::spawn(async move {
            while Instant::now() < end {
                contender.once(&shared).await?;
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let s = lock(&shared);
    Ok(Run {
        acquisitions: s.acquisitions,
        per_s: s.acquisitions as f64 / elapsed,
        handoff_ms: s.handoff_ms.clone(),
    })
}
