//! `rlock run`: taking the lock (on one server, or a RedLock on several), then running the
//! command under it (`supervise.rs`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rlock_client::{Client, ClientOptions, Error, Lock, LockOptions, RedLock, RwMode};

use crate::check::{Check, Family};
use crate::duration::{parse_duration, parse_positive};
use crate::failure::Failure;
use crate::held::Held;
use crate::kinds::{explain, Asked};
use crate::plan::Plan;
use crate::supervise::supervise;

/// `run`'s options do not fit together (as clap's usage errors).
const EXIT_USAGE: u8 = 2;
/// `--wait` ran out (`EX_TEMPFAIL`).
const EXIT_TIMEOUT: u8 = 75;

/// `rlock run`'s arguments.
#[derive(Args)]
pub struct RunCmd {
    /// The lock's key.
    key: String,
    /// Give up after this long (e.g. 500ms, 0.5, 10s, 2m; a bare number is seconds).
    /// Without it, wait as long as it takes.
    #[arg(long, value_parser = parse_duration)]
    wait: Option<Duration>,
    /// A fixed lease instead of the renewing watchdog (the lock ends when it runs out:
    /// the command gets SIGTERM --kill-grace before), unless --renew is given too.
    #[arg(long, value_parser = parse_positive)]
    lease: Option<Duration>,
    /// Renew the --lease with the watchdog (every third of it) while the command runs.
    #[arg(long, requires = "lease")]
    renew: bool,
    /// How long before the lease's safe end, when it was not renewed, the command's group
    /// gets SIGTERM (SIGKILL comes just before the end); also how long leftovers have after
    /// SIGTERM with --kill-leftovers. It must be shorter than the part of the lease rlock
    /// counts on (with renewal: two thirds of it, less a margin). Default: 5s, or half
    /// that part of a shorter lease.
    #[arg(long, value_parser = parse_duration)]
    kill_grace: Option<Duration>,
    /// When the command exits, stop the processes it left running in its group (SIGTERM,
    /// SIGKILL after --kill-grace) instead of keeping the lock until they end.
    #[arg(long)]
    kill_leftovers: bool,
    /// How often, while the command runs, rlock asks the server who holds the lock
    /// (LOCK.INFO): the command is killed on the first answer that shows the lock free or
    /// held by another, without waiting for the next renewal.
    #[arg(long, value_parser = parse_positive, default_value = "1s")]
    check: Duration,
    /// Take a read hold of the read-write lock KEY instead of the exclusive lock: any
    /// number of --shared runs hold it at once, while a write hold (RWLOCK.ACQUIRE ...
    /// WRITE) waits for them, and they wait for it. KEY is then a read-write lock, not the
    /// plain lock a run without --shared takes (the server refuses one on the other's key).
    /// One server only (no RedLock).
    #[arg(long, short = 's')]
    shared: bool,
    /// Take a write hold of the read-write lock KEY, the writer side of --shared: alone,
    /// while --shared runs (and other -x runs) wait for it, and it for them, served in the
    /// order they came. One server only (no RedLock).
    #[arg(long, short = 'x', conflicts_with = "shared")]
    exclusive: bool,
    /// Take one of N permits of the semaphore KEY instead of the exclusive lock: at most N
    /// runs hold one at once, served in the order they came. A semaphore that does not
    /// exist yet is created with N permits (SEM.PERMITS); one that exists keeps its total,
    /// even if it is not N (rlock says so on stderr). One server only (no RedLock).
    #[arg(long, value_name = "N", conflicts_with_all = ["shared", "exclusive"],
          value_parser = clap::value_parser!(u32).range(1..))]
    permits: Option<u32>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// How `run` holds the lock and runs the command.
struct RunArgs {
    shared: bool,
    exclusive: bool,
    permits: Option<u32>,
    wait: Option<Duration>,
    options: LockOptions,
    plan: Plan,
    check: Duration,
}

impl RunCmd {
    /// Checks the options, opens the servers at `urls`, takes the lock and runs the command.
    pub async fn run(self, urls: &[String], client: ClientOptions) -> Result<ExitCode, Failure> {
        let options = match self.lease {
            Some(lease) => LockOptions::new().lease(lease).watchdog(self.renew),
            None => LockOptions::new(),
        };
        let Some(plan) = Plan::check(&options, &client, self.kill_grace, self.kill_leftovers)
        else {
            return Ok(ExitCode::from(EXIT_USAGE));
        };
        if (self.shared || self.exclusive || self.permits.is_some()) && urls.len() > 1 {
            eprintln!(
                "rlock: --shared, --exclusive and --permits hold on one server: give one --url"
            );
            return Ok(ExitCode::from(EXIT_USAGE));
        }
        let args = RunArgs {
            shared: self.shared,
            exclusive: self.exclusive,
            permits: self.permits,
            wait: self.wait,
            options,
            plan,
            check: self.check,
        };
        let (key, command) = (&self.key, &self.command);
        let clients = crate::open(urls, client).await?;
        // By the servers named, not those reached: two of three down is no single server.
        match (urls.len(), clients.as_slice()) {
            (1, [client]) => {
                let ran = run_locked(client, key, &args, command).await;
                explain(ran, client, key, args.asked()).await
            }
            (servers, _) => Ok(run_redlocked(servers, clients, key, &args, command).await?),
        }
    }
}

