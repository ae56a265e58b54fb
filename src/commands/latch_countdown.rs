/* LATCH.COUNTDOWN key */
//! Takes one off a countdown latch's count; at zero deletes it, publishes `0` and releases
//! every latch wait queued on it (docs/commands/latch.countdown.md).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{expiry, latch_serve};
use crate::host::{gate, node};
use crate::store::latch::{decrement, delete, latch_message};
use crate::store::{LockKey, Mode};
use rlock_core::error::LockError;
use rlock_core::parse::latch;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    latch::key_only(args.bytes())?;
    gate::client_writes(ctx)?;
    let name = args.key()?;
    let key = redis_module::RedisString::string_as_slice(name);
    match LockKey::open(ctx, name, Mode::Read)?.read_latch()? {
        Some(count) if count > 1 => {
            decrement(ctx, name)?;
            return Ok(Reply::Integer(count - 1));
        }
        Some(count) => {
            // As Redisson's countDown: the key goes; only reaching zero is announced.
            delete(ctx, name)?;
            if count == 1 {
                latch_message(ctx, key, b"0")?;
            }
        }
        None => {}
    }
    let db = node::selected_db(ctx);
    if let Some(at) = latch_serve::release_all(ctx, db, key) {
        // Waits of another kind on the name: the key is gone, a check serves them.
        expiry::arm(ctx, db, key, at);
    }
    Ok(Reply::Integer(0))
}
