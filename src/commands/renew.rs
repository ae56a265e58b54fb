/* LOCK.RENEW key owner [LEASE ms] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::expiry;
use crate::host::{config, gate, node};
use crate::store::{LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::LockError;
use rlock_core::parse::renew::parse;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let now = node::now_ms();
    let parsed = parse(args.bytes(), now)?;
    gate::client_writes(ctx)?;
    // After a stall the node may have been failed over: it extends no lease until it knows
    // its replicas again.
    gate::renewals(now)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let owner = args.name(2)?;
    match key.read_as(&owner)? {
        Some(holding)
            if holding.is_held_by(parsed.owner)
                && parsed.token.is_none_or(|t| holding.token == t) =>
        {
            let lease = parsed.lease.unwrap_or_else(config::default_lease);
            let deadline_ms = now.saturating_add(lease);
            key.set_deadline(deadline_ms)?;
            expiry::lease_moved(ctx, key.name(), deadline_ms);
            counters::RENEWED.bump();
            Ok(Reply::Integer(1))
        }
        _ => {
            counters::RENEWALS_LOST.bump();
            Ok(Reply::Integer(0))
        }
    }
}
