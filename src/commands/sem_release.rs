/* SEM.RELEASE key owner [permits] [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::sem_take;
use crate::host::gate;
use crate::store::{LockKey, Mode};
use rlock_core::counters;
use rlock_core::error::{self, LockError};
use rlock_core::parse::release::{parse, ReleaseArgs};
use rlock_core::parse::sem;
use rlock_core::reply::Reply;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let (permits, rest) = sem::split_release(args.bytes())?;
    let ReleaseArgs { owner, token } = parse(&rest)?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    match sem_take::release(ctx, &key, args.name(2)?, (permits, token))? {
        Some(left) => Ok(Reply::Integer(left)),
        None => {
            counters::NOT_HELD_ERRORS.bump();
            Err(LockError::NotHeld {
                key: error::clip(key.name()),
                owner: error::clip(owner),
            })
        }
    }
}
