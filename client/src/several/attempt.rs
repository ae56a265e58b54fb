//! One attempt of a RedLock election: an owner id of its own, one lock per server, the
//! slots its tasks fill (`keeper.rs`), and the task of each server: its first try, then,
//! once the attempt won, a member on that server for as long as the holding lasts.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::acquire::guard::Guard;
use crate::lock::Lock;
use crate::pure::error::Result;
use crate::pure::quorum::{pause_after, Answer};
use crate::several::keeper::Held;

/// One attempt: its owner id, its locks (one per server), its slots and tasks.
pub(crate) struct Attempt {
    pub(crate) owner: Arc<str>,
    pub(crate) locks: Vec<Lock>,
    pub(crate) held: Arc<Held>,
    pub(crate) tasks: JoinSet<()>,
}

impl Attempt {
    /// Starts the task of server `i`: its first try waits up to `wait`, and counts as
    /// failed after `slow` without an answer.
    pub(crate) fn spawn(&mut self, i: usize, wait: Option<Duration>, slow: Option<Duration>) {
        let (held, lock) = (self.held.clone(), self.locks[i].clone());
        self.tasks.spawn(keep(held, i, lock, wait, slow));
    }

    /// Gives the attempt up: cancels its tasks (an acquisition dropped leaks no hold) and
    /// releases its members.
    pub(crate) async fn give_up(mut self) {
        let mut members = self.held.close();
        self.tasks.abort_all();
        let releases: Vec<_> = members.iter_mut().map(Guard::start_release).collect();
        for release in releases {
            if let Err(err) = release.await {
                tracing::debug!(%err, "could not release a member of a given-up attempt");
            }
        }
    }
}

/// The task of one server in an attempt: its first try, then, once the attempt won, a
/// member on that server for as long as the holding lasts.
async fn keep(
    held: Arc<Held>,
    i: usize,
    lock: Lock,
    first: Option<Duration>,
    slow: Option<Duration>,
) {
    let (mut wait, mut slow, mut failures) = (first, slow, 0);
    loop {
        match try_once(&held, i, &lock, wait, slow).await {
            Ok(Some(guard)) => {
                failures = 0;
                let signal = match held.add(i, guard) {
                    Ok(signal) => signal,
                    Err(late) => {
                        // A grant that crossed the holding's end: released before the
                        // holding's release returns (it waits for this task).
                        if let Err(err) = late.release().await {
                            tracing::debug!(server = lock.server(), %err, "could not release a late RedLock member");
                        }
                        return;
                    }
                };
                if held.is_won() {
                    held.raise(i, &lock).await;
                }
                if !held.decided().await {
                    return;
                }
                tokio::select! {
                    _ = signal.lost() => {}
                    () = held.closed() => return,
                }
            }
            Ok(None) => held.answer(i, Answer::Busy),
            Err(err) => {
                tracing::debug!(server = lock.server(), %err, "a RedLock server did not answer");
                held.answer(i, Answer::Failed);
                failures += 1;
            }
        }
        if !held.decided().await || held.is_lost() {
            return;
        }
        if failures > 0 {
            tokio::select! {
                () = tokio::time::sleep(pause_after(failures - 1)) => {}
                () = held.closed() => return,
            }
        }
        (wait, slow) = (None, None);
    }
}

/// One acquisition on server `i`; counted as failed (but still awaited: a dropped
/// acquisition would have to be cleaned up) once `slow` passed without an answer. Once the
/// holding ended, a try that does not wait is given `slow` more, so that a grant on its way
/// is released before the holding's release returns; a try that waits, or a server slower
/// than that, is then dropped (it cancels its wait, and releases in the background a grant
/// that crossed the cancellation).
async fn try_once(
    held: &Held,
    i: usize,
    lock: &Lock,
    wait: Option<Duration>,
    slow: Option<Duration>,
) -> Result<Option<Guard>> {
    let run = lock.run(wait);
    tokio::pin!(run);
    if let Some(slow) = slow {
        tokio::select! {
            done = &mut run => return done,
            () = tokio::time::sleep(slow) => held.answer(i, Answer::Failed),
        }
    }
    let grace = match wait {
        Some(Duration::ZERO) => slow.unwrap_or_default(),
        _ => Duration::ZERO,
    };
    tokio::select! {
        done = &mut run => done,
        () = closed_for(held, grace) => Ok(None),
    }
}

/// Resolves `grace` after the attempt (or the holding) was given up.
async fn closed_for(held: &Held, grace: Duration) {
    held.closed().await;
    tokio::time::sleep(grace).await;
}
