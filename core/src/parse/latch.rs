//! The arguments of the countdown latch's commands (`LATCH.*`), parsed.

use super::wait::split_to;
use crate::args::{self, strict_i64};
use crate::error::{LockError, Opt};

/// `LATCH.SET key count`: the count, at least 1.
pub fn set(argv: &[&[u8]]) -> Result<i64, LockError> {
    let [_, _key, count] = argv else {
        return Err(LockError::WrongArity);
    };
    strict_i64(count)
        .filter(|c| *c >= 1)
        .ok_or(LockError::BadArg {
            name: "count",
            expected: "a positive integer",
        })
}

/// `LATCH.COUNTDOWN key` and `LATCH.COUNT key`: the key only.
pub fn key_only(argv: &[&[u8]]) -> Result<(), LockError> {
    match argv {
        [_, _key] => Ok(()),
        _ => Err(LockError::WrongArity),
    }
}

/// `LATCH.AWAIT key [WAIT ms]`: the `WAIT` limit (0: none).
pub fn await_args(argv: &[&[u8]], now_ms: i64) -> Result<i64, LockError> {
    let [_, _key, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let options = args::options(rest, &[Opt::Wait], now_ms)?;
    Ok(options.wait.unwrap_or(0))
}

/// `LATCH.WAIT key [WAIT ms] [TO client-id]`: the `WAIT` limit (0: none) and `TO`.
pub fn wait_args(argv: &[&[u8]], now_ms: i64) -> Result<(i64, Option<u64>), LockError> {
    let [_, _key, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let (to, others) = split_to(rest)?;
    let options = args::options(&others, &[Opt::Wait], now_ms)?;
    Ok((options.wait.unwrap_or(0), to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_a_positive_integer() {
        assert_eq!(set(&[b"LATCH.SET", b"k", b"3"]), Ok(3));
        for bad in [&b"0"[..], b"-1", b"x", b"", b"1.5", b" 1"] {
            let err = set(&[b"LATCH.SET", b"k", bad]).unwrap_err();
            assert_eq!(err.to_string(), "ERR count must be a positive integer");
        }
        assert_eq!(set(&[b"LATCH.SET", b"k"]), Err(LockError::WrongArity));
    }

    #[test]
    fn await_takes_wait_only() {
        assert_eq!(await_args(&[b"LATCH.AWAIT", b"k"], 0), Ok(0));
        assert_eq!(
            await_args(&[b"LATCH.AWAIT", b"k", b"WAIT", b"50"], 0),
            Ok(50)
        );
        assert!(await_args(&[b"LATCH.AWAIT", b"k", b"LEASE", b"50"], 0).is_err());
        assert!(await_args(&[b"LATCH.AWAIT", b"k", b"WAIT"], 0).is_err());
    }

    #[test]
    fn wait_takes_wait_and_to() {
        let argv: [&[u8]; 6] = [b"LATCH.WAIT", b"k", b"TO", b"7", b"WAIT", b"5"];
        assert_eq!(wait_args(&argv, 0), Ok((5, Some(7))));
        assert_eq!(wait_args(&[b"LATCH.WAIT", b"k"], 0), Ok((0, None)));
        assert!(wait_args(&[b"LATCH.WAIT", b"k", b"TO", b"0"], 0).is_err());
        assert_eq!(
            key_only(&[b"LATCH.COUNT", b"k", b"x"]),
            Err(LockError::WrongArity)
        );
    }
}
