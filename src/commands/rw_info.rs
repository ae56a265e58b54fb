/* RWLOCK.INFO key */

use redis_module::raw;

use crate::commands::dispatch::{Args, Out};
use crate::host::node;
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::info::parse;
use rlock_core::reply::Reply;
use rlock_core::rwlock::{Kind, RwMode};

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    let Some(mut state) = key.read_rw()? else {
        return Ok(Reply::Nil);
    };
    let now = node::now_ms();
    state.holders.retain(|h| !h.lapsed(now));
    let key_ttl = key.ttl_ms()?;
    let out = Out::new(ctx)?;
    // A map in RESP3, a flat field/value array in RESP2.
    out.map(4);
    out.bulk(b"mode");
    out.bulk(state.mode().name().as_bytes());
    out.bulk(b"holders");
    out.array(state.holders.len());
    for h in &state.holders {
        out.array(5);
        out.bulk(&h.owner);
        out.int(h.reads);
        out.int(h.writes);
        out.int(h.deadline_ms.map_or(key_ttl, |d| d.saturating_sub(now)));
        out.int(h.token);
    }
    out.waits((node::selected_db(ctx), key.name()), |out, kind| {
        out.bulk(match kind {
            Kind::Rw(RwMode::Write) => &b"write"[..],
            Kind::Rw(RwMode::Read) => b"read",
            Kind::Lock => b"lock",
            Kind::Latch => b"latch",
            Kind::Permits(_) => b"permits",
        });
    });
    Ok(Reply::Sent)
}
