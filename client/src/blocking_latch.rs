//! A countdown latch for threads; see [`Latch`](crate::Latch).

use std::sync::Arc;
use std::time::Duration;

use crate::latch::Latch;
use crate::pure::error::Result;
use crate::pure::per_thread::Rt;

/// A countdown latch from [`BlockingClient::latch`](crate::blocking::BlockingClient::latch);
/// see [`Latch`](crate::Latch).
#[derive(Debug, Clone)]
pub struct BlockingLatch {
    latch: Latch,
    rt: Arc<Rt>,
}

impl BlockingLatch {
    pub(crate) fn new(latch: Latch, rt: Arc<Rt>) -> BlockingLatch {
        BlockingLatch { latch, rt }
    }

    /// The latch's key.
    pub fn name(&self) -> &str {
        self.latch.name()
    }

    /// Sets the count if the latch has none; see [`Latch::set`].
    pub fn set(&self, count: u64) -> Result<bool> {
        self.rt.block_on(self.latch.set(count))
    }

    /// Takes one off the count; see [`Latch::count_down`].
    pub fn count_down(&self) -> Result<u64> {
        self.rt.block_on(self.latch.count_down())
    }

    /// The count now; see [`Latch::count`].
    pub fn count(&self) -> Result<u64> {
        self.rt.block_on(self.latch.count())
    }

    /// Blocks the calling thread until the latch is open; see [`Latch::wait`].
    pub fn wait(&self) -> Result<()> {
        self.rt.block_on(self.latch.wait())
    }

    /// Blocks up to `timeout` for the latch to open; see [`Latch::wait_for`].
    pub fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.rt.block_on(self.latch.wait_for(timeout))
    }
}
