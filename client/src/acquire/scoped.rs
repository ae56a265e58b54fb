//! A guard's scope: the work in which acquisitions of its lock reenter its holding.

use std::future::{Future, IntoFuture};

use crate::acquire::guard::Guard;
use crate::pure::scope;

impl Guard {
    /// Runs `work` (a future, or a [`Lock`](crate::Lock) to acquire) in this holding's scope: an acquisition of this lock (its key) by this
    /// guard's client inside `work` reenters the holding (another hold, the same owner and
    /// token) instead of waiting for it, at any depth of `work`'s futures. Outside a scope,
    /// an acquisition through [`Client::lock`](crate::Client::lock) contends with every
    /// other, even in the task that holds the lock. A task spawned inside `work` is outside
    /// it (wrap its future in a scope of its own). [`Lock::with_lock`](crate::Lock::with_lock)
    /// runs its work in such a scope.
    ///
    /// For a read-write lock, a read acquisition in a writer's scope is a read hold of the
    /// writer's (granted at once), and a write acquisition in a reader's scope is refused
    /// as an upgrade ([`Error::Upgrade`](crate::Error::Upgrade)); for a semaphore, an acquisition in a holder's
    /// scope adds permits to its holding.
    ///
    /// ```no_run
    /// # async fn demo(client: rlock_client::Client) -> rlock_client::Result<()> {
    /// let outer = client.lock("lock:tree").acquire().await?;
    /// let holds = outer
    ///     .scope(async {
    ///         let inner = client.lock("lock:tree").acquire().await?; // reenters
    ///         inner.release().await
    ///     })
    ///     .await?;
    /// assert_eq!(holds, 1); // the outer hold remains
    /// outer.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn scope<F: IntoFuture>(&self, work: F) -> impl Future<Output = F::Output> {
        let holding = (self.key().to_owned(), self.owner().to_owned());
        scope::within([holding], work.into_future())
    }
}
