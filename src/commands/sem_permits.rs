/* SEM.PERMITS key n | SEM.PERMITS key ADD n */
//! Sets a semaphore's total (or adds to it, `ADD n`), creating it; replicated verbatim (a
//! replica's total is its master's, so an `ADD` gives the same total there). A raised
//! total serves the queue; a lowered one takes nothing back, and sends away the waits it
//! can never grant.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{sem_serve, sem_take};
use crate::host::{gate, node};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::sem::parse_total;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let change = parse_total(args.bytes())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    // A replica or an AOF replay takes its master's word on the holders (each change
    // comes as a `SEM.APPLY`), and has nobody queued to serve.
    if node::from_replication(ctx) {
        let current = key.read_sem()?.map_or(0, |state| state.total);
        let total = change.applied(current)?;
        key.set_sem_total(total)?;
        return Ok(Reply::Integer(total));
    }
    // Anything but a semaphore (or no key) is refused before it is written.
    let mut state = sem_serve::live_state(ctx, &key)?;
    let total = change.applied(state.total)?;
    key.set_sem_total(total)?;
    state.total = total;
    sem_take::after_change(ctx, &key, state)?;
    Ok(Reply::Integer(total))
}
