//! `rlock`: a distributed `flock` on Redis with the rlock module.
//!
//! ```text
//! rlock run KEY [--shared | --exclusive | --permits N] [--wait D] [--lease D [--renew]]
//!           [--kill-grace D] [--kill-leftovers] [--check D] -- CMD ARGS...   run CMD holding KEY
//! rlock info KEY [--shared | --permits]   show who holds KEY (exit 1: free, 2: error)
//! rlock release KEY --force [--shared | --permits]   remove KEY's lock, whoever holds it
//! ```
//!
//! The server is `--url`, or `$RLOCK_URL`, or `redis://127.0.0.1:6379/` (for a Redis
//! Cluster, any node; with Sentinel, `redis+sentinel://host:port,.../<master-name>`);
//! `--timeout D` bounds every reply and connection (default 2 s). Both may come before or
//! after the subcommand. An error of a server names it (`host:port`, see `failure.rs`).
//! Several `--url`s (an odd number, at least 3, of independent servers) make `run` hold a
//! RedLock (granted by a majority of them), `info` show each server, and `release` remove
//! the lock on every one.
//!
//! `run` holds the lock with the watchdog (or a fixed `--lease`) while CMD runs, gives CMD
//! `RLOCK_KEY`, `RLOCK_OWNER` and `RLOCK_TOKEN` (the fencing token) in its environment, and
//! releases the lock once CMD's process group is empty. `supervise.rs` tells how the group
//! is stopped before the lock may pass on, `signals.rs` which signals are passed on, and
//! `group.rs` what stops the group if `rlock` dies, `check.rs` how a lock taken away is
//! noticed within `--check`.
//!
//! Exit status of `run`: CMD's own (128 + n if a signal n ended it); 75 when `--wait` ran
//! out; 76 when the lock was lost, or its lease was about to end, while CMD ran (CMD is
//! stopped); 126/127 when CMD cannot be run / is not found; 2 on usage errors (an option
//! value that cannot work, such as `--lease 0`, or a `--kill-grace` that does not fit in
//! the lease); 1 on any other error.

mod admin;
mod check;
mod duration;
mod failure;
mod group;
mod held;
mod kinds;
mod plan;
mod run;
mod signals;
mod supervise;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rlock_client::{Client, ClientOptions};

use check::Family;
use duration::parse_positive;
use failure::{At, Failure};
use kinds::Asked;
use run::RunCmd;

