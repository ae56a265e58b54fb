//! Fencing tokens: a counter that only goes up.
//!
//! A token is the larger of (last token + 1) and the node's wall clock in microseconds.
//! The counter makes tokens strictly increasing while the node runs; the clock floor keeps
//! them increasing across a restart even when nothing that recorded the counter survived
//! (an AOF rewritten without the RDB preamble after the last lock was released). The counter
//! also learns every token it sees, and skips ahead by `rlock.token-gap` when a replica is
//! promoted, so a new master never reissues a token its old master handed out.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fencing-token counter of this node.
pub static TOKENS: TokenClock = TokenClock::new();

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

    /// Issues a fresh token, greater than every token issued or seen before.
    pub fn issue(&self, now_us: i64) -> i64 {
        let token = self.peek(now_us);
        self.last.store(token, Ordering::Relaxed);
        token
    }

    /// The token the next fresh holding would get.
    pub fn peek(&self, now_us: i64) -> i64 {
        self.last().saturating_add(1).max(now_us)
    }

    /// Records a token seen in the data (a loaded or replicated lock).
    pub fn observe(&self, seen: i64) {
        self.last.fetch_max(seen, Ordering::Relaxed);
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
        let a = clock.issue(1_000);
        let b = clock.issue(1_000);
        let c = clock.issue(999);
        assert!(a < b && b < c, "{a} {b} {c}");
    }

    #[test]
    fn token_is_at_least_the_clock() {
        let clock = TokenClock::new();
        assert_eq!(clock.issue(5_000), 5_000);
    }

    #[test]
    fn observed_tokens_are_never_reissued() {
        let clock = TokenClock::new();
        clock.observe(10_000);
        assert_eq!(clock.issue(1), 10_001);
        clock.observe(3);
        assert_eq!(clock.issue(1), 10_002);
    }

    #[test]
    fn skip_moves_past_the_gap() {
        let clock = TokenClock::new();
        clock.observe(100);
        clock.skip(1_000);
        assert_eq!(clock.issue(0), 1_101);
    }

    #[test]
    fn counter_saturates_instead_of_wrapping() {
        let clock = TokenClock::new();
        clock.observe(i64::MAX);
        clock.skip(10);
        assert_eq!(clock.issue(0), i64::MAX);
    }
}
