//! The arguments of `LOCK.GRANTS`, parsed.

use crate::args::strict_i64;
use crate::error::LockError;

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
