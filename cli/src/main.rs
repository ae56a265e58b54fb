//! `rlock`: a distributed `flock` on Redis with the rlock module.
//!
//! ```text
//! rlock run KEY [--wait D] [--lease D [--renew]] [--kill-grace D] -- CMD ARGS...
//!                                  run CMD while holding KEY
//! rlock info KEY                   show who holds KEY (exit 1: free, 2: error)
//! rlock release KEY --force        remove KEY's lock, whoever holds it
//! ```
//!
//! The server is `--url`, or `$RLOCK_URL`, or `redis://127.0.0.1:6379/` (for a Redis
//! Cluster, any node; with Sentinel, `redis+sentinel://host:port,.../<master-name>`);
//! `--timeout D` bounds every reply and connection (default 2 s).
//! Several `--url`s (an odd number, at least 3, of independent servers) make `run` hold a
//! RedLock (granted by a majority of them), `info` show each server, and `release` remove
//! the lock on every one.
//!
//! `run` holds the lock with the watchdog (or a fixed `--lease`) while CMD runs, gives CMD
//! `RLOCK_KEY`, `RLOCK_OWNER` and `RLOCK_TOKEN` (the fencing token) in its environment, and
//! releases the lock when CMD exits. CMD runs in a process group of its own (see
//! `group.rs`): `SIGINT`, `SIGTERM` and `SIGHUP` are passed on to the whole group; when the
//! lock is lost, the group gets `SIGTERM`, then `SIGKILL` after `--kill-grace`; if `rlock`
//! dies, the kernel and a guardian process stop the group.
//!
//! Exit status of `run`: CMD's own (128 + n if a signal n ended it); 75 when `--wait` ran
//! out; 76 when the lock was lost while CMD ran (CMD is stopped); 126/127 when CMD cannot be
//! run / is not found; 1 on any other error.

mod duration;
mod group;
mod held;
mod supervise;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rlock_client::{Client, ClientOptions, Error, LockInfo, LockOptions, RedLock};

use duration::parse_duration;
use held::Held;
use supervise::supervise;

/// `--wait` ran out (`EX_TEMPFAIL`).
const EXIT_TIMEOUT: u8 = 75;
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
    #[arg(long, env = "RLOCK_URL", default_value = "redis://127.0.0.1:6379/")]
    url: Vec<String>,
    /// How long a connection or a reply may take before rlock gives up (e.g. 500ms, 1.5s);
    /// a waiting run checks this often that the server still answers.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    timeout: Duration,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a command while holding a lock (a distributed `flock`).
    ///
    /// The command gets RLOCK_KEY, RLOCK_OWNER and RLOCK_TOKEN (the fencing token) in its
    /// environment, and runs in a process group of its own that gets SIGINT, SIGTERM and
    /// SIGHUP passed on, and is stopped when the lock is lost or rlock dies. Exit status: the
    /// command's own (128 + n if signal n ended it); 75 when --wait ran out; 76 when the lock
    /// was lost while the command ran (its group is stopped); 126/127 when the command cannot
    /// be run / is not found; 1 on other errors.
    Run {
        /// The lock's key.
        key: String,
        /// Give up after this long (e.g. 500ms, 0.5, 10s, 2m; a bare number is seconds).
        /// Without it, wait as long as it takes.
        #[arg(long, value_parser = parse_duration)]
        wait: Option<Duration>,
        /// A fixed lease instead of the renewing watchdog (the lock ends when it runs out,
        /// and the command is then stopped), unless --renew is given too.
        #[arg(long, value_parser = parse_duration)]
        lease: Option<Duration>,
        /// Renew the --lease with the watchdog (every third of it) while the command runs.
        #[arg(long, requires = "lease")]
        renew: bool,
        /// How long the command's group has to exit after SIGTERM before SIGKILL, when the
        /// lock is lost.
        #[arg(long, value_parser = parse_duration, default_value = "5s")]
        kill_grace: Duration,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Show who holds a lock; exits 1 when it is free, 2 on errors.
    Info {
        /// The lock's key.
        key: String,
    },
    /// Remove a lock whoever holds it (LOCK.FORCERELEASE).
    Release {
        /// The lock's key.
        key: String,
        /// Required: this takes the lock away from its holder.
        #[arg(long)]
        force: bool,
    },
}

