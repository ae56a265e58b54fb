/* RWLOCK.RENEW key owner [LEASE ms] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{expiry, rw_serve, rw_take};
use crate::host::{config, gate, node};
use crate::store::{entry_of, LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::renew::parse;
use rlock_core::parse::rw;
use rlock_core::reply::Reply;
use rlock_core::rwglance::{self, Quick};

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
    let lease = parsed.lease.unwrap_or_else(config::default_lease);
    if let Quick::Decided(held) = rwglance::renewal(&key.glance(&owner)?, parsed.token, now) {
        return Ok(Reply::Integer(match held {
            Some(mut holder) => {
                holder.deadline_ms = Some(now.saturating_add(lease));
                key.apply_rw(&entry_of(owner, &holder))?;
                expiry::lease_moved(ctx, key.name(), now.saturating_add(lease));
                counters::RENEWED.bump();
                1
            }
            None => {
                counters::RENEWALS_LOST.bump();
                0
            }
        }));
    }
    // A lease that ended, or a hash the module did not write: read it whole.
    let (mut state, pruned) = rw_serve::live_state(ctx, &key)?;
    let held = state
        .holder(parsed.owner)
        .filter(|h| h.native() && parsed.token.is_none_or(|t| h.token == t))
        .cloned();
    let renewed = match held {
        Some(mut holder) => {
            holder.deadline_ms = Some(now.saturating_add(lease));
            key.apply_rw(&entry_of(owner, &holder))?;
            expiry::lease_moved(ctx, key.name(), now.saturating_add(lease));
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
