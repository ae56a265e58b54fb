//! Running the command while the lock is held: its process group, the signals passed on,
//! and stopping it before the lock may pass to anyone else.
//!
//! The command's whole group must be dead before the lock's lease can end. `rlock` sends it
//! `SIGTERM` the grace before the safe deadline (the guard's `valid_until`, which renewals
//! move on: only a lock that is not renewed gets there) and `SIGKILL` a little before the
//! deadline (a quarter of the grace, at most 100 ms, so that a late timer still kills in
//! time), or at once when the lock is lost before (a renewal refused, or a check of who
//! holds it shows it taken away: `check.rs`). It releases the lock only once every process
//! of the group ended: the command and what it left running (`plan.rs`).
//!
//! `SIGTSTP` (Ctrl-Z) stops the group, then `rlock` itself (with `SIGSTOP`: the shell gets
//! the terminal back). The lease is not renewed while `rlock` is stopped; when it is
//! continued with less than the grace left of the lease (or none), the group is killed
//! while still stopped, never continued; otherwise it is continued.

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::{ExitCode, ExitStatus};
use std::time::{Duration, Instant};

use rlock_client::Error;
use tokio::process::Command;

use crate::check::Check;
use crate::group::{self, Group};
use crate::held::Held;
use crate::plan::{Leftovers, Plan};
use crate::signals::{Received, Signals};

/// The lock was lost, or its lease was about to end, while the command ran.
const EXIT_LOST: u8 = 76;
/// The most by which `SIGKILL` comes before the safe deadline.
const KILL_LEAD: Duration = Duration::from_millis(100);

/// Why `rlock` stopped the command.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// The lease was about to end without renewal.
    LeaseEnds,
    /// The lock was lost.
    Lost,
    /// `rlock` was stopped (Ctrl-Z) until too little of the lease was left.
    StoppedTooLong,
}

enum Event {
    Exited(io::Result<ExitStatus>),
    Emptied,
    Signal(Received),
    StopDue,
    KillDue,
    LeftoversDue,
    /// The lock was lost: why.
    Lost(String),
}

/// The command's group under supervision, and what happened to it.
struct Supervisor<'a> {
    held: &'a Held,
    /// Resolves when a check shows the lock taken away (`check.rs`).
    taken: Pin<Box<dyn Future<Output = String>>>,
    group: Group,
    plan: Plan,
    program: &'a str,
    status: Option<io::Result<ExitStatus>>,
    ending: Option<Ending>,
    /// When the leftovers get `SIGKILL` (`--kill-leftovers`).
    kill_at: Option<Instant>,
    killed: bool,
}

/// Runs the command while the guard holds (and `check` finds it held), and releases the
/// lock once its group ended; the error is the release's.
pub async fn supervise(
    held: Held,
    command: &[String],
    plan: Plan,
    check: Check,
) -> Result<ExitCode, Error> {
    let Some((program, args)) = command.split_first() else {
        return Ok(ExitCode::from(2));
    };
    // Caught before the command starts, so none is missed once it runs.
    let mut signals = match Signals::catch() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("rlock: cannot catch signals: {e}");
            held.release().await?;
            return Ok(ExitCode::FAILURE);
        }
    };
    let group = match start(&held, program, args) {
        Ok(group) => group,
        Err(e) => {
            eprintln!("rlock: cannot run {program}: {e}");
            held.release().await?;
            let not_found = e.kind() == std::io::ErrorKind::NotFound;
            return Ok(ExitCode::from(if not_found { 127 } else { 126 }));
        }
    };
    let mut run = Supervisor::new(&held, check, group, plan, program);
    run.until_empty(&mut signals).await;
    let Supervisor {
        mut group,
        status,
        ending,
        ..
    } = run;
    group.stand_down();
    finish(held, status, ending, program).await
}

/// Starts the command in its group, with the lock's key, owner and token in its environment.
fn start(held: &Held, program: &str, args: &[String]) -> io::Result<Group> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("RLOCK_KEY", held.key())
        .env("RLOCK_OWNER", held.owner())
        .env("RLOCK_TOKEN", held.token().to_string());
    Group::spawn(cmd)
}