/// `info` could not tell (as `grep`: 0 found, 1 not found, 2 error).
const EXIT_INFO_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "rlock",
    version,
    about = "Distributed locks on Redis (rlock module)"
)]
struct Cli {
    /// Redis server URL (for a Redis Cluster, any node's; with Sentinel,
    /// redis+sentinel://host:port,.../<master-name>). Give it 3, 5, ... times for
    /// independent servers: `run` then holds a RedLock, granted by a majority of them.
    #[arg(
        long,
        env = "RLOCK_URL",
        default_value = "redis://127.0.0.1:6379/",
        global = true
    )]
    url: Vec<String>,
    /// How long a connection or a reply may take before rlock gives up (e.g. 500ms, 1.5s);
    /// a waiting run checks this often that the server still answers.
    #[arg(long, value_parser = parse_positive, default_value = "2s", global = true)]
    timeout: Duration,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a command while holding a lock (a distributed `flock`).
    ///
    /// With --shared (-s), the run takes a read hold of the read-write lock KEY instead:
    /// shared with other --shared runs, excluded by a write hold, which --exclusive (-x)
    /// takes (a different object from the plain lock KEY of a run without these flags). With
    /// --permits N, it takes one of the N permits of the semaphore KEY: at most N such runs
    /// at once.
    ///
    /// The command gets RLOCK_KEY, RLOCK_OWNER and RLOCK_TOKEN (the fencing token) in its
    /// environment, and runs in a process group of its own; the lock is released once every
    /// process of that group ended (what the command leaves running keeps the lock, unless
    /// --kill-leftovers). The group must be dead before the lock can pass to anyone else: if
    /// the lease is about to end without renewal, the group gets SIGTERM --kill-grace before
    /// the lease's safe end and SIGKILL just before it; a lock found lost (a renewal refused,
    /// or a --check showing it free or held by another), SIGKILL at once; if rlock dies, its
    /// guardian kills the group. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
    /// SIGUSR2 and SIGALRM sent to rlock are passed on to the group. Ctrl-Z (SIGTSTP) stops
    /// the group, then rlock; the lease is not renewed while stopped, and on continuing with
    /// less than --kill-grace of it left, the group is killed instead of continued.
    ///
    /// Exit status: the command's own (128 + n if signal n ended it); 75 when --wait ran out;
    /// 76 when the lock was lost, or its lease was about to end, while the command ran (its
    /// group is stopped); 126/127 when the command cannot be run / is not found; 2 on usage
    /// errors (an option value that cannot work, a --kill-grace that does not fit in the
    /// lease); 1 on other errors (a server that cannot be reached, fewer than a majority of
    /// several --url servers reachable included).
    Run(RunCmd),
    /// Show who holds a lock; exits 1 when it is free, 2 on errors. Without a flag, KEY may
    /// be a plain lock, a read-write lock or a semaphore: it is shown as what it is.
    Info {
        /// The lock's key.
        key: String,
        /// KEY is a read-write lock (as `run --shared` and `run -x` take): show its mode and
        /// holders (RWLOCK.INFO).
        #[arg(long, short = 's')]
        shared: bool,
        /// KEY is a semaphore (as `run --permits` takes): show its total, the permits
        /// available and its holders (SEM.INFO); exits 1 when it does not exist.
        #[arg(long, conflicts_with = "shared")]
        permits: bool,
    },
    /// Remove a lock whoever holds it (LOCK.FORCERELEASE).
    Release {
        /// The lock's key.
        key: String,
        /// Required: this takes the lock away from its holder.
        #[arg(long)]
        force: bool,
        /// KEY is a read-write lock (as `run --shared` and `run -x` take): remove it,
        /// whoever holds it (RWLOCK.FORCERELEASE).
        #[arg(long, short = 's')]
        shared: bool,
        /// KEY is a semaphore: end every holding of it, whoever holds it; its total stays
        /// (SEM.FORCERELEASE).
        #[arg(long, conflicts_with = "shared")]
        permits: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let error_exit = match cli.command {
        Cmd::Info { .. } => EXIT_INFO_ERROR,
        _ => 1,
    };
    let timeout = cli.timeout;
    match run(cli).await {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("rlock: {}", failure.describe(timeout).await);
            ExitCode::from(error_exit)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let options = ClientOptions::new()
        .connect_timeout(cli.timeout)
        .response_timeout(cli.timeout)
        .keepalive(cli.timeout);
    match cli.command {
        Cmd::Run(run) => run.run(&cli.url, options).await,
        Cmd::Info {
            key,
            shared,
            permits,
        } => {
            let clients = open(&cli.url, options).await?;
            admin::info(&clients, &key, family(shared, permits)).await
        }
        Cmd::Release {
            key,
            force,
            shared,
            permits,
        } => {
            let clients = open(&cli.url, options).await?;
            admin::force_release(&clients, &key, (force, family(shared, permits))).await
        }
    }
}

/// What KEY is, by the flags `--shared` and `--permits` of `info` and `release`.
fn family(shared: bool, permits: bool) -> Asked {
    let (family, flag) = match (shared, permits) {
        (true, _) => (Family::Rw, Some("--shared")),
        (false, true) => (Family::Sem, Some("--permits")),
        (false, false) => (Family::Lock, None),
    };
    Asked {
        family,
        flag,
        run: false,
    }
}

/// A client of each server. With several servers (a RedLock), one that cannot be reached
/// now is left out: a majority of them is enough.
async fn open(urls: &[String], options: ClientOptions) -> Result<Vec<Client>, Failure> {
    let mut clients = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        let server = failure::server_of(url);
        match Client::open_with(url.as_str(), options).await.at(&server) {
            Ok(client) => clients.push(client),
            // The last one's error is the answer when none could be opened.
            Err(e) if urls.len() > 1 && (i + 1 < urls.len() || !clients.is_empty()) => {
                let within = options.connect_timeout_duration();
                eprintln!("rlock: {}; going on without it", e.describe(within).await);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(clients)
}
