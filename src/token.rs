//! Fencing tokens: a counter that only goes up.
//!
//! A token is the larger of (last token + 1) and the node's wall clock in microseconds.
//! The counter makes tokens strictly increasing while the node runs; the clock floor keeps
//! them increasing across a restart even when nothing that recorded the counter survived
//! (an AOF rewritten without the RDB preamble after the last lock was released). The counter
//! also learns every token it sees, and skips ahead by `rlock.token-gap` when a replica is
//! promoted, so a new master never reissues a token its old master handed out.
//!
//! What it learns from the data is bounded: a token in a hash more than [`MAX_AHEAD_US`] past
//! the wall clock is ignored (a hand-made `@token`, not one any node issued), so no value a
//! client writes can push the counter to its end. The counter saved in an RDB, which only the
//! module writes, is learned whole. Should the counter still reach `i64::MAX`,
//! [`TokenClock::issue`] refuses rather than hand out the same token again.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fencing-token counter of this node.
pub static TOKENS: TokenClock = TokenClock::new();

/// How far past the wall clock (µs) a token may be and still be learned: 2^50 µs, about 35
/// years, the largest `rlock.token-gap`.
pub const MAX_AHEAD_US: i64 = 1 << 50;

/// The counter is at `i64::MAX`: no fresh token can be issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted;

/// The highest token issued or seen by this node.
pub struct TokenClock {
    last: AtomicI64,
}

impl TokenClock {
    pub const fn new() -> Self {
        TokenClock {
            last: AtomicI64::new(0),
        }
    }

    /// Issues a fresh token, greater than every token issued or seen before; refuses once
    /// the counter is at `i64::MAX`.
    pub fn issue(&self, now_us: i64) -> Result<i64, Exhausted> {
        let last = self.last();
        if last == i64::MAX {
            return Err(Exhausted);
        }
        let token = (last + 1).max(now_us);
        self.last.store(token, Ordering::Relaxed);
        Ok(token)
    }

    /// The token the next fresh holding would get.
    pub fn peek(&self, now_us: i64) -> i64 {
        self.last().saturating_add(1).max(now_us)
    }

    /// Records a token seen in the data (a lock read, loaded, restored or replicated),
    /// unless it is more than [`MAX_AHEAD_US`] past the clock `now_us`. Returns whether
    /// the token is now covered by the counter.
    pub fn observe(&self, seen: i64, now_us: i64) -> bool {
        if seen <= self.last() {
            return true;
        }
        if seen > now_us.saturating_add(MAX_AHEAD_US) {
            return false;
        }
        self.last.fetch_max(seen, Ordering::Relaxed);
        true
    }

    /// Records a counter only the module writes: this node's own, or its master's, saved in
    /// an RDB. Only issues, bounded learning and promotions move a counter, so it is learned
    /// however far ahead of the clock it is.
    pub fn observe_issued(&self, seen: i64) {
        self.last.fetch_max(seen, Ordering::Relaxed);
    }

    /// Records a token seen in the data, bounded by the wall clock now (see [`observe`]).
    ///
    /// [`observe`]: TokenClock::observe
    pub fn learn(&self, seen: i64) -> bool {
        seen <= self.last() || self.observe(seen, now_us())
    }

    /// Moves the counter forward by `gap` (on promotion to master).
    pub fn skip(&self, gap: i64) {
        let skipped = self.last().saturating_add(gap.max(0));
        self.last.store(skipped, Ordering::Relaxed);
    }

    pub fn last(&self) -> i64 {
        self.last.load(Ordering::Relaxed)
    }
}

impl Default for TokenClock {
    fn default() -> Self {
        Self::new()
    }
}

/// The wall clock in microseconds since the Unix epoch (0 if the clock is before it).
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_strictly_increase_within_one_clock_tick() {
        let clock = TokenClock::new();
        let a = clock.issue(1_000).unwrap();
        let b = clock.issue(1_000).unwrap();
        let c = clock.issue(999).unwrap();
        assert!(a < b && b < c, "{a} {b} {c}");
    }

    #[test]
    fn token_is_at_least_the_clock() {
        let clock = TokenClock::new();
        assert_eq!(clock.issue(5_000), Ok(5_000));
    }

    #[test]
    fn observed_tokens_are_never_reissued() {
        let clock = TokenClock::new();
        assert!(clock.observe(10_000, 0));
        assert_eq!(clock.issue(1), Ok(10_001));
        assert!(clock.observe(3, 0));
        assert_eq!(clock.issue(1), Ok(10_002));
    }

    #[test]
    fn skip_moves_past_the_gap() {
        let clock = TokenClock::new();
        clock.observe(100, 0);
        clock.skip(1_000);
        assert_eq!(clock.issue(0), Ok(1_101));
    }

    #[test]
    fn tokens_far_past_the_clock_are_not_learned() {
        let clock = TokenClock::new();
        let now = 1_700_000_000_000_000;
        assert!(!clock.observe(i64::MAX - 1_000, now));
        assert!(!clock.observe(now + MAX_AHEAD_US + 1, now));
        assert_eq!(clock.last(), 0);
        assert!(clock.observe(now + MAX_AHEAD_US, now));
        assert_eq!(clock.issue(now), Ok(now + MAX_AHEAD_US + 1));
    }

    #[test]
    fn issued_tokens_are_learned_however_far_ahead() {
        let clock = TokenClock::new();
        clock.observe_issued(i64::MAX - 5);
        assert_eq!(clock.issue(0), Ok(i64::MAX - 4));
    }

    #[test]
    fn an_exhausted_counter_refuses_instead_of_repeating_a_token() {
        let clock = TokenClock::new();
        clock.skip(i64::MAX - 1);
        assert_eq!(clock.issue(0), Ok(i64::MAX));
        assert_eq!(clock.issue(0), Err(Exhausted));
        clock.skip(10);
        assert_eq!(clock.issue(i64::MAX), Err(Exhausted));
    }
}
