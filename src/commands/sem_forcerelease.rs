/* SEM.FORCERELEASE key */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::sem_take;
use crate::host::{gate, node};
use crate::store::{LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::forcerelease::parse;
use rlock_core::reply::Reply;
use rlock_core::semaphore::SemState;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let Some(state) = key.read_sem()?.filter(|s| !s.holders.is_empty()) else {
        return Ok(Reply::Integer(0));
    };
    // Holdings whose lease ended are cleaned up too, but nobody held them any more.
    let now = node::now_ms();
    let held = state.holders.iter().any(|h| !h.lapsed(now));
    key.clear_sem(state.total)?;
    let total = state.total;
    let freed = SemState {
        total,
        holders: Vec::new(),
    };
    sem_take::after_change(ctx, &key, freed)?;
    if !held {
        return Ok(Reply::Integer(0));
    }
    counters::FORCE_RELEASES.bump();
    Ok(Reply::Integer(1))
}
