//! The guard of the blocking API: one hold, released before `drop` returns.

use std::sync::Arc;
use std::thread::ThreadId;
use std::time::Duration;

use crate::acquire::guard::Guard;
use crate::pure::error::{LossReason, Result};
use crate::pure::holding::LostSignal;
use crate::pure::per_thread::{runs_async_tasks, Rt, Threads};

/// One hold taken through the blocking API. Dropping it releases the hold before `drop`
/// returns (in the background if dropped in an async task).
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct BlockingGuard {
    pub(crate) guard: Guard,
    pub(crate) rt: Arc<Rt>,
    pub(crate) threads: Arc<Threads>,
    /// The thread that acquired it, whose owner id it holds.
    pub(crate) thread: ThreadId,
}

impl BlockingGuard {
    /// The fencing token; see [`Guard::token`].
    pub fn token(&self) -> u64 {
        self.guard.token()
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        self.guard.key()
    }

    /// The owner id (the acquiring thread's).
    pub fn owner(&self) -> &str {
        self.guard.owner()
    }

    /// True once the lock is known to be lost; see [`Guard::lost`].
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Why the lock was lost, if it was.
    pub fn loss_reason(&self) -> Option<LossReason> {
        self.guard.loss_reason()
    }

    /// The safe deadline; see [`Guard::valid_until`].
    pub fn valid_until(&self) -> std::time::Instant {
        self.guard.valid_until()
    }

    /// How long the lock is surely held from now; see [`Guard::remaining`].
    pub fn remaining(&self) -> Duration {
        self.guard.remaining()
    }

    /// A loss signal to hand to other threads or tasks; see [`Guard::lost_signal`].
    pub fn lost_signal(&self) -> LostSignal {
        self.guard.lost_signal()
    }

    /// Blocks until the lock is lost or `timeout` passes; the loss reason, if lost.
    /// In an async task it cannot block, and answers `None`.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LossReason> {
        let lost = async { Ok(tokio::time::timeout(timeout, self.guard.lost()).await.ok()) };
        self.rt.block_on(lost).ok().flatten()
    }

    /// Runs `cmd` only while this holding is the lock's current one; see [`Guard::fenced`].
    pub fn fenced<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        self.rt.block_on(self.guard.fenced(cmd))
    }

    /// Releases this one hold; see [`Guard::release`]. In an async task (or a `block_on`
    /// future) it cannot block: it fails with
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument), and the hold is released
    /// in the background.
    pub fn release(mut self) -> Result<u64> {
        if runs_async_tasks() {
            // Fails without blocking; `drop` releases in the background.
            return self.rt.block_on(async { Ok(0) });
        }
        let release = self.guard.start_release();
        self.rt.block_on(release)
    }
}

impl Drop for BlockingGuard {
    fn drop(&mut self) {
        // Where blocking would stall a runtime, the guard's own drop releases in the
        // background.
        if !self.guard.is_released() && !runs_async_tasks() {
            let release = self.guard.start_release();
            if let Err(err) = self.rt.block_on(release) {
                tracing::debug!(%err, "release of a dropped blocking guard failed");
            }
        }
        self.threads.ended(self.thread, Some(()));
    }
}
