/* SEM.INFO key */

use redis_module::raw;

use crate::commands::dispatch::{Args, Out};
use crate::host::node;
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::info::parse;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    let Some(mut state) = key.read_sem()? else {
        return Ok(Reply::Nil);
    };
    let now = node::now_ms();
    state.holders.retain(|h| !h.lapsed(now));
    let out = Out::new(ctx)?;
    // A map in RESP3, a flat field/value array in RESP2.
    out.map(5);
    out.bulk(b"permits");
    out.int(state.total);
    out.bulk(b"available");
    out.int(state.available().max(0));
    out.bulk(b"holders");
    out.array(state.holders.len());
    for h in &state.holders {
        out.array(4);
        out.bulk(&h.owner);
        out.int(h.permits);
        out.int(h.deadline_ms.saturating_sub(now));
        out.int(h.token);
    }
    out.waits((node::selected_db(ctx), key.name()), |out, kind| {
        out.int(match kind {
            Kind::Permits(n) => i64::from(n),
            _ => 0,
        });
    });
    Ok(Reply::Sent)
}
