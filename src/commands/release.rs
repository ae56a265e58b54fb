/* LOCK.RELEASE key owner [TOKEN t] */

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::{door, expiry, losses};
use crate::host::gate;
use crate::store::{LockKey, Mode, Over, Read, Replicate};
use rlock_core::counters;
use rlock_core::error::{self, LockError};
use rlock_core::lock::{self, ReleaseStep};
use rlock_core::parse::release::{parse, ReleaseArgs};
use rlock_core::reply::Reply;
use rlock_core::watch::Held;

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    let ReleaseArgs { owner, token } = parse(args.bytes())?;
    gate::client_writes(ctx)?;
    let key = LockKey::open(ctx, args.key()?, Mode::Write)?;
    let name = args.name(2)?;
    // The owner's own holding is read without copying its name.
    let step = match key.read_own(&name)? {
        Read::Own { count, token: held } if token.is_none_or(|t| held == t) => {
            lock::release_held(count)
        }
        Read::Own { .. } => ReleaseStep::NotHeld,
        Read::Other(current) => lock::release(
            current
                .filter(|holding| token.is_none_or(|t| holding.token == t))
                .as_ref(),
            owner,
        ),
    };
    match step {
        ReleaseStep::Remaining(count) => {
            key.write_count(&name, count)?;
            losses::released(ctx, key.name(), (owner, Held::Lock), count);
            counters::RELEASED.bump();
            Ok(Reply::Integer(count))
        }
        ReleaseStep::Freed => {
            // Its own release: nothing to announce.
            losses::released(ctx, key.name(), (owner, Held::Lock), 0);
            // Replayed on a replica or from the AOF, the lock is there with this one hold
            // (it cannot expire there), so the command deletes it as it did here.
            let handed = door::end_holding(
                ctx,
                &key,
                (Replicate::Command, Over::Replacing(name.raw)),
                true,
            )?;
            expiry::handed(ctx, key.name(), handed);
            counters::RELEASED.bump();
            Ok(Reply::Integer(0))
        }
        ReleaseStep::NotHeld => {
            counters::NOT_HELD_ERRORS.bump();
            Err(LockError::NotHeld {
                key: error::clip(key.name()),
                owner: owner.to_vec(),
            })
        }
    }
}
