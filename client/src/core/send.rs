//! The commands a client sends through its `Core`: on the shared connection of the node that
//! serves a key, on a wait connection of its own or the node's ticket connection, and the
//! lock's administration (`LOCK.INFO`, `LOCK.FORCERELEASE`, `LOCK.RELEASE`, and their
//! `RWLOCK.*` and `SEM.*` twins).

use std::future::Future;

use redis::{Cmd, FromRedisValue, RedisResult, Value};

use crate::core::shared::Core;
use crate::net::pool::WaitConn;
use crate::net::router::Sent;
use crate::net::tickets::{Carried, Tickets};
use crate::pure::commands;
use crate::pure::error::{timed_out, Error, Result};
use crate::pure::info::LockInfo;
use crate::pure::kind::{Kind, Units};
use crate::pure::rw_info::RwLockInfo;
use crate::pure::sem_info::SemaphoreInfo;

impl Core {
    /// `cmd` on `key`, over the shared connection of the node that serves it.
    pub(crate) async fn query<T: FromRedisValue>(&self, key: &str, cmd: &Cmd) -> RedisResult<T> {
        if acquires(cmd) {
            self.listen(key).await;
        }
        self.router.query(key, cmd).await
    }

    /// Makes sure that the node that serves `key` has the client's listening connection
    /// (`listener.rs`) before a command that may make a holding there: the server tracks
    /// only holdings made after it.
    async fn listen(&self, key: &str) {
        self.listeners.ensure(&self.router.node_for(key)).await;
    }

    /// The address of the node that serves `key`, as far as the client knows: what names
    /// the server in an error that does not name the node it came from.
    pub(crate) fn node_addr(&self, key: &str) -> String {
        self.router.node_for(key).addr.to_string()
    }

    /// `err`, of a command on `key`, naming its node and the key (see
    /// [`Error::concerning`]).
    pub(crate) fn named(&self, err: Error, key: &str) -> Error {
        err.concerning(&self.node_addr(key), key)
    }

    /// `cmd` on `key`, over a wait connection of its own to the node that serves it; the
    /// answer, and the connection that gave it (to give back with [`Core::give_back`]).
    /// Bounded by the response timeout, as the shared connection is (wait connections have
    /// no timeout of their own); a connection whose answer is late is dropped.
    pub(crate) async fn query_own<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<(RedisResult<T>, WaitConn)> {
        let late = tokio::time::sleep(self.options.response_timeout_duration());
        match self.send_own(key, || cmd, late).await? {
            Sent::Answered(answer, own) => Ok((answer, own)),
            Sent::Interrupted((), _) => {
                Err(timed_out("no reply in time on a connection of its own"))
            }
        }
    }

    /// The command `make` builds, on `key`, over a wait connection of its own, unless
    /// `interrupt` comes first (see [`Router::follow`](crate::net::router::Router::follow)).
    pub(crate) async fn send_own<T, C, I>(
        &self,
        key: &str,
        make: impl FnMut() -> C,
        interrupt: impl Future<Output = I>,
    ) -> RedisResult<Sent<T, WaitConn, I>>
    where
        T: FromRedisValue,
        C: std::borrow::Borrow<Cmd>,
    {
        self.listen(key).await; // a blocking wait, or an acquisition replicas must confirm
        self.router.follow(key, &self.waits, make, interrupt).await
    }

    /// The command `make` builds, on `key`, over the wait connection of the node that serves
    /// it (`tickets.rs`), unless `interrupt` comes first (see
    /// [`Router::follow`](crate::net::router::Router::follow)).
    pub(crate) async fn send_ticket<T, C, I>(
        &self,
        key: &str,
        make: impl FnMut() -> C,
        interrupt: impl Future<Output = I>,
    ) -> RedisResult<Sent<T, Carried, I>>
    where
        T: FromRedisValue,
        C: std::borrow::Borrow<Cmd>,
    {
        self.listen(key).await;
        self.router
            .follow(key, &self.tickets, make, interrupt)
            .await
    }

    /// The client's wait connections.
    pub(crate) fn tickets(&self) -> &Tickets {
        &self.tickets
    }

    /// Gives back a wait connection whose last command was answered (never a killed one).
    pub(crate) fn give_back(&self, conn: WaitConn) {
        self.waits.put(conn);
    }

    /// Asks again where things are after a `READONLY` or `TRYAGAIN`: the sentinels for the
    /// master, or the cluster for its slot map.
    pub(crate) async fn refresh_route(&self) {
        self.router.refresh().await;
    }

    /// `cmd` on `key` as [`Core::query`] does, sent once more if the connection was
    /// dropped: for commands that may run twice (see
    /// [`Router::query_again`](crate::net::router::Router::query_again)).
    pub(crate) async fn query_again<T: FromRedisValue>(
        &self,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        self.router.query_again(key, cmd).await
    }