/// How `run` holds the lock and runs the command.
struct RunArgs {
    wait: Option<Duration>,
    options: LockOptions,
    kill_grace: Duration,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let error_exit = match cli.command {
        Cmd::Info { .. } => EXIT_INFO_ERROR,
        _ => 1,
    };
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rlock: {e}");
            ExitCode::from(error_exit)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Error> {
    let options = ClientOptions::new()
        .connect_timeout(cli.timeout)
        .response_timeout(cli.timeout)
        .keepalive(cli.timeout);
    let clients = open(&cli.url, options).await?;
    match cli.command {
        Cmd::Run {
            key,
            wait,
            lease,
            renew,
            kill_grace,
            command,
        } => {
            let options = match lease {
                Some(lease) => LockOptions::new().lease(lease).watchdog(renew),
                None => LockOptions::new(),
            };
            let args = RunArgs {
                wait,
                options,
                kill_grace,
            };
            match clients.as_slice() {
                [client] => run_locked(client, &key, &args, &command).await,
                _ => run_redlocked(cli.url.len(), clients, &key, &args, &command).await,
            }
        }
        Cmd::Info { key } => info(&clients, &key).await,
        Cmd::Release { key, force } => {
            if !force {
                eprintln!("rlock: release takes the lock from its holder: add --force");
                return Ok(ExitCode::from(2));
            }
            for client in &clients {
                let removed = client.force_release(&key).await?;
                let state = if removed { "released" } else { "was free" };
                match clients.len() {
                    1 => println!("{key}: {state}"),
                    _ => println!("{key} on {}: {state}", client.server()),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A client of each server. With several servers (a RedLock), one that cannot be reached
/// now is left out: a majority of them is enough.
async fn open(urls: &[String], options: ClientOptions) -> Result<Vec<Client>, Error> {
    let mut clients = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        match Client::open_with(url.as_str(), options).await {
            Ok(client) => clients.push(client),
            // The last one's error is the answer when none could be opened.
            Err(e) if urls.len() > 1 && (i + 1 < urls.len() || !clients.is_empty()) => {
                eprintln!("rlock: {url}: {e}; going on without it");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(clients)
}

/// `rlock info KEY`: 0 when held on some server (and who holds it), 1 when free.
async fn info(clients: &[Client], key: &str) -> Result<ExitCode, Error> {
    let mut held = false;
    for client in clients {
        if clients.len() > 1 {
            println!("server: {}", client.server());
        }
        match client.info(key).await? {
            Some(info) => {
                print_info(key, &info);
                held = true;
            }
            None => println!("{key}: free"),
        }
    }
    Ok(if held {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn run_locked(
    client: &Client,
    key: &str,
    args: &RunArgs,
    command: &[String],
) -> Result<ExitCode, Error> {
    let lock = client.lock(key).options(args.options);
    let held = match lock.try_acquire(Duration::ZERO).await? {
        Some(guard) => Some(Held::One(guard)),
        None => {
            announce_wait(client, key, args.wait).await;
            let granted = match args.wait {
                Some(limit) => lock.try_acquire(limit).await?,
                None => Some(lock.acquire().await?),
            };
            granted.map(|guard| acquired_after_waiting(Held::One(guard)))
        }
    };
    run_held(key, held, command, args).await
}

/// `run` over several independent servers: a RedLock, granted by a majority of them.
async fn run_redlocked(
    servers: usize,
    clients: Vec<Client>,
    key: &str,
    args: &RunArgs,
    command: &[String],
) -> Result<ExitCode, Error> {
    let lock = RedLock::with_servers(servers, clients, key)?.options(args.options);
    let held = match lock.try_acquire(Duration::ZERO).await? {
        Some(guard) => Some(Held::Quorum(guard)),
        None => {
            let limit = wait_limit_text(args.wait);
            let quorum = lock.quorum();
            eprintln!("rlock: waiting for '{key}' ({limit}) on {quorum} of {servers} servers");
            let granted = match args.wait {
                Some(limit) => lock.try_acquire(limit).await?,
                None => Some(lock.acquire().await?),
            };
            granted.map(|guard| acquired_after_waiting(Held::Quorum(guard)))
        }
    };
    run_held(key, held, command, args).await
}

/// Says on stderr that a lock waited for was acquired.
fn acquired_after_waiting(held: Held) -> Held {
    eprintln!("rlock: acquired '{}' (token {})", held.key(), held.token());
    held
}

/// Runs the command under `held`, or gives up when the wait ran out (`None`).
async fn run_held(
    key: &str,
    held: Option<Held>,
    command: &[String],
    args: &RunArgs,
) -> Result<ExitCode, Error> {
    match held {
        Some(held) => supervise(held, command, args.kill_grace).await,
        None => {
            eprintln!("rlock: gave up waiting for '{key}'");
            Ok(ExitCode::from(EXIT_TIMEOUT))
        }
    }
}

async fn announce_wait(client: &Client, key: &str, wait: Option<Duration>) {
    let limit = wait_limit_text(wait);
    match client.info(key).await {
        Ok(Some(info)) => eprintln!(
            "rlock: waiting for '{key}' ({limit}): held by {} (token {}, {} queued before us)",
            info.owner, info.token, info.waiters
        ),
        _ => eprintln!("rlock: waiting for '{key}' ({limit})"),
    }
}

fn print_info(key: &str, info: &LockInfo) {
    println!("key: {key}");
    println!("owner: {}", info.owner);
    println!("holds: {}", info.holds);
    match info.ttl {
        Some(ttl) => println!("ttl: {}ms", ttl.as_millis()),
        None => println!("ttl: none"),
    }
    println!("token: {}", info.token);
    println!("waiters: {}", info.waiters);
}

/// How long `run` waits, as it says on stderr.
fn wait_limit_text(wait: Option<Duration>) -> String {
    wait.map_or("no limit".to_owned(), |w| format!("at most {w:?}"))
}
