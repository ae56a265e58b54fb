//! Confirming a grant on replicas: Redis's `WAIT` after the acquisition, on the connection
//! that acquired (`WAIT` counts the replicas that have that connection's last write).

use std::time::Duration;

use crate::acquire::guard::Guard;
use crate::core::shared::Core;
use crate::net::pool::WaitConn;
use crate::pure::commands;
use crate::pure::error::{timed_out, Error, Result};
use crate::pure::options::ceil_ms;

/// Waits up to `timeout` for `wanted` replicas to acknowledge the grant `guard` holds, made
/// on `conn`. Releases the hold and fails if fewer do.
pub(crate) async fn confirm(
    core: &Core,
    guard: Guard,
    mut conn: WaitConn,
    wanted: usize,
    timeout: Duration,
) -> Result<Guard> {
    // `WAIT n 0` would block forever.
    let timeout_ms = ceil_ms(timeout).max(1);
    let cmd = commands::wait_replicas(wanted, timeout_ms);
    // The wait connection has no response timeout of its own: bound the `WAIT` here.
    let bound = timeout + core.options().response_timeout_duration();
    let answer = tokio::time::timeout(bound, cmd.query_async::<usize>(&mut conn.conn)).await;
    let answer = answer.unwrap_or_else(|_| Err(timed_out("no reply to WAIT in time")));
    let acked = match answer {
        Ok(acked) => {
            core.give_back(conn);
            acked
        }
        Err(err) => {
            give_back(guard).await;
            return Err(err.into());
        }
    };
    if acked >= wanted {
        tracing::debug!(key = %guard.key(), acked, "grant acknowledged by replicas");
        return Ok(guard);
    }
    let key = guard.key().to_owned();
    tracing::warn!(
        key,
        wanted,
        acked,
        "grant not acknowledged by enough replicas; releasing"
    );
    give_back(guard).await;
    Err(Error::NotReplicated { key, wanted, acked })
}

async fn give_back(guard: Guard) {
    let (key, owner) = (guard.key().to_owned(), guard.owner().to_owned());
    if let Err(err) = guard.release().await {
        tracing::warn!(key, owner, %err, "could not release an unconfirmed grant");
    }
}