    /// Whether a failed node can be replaced by another (Sentinel, Redis Cluster).
    pub(crate) fn follows_failovers(&self) -> bool {
        self.router.follows_failovers()
    }

    /// Whether the node that serves `key` answers a `PING` within the response timeout.
    pub(crate) async fn probe(&self, key: &str) -> RedisResult<()> {
        self.query_again::<String>(key, &commands::ping())
            .await
            .map(drop)
    }

    /// `LOCK.INFO name`: the lock's state, or `None` if it is free.
    pub(crate) async fn info(&self, name: &str) -> Result<Option<LockInfo>> {
        let reply = self
            .query_again(name, &commands::info(Kind::Lock, name))
            .await;
        let reply: Value = reply.map_err(|e| Error::of_key(e, name))?;
        Ok(LockInfo::from_reply(reply)?)
    }

    /// `RWLOCK.INFO name`: the read-write lock's state, or `None` if it is free.
    pub(crate) async fn rw_info(&self, name: &str) -> Result<Option<RwLockInfo>> {
        let reply = self
            .query_again(name, &commands::info(Kind::Read, name))
            .await;
        let reply: Value = reply.map_err(|e| Error::of_key(e, name))?;
        Ok(RwLockInfo::from_reply(reply)?)
    }

    /// `SEM.INFO name`: the semaphore's state, or `None` if it does not exist.
    pub(crate) async fn sem_info(&self, name: &str) -> Result<Option<SemaphoreInfo>> {
        let cmd = commands::info(Kind::Sem(0), name);
        let reply = self.query_again(name, &cmd).await;
        let reply: Value = reply.map_err(|e| Error::of_key(e, name))?;
        Ok(SemaphoreInfo::from_reply(reply)?)
    }

    /// `owner`'s holding of `key` as the server counts it, whatever the family of `kind`:
    /// its token and its [`Units`] (a lock's holds, a semaphore's permits, a read-write
    /// lock's read and write holds), or `None`.
    pub(crate) async fn counted(
        &self,
        kind: Kind,
        key: &str,
        owner: &str,
    ) -> Result<Option<(u64, Units)>> {
        if kind == Kind::Latch {
            return Ok(None);
        }
        if let Kind::Sem(_) = kind {
            let info = self.sem_info(key).await?;
            let holder = info.as_ref().and_then(|info| info.holder(owner));
            return Ok(holder.map(|h| (h.token, [h.permits, 0])));
        }
        if !kind.is_rw() {
            let info = self.info(key).await?;
            let info = info.filter(|info| info.owner == owner);
            return Ok(info.map(|info| (info.token, [info.holds, 0])));
        }
        let info = self.rw_info(key).await?;
        let holder = info.as_ref().and_then(|info| info.holder(owner));
        Ok(holder.map(|h| (h.token, [h.reads, h.writes])))
    }

    /// `LOCK.FORCERELEASE name` (`RWLOCK.FORCERELEASE` for a read-write lock): true if a
    /// lock was removed.
    pub(crate) async fn force_release(&self, kind: Kind, name: &str) -> Result<bool> {
        let removed: i64 = self
            .admin(name, &commands::force_release(kind, name))
            .await?;
        Ok(removed == 1)
    }

    /// `LOCK.RELEASE key owner TOKEN token` (`RWLOCK.RELEASE key owner MODE ...`): the
    /// holds that remain (of that mode).
    pub(crate) async fn release(
        &self,
        kind: Kind,
        key: &str,
        owner: &str,
        token: u64,
    ) -> RedisResult<u64> {
        // A latch's wait holds nothing: there is nothing to give back.
        if kind == Kind::Latch {
            return Ok(0);
        }
        let cmd = commands::release(kind, key, owner, token);
        self.router.query_fresh(key, &cmd).await
    }

    /// `cmd` on `name`, with an unknown command read as a missing module.
    async fn admin<T: FromRedisValue>(&self, name: &str, cmd: &Cmd) -> Result<T> {
        let reply = self.query(name, cmd).await;
        reply.map_err(|e| Error::of_key(e, name))
    }
}

/// Whether `cmd` may make a holding at once (`LOCK.ACQUIRE`, `RWLOCK.ACQUIRE`,
/// `SEM.ACQUIRE`): the node that runs it must be listened to first.
fn acquires(cmd: &Cmd) -> bool {
    let name = cmd.args_iter().next();
    matches!(name, Some(redis::Arg::Simple(name)) if name.ends_with(b".ACQUIRE"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_acquisitions_wait_for_a_listening_connection() {
        for name in ["LOCK.ACQUIRE", "RWLOCK.ACQUIRE", "SEM.ACQUIRE"] {
            assert!(super::acquires(&redis::cmd(name)), "{name}");
        }
        for name in [
            "LOCK.INFO",
            "LOCK.FORCERELEASE",
            "SEM.PERMITS",
            "LATCH.COUNTDOWN",
        ] {
            assert!(!super::acquires(&redis::cmd(name)), "{name}");
        }
    }
}
