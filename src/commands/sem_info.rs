/* SEM.INFO key */

use std::ffi::c_char;

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::host::ffi::api;
use crate::host::node;
use crate::store::{LockKey, Mode};
use crate::waits::queues;
use rlock_core::error::LockError;
use rlock_core::parse::info::parse;
use rlock_core::reply::Reply;
use rlock_core::rwlock::Kind;

/// Most queued waits `SEM.INFO` lists.
const QUEUE_SHOWN: usize = 100;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    parse(args.bytes())?;
    let key = LockKey::open(ctx, args.key()?, Mode::Read)?;
    let Some(mut state) = key.read_sem()? else {
        return Ok(Reply::Nil);
    };
    let now = node::now_ms();
    state.holders.retain(|h| !h.lapsed(now));
    let db = node::selected_db(ctx);
    let waiting = queues::queue_len(db, key.name());
    let queue = queues::peek(db, key.name(), QUEUE_SHOWN);
    let (reply_map, reply_array) = (
        api!(RedisModule_ReplyWithMap),
        api!(RedisModule_ReplyWithArray),
    );
    let reply_buffer = api!(RedisModule_ReplyWithStringBuffer);
    let reply_int = api!(RedisModule_ReplyWithLongLong);
    let bulk =
        |bytes: &[u8]| unsafe { reply_buffer(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
    let int = |n: i64| unsafe { reply_int(ctx, n) };
    let len = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    // A map in RESP3, a flat field/value array in RESP2.
    unsafe { reply_map(ctx, 5) };
    bulk(b"permits");
    int(state.total);
    bulk(b"available");
    int(state.available().max(0));
    bulk(b"holders");
    unsafe { reply_array(ctx, len(state.holders.len())) };
    for h in &state.holders {
        unsafe { reply_array(ctx, 4) };
        bulk(&h.owner);
        int(h.permits);
        int(h.deadline_ms.saturating_sub(now));
        int(h.token);
    }
    bulk(b"waiters");
    int(len(waiting));
    bulk(b"queue");
    unsafe { reply_array(ctx, len(queue.len())) };
    for (owner, kind) in &queue {
        unsafe { reply_array(ctx, 2) };
        bulk(owner);
        int(match kind {
            Kind::Permits(n) => i64::from(*n),
            _ => 0,
        });
    }
    Ok(Reply::Sent)
}
