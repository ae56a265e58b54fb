//! `LOCK.FENCED` without Redis: its arguments, the inner commands it refuses, where the
//! inner keys may be, and whether the caller's holding is the lock's current one.

use crate::args::{self, strict_i64};
use crate::cluster::key_slot;
use crate::error::{clip, FenceError, LockError, Opt, Refusal};
use crate::lock::Holding;
use crate::rwlock::RwState;

/// `LOCK.FENCED key owner token command [arg ...]`.
#[derive(Debug, PartialEq, Eq)]
pub struct FencedArgs<'a> {
    pub owner: &'a [u8],
    /// The token of the caller's holding (0: a lock written by a script-based client).
    pub token: i64,
    /// The inner command's name (argument 4); its arguments follow it.
    pub command: &'a [u8],
}

/// Where the inner command starts in `argv`.
pub const INNER: usize = 4;

/// Parses `argv` (command name first).
pub fn parse<'a>(argv: &[&'a [u8]]) -> Result<FencedArgs<'a>, LockError> {
    let [_, _key, owner, token, command, ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let Some(token) = strict_i64(token) else {
        return Err(LockError::NotAnInteger(Opt::Token));
    };
    if token < 0 {
        return Err(LockError::TokenNegative);
    }
    Ok(FencedArgs {
        owner,
        token,
        command,
    })
}

/// Blocking commands, whose wait could not be atomic with the check.
const BLOCKING: [&str; 10] = [
    "blpop",
    "brpop",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    "wait",
    "waitaof",
];

/// Commands that open or end a transaction or a subscription.
const TRANSACTION: [&str; 11] = [
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "unsubscribe",
    "punsubscribe",
    "sunsubscribe",
];

/// Commands that run a script or a function.
const SCRIPTS: [&str; 6] = [
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// Why the inner command `argv` (its name first) cannot run fenced, by its name alone;
/// `in_script`: `LOCK.FENCED` itself runs inside a script or a function.
pub fn refusal(argv: &[&[u8]], in_script: bool) -> Option<Refusal> {
    let name = argv.first()?;
    let is = |list: &[&str]| list.iter().any(|n| name.eq_ignore_ascii_case(n.as_bytes()));
    let stream_read = is(&["xread", "xreadgroup"]);
    if in_script && is(&SCRIPTS) {
        // Redis asserts that no script runs when one starts: it would crash.
        Some(Refusal::InScript)
    } else if is(&BLOCKING) || (stream_read && blocks_on_streams(argv)) {
        Some(Refusal::Blocking)
    } else if is(&TRANSACTION) {
        Some(Refusal::Transaction)
    } else if is_lock_command(name) {
        Some(Refusal::LockCommand)
    } else {
        None
    }
}

/// Whether `XREAD`/`XREADGROUP` (`argv`, its name first) has the option `BLOCK`: only the
/// options before `STREAMS` count (a stream, a group or a consumer may be named `block`).
fn blocks_on_streams(argv: &[&[u8]]) -> bool {
    let mut rest = argv.get(1..).unwrap_or_default();
    while let [option, ..] = rest {
        let is = |name: &str| option.eq_ignore_ascii_case(name.as_bytes());
        let skip = if is("streams") {
            return false;
        } else if is("block") {
            return true;
        } else if is("group") {
            3
        } else if is("count") {
            2
        } else {
            1
        };
        rest = rest.get(skip..).unwrap_or_default();
    }
    false
}

/// Whether `name` is a `LOCK.*` command (their keys are never looked up inside
/// `LOCK.FENCED`: a `LOCK.FENCED` nested a hundred thousand times would recurse that deep).
pub fn is_lock_command(name: &[u8]) -> bool {
    name.get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"lock."))
}

/// [`refusal`] as the error `LOCK.FENCED` answers.
pub fn check_command(argv: &[&[u8]], in_script: bool) -> Result<(), LockError> {
    match refusal(argv, in_script) {
        Some(why) => {
            let command = clip(argv.first().copied().unwrap_or_default());
            Err(LockError::Fence(FenceError::Refused { command, why }))
        }
        None => Ok(()),
    }
}

/// One key of the inner command, and whether the command only reads it.
#[derive(Debug, Clone, Copy)]
pub struct InnerKey<'a> {
    pub name: &'a [u8],
    pub read_only: bool,
}

/// Checks the inner command's keys: at least one, the lock's own key only read, and in a
/// cluster every key in the lock's slot.
pub fn check_keys(
    lock: &[u8],
    command: &[u8],
    keys: &[InnerKey<'_>],
    cluster: bool,
) -> Result<(), LockError> {
    let refuse = |why| {
        let command = clip(command);
        Err(LockError::Fence(FenceError::Refused { command, why }))
    };
    if keys.is_empty() {
        return refuse(Refusal::NoKeys);
    }
    if keys.iter().any(|k| k.name == lock && !k.read_only) {
        return refuse(Refusal::LockKey);
    }
    let slot = key_slot(lock);
    match keys.iter().find(|k| cluster && key_slot(k.name) != slot) {
        Some(k) => Err(LockError::Fence(FenceError::CrossSlot {
            key: clip(k.name),
            lock: clip(lock),
        })),
        None => Ok(()),
    }
}

/// Whether `owner`'s holding with `token` is the lock's current one: `NOTHELD` when the
/// owner does not hold the lock, `FENCED` when it holds a newer holding.
pub fn check_holding(
    current: Option<&Holding>,
    lock: &[u8],
    owner: &[u8],
    token: i64,
) -> Result<(), LockError> {
    match current {
        Some(h) if h.is_held_by(owner) && h.token == token => Ok(()),
        Some(h) if h.is_held_by(owner) => Err(LockError::Fence(FenceError::Stale {
            key: clip(lock),
            owner: clip(owner),
            token,
            current: h.token,
        })),
        _ => Err(LockError::NotHeld {
            key: clip(lock),
            owner: clip(owner),
        }),
    }
}

/// What `LOCK.FENCED` checks on a read-write lock: the holding of `owner` when it holds
/// write holds (its token is its holding's); a reader may not write through the fence.
pub fn rw_holding(
    state: &RwState,
    lock: &[u8],
    owner: &[u8],
    now_ms: i64,
) -> Result<Option<Holding>, LockError> {
    match state.holder(owner).filter(|h| !h.lapsed(now_ms)) {
        Some(h) if h.writes > 0 => Ok(Some(Holding {
            owner: owner.to_vec(),
            count: h.writes,
            token: h.token,
        })),
        Some(_) => Err(LockError::NotHeldForWrite {
            key: clip(lock),
            owner: clip(owner),
        }),
        None => Ok(None),
    }
}

#[cfg(test)]
#[path = "fence_tests.rs"]
mod tests;
