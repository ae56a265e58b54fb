//! The arguments of `LOCK.WAIT`, parsed.

use crate::args::{self, strict_i64, Options};
use crate::error::{LockError, Opt};

#[derive(Debug, PartialEq, Eq)]
pub struct WaitArgs<'a> {
    pub owner: &'a [u8],
    pub options: Options,
    /// `TO`: the connection whose mailbox receives the outcome.
    pub to: Option<u64>,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE and WAIT.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<WaitArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let (to, others) = split_to(rest)?;
    let options = args::options(&others, &[Opt::Lease, Opt::Wait], now_ms)?;
    Ok(WaitArgs { owner, options, to })
}

/// Takes `TO client-id` out of `rest`: the client id, and the other arguments in order.
pub fn split_to<'a>(rest: &[&'a [u8]]) -> Result<(Option<u64>, Vec<&'a [u8]>), LockError> {
    let mut to = None;
    let mut others: Vec<&[u8]> = Vec::with_capacity(rest.len());
    for pair in rest.chunks(2) {
        match pair {
            [name, value] if name.eq_ignore_ascii_case(b"TO") => {
                let id = strict_i64(value).filter(|id| *id > 0);
                let id = id.ok_or(LockError::BadArg {
                    name: "TO",
                    expected: "a client id (a positive integer)",
                })?;
                if to.replace(id.unsigned_abs()).is_some() {
                    return Err(LockError::BadArg {
                        name: "TO",
                        expected: "given once",
                    });
                }
            }
            [name] if name.eq_ignore_ascii_case(b"TO") => {
                return Err(LockError::BadArg {
                    name: "TO",
                    expected: "followed by a client id",
                })
            }
            pair => others.extend_from_slice(pair),
        }
    }
    Ok((to, others))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_is_taken_out_of_the_options() {
        let argv: [&[u8]; 9] = [
            b"LOCK.WAIT",
            b"k",
            b"me",
            b"LEASE",
            b"10",
            b"to",
            b"42",
            b"WAIT",
            b"5",
        ];
        let a = parse(&argv, 0).unwrap();
        assert_eq!(
            (a.options.lease, a.options.wait, a.to),
            (Some(10), Some(5), Some(42))
        );
    }

    #[test]
    fn a_bad_or_repeated_to_is_refused() {
        for to in [&b"0"[..], b"-1", b"x", b"01"] {
            let argv: [&[u8]; 5] = [b"LOCK.WAIT", b"k", b"me", b"TO", to];
            assert!(matches!(
                parse(&argv, 0),
                Err(LockError::BadArg { name: "TO", .. })
            ));
        }
        let argv: [&[u8]; 7] = [b"LOCK.WAIT", b"k", b"me", b"TO", b"1", b"TO", b"2"];
        assert!(matches!(
            parse(&argv, 0),
            Err(LockError::BadArg { name: "TO", .. })
        ));
    }

    #[test]
    fn to_without_a_value_is_refused() {
        let argv: [&[u8]; 4] = [b"LOCK.WAIT", b"k", b"me", b"TO"];
        assert!(matches!(
            parse(&argv, 0),
            Err(LockError::BadArg { name: "TO", .. })
        ));
    }
}
