//! Running the command while the lock is held: its process group, the signals passed on,
//! and what happens when the lock is lost.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use rlock_client::Error;
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};

use crate::group::Group;
use crate::held::Held;

/// The lock was lost while the command ran.
const EXIT_LOST: u8 = 76;

/// Runs the command while the guard holds; stops its group if the lock is lost.
pub async fn supervise(
    guard: Held,
    command: &[String],
    grace: Duration,
) -> Result<ExitCode, Error> {
    let Some((program, args)) = command.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // Taken over before the command starts, so none is missed once it runs.
    let mut signals = Signals::new().map_err(|e| Error::Redis(e.into()))?;
    let mut group = match start(&guard, program, args, grace) {
        Ok(group) => group,
        Err(e) => {
            eprintln!("rlock: cannot run {program}: {e}");
            guard.release().await?;
            let not_found = e.kind() == std::io::ErrorKind::NotFound;
            return Ok(ExitCode::from(if not_found { 127 } else { 126 }));
        }
    };
    let status = tokio::select! {
        status = signals.pass_on_until_exit(&mut group) => status,
        reason = guard.lost() => {
            eprintln!("rlock: the lock was lost ({reason}): stopping {program}");
            group.stop(grace).await;
            group.stand_down();
            return Ok(ExitCode::from(EXIT_LOST));
        }
    };
    group.stand_down();
    finish(guard, status, program).await
}

/// Starts the command in its group, with the lock's key, owner and token in its environment.
fn start(guard: &Held, program: &str, args: &[String], grace: Duration) -> io::Result<Group> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("RLOCK_KEY", guard.key())
        .env("RLOCK_OWNER", guard.owner())
        .env("RLOCK_TOKEN", guard.token().to_string());
    Group::spawn(cmd, grace)
}

/// Releases the lock after the command exited; the exit code to give.
async fn finish(
    guard: Held,
    status: io::Result<ExitStatus>,
    program: &str,
) -> Result<ExitCode, Error> {
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

/// The signals `rlock` passes on to the command's group while it runs.
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

    /// Waits for the command, passing `SIGTERM`, `SIGHUP` and `SIGINT` on to its group (in
    /// a group of its own, it no longer gets the terminal's `SIGINT` directly). `rlock`
    /// outlives the command, to release the lock.
    async fn pass_on_until_exit(&mut self, group: &mut Group) -> std::io::Result<ExitStatus> {
        loop {
            let passed = tokio::select! {
                status = group.child.wait() => return status,
                _ = self.term.recv() => libc::SIGTERM,
                _ = self.hup.recv() => libc::SIGHUP,
                _ = self.int.recv() => libc::SIGINT,
            };
            group.signal(passed);
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
