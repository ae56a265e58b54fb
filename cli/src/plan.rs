//! How `rlock run` stops its command: the kill grace, checked against the lease at start,
//! and what it does with the processes the command leaves running.
//!
//! `run` sends the command's group `SIGTERM` a grace before the lock's safe deadline and
//! `SIGKILL` at it (`supervise.rs`), so the grace must fit in the part of the lease that
//! `run` can count on: all of it less the client's margin without the watchdog; with the
//! watchdog, what is left of it when the next renewal is due (a renewal every third of the
//! lease), or the command would be stopped while the lock is renewed as it should be.

use std::time::Duration;

use rlock_client::{ClientOptions, LockOptions};

/// The grace when none is given (or half the usable part of a shorter lease).
const DEFAULT_GRACE: Duration = Duration::from_secs(5);

/// What `run` does with the processes the command leaves running when it exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leftovers {
    /// Keep the lock until they ended too (as `flock(1)` does until the last one closes it).
    Wait,
    /// Stop them: `SIGTERM`, then `SIGKILL` after the grace.
    Kill,
}

/// How `run` stops the command.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// How long before the lock's safe deadline the group gets `SIGTERM`.
    pub grace: Duration,
    pub leftovers: Leftovers,
}

impl Plan {
    /// How `run` stops the command; `None` (said on stderr) when the grace does not fit.
    pub fn check(
        lock: &LockOptions,
        client: &ClientOptions,
        grace: Option<Duration>,
        kill_leftovers: bool,
    ) -> Option<Plan> {
        let lease = lock.lease_duration();
        let usable = usable(lease, lock.watchdog_enabled(), client.margin_duration());
        match kill_grace(grace, usable) {
            Ok(grace) => Some(Plan {
                grace,
                leftovers: match kill_leftovers {
                    true => Leftovers::Kill,
                    false => Leftovers::Wait,
                },
            }),
            Err(text) => {
                eprintln!("rlock: {text}");
                None
            }
        }
    }
}

/// The part of a `lease` that `run` can count on between renewals; `margin` is the client's.
pub fn usable(lease: Duration, watchdog: bool, margin: Duration) -> Duration {
    let safe = lease.saturating_sub((margin + lease / 100).min(lease / 2));
    if watchdog {
        safe.saturating_sub(lease / 3)
    } else {
        safe
    }
}

/// The grace to use: `asked`, refused unless shorter than the `usable` part of the lease;
/// without one, 5 s, or half the usable part when that is shorter.
pub fn kill_grace(asked: Option<Duration>, usable: Duration) -> Result<Duration, String> {
    match asked {
        None => Ok(DEFAULT_GRACE.min(usable / 2)),
        Some(grace) if grace < usable => Ok(grace),
        Some(grace) => Err(format!(
            "--kill-grace {grace:?} does not fit in the lease: rlock counts on {usable:?} of it \
             (between renewals) and sends the command SIGTERM the grace before that ends; give \
             a shorter --kill-grace or a longer --lease"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::{kill_grace, usable};
    use std::time::Duration;

    const MARGIN: Duration = Duration::from_millis(20);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_usable_part_leaves_out_the_margin_and_a_renewal_period() {
        assert_eq!(usable(ms(1000), false, MARGIN), ms(970));
        assert_eq!(usable(ms(900), true, MARGIN), ms(571));
        assert_eq!(usable(ms(30_000), true, MARGIN), ms(19_680));
        assert_eq!(usable(ms(10), false, MARGIN), ms(5));
    }

    #[test]
    fn a_grace_that_does_not_fit_is_refused_and_the_default_shrinks() {
        assert_eq!(kill_grace(Some(ms(300)), ms(571)), Ok(ms(300)));
        let refused = kill_grace(Some(ms(1000)), ms(571)).unwrap_err();
        assert!(
            refused.contains("--kill-grace 1s does not fit"),
            "{refused}"
        );
        assert!(kill_grace(Some(ms(571)), ms(571)).is_err());
        assert_eq!(kill_grace(None, ms(19_680)), Ok(Duration::from_secs(5)));
        assert_eq!(kill_grace(None, ms(970)), Ok(ms(485)));
    }
}
