//! `rlock`: a distributed `flock` on Redis with the rlock module.
//!
//! ```text
//! rlock run KEY [--wait D] [--lease D] -- CMD ARGS...   run CMD while holding KEY
//! rlock info KEY                                        show who holds KEY (exit 1: free)
//! rlock release KEY --force                             remove KEY's lock, whoever holds it
//! ```
//!
//! The server is `--url`, or `$RLOCK_URL`, or `redis://127.0.0.1:6379/` (for a Redis
//! Cluster, any node).
//!
//! `run` holds the lock with the watchdog (or a fixed `--lease`) while CMD runs, gives CMD
//! `RLOCK_KEY`, `RLOCK_OWNER` and `RLOCK_TOKEN` (the fencing token) in its environment, and
//! releases the lock when CMD exits. `SIGTERM` and `SIGHUP` are passed on to CMD; `SIGINT`
//! from the terminal reaches CMD directly, and `rlock` waits for it to exit.
//!
//! Exit status of `run`: CMD's own (128 + n if a signal n ended it); 75 when `--wait` ran
//! out; 76 when the lock was lost while CMD ran (CMD is killed); 126/127 when CMD cannot be
//! run / is not found; 1 on any other error.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use clap::{Parser, Subcommand};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rlock_client::{Client, Error, Guard, LockInfo, LockOptions};
use tokio::process::{Child, Command};
use tokio::signal::unix::{signal, SignalKind};

/// `--wait` ran out (`EX_TEMPFAIL`).
const EXIT_TIMEOUT: u8 = 75;
/// The lock was lost while the command ran.
const EXIT_LOST: u8 = 76;

