//! A named countdown latch.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::acquire::latch_wait::await_open;
use crate::core::shared::Core;
use crate::pure::error::{Error, Result};
use crate::pure::kind::Kind;

/// A countdown latch on one Redis key (the module's `LATCH.*` commands), from
/// [`Client::latch`](crate::Client::latch): tasks [`wait`](Latch::wait) until others have
/// [counted it down](Latch::count_down) to zero. The key holds the count as Redisson's
/// `RCountDownLatch` does, so Redisson clients share it: either side's count down to zero
/// opens it for both.
///
/// A latch with no count (never set, or counted down to zero, which deletes the key) is
/// open; [`set`](Latch::set) closes it again. Waits are queued on the server and all end
/// in the one command that reaches zero; dropping a wait (a `tokio::time::timeout`, a
/// `select!`) takes it off the server.
///
/// ```no_run
/// # async fn demo(client: rlock_client::Client) -> Result<(), rlock_client::Error> {
/// let loaded = client.latch("latch:shards-loaded");
/// loaded.set(3).await?;
/// // ... three workers each call `loaded.count_down().await?` when done ...
/// loaded.wait().await?; // returns once the count is zero
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Latch {
    core: Arc<Core>,
    key: String,
}

impl fmt::Debug for Latch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Latch").field("key", &self.key).finish()
    }
}

impl Latch {
    pub(crate) fn new(core: Arc<Core>, key: String) -> Latch {
        Latch { core, key }
    }

    /// The latch's key.
    pub fn name(&self) -> &str {
        &self.key
    }

    /// Sets the count (at least 1) if the latch has none (`LATCH.SET`): true if it was set,
    /// false if it had a count already.
    pub async fn set(&self, count: u64) -> Result<bool> {
        Ok(self.query::<i64>("SET", Some(count)).await? == 1)
    }

    /// Takes one off the count (`LATCH.COUNTDOWN`); at zero the latch opens and every wait
    /// ends. Returns the count after (0 when it had none).
    pub async fn count_down(&self) -> Result<u64> {
        self.query("COUNTDOWN", None).await
    }

    /// The count now (`LATCH.COUNT`), 0 when it has none.
    pub async fn count(&self) -> Result<u64> {
        self.query("COUNT", None).await
    }

    /// Waits until the latch is open, however long it takes.
    pub async fn wait(&self) -> Result<()> {
        while !self.await_open(None).await? {}
        Ok(())
    }

    /// Waits up to `timeout` for the latch to open: true if it is open, false if the time
    /// ran out first.
    pub async fn wait_for(&self, timeout: Duration) -> Result<bool> {
        self.await_open(Some(timeout)).await
    }

    /// Waits up to `limit` for the latch to open; an error names the node and the key.
    async fn await_open(&self, limit: Option<Duration>) -> Result<bool> {
        let opened = await_open(&self.core, &self.key, limit).await;
        opened.map_err(|e| self.core.named(e, &self.key))
    }

    async fn query<T: redis::FromRedisValue>(&self, verb: &str, count: Option<u64>) -> Result<T> {
        // `LATCH.SET key count`, `LATCH.COUNTDOWN key`, `LATCH.COUNT key`.
        let mut cmd = Kind::Latch.family(verb);
        cmd.arg(&self.key);
        if let Some(count) = count {
            cmd.arg(count);
        }
        let reply = self.core.query(&self.key, &cmd).await;
        reply.map_err(|e| self.core.named(Error::of_key(e, &self.key), &self.key))
    }
}
