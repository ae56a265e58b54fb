/* LOCK.GRANTS [BLOCK ms] [COUNT n] */
//! Answers the ended waits of this connection's mailbox (tickets queued with
//! `LOCK.WAIT ... TO <this connection>`) as a flat array `wait id, outcome, ...`, oldest
//! first: the outcome is the token of a grant, 0 for a `WAIT` that ran out, or
//! `-<error line>` for a wait refused here. An empty mailbox answers an empty array, or,
//! with `BLOCK ms`, blocks until an outcome comes (0: no limit) and answers nil at the
//! limit. A grant is delivered once its reply is written: a connection that closes before
//! gives it back, and the lock passes on.

use redis_module::raw;

use crate::commands::dispatch::Args;
use crate::handoff::ticket_wait;
use crate::host::ffi::api;
use crate::host::node;
use crate::waits::{blocked, tickets};
use rlock_core::args::strict_i64;
use rlock_core::error::LockError;
use rlock_core::reply::Reply;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct GrantsArgs {
    /// `BLOCK ms`: how long to wait for an outcome (0: no limit).
    pub block: Option<i64>,
    pub count: Option<usize>,
}

/// Parses `argv` (command name first).
pub fn parse(argv: &[&[u8]]) -> Result<GrantsArgs, LockError> {
    let [_, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let mut parsed = GrantsArgs::default();
    for pair in rest.chunks(2) {
        let number = |expected| {
            let value = pair.get(1).and_then(|v| strict_i64(v)).filter(|n| *n >= 0);
            let name = if pair[0].eq_ignore_ascii_case(b"BLOCK") {
                "BLOCK"
            } else {
                "COUNT"
            };
            value.ok_or(LockError::BadArg { name, expected })
        };
        if pair[0].eq_ignore_ascii_case(b"BLOCK") && parsed.block.is_none() {
            parsed.block = Some(number("a number of milliseconds, 0 or more")?);
        } else if pair[0].eq_ignore_ascii_case(b"COUNT") && parsed.count.is_none() {
            let count = number("a positive integer").map(|n| n.unsigned_abs())?;
            if count == 0 {
                return Err(LockError::BadArg {
                    name: "COUNT",
                    expected: "a positive integer",
                });
            }
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            parsed.count = Some(count);
        } else {
            return Err(LockError::BadArg {
                name: "an option of LOCK.GRANTS",
                expected: "BLOCK ms or COUNT n, each at most once",
            });
        }
    }
    Ok(parsed)
}

pub(super) fn run(ctx: *mut raw::RedisModuleCtx, args: &Args<'_>) -> Result<Reply, LockError> {
    // Every argument is an option here (the dispatcher leaves argument 1, a key elsewhere,
    // unread).
    let argv: Vec<&[u8]> = args
        .strings()
        .iter()
        .map(|s| redis_module::RedisString::string_as_slice(*s))
        .collect();
    let parsed = parse(&argv)?;
    // Its `noscript` flag keeps scripts out; this keeps them out of a server without it.
    if node::flags(ctx) & raw::REDISMODULE_CTX_FLAGS_LUA != 0 {
        return Err(LockError::GrantsInScript);
    }
    let client_id = api!(RedisModule_GetClientId);
    let receiver = unsafe { client_id(ctx) };
    let mails = tickets::take_mail(receiver, parsed.count.unwrap_or(usize::MAX));
    match parsed.block {
        Some(block_ms) if mails.is_empty() && node::can_block(ctx) => {
            ticket_wait::park(ctx, receiver, block_ms)?;
            Ok(Reply::Sent)
        }
        Some(_) if mails.is_empty() => Ok(Reply::Nil),
        _ => {
            // Written into the reply now: these grants are delivered.
            let batch: Vec<_> = mails.into_iter().map(|m| (m.wait, m.outcome)).collect();
            blocked::send_batch(ctx, &batch);
            Ok(Reply::Sent)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_in_any_order() {
        let a = parse(&[b"LOCK.GRANTS", b"count", b"3", b"BLOCK", b"0"]).unwrap();
        assert_eq!(
            a,
            GrantsArgs {
                block: Some(0),
                count: Some(3)
            }
        );
        assert_eq!(parse(&[b"LOCK.GRANTS"]).unwrap(), GrantsArgs::default());
    }

    #[test]
    fn bad_options_are_refused() {
        for argv in [
            &[&b"LOCK.GRANTS"[..], b"BLOCK"][..],
            &[b"LOCK.GRANTS", b"BLOCK", b"-1"],
            &[b"LOCK.GRANTS", b"COUNT", b"x"],
            &[b"LOCK.GRANTS", b"COUNT", b"0"],
            &[b"LOCK.GRANTS", b"BLOCK", b"1", b"BLOCK", b"2"],
            &[b"LOCK.GRANTS", b"WAIT", b"1"],
        ] {
            assert!(
                matches!(parse(argv), Err(LockError::BadArg { .. })),
                "{argv:?}"
            );
        }
    }
}