#[derive(Parser)]
#[command(
    name = "rlock",
    version,
    about = "Distributed locks on Redis (rlock module)"
)]
struct Cli {
    /// Redis server URL (for a Redis Cluster, any node's).
    #[arg(long, env = "RLOCK_URL", default_value = "redis://127.0.0.1:6379/")]
    url: String,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a command while holding a lock (a distributed `flock`).
    ///
    /// The command gets RLOCK_KEY, RLOCK_OWNER and RLOCK_TOKEN (the fencing token) in its
    /// environment. Exit status: the command's own (128 + n if signal n ended it); 75 when
    /// --wait ran out; 76 when the lock was lost while the command ran (it is killed);
    /// 126/127 when the command cannot be run / is not found; 1 on other errors.
    Run {
        /// The lock's key.
        key: String,
        /// Give up after this long (e.g. 500ms, 10s, 2m; a bare number is seconds).
        /// Without it, wait as long as it takes.
        #[arg(long, value_parser = parse_duration)]
        wait: Option<Duration>,
        /// A fixed lease instead of the renewing watchdog (the lock ends when it runs out,
        /// and the command is then killed).
        #[arg(long, value_parser = parse_duration)]
        lease: Option<Duration>,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Show who holds a lock; exits 1 when it is free.
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

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rlock: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, Error> {
    let client = Client::open(cli.url.as_str()).await?;
    match cli.command {
        Cmd::Run {
            key,
            wait,
            lease,
            command,
        } => run_locked(&client, &key, wait, lease, &command).await,
        Cmd::Info { key } => Ok(match client.info(&key).await? {
            Some(info) => {
                print_info(&key, &info);
                ExitCode::SUCCESS
            }
            None => {
                println!("{key}: free");
                ExitCode::FAILURE
            }
        }),
        Cmd::Release { key, force } => {
            if !force {
                eprintln!("rlock: release takes the lock from its holder: add --force");
                return Ok(ExitCode::from(2));
            }
            let removed = client.force_release(&key).await?;
            println!("{key}: {}", if removed { "released" } else { "was free" });
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn run_locked(
    client: &Client,
    key: &str,
    wait: Option<Duration>,
    lease: Option<Duration>,
    command: &[String],
) -> Result<ExitCode, Error> {
    let options = lease.map_or_else(LockOptions::new, |l| LockOptions::new().lease(l));
    let lock = client.lock(key).options(options);
    let guard = match lock.try_acquire(Duration::ZERO).await? {
        Some(guard) => guard,
        None => {
            announce_wait(client, key, wait).await;
            let granted = match wait {
                Some(limit) => lock.try_acquire(limit).await?,
                None => Some(lock.acquire().await?),
            };
            let Some(guard) = granted else {
                eprintln!("rlock: gave up waiting for '{key}'");
                return Ok(ExitCode::from(EXIT_TIMEOUT));
            };
            eprintln!("rlock: acquired '{key}' (token {})", guard.token());
            guard
        }
    };
    supervise(guard, command).await
}

async fn announce_wait(client: &Client, key: &str, wait: Option<Duration>) {
    let limit = wait.map_or("no limit".to_owned(), |w| format!("at most {w:?}"));
    match client.info(key).await {
        Ok(Some(info)) => eprintln!(
            "rlock: waiting for '{key}' ({limit}): held by {} (token {}, {} queued before us)",
            info.owner, info.token, info.waiters
        ),
        _ => eprintln!("rlock: waiting for '{key}' ({limit})"),
    }
}

/// Runs the command while the guard holds; kills it if the lock is lost.
async fn supervise(guard: Guard, command: &[String]) -> Result<ExitCode, Error> {
    let Some((program, args)) = command.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // Taken over before the command starts, so none is missed once it runs.
    let signals = Signals::new().map_err(|e| Error::Redis(e.into()))?;
    let spawned = Command::new(program)
        .args(args)
        .env("RLOCK_KEY", guard.key())
        .env("RLOCK_OWNER", guard.owner())
        .env("RLOCK_TOKEN", guard.token().to_string())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            eprintln!("rlock: cannot run {program}: {e}");
            guard.release().await?;
            let not_found = e.kind() == std::io::ErrorKind::NotFound;
            return Ok(ExitCode::from(if not_found { 127 } else { 126 }));
        }
    };
    let status = tokio::select! {
        status = signals.pass_on_until_exit(&mut child) => status,
        reason = guard.lost() => {
            eprintln!("rlock: the lock was lost ({reason}): killing {program}");
            if let Err(e) = child.kill().await {
                eprintln!("rlock: cannot kill {program}: {e}");
            }
            return Ok(ExitCode::from(EXIT_LOST));
        }
    };
    let code = match status {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("rlock: lost track of {program}: {e}");
            1
        }
    };
    match guard.release().await {
        Err(Error::Lost { reason, .. }) => {
            eprintln!("rlock: the lock was lost while the command ran ({reason})");
            Ok(ExitCode::from(EXIT_LOST))
        }
        Err(e) => Err(e),
        Ok(_) => Ok(ExitCode::from(code)),
    }
}

/// The signals `rlock` handles while the command runs.
struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// Waits for the child, passing `SIGTERM` and `SIGHUP` on to it. `SIGINT` is not
    /// passed on: a terminal sends it to the child too; `rlock` outlives it to release.
    async fn pass_on_until_exit(mut self, child: &mut Child) -> std::io::Result<ExitStatus> {
        loop {
            let passed = tokio::select! {
                status = child.wait() => return status,
                _ = self.term.recv() => Signal::SIGTERM,
                _ = self.hup.recv() => Signal::SIGHUP,
                _ = self.int.recv() => continue,
            };
            let pid = child.id().and_then(|id| i32::try_from(id).ok());
            if let Some(pid) = pid {
                if let Err(e) = kill(Pid::from_raw(pid), passed) {
                    eprintln!("rlock: cannot pass {passed} on: {e}");
                }
            }
        }
    }
}

/// The command's exit code, or 128 + the signal that ended it, as a shell reports it.
fn exit_code(status: ExitStatus) -> u8 {
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    u8::try_from(code).unwrap_or(1)
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

/// `500ms`, `10s`, `2m`, `1h`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a duration like 500ms, 10s or 2m"))?;
    let ms = match unit {
        "ms" => Some(n),
        "" | "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => return Err(format!("unknown unit in '{text}': use ms, s, m or h")),
    };
    ms.map(Duration::from_millis)
        .ok_or_else(|| format!("'{text}' is too long"))
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_the_usual_units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("1.5s").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("99999999999999999h").is_err());
    }
}
