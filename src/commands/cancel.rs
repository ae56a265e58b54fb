/* LOCK.CANCEL key wait-id */
//! Ends a ticket (`LOCK.WAIT`) early. Still queued: it leaves the queue, reply 0 (no
//! outcome will come). Granted into a mailbox (`TO`) and not read yet: taken out of it,
//! reply the token (the caller holds the lock now and releases it). Otherwise nil: no such
//! wait on this key, or its outcome went out already (a pushed grant is the receiver's).

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::ticket_wait;
use crate::host::node;
use crate::waits::tickets;
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::reply::Reply;

/// Parses `argv` (command name first): the wait id.
pub fn parse(argv: &[&[u8]]) -> Result<u64, LockError> {
    let [_, _key, id] = argv else {
        return Err(LockError::WrongArity);
    };
    let id = strict_i64(id).filter(|id| *id > 0);
    id.map(i64::unsigned_abs).ok_or(LockError::BadArg {
        name: "the wait id",
        expected: "a positive integer",
    })
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let id = parse(args.bytes())?;
    let key = redis_module::RedisString::string_as_slice(args.key()?);
    let db = node::selected_db(ctx);
    let caller = tickets::me(ctx)?;
    Ok(match ticket_wait::cancel(ctx, (db, key), id, &caller)? {
        Some(n) => Reply::Integer(n),
        None => Reply::Nil,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_id_is_a_positive_integer() {
        assert_eq!(parse(&[b"LOCK.CANCEL", b"", b"7"]), Ok(7));
        for bad in [&b"0"[..], b"-3", b"x", b""] {
            assert!(matches!(
                parse(&[b"LOCK.CANCEL", b"", bad]),
                Err(LockError::BadArg { .. })
            ));
        }
        assert_eq!(parse(&[b"LOCK.CANCEL", b""]), Err(LockError::WrongArity));
    }
}
