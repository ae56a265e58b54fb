//! The arguments of `LOCK.RENEW`, parsed.

use crate::args;
use crate::error::{LockError, Opt};

#[derive(Debug, PartialEq, Eq)]
pub struct RenewArgs<'a> {
    pub owner: &'a [u8],
    pub lease: Option<i64>,
    /// Renew only the holding with this token.
    pub token: Option<i64>,
}

/// Parses `argv` (command name first); `now_ms` bounds LEASE.
pub fn parse<'a>(argv: &[&'a [u8]], now_ms: i64) -> Result<RenewArgs<'a>, LockError> {
    let [_, _key, owner, rest @ ..] = argv else {
        return Err(LockError::WrongArity);
    };
    let owner = args::owner(owner)?;
    let options = args::options(rest, &[Opt::Lease, Opt::Token], now_ms)?;
    Ok(RenewArgs {
        owner,
        lease: options.lease,
        token: options.token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_is_optional() {
        let r = parse(&[b"LOCK.RENEW", b"k", b"o"], 0).unwrap();
        assert_eq!(r.lease, None);
        let r = parse(&[b"LOCK.RENEW", b"k", b"o", b"lease", b"5"], 0).unwrap();
        assert_eq!(r.lease, Some(5));
    }

    #[test]
    fn token_may_come_with_or_without_lease() {
        let r = parse(
            &[b"LOCK.RENEW", b"k", b"o", b"TOKEN", b"9", b"LEASE", b"5"],
            0,
        )
        .unwrap();
        assert_eq!((r.lease, r.token), (Some(5), Some(9)));
        let r = parse(&[b"LOCK.RENEW", b"k", b"o", b"token", b"0"], 0).unwrap();
        assert_eq!((r.lease, r.token), (None, Some(0)));
    }

    #[test]
    fn wait_is_not_an_option_of_renew() {
        let e = parse(&[b"LOCK.RENEW", b"k", b"o", b"WAIT", b"5"], 0).unwrap_err();
        assert!(matches!(e, LockError::UnknownOption { .. }));
    }
}
