//! One file per command: its synopsis, an args struct with a pure `parse`, and a thin
//! handler (parse → state machine → store → reply).

pub mod acquire;
pub mod apply;
pub mod forcerelease;
pub mod info;
pub mod release;
pub mod renew;

use redis_module::{raw, RedisString};

use crate::error::LockError;
use crate::store::LockKey;
use crate::{publish, waiters};

/// The raw bytes of each argument, command name first.
fn argv(args: &[RedisString]) -> Vec<&[u8]> {
    args.iter().map(RedisString::as_slice).collect()
}

/// The key argument (argv[1]); arity is checked by each parser first.
fn key_arg(args: &[RedisString]) -> Result<*mut raw::RedisModuleString, LockError> {
    args.get(1).map(|s| s.inner).ok_or(LockError::WrongArity)
}

/// A lock's last hold is gone (the key still holds it): hand it to the first waiter, or
/// delete it and publish the release message.
pub(crate) fn free(ctx: *mut raw::RedisModuleCtx, key: &LockKey) -> Result<(), LockError> {
    let db = waiters::selected_db(ctx);
    if waiters::hand_off(db, key, true)?.is_none() {
        key.delete()?;
        publish::release_message(ctx, key.name())?;
    }
    Ok(())
}
