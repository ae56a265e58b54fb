//! Scenario 13: how soon a holder learns that the server ended its holding. Over many
//! trials, a lock is held through the client crate (watchdog on, default lease), another
//! connection ends it on the server — `LOCK.FORCERELEASE`, `DEL`, `FLUSHALL` — and the time
//! from that command's send to the guard's `lost()` resolving in the application is
//! recorded: with the server's announcements (the client listens, the default), and with
//! the renewals alone (a client that does not listen, lease 3 s: a renewal every second).

use std::time::{Duration, Instant};

use rlock_client::{Client, ClientOptions, LockOptions};

use crate::clock::percentile;
use crate::server::{BenchServer, Snapshot};

/// The ways a holding is ended on the server.
const CAUSES: [&str; 3] = ["LOCK.FORCERELEASE", "DEL", "FLUSHALL"];
/// The renewal-only path's lease: the watchdog renews every third of it.
const SHORT_LEASE: Duration = Duration::from_secs(3);
/// A hang limit per trial.
const LIMIT: Duration = Duration::from_secs(15);

/// Delays (ms) from the end's send to `lost()`, one row per way of ending; and the server
/// µs (commandstats) per uncontended acquire+release pair of a client that listens and of
/// one that does not, alternated.
#[derive(Debug, Clone, Default)]
pub struct Losses {
    pub rows: Vec<(String, Vec<f64>)>,
    pub pair_us: [f64; 2],
}

/// Pairs per client per round of the pair measurement, and rounds.
const PAIRS: usize = 2000;
const ROUNDS: usize = 5;

/// Runs `trials` trials of each cause with announcements, and `renewal_trials` of a force
/// release with renewals alone.
pub fn run(server: &BenchServer, trials: usize, renewal_trials: usize) -> Result<Losses, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let url = format!("redis://127.0.0.1:{}/", server.port());
    runtime.block_on(async {
        let told = Client::open(&url).await.map_err(|e| e.to_string())?;
        let deaf = ClientOptions::new().listen_for_losses(false);
        let deaf = Client::open_with(&url, deaf)
            .await
            .map_err(|e| e.to_string())?;
        let admin = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
        let mut admin = admin
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| e.to_string())?;
        let mut out = Losses::default();
        for cause in CAUSES {
            let options = LockOptions::new().watchdog(true);
            let delays = trial_set(&told, &mut admin, cause, options, trials).await?;
            out.rows.push((format!("{cause}, announced"), delays));
        }
        let options = LockOptions::new().lease(SHORT_LEASE).watchdog(true);
        let cause = CAUSES[0];
        let delays = trial_set(&deaf, &mut admin, cause, options, renewal_trials).await?;
        out.rows
            .push((format!("{cause}, renewals alone (lease 3 s)"), delays));
        out.pair_us = pair_costs(server, [&told, &deaf]).await?;
        Ok(out)
    })
}

/// Server µs per acquire+release pair of each client, alternating rounds.
async fn pair_costs(server: &BenchServer, clients: [&Client; 2]) -> Result<[f64; 2], String> {
    let mut stats = crate::server::connect(server.port()).map_err(|e| e.to_string())?;
    let (mut usec, mut pairs) = ([0u64; 2], [0usize; 2]);
    for _ in 0..ROUNDS {
        for (i, client) in clients.iter().enumerate() {
            let before = Snapshot::take(&mut stats);
            let lock = client.lock(format!("bench:pair:{i}"));
            for _ in 0..PAIRS {
                let guard = lock.acquire().await.map_err(|e| e.to_string())?;
                guard.release().await.map_err(|e| e.to_string())?;
            }
            let delta = before.until(&Snapshot::take(&mut stats));
            usec[i] += delta.usec_of(&["lock.acquire", "lock.release"]);
            pairs[i] += PAIRS;
        }
    }
    Ok([0, 1].map(|i| usec[i] as f64 / pairs[i] as f64))
}

async fn trial_set(
    client: &Client,
    admin: &mut redis::aio::MultiplexedConnection,
    cause: &str,
    options: LockOptions,
    trials: usize,
) -> Result<Vec<f64>, String> {
    let mut delays = Vec::with_capacity(trials);
    for i in 0..trials {
        let key = format!("bench:loss:{i}");
        let guard = client
            .lock(&key)
            .options(options)
            .acquire()
            .await
            .map_err(|e| e.to_string())?;
        // Let the renewal path start from a random point of its period.
        tokio::time::sleep(Duration::from_millis((i as u64 * 37) % 200)).await;
        let mut end = redis::cmd(cause);
        if cause != "FLUSHALL" {
            end.arg(&key);
        }
        let sent = Instant::now();
        let ending = end.query_async::<redis::Value>(admin);
        let (ended, lost) = tokio::join!(ending, tokio::time::timeout(LIMIT, guard.lost()));
        ended.map_err(|e| e.to_string())?;
        lost.map_err(|_| format!("{cause}: lost() did not resolve within {LIMIT:?}"))?;
        delays.push(sent.elapsed().as_secs_f64() * 1000.0);
        drop(guard);
    }
    Ok(delays)
}

/// The scenario's table.
pub fn table(out: &mut String, losses: &Result<Losses, String>) {
    out.push_str(
        "\n### Scenario 13: how soon a holder learns that the server ended its holding\n\n",
    );
    let losses = match losses {
        Ok(l) => l,
        Err(e) => return out.push_str(&format!("not run: {e}\n")),
    };
    out.push_str("| ended by | trials | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|\n");
    for (what, delays) in &losses.rows {
        let max = delays.iter().copied().fold(0.0, f64::max);
        out.push_str(&format!(
            "| {what} | {} | {:.2} | {:.2} | {:.2} |\n",
            delays.len(),
            percentile(delays, 50.0),
            percentile(delays, 99.0),
            max
        ));
    }
    let [told, deaf] = losses.pair_us;
    out.push_str(&format!(
        "\nServer µs (commandstats) per uncontended acquire+release pair of the client crate, \
         {ROUNDS} alternated rounds of {PAIRS}: listening {told:.2}, not listening {deaf:.2} \
         (×{:.2}).\n",
        told / deaf.max(f64::MIN_POSITIVE)
    ));
}

/// `losses TRIALS`: scenario 13 alone, on a server started here.
pub fn alone(args: &[String], module: &std::path::Path) -> Result<(), String> {
    let [trials] = args else {
        return Err(crate::USAGE.to_owned());
    };
    let trials: usize = trials.parse().map_err(|_| crate::USAGE.to_owned())?;
    let server = BenchServer::start(module)?;
    let losses = run(&server, trials, (trials / 10).max(5));
    let mut out = String::new();
    table(&mut out, &losses);
    println!("{out}");
    losses.map(|_| ())
}
