/* RWLOCK.RENEW key owner [LEASE ms] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{rw_serve, rw_take};
use crate::host::{config, gate, node};
use crate::store::{entry_of, LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::renew::parse;
use rlock_core::parse::rw;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let now = node::now_ms();
    let parsed = parse(args.bytes(), now)?;
    rw::owner(parsed.owner)?;
    gate::client_writes(ctx)?;
    // After a stall the node may have been failed over: it extends no lease until it knows
    // its replicas again.
    gate::renewals(now)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    let (mut state, pruned) = rw_serve::live_state(ctx, &key)?;
    let held = state
        .holder(parsed.owner)
        .filter(|h| h.native() && parsed.token.is_none_or(|t| h.token == t))
        .cloned();
    let renewed = match held {
        Some(mut holder) => {
            let lease = parsed.lease.unwrap_or_else(config::default_lease);
            holder.deadline_ms = Some(now.saturating_add(lease));
            key.apply_rw(&entry_of(owner, &holder))?;
            state.put(holder);
            counters::RENEWED.bump();
            1
        }
        None => {
            counters::RENEWALS_LOST.bump();
            0
        }
    };
    if pruned {
        rw_take::after_change(ctx, &key, state, true)?;
    }
    Ok(Reply::Integer(renewed))
}
