//! How a lock is acquired: lease, wait limit and watchdog.

use std::time::Duration;

/// The lease the client sends when none is given: 30 s, kept alive by the watchdog
/// (Redisson's `lockWatchdogTimeout`).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// Options for acquiring a lock, built with chainable by-value methods.
///
/// The defaults are Redisson's: a 30 s lease renewed by the watchdog every 10 s for as long as
/// the guard lives, and [`Lock::acquire`](crate::Lock::acquire) waits without limit.
/// Setting an explicit [`lease`](LockOptions::lease) turns the watchdog off, so the lock
/// expires on its own when the lease ends, unless [`watchdog`](LockOptions::watchdog) turns it
/// back on; the order of the calls does not matter.
///
/// ```
/// use std::time::Duration;
/// use rlock_client::LockOptions;
///
/// // A 10 s lease that nobody renews: the lock frees itself 10 s after it is granted.
/// let fixed = LockOptions::new().lease(Duration::from_secs(10));
/// assert!(!fixed.watchdog_enabled());
///
/// // A 2 s lease renewed every ~667 ms; `acquire` gives up after 5 s.
/// let watched = LockOptions::new()
///     .lease(Duration::from_secs(2))
///     .watchdog(true)
///     .wait(Duration::from_secs(5));
/// assert!(watched.watchdog_enabled());
/// assert_eq!(watched.lease_duration(), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LockOptions {
    lease: Option<Duration>,
    watchdog: Option<bool>,
    wait: Option<Duration>,
    replicas: Option<(usize, Duration)>,
}

impl LockOptions {
    /// The defaults: lease [`DEFAULT_LEASE`] with the watchdog on, no wait limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets an explicit lease (rounded up to whole milliseconds). This turns the watchdog off
    /// unless [`watchdog(true)`](LockOptions::watchdog) is also given.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some(lease);
        self
    }

    /// Turns the watchdog on or off explicitly. With it on, the lock is renewed every third of
    /// its lease for as long as the guard lives.
    pub fn watchdog(mut self, on: bool) -> Self {
        self.watchdog = Some(on);
        self
    }

    /// Limits how long [`Lock::acquire`](crate::Lock::acquire) waits; past it, `acquire` fails
    /// with [`Error::Timeout`](crate::Error::Timeout). [`Duration::ZERO`] means "do not wait".
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// Requires every grant to reach `n` replicas within `timeout` (rounded up to whole
    /// milliseconds, at least 1) before the acquisition succeeds; 0 turns the check off.
    ///
    /// After each grant (a first try, a handoff to a waiter, a reentry) the client sends
    /// Redis's `WAIT n timeout` on the connection that acquired, so it covers that write. If
    /// fewer than `n` replicas acknowledge in time, the hold is released at once and the
    /// acquisition fails with [`Error::NotReplicated`](crate::Error::NotReplicated); it is
    /// not retried. This is the analogue of Redisson's `checkLockSyncedSlaves`.
    ///
    /// What it buys: a failover to a replica that acknowledged keeps the lock. What it does
    /// not: replication stays asynchronous (a failover to a replica that did not acknowledge
    /// loses the lock; renewals and releases are not waited for), and acknowledged means in
    /// the replica's memory, not on its disk. Such an acquisition uses a connection of its
    /// own even when the lock is free, since `WAIT` blocks the connection it runs on. In a
    /// Redis Cluster that connection is to the node that granted the lock, and `WAIT`
    /// counts that node's replicas.
    pub fn min_replicas(mut self, n: usize, timeout: Duration) -> Self {
        self.replicas = (n > 0).then_some((n, timeout));
        self
    }

    /// The replicas required by [`min_replicas`](LockOptions::min_replicas) and how long to
    /// wait for them; `None` if no check.
    pub fn required_replicas(&self) -> Option<(usize, Duration)> {
        self.replicas
    }

    /// The lease that will be sent with `LEASE`, in effect.
    pub fn lease_duration(&self) -> Duration {
        self.lease.unwrap_or(DEFAULT_LEASE)
    }

    /// Whether the watchdog renews locks taken with these options.
    pub fn watchdog_enabled(&self) -> bool {
        self.watchdog.unwrap_or(self.lease.is_none())
    }

    /// The wait limit of [`Lock::acquire`](crate::Lock::acquire); `None` is no limit.
    pub fn wait_limit(&self) -> Option<Duration> {
        self.wait
    }

    /// The lease in whole milliseconds (a zero lease is sent as 0 for the server to refuse).
    pub(crate) fn lease_ms(&self) -> u64 {
        ceil_ms(self.lease_duration())
    }
}

/// A duration in milliseconds, rounded up, saturating.
pub(crate) fn ceil_ms(d: Duration) -> u64 {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_thirty_seconds_with_watchdog_and_no_wait_limit() {
        let o = LockOptions::new();
        assert_eq!(o.lease_duration(), DEFAULT_LEASE);
        assert!(o.watchdog_enabled());
        assert_eq!(o.wait_limit(), None);
        assert_eq!(o.lease_ms(), 30_000);
        assert_eq!(o.required_replicas(), None);
    }

    #[test]
    fn min_replicas_zero_means_no_check() {
        let ms = Duration::from_millis(100);
        let o = LockOptions::new().min_replicas(2, ms);
        assert_eq!(o.required_replicas(), Some((2, ms)));
        assert_eq!(o.min_replicas(0, ms).required_replicas(), None);
    }

    #[test]
    fn explicit_lease_turns_watchdog_off() {
        let o = LockOptions::new().lease(Duration::from_millis(300));
        assert!(!o.watchdog_enabled());
        assert_eq!(o.lease_ms(), 300);
    }

    #[test]
    fn explicit_watchdog_wins_whatever_the_order() {
        let ms = Duration::from_millis(300);
        assert!(LockOptions::new()
            .watchdog(true)
            .lease(ms)
            .watchdog_enabled());
        assert!(LockOptions::new()
            .lease(ms)
            .watchdog(true)
            .watchdog_enabled());
        assert!(!LockOptions::new().watchdog(false).watchdog_enabled());
    }

    #[test]
    fn lease_rounds_up_to_whole_milliseconds() {
        assert_eq!(
            LockOptions::new()
                .lease(Duration::from_micros(1500))
                .lease_ms(),
            2
        );
        assert_eq!(LockOptions::new().lease(Duration::ZERO).lease_ms(), 0);
        assert_eq!(ceil_ms(Duration::from_nanos(1)), 1);
        assert_eq!(ceil_ms(Duration::MAX), u64::MAX);
    }
}