impl<'a> Supervisor<'a> {
    fn new(
        held: &'a Held,
        check: Check,
        group: Group,
        plan: Plan,
        program: &'a str,
    ) -> Supervisor<'a> {
        Supervisor {
            held,
            taken: Box::pin(check.taken(held.holding())),
            group,
            plan,
            program,
            status: None,
            ending: None,
            kill_at: None,
            killed: false,
        }
    }

    /// Supervises the group until every process of it ended.
    async fn until_empty(&mut self, signals: &mut Signals) {
        loop {
            match self.next(signals).await {
                Event::Exited(status) => self.exited(status),
                Event::Emptied => return,
                Event::Signal(Received::PassOn(signal)) => self.group.signal(signal),
                Event::Signal(Received::Suspend) => self.suspend(),
                Event::StopDue => self.lease_ends(),
                Event::KillDue => self.deadline_near(),
                Event::LeftoversDue => self.kill(),
                Event::Lost(reason) => self.lost(reason),
            }
        }
    }

    async fn next(&mut self, signals: &mut Signals) -> Event {
        let (held, grace, pgid) = (self.held, self.plan.grace, self.group.id());
        let (exited, live) = (self.status.is_some(), !self.killed);
        let kill_at = self.kill_at.unwrap_or_else(Instant::now);
        tokio::select! {
            status = self.group.child.wait(), if !exited => Event::Exited(status),
            () = group::emptied(pgid, &mut signals.child), if exited => Event::Emptied,
            Some(received) = signals.received.recv() => Event::Signal(received),
            () = before_deadline(held, grace), if live && self.ending.is_none() => Event::StopDue,
            () = before_deadline(held, (grace / 4).min(KILL_LEAD)), if live => Event::KillDue,
            () = tokio::time::sleep_until(kill_at.into()), if live && self.kill_at.is_some() => {
                Event::LeftoversDue
            }
            reason = held.lost(), if live => Event::Lost(reason.to_string()),
            shown = &mut self.taken, if live => Event::Lost(shown),
        }
    }

    /// The leader exited: what it left running keeps the lock, or is stopped.
    fn exited(&mut self, status: io::Result<ExitStatus>) {
        self.status = Some(status);
        if self.plan.leftovers == Leftovers::Kill && !self.killed {
            self.group.signal(libc::SIGTERM);
            self.kill_at = Some(Instant::now() + self.plan.grace);
        }
    }

    /// The safe deadline is a grace away and the lock was not renewed: `SIGTERM`.
    fn lease_ends(&mut self) {
        let left = self.held.remaining().as_millis();
        eprintln!(
            "rlock: the lock's lease may end in {left} ms (it was not renewed): stopping {}",
            self.program
        );
        self.group.signal(libc::SIGTERM);
        self.ending = Some(Ending::LeaseEnds);
    }

    /// The safe deadline is near and the lock was not renewed: `SIGKILL`.
    fn deadline_near(&mut self) {
        let left = self.held.remaining().as_millis();
        eprintln!(
            "rlock: the lock's lease may end in {left} ms (it was not renewed): killing {}",
            self.program
        );
        self.ending.get_or_insert(Ending::LeaseEnds);
        self.kill();
    }

    /// The lock is lost: `SIGKILL` at once.
    fn lost(&mut self, reason: String) {
        eprintln!(
            "rlock: the lock was lost ({reason}): killing {}",
            self.program
        );
        self.ending = Some(Ending::Lost);
        self.kill();
    }

    fn kill(&mut self) {
        self.group.signal(libc::SIGKILL);
        self.killed = true;
        self.kill_at = None;
    }

    /// Ctrl-Z: stops the group, then `rlock`; once continued, continues the group or, with
    /// less than the grace left of the lease, kills it (still stopped).
    fn suspend(&mut self) {
        self.group.signal(libc::SIGSTOP);
        // SAFETY: raise has no memory preconditions; this thread goes on once continued.
        unsafe { libc::raise(libc::SIGSTOP) };
        if self.killed {
            return;
        }
        if self.held.remaining() <= self.plan.grace {
            eprintln!(
                "rlock: stopped until the lock's lease (nearly) ran out: killing {}",
                self.program
            );
            self.ending = Some(Ending::StoppedTooLong);
            self.kill();
            return;
        }
        self.group.signal(libc::SIGCONT);
    }
}

/// Resolves `lead` before the safe deadline, which renewals move on.
async fn before_deadline(held: &Held, lead: Duration) {
    loop {
        let Some(due) = held.valid_until().checked_sub(lead) else {
            return;
        };
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due.into()).await;
    }
}

/// Releases the lock after the command's group ended; the exit code to give.
async fn finish(
    held: Held,
    status: Option<io::Result<ExitStatus>>,
    ending: Option<Ending>,
    program: &str,
) -> Result<ExitCode, Error> {
    let code = match status {
        Some(Ok(status)) => exit_code(status),
        Some(Err(e)) => {
            eprintln!("rlock: lost track of {program}: {e}");
            1
        }
        None => 1,
    };
    match (held.release().await, ending) {
        (Err(Error::Lost { reason, .. }), None) => {
            eprintln!("rlock: the lock was lost while the command ran ({reason})");
            Ok(ExitCode::from(EXIT_LOST))
        }
        (Err(Error::Lost { .. }) | Ok(()), Some(_)) => Ok(ExitCode::from(EXIT_LOST)),
        (Err(e), Some(_)) => {
            // The command was stopped for the lock's sake: that is the news; the lock
            // ends with its lease.
            eprintln!("rlock: the lock was not released: {e}");
            Ok(ExitCode::from(EXIT_LOST))
        }
        (Err(e), None) => Err(e),
        (Ok(()), None) => Ok(ExitCode::from(code)),
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