impl RunArgs {
    /// What the run asks for, by its flags.
    fn asked(&self) -> Asked {
        let (family, flag) = match (self.shared, self.exclusive, self.permits) {
            (true, _, _) => (Family::Rw, Some("--shared")),
            (_, true, _) => (Family::Rw, Some("--exclusive")),
            (_, _, Some(_)) => (Family::Sem, Some("--permits")),
            _ => (Family::Lock, None),
        };
        Asked {
            family,
            flag,
            run: true,
        }
    }
}

async fn run_locked(
    client: &Client,
    key: &str,
    args: &RunArgs,
    command: &[String],
) -> Result<ExitCode, Error> {
    let check = Check::new(vec![client.clone()], 1, args.check);
    let (lock, check) = match (args.shared, args.exclusive, args.permits) {
        (true, _, _) => (client.rw_lock(key).read(), check.of(Family::Rw)),
        (_, true, _) => (client.rw_lock(key).write(), check.of(Family::Rw)),
        (_, _, Some(total)) => (one_permit(client, key, total).await?, check.of(Family::Sem)),
        _ => (client.lock(key), check),
    };
    let lock = lock.options(args.options);
    let held = match lock.try_acquire(Duration::ZERO).await? {
        Some(guard) => Some(Held::One(guard)),
        None => {
            announce_wait(client, key, args).await;
            let granted = match args.wait {
                Some(limit) => lock.try_acquire(limit).await?,
                None => Some(lock.acquire().await?),
            };
            granted.map(|guard| acquired_after_waiting(Held::One(guard)))
        }
    };
    run_held(key, held, command, args, check).await
}

/// One permit of the semaphore `key`, created with `total` permits if it does not exist
/// (two runs that create it at once with different totals: the last one's stays).
async fn one_permit(client: &Client, key: &str, total: u32) -> Result<Lock, Error> {
    let semaphore = client.semaphore(key);
    match semaphore.info().await? {
        None => drop(semaphore.set_permits(total).await?),
        Some(info) if info.permits != u64::from(total) => eprintln!(
            "rlock: '{key}' has {} permits, not {total}: its total stays",
            info.permits
        ),
        Some(_) => {}
    }
    Ok(semaphore.permits(1))
}

/// `run` over several independent servers: a RedLock, granted by a majority of them.
async fn run_redlocked(
    servers: usize,
    clients: Vec<Client>,
    key: &str,
    args: &RunArgs,
    command: &[String],
) -> Result<ExitCode, Error> {
    let needed = servers / 2 + 1;
    if clients.len() < needed {
        // No majority can grant: waiting would never end.
        return Err(Error::NoQuorum {
            key: key.to_owned(),
            answered: clients.len(),
            needed,
        });
    }
    let check = Check::new(clients.clone(), servers, args.check);
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
    run_held(key, held, command, args, check).await
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
    check: Check,
) -> Result<ExitCode, Error> {
    match held {
        Some(held) => supervise(held, command, args.plan, check).await,
        None => {
            eprintln!("rlock: gave up waiting for '{key}'");
            Ok(ExitCode::from(EXIT_TIMEOUT))
        }
    }
}

async fn announce_wait(client: &Client, key: &str, args: &RunArgs) {
    let limit = wait_limit_text(args.wait);
    if args.permits.is_some() {
        return match client.semaphore(key).info().await {
            Ok(Some(info)) => eprintln!(
                "rlock: waiting for a permit of '{key}' ({limit}): {} of {} available, {} queued before us",
                info.available, info.permits, info.waiters
            ),
            _ => eprintln!("rlock: waiting for a permit of '{key}' ({limit})"),
        };
    }
    if args.exclusive {
        return match client.rw_lock(key).info().await {
            Ok(Some(info)) if !info.holders.is_empty() => {
                let mode = match info.mode {
                    RwMode::Read => "reading",
                    RwMode::Write => "writing",
                };
                let owners: Vec<&str> = info.holders.iter().map(|h| h.owner.as_str()).collect();
                eprintln!(
                    "rlock: waiting for a write hold of '{key}' ({limit}): held for {mode} by {}",
                    owners.join(", ")
                );
            }
            _ => eprintln!("rlock: waiting for a write hold of '{key}' ({limit})"),
        };
    }
    if args.shared {
        let writer = match client.rw_lock(key).info().await {
            Ok(Some(info)) => info.holders.into_iter().find(|h| h.writes > 0),
            _ => None,
        };
        return match writer {
            Some(w) => eprintln!(
                "rlock: waiting for a read hold of '{key}' ({limit}): held for writing by {}",
                w.owner
            ),
            None => eprintln!("rlock: waiting for a read hold of '{key}' ({limit})"),
        };
    }
    match client.info(key).await {
        Ok(Some(info)) => eprintln!(
            "rlock: waiting for '{key}' ({limit}): held by {} (token {}, {} queued before us)",
            info.owner, info.token, info.waiters
        ),
        Ok(None) => eprintln!(
            "rlock: waiting for '{key}' ({limit}): it is free, but the server holds grants back \
             for now (for 2 s after it stood still, during the failover delay after a \
             promotion, while too few replicas answer, or during script clients' turn)"
        ),
        Err(_) => eprintln!("rlock: waiting for '{key}' ({limit})"),
    }
}

/// How long `run` waits, as it says on stderr.
fn wait_limit_text(wait: Option<Duration>) -> String {
    wait.map_or("no limit".to_owned(), |w| format!("at most {w:?}"))
}
