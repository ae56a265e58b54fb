//! Workers over several independent servers: [`RedLock`] on a majority, [`MultiLock`] all
//! or none. A RedLock is one lock (its key, its token: the highest of its members'); a
//! MultiLock's members are separate locks, each named for its server.

use std::sync::Arc;

use rlock_client::{Client, LockOptions, MultiLock, RedLock};

use super::client::{resource_conn, section};
use super::{Ctx, Draft, LEASE};

const REDLOCK_KEYS: &[&str] = &["rl:a", "rl:b"];

/// A RedLock worker: cancelled acquisitions and limited waits, watchdog or explicit lease.
pub async fn run_redlock(ctx: Arc<Ctx>, clients: Vec<Client>, name: String) {
    let Some(mut conn) = resource_conn(&ctx).await else {
        return;
    };
    while !ctx.stopped() {
        let key = *ctx.rng.pick(REDLOCK_KEYS);
        let options = if ctx.rng.chance(30) {
            LockOptions::new().lease(ctx.rng.millis(1500, 3000))
        } else {
            LockOptions::new().lease(LEASE).watchdog(true)
        };
        let Ok(redlock) = RedLock::new(clients.clone(), key) else {
            return;
        };
        let redlock = redlock.options(options);
        let got = if ctx.rng.chance(30) {
            let cancel_after = ctx.rng.millis(1, 500);
            match tokio::time::timeout(cancel_after, redlock.acquire()).await {
                Ok(Ok(guard)) => Some(guard),
                _ => None,
            }
        } else {
            redlock
                .try_acquire(ctx.rng.millis(0, 2000))
                .await
                .ok()
                .flatten()
        };
        let Some(guard) = got else {
            ctx.history.acquired(&name, false);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        ctx.history.acquired(&name, true);
        let draft = Draft {
            worker: name.clone(),
            key: key.to_owned(),
            owner: guard.owner().to_owned(),
            token: guard.token(),
            fenced: true,
            lease_ms: guard.remaining().as_millis() as u64,
        };
        section(&ctx, &mut conn, draft, || guard.is_lost()).await;
        let _ = guard.release().await;
    }
}

/// A MultiLock worker: two of the three servers' locks at once, each named for its server.
pub async fn run_multilock(ctx: Arc<Ctx>, clients: Vec<Client>, name: String) {
    let Some(mut conn) = resource_conn(&ctx).await else {
        return;
    };
    while !ctx.stopped() {
        let skip = ctx.rng.range(0, clients.len() as u64) as usize;
        let letter = if ctx.rng.chance(50) { "a" } else { "b" };
        let options = LockOptions::new().lease(LEASE).watchdog(true);
        let locks = (0..clients.len())
            .filter(|&i| i != skip)
            .map(|i| clients[i].lock(format!("ml:{letter}{i}")).options(options));
        let multi = MultiLock::new(locks);
        let Ok(Some(guard)) = multi.try_acquire(ctx.rng.millis(0, 2000)).await else {
            ctx.history.acquired(&name, false);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        ctx.history.acquired(&name, true);
        for member in guard.guards() {
            let draft = Draft {
                worker: name.clone(),
                key: member.key().to_owned(),
                owner: member.owner().to_owned(),
                token: member.token(),
                fenced: true,
                lease_ms: member.remaining().as_millis() as u64,
            };
            section(&ctx, &mut conn, draft, || guard.is_lost()).await;
        }
        let _ = guard.release().await;
    }
}
