//! Durations on the command line: `500ms`, `10s`, `2m`, `1h`, a bare number of seconds, and
//! fractions of any of them (`0.5`, `1.5s`, `0.25m`).

use std::time::Duration;

/// Parses a duration longer than zero (a lease, a timeout, an interval).
pub fn parse_positive(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        Duration::ZERO => Err(format!("'{text}' must be longer than 0")),
        duration => Ok(duration),
    }
}

/// Parses a duration; see the module docs.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_ns: u128 = match unit {
        "ms" => 1_000_000,
        "" | "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return Err(format!("unknown unit in '{text}': use ms, s, m or h")),
    };
    let not_a_duration = || format!("'{text}' is not a duration like 500ms, 1.5s or 2m");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') || fraction.len() > 9 {
        return Err(not_a_duration());
    }
    let whole: u128 = match whole {
        "" => 0,
        digits => digits.parse().map_err(|_| not_a_duration())?,
    };
    let fraction_ns = match fraction {
        "" => 0,
        digits => {
            let scale = 10u128.pow(digits.len() as u32);
            let n: u128 = digits.parse().map_err(|_| not_a_duration())?;
            n * unit_ns / scale
        }
    };
    let nanos = whole
        .checked_mul(unit_ns)
        .and_then(|ns| ns.checked_add(fraction_ns))
        .and_then(|ns| u64::try_from(ns).ok())
        .ok_or_else(|| format!("'{text}' is too long"))?;
    Ok(Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_positive};
    use std::time::Duration;

    #[test]
    fn durations_take_the_usual_units() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn durations_take_fractions() {
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration(".25m"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("0.5ms"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("2."), Ok(Duration::from_secs(2)));
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            ".",
            "s",
            "5d",
            "1.2.3",
            "-1",
            "1 s",
            "99999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_positive_duration_refuses_zero() {
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for zero in ["0", "0ms", "0.0s", ".0"] {
            assert_eq!(
                parse_positive(zero),
                Err(format!("'{zero}' must be longer than 0"))
            );
        }
        assert_eq!(parse_positive("1ms"), Ok(Duration::from_millis(1)));
        assert!(parse_positive("-1").is_err());
    }
}
