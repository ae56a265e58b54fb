//! Parsing of command arguments: pure functions over byte slices, no Redis types.
//!
//! Each command file declares its own args struct and calls these helpers, so every
//! command validates owners, integers and options the same way and with the same errors.

use crate::error::{clip, LockError, Opt, OwnerProblem};
use crate::layout::{self, MODULE_MARK};

/// The longest owner id accepted, in bytes (SPEC.md §1).
pub const MAX_OWNER_LEN: usize = 256;

/// Checks an owner id: 1..=256 bytes, not starting with `@`, and not a fixed field of any
/// layout (`mode`, `permits`): every command that takes an owner asks this, whatever its
/// key holds (see [`layout`]).
pub fn owner(raw: &[u8]) -> Result<&[u8], LockError> {
    let problem = match raw.first() {
        None => OwnerProblem::Empty,
        Some(&MODULE_MARK) => OwnerProblem::Reserved,
        Some(_) if raw.len() > MAX_OWNER_LEN => OwnerProblem::TooLong,
        Some(_) if layout::is_fixed_field(raw) => OwnerProblem::LayoutField,
        Some(_) => return Ok(raw),
    };
    Err(LockError::InvalidOwner(problem))
}

/// Parses a decimal integer the way Redis does: an optional `-`, digits without leading
/// zeros, nothing else, within `i64`.
pub fn strict_i64(raw: &[u8]) -> Option<i64> {
    let (negative, digits) = match raw {
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    match digits {
        [] | [b'0', _, ..] => return None,
        [b'0'] => return if negative { None } else { Some(0) },
        _ => {}
    }
    // Summed as a negative number, which reaches i64::MIN.
    let mut value: i64 = 0;
    for &byte in digits {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(i64::from(digit))?;
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// The options `LEASE ms`, `WAIT ms` and `TOKEN t`, as given.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub lease: Option<i64>,
    pub wait: Option<i64>,
    /// The token the caller's holding must have for the command to act on it.
    pub token: Option<i64>,
}

/// Parses `[LEASE ms] [WAIT ms] [TOKEN t]` in any order, accepting only the options in
/// `allowed`. `now_ms` bounds the durations: now + value must not overflow.
pub fn options(rest: &[&[u8]], allowed: &[Opt], now_ms: i64) -> Result<Options, LockError> {
    let mut parsed = Options::default();
    let mut i = 0;
    while let Some(name) = rest.get(i) {
        let opt = option_name(name)
            .filter(|o| allowed.contains(o))
            .ok_or_else(|| LockError::UnknownOption {
                given: clip(name),
                expected: expected_text(allowed),
            })?;
        // A `let ... else`, not `ok_or`: an error built on the way of every call and then
        // dropped costs a call of its drop glue.
        let Some(raw) = rest.get(i + 1) else {
            return Err(LockError::MissingValue(opt));
        };
        let value = option_value(opt, raw, now_ms)?;
        let slot = match opt {
            Opt::Lease => &mut parsed.lease,
            Opt::Wait => &mut parsed.wait,
            Opt::Token => &mut parsed.token,
        };
        if slot.replace(value).is_some() {
            return Err(LockError::Duplicate(opt));
        }
        i += 2;
    }
    Ok(parsed)
}

fn option_name(raw: &[u8]) -> Option<Opt> {
    if raw.eq_ignore_ascii_case(b"LEASE") {
        Some(Opt::Lease)
    } else if raw.eq_ignore_ascii_case(b"WAIT") {
        Some(Opt::Wait)
    } else if raw.eq_ignore_ascii_case(b"TOKEN") {
        Some(Opt::Token)
    } else {
        None
    }
}

fn expected_text(allowed: &[Opt]) -> &'static str {
    match allowed {
        [Opt::Lease, Opt::Wait] => "LEASE or WAIT",
        [Opt::Lease, Opt::Token] => "LEASE or TOKEN",
        [Opt::Token] => "TOKEN",
        [Opt::Wait] => "WAIT",
        [Opt::Lease] => "LEASE",
        _ => "LEASE, WAIT or TOKEN",
    }
}

fn option_value(opt: Opt, raw: &[u8], now_ms: i64) -> Result<i64, LockError> {
    let Some(value) = strict_i64(raw) else {
        return Err(LockError::NotAnInteger(opt));
    };
    match opt {
        Opt::Lease if value <= 0 => return Err(LockError::LeaseNotPositive),
        Opt::Wait if value < 0 => return Err(LockError::WaitNegative),
        Opt::Token if value < 0 => return Err(LockError::TokenNegative),
        Opt::Token => return Ok(value),
        _ => {}
    }
    match now_ms.checked_add(value) {
        Some(_) => Ok(value),
        None => Err(LockError::TooLarge(opt)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;
    const BOTH: &[Opt] = &[Opt::Lease, Opt::Wait];

    #[test]
    fn owner_rules_follow_the_spec() {
        assert_eq!(owner(b"a:1"), Ok(&b"a:1"[..]));
        assert_eq!(owner(&[b'x'; 256]).map(<[u8]>::len), Ok(256));
        assert_eq!(
            owner(&[b'x'; 257]),
            Err(LockError::InvalidOwner(OwnerProblem::TooLong))
        );
        assert_eq!(
            owner(b""),
            Err(LockError::InvalidOwner(OwnerProblem::Empty))
        );
        assert_eq!(
            owner(b"@token"),
            Err(LockError::InvalidOwner(OwnerProblem::Reserved))
        );
        assert!(owner(b"a@b\xff\x00").is_ok());
    }

    #[test]
    fn an_owner_is_never_a_fixed_field_of_any_layout() {
        for name in [&b"mode"[..], b"permits"] {
            assert_eq!(
                owner(name),
                Err(LockError::InvalidOwner(OwnerProblem::LayoutField))
            );
        }
        for name in layout::LAYOUTS.into_iter().flatten() {
            assert!(owner(name).is_err(), "{name:?}");
        }
        for name in [&b"Mode"[..], b"PERMITS", b"mode:1", b"permits "] {
            assert_eq!(owner(name), Ok(name));
        }
    }

    #[test]
    fn strict_integers_reject_what_redis_rejects() {
        assert_eq!(strict_i64(b"0"), Some(0));
        assert_eq!(strict_i64(b"-12"), Some(-12));
        assert_eq!(strict_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(strict_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"-01",
            b"\xff",
        ] {
            assert_eq!(strict_i64(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn options_parse_in_any_order_and_any_case() {
        let o = options(&[b"wait", b"5", b"Lease", b"100"], BOTH, NOW).unwrap();
        assert_eq!(
            o,
            Options {
                lease: Some(100),
                wait: Some(5),
                token: None,
            }
        );
        assert_eq!(options(&[], BOTH, NOW).unwrap(), Options::default());
    }

    #[test]
    fn option_errors_are_specific() {
        let err = |args: &[&[u8]]| options(args, BOTH, NOW).unwrap_err();
        assert_eq!(err(&[b"LEASE"]), LockError::MissingValue(Opt::Lease));
        assert_eq!(err(&[b"LEASE", b"x"]), LockError::NotAnInteger(Opt::Lease));
        assert_eq!(err(&[b"LEASE", b"0"]), LockError::LeaseNotPositive);
        assert_eq!(err(&[b"WAIT", b"-1"]), LockError::WaitNegative);
        assert_eq!(
            err(&[b"LEASE", b"9223372036854775807"]),
            LockError::TooLarge(Opt::Lease)
        );
        assert_eq!(
            err(&[b"WAIT", b"1", b"WAIT", b"2"]),
            LockError::Duplicate(Opt::Wait)
        );
        assert!(matches!(err(&[b"NX"]), LockError::UnknownOption { .. }));
    }

    #[test]
    fn an_unknown_option_is_told_the_options_the_command_takes() {
        let expected = |allowed: &[Opt]| match options(&[b"LEASE", b"5"], allowed, NOW) {
            Err(LockError::UnknownOption { expected, .. }) => expected,
            other => panic!("{other:?}"),
        };
        assert_eq!(expected(&[Opt::Wait]), "WAIT");
        assert_eq!(expected(&[Opt::Token]), "TOKEN");
        let e = options(&[b"LEASE", b"5"], &[Opt::Wait], NOW).unwrap_err();
        assert_eq!(e.to_string(), "ERR unknown option 'LEASE', expected WAIT");
    }

    #[test]
    fn wait_zero_means_no_limit_and_is_accepted() {
        assert_eq!(options(&[b"WAIT", b"0"], BOTH, NOW).unwrap().wait, Some(0));
    }

    #[test]
    fn renew_accepts_lease_and_token_only() {
        let e = options(&[b"WAIT", b"1"], &[Opt::Lease, Opt::Token], NOW).unwrap_err();
        assert_eq!(
            e.to_string(),
            "ERR unknown option 'WAIT', expected LEASE or TOKEN"
        );
    }

    #[test]
    fn token_is_any_non_negative_integer() {
        let token = |v: &[u8]| options(&[b"token", v], &[Opt::Token], NOW).map(|o| o.token);
        assert_eq!(token(b"0"), Ok(Some(0)));
        assert_eq!(token(b"9223372036854775807"), Ok(Some(i64::MAX)));
        assert_eq!(token(b"-1"), Err(LockError::TokenNegative));
        assert_eq!(token(b"x"), Err(LockError::NotAnInteger(Opt::Token)));
    }
}
