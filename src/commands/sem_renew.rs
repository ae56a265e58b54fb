/* SEM.RENEW key owner [LEASE ms] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{expiry, sem_serve, sem_take};
use crate::host::{config, gate, node};
use crate::store::{sem_entry, LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::renew::parse;
use rlock_core::reply::Reply;
use rlock_core::semglance::{self, Quick};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let now = node::now_ms();
    let parsed = parse(args.bytes(), now)?;
    gate::client_writes(ctx)?;
    // After a stall the node may have been failed over: it extends no lease until it knows
    // its replicas again.
    gate::renewals(now)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    let lease = parsed.lease.unwrap_or_else(config::default_lease);
    let held = match semglance::renewal(&key.sem_glance(&owner)?, parsed.token, now) {
        Quick::Decided(held) => held,
        Quick::Slow => {
            // A lease that ended, or a hash that is not a semaphore: read it whole.
            let state = sem_serve::live_state(ctx, &key)?;
            let held = state.holder(parsed.owner).cloned();
            let held = held.filter(|h| parsed.token.is_none_or(|t| h.token == t));
            sem_take::after_change(ctx, &key, state)?;
            held
        }
    };
    Ok(Reply::Integer(match held {
        Some(mut holder) => {
            holder.deadline_ms = now.saturating_add(lease);
            key.apply_sem(&sem_entry(owner, &holder))?;
            expiry::lease_moved(ctx, key.name(), holder.deadline_ms);
            counters::RENEWED.bump();
            1
        }
        None => {
            counters::RENEWALS_LOST.bump();
            0
        }
    }))
}
