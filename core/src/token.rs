//! Fencing tokens: a counter that only goes up.
//!
//! A token is the larger of (last token + 1) and the node's wall clock in microseconds.
//! The counter makes tokens strictly increasing while the node runs; the clock floor keeps
//! them increasing across a restart even when nothing that recorded the counter survived
//! (an AOF rewritten without the RDB preamble after the last lock was released). The counter
//! also learns every token it sees, and *jumps* when a replica is promoted and after a load:
//! it becomes at least the wall clock + `rlock.token-gap` ([`TokenClock::jump`]).
//!
//! # Why the jump is anchored to the clock
//!
//! A jump of `last + gap` makes a node's tokens depend on its data alone: two replicas that
//! learned the same `last` and are promoted one after the other (the first dying) count the
//! same sequence. Anchored to the clock, `max(last, now + gap)`, the later promotion starts
//! higher by the time between the two. Write `G` for the gap, `S` for the largest difference
//! between two nodes' wall clocks at one instant, and `n` for the fresh holdings a master
//! grants between its own jump and the next jump of the deployment. No token is issued twice
//! by a deployment (a master, its replicas, whichever of them is promoted, and restarts from
//! the files) when:
//! 1. no wall clock goes back, and `S < G`;
//! 2. every jump of a node that becomes (or restarts as) master comes more than `S + n` µs
//!    after the previous such jump;
//! 3. the deployment grants fewer than one fresh holding per µs on average (a Redis server
//!    grants at most a few hundred thousand per second).
//!
//! Sketch: after a jump at `j` a master's tokens are at most `max(j + G, t) + k` at its time
//! `t`, `k` being its grants since the jump that ran ahead of its clock (by 3, the clock
//! catches up). A node promoted later at `q` starts above `q + G` on its own clock: above
//! every clock-valued token (`S < G`) and above `j + G + n` (by 2). A master's tokens that
//! never reached its replica are covered in the same way; the tokens that did are learned.
//!
//! What it learns from the data is bounded: a token in a hash more than [`ahead_bound`]
//! (twice the gap) past the wall clock is ignored. Every token a node legitimately issued
//! is at most `G + S` (plus a burst of grants) ahead of any node's clock, and `S < G`, so
//! learning stops only at hand-made values (an `HSET` of `@token`). Such a value moves the
//! counter at most `2G` ahead: as a jump `G` in the future would, so after a forged token the
//! next promotion must come `G + S + n` µs after it for the guarantee above. The counter saved
//! in an RDB, which only the module writes, is learned whole: it is a counter built by issues,
//! jumps and bounded learning, so it is itself within those bounds. Should the counter still
//! reach `i64::MAX`, [`TokenClock::issue`] refuses rather than hand out the same token again.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fencing-token counter of this node.
pub static TOKENS: TokenClock = TokenClock::new();

/// How far past the wall clock (µs) a token seen in the data may be and still be learned,
/// for the token gap `gap`: twice the gap (see the module docs).
pub fn ahead_bound(gap: i64) -> i64 {
    gap.max(0).saturating_mul(2)
}

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
    /// unless it is more than [`ahead_bound`]`(gap)` past the clock `now_us`. Returns
    /// whether the token is now covered by the counter.
    pub fn observe(&self, seen: i64, now_us: i64, gap: i64) -> bool {
        if seen <= self.last() {
            return true;
        }
        if seen > now_us.saturating_add(ahead_bound(gap)) {
            return false;
        }
        self.last.fetch_max(seen, Ordering::Relaxed);
        true
    }

    /// Records a counter only the module writes: this node's own, or its master's, saved in
    /// an RDB. Only issues, jumps and bounded learning move a counter, so it is within their
    /// bounds already, and is learned whole.
    pub fn observe_issued(&self, seen: i64) {
        self.last.fetch_max(seen, Ordering::Relaxed);
    }

    /// Records a token seen in the data, bounded by the wall clock now (see [`observe`]).
    ///
    /// [`observe`]: TokenClock::observe
    pub fn learn(&self, seen: i64, gap: i64) -> bool {
        seen <= self.last() || self.observe(seen, now_us(), gap)
    }

    /// The jump on promotion to master and after a load: the counter becomes at least the
    /// clock `now_us` + `gap` (it never goes back).
    pub fn jump(&self, now_us: i64, gap: i64) {
        let floor = now_us.saturating_add(gap.max(0));
        self.last.fetch_max(floor, Ordering::Relaxed);
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

    const GAP: i64 = 1_000;

    #[test]
    fn observed_tokens_are_never_reissued() {
        let clock = TokenClock::new();
        assert!(clock.observe(1_500, 0, GAP));
        assert_eq!(clock.issue(1), Ok(1_501));
        assert!(clock.observe(3, 0, GAP));
        assert_eq!(clock.issue(1), Ok(1_502));
    }

    #[test]
    fn a_jump_puts_the_counter_a_gap_past_the_clock() {
        let clock = TokenClock::new();
        clock.observe(100, 0, GAP);
        clock.jump(50, GAP);
        assert_eq!(clock.issue(0), Ok(1_051));
    }

    #[test]
    fn a_jump_never_moves_the_counter_back() {
        let clock = TokenClock::new();
        clock.observe_issued(9_000);
        clock.jump(50, GAP);
        assert_eq!(clock.issue(0), Ok(9_001));
    }

    /// Two replicas that learned the same counter, promoted one after the other: the later
    /// one starts past every token the earlier one issued in between.
    #[test]
    fn a_later_promotion_starts_past_an_earlier_one_with_the_same_data() {
        let (first, second) = (TokenClock::new(), TokenClock::new());
        let last = 10_000;
        first.observe_issued(last);
        second.observe_issued(last);
        first.jump(9_000, GAP);
        let issued: Vec<i64> = (0..100).map(|_| first.issue(9_000).unwrap()).collect();
        second.jump(9_000 + 101, GAP);
        let next = second.issue(9_101).unwrap();
        assert!(issued.iter().all(|t| *t < next), "{next} after {issued:?}");
    }

    #[test]
    fn tokens_past_twice_the_gap_ahead_of_the_clock_are_not_learned() {
        let clock = TokenClock::new();
        let now = 1_700_000_000_000_000;
        assert!(!clock.observe(i64::MAX - 1_000, now, GAP));
        assert!(!clock.observe(now + 2 * GAP + 1, now, GAP));
        assert_eq!(clock.last(), 0);
        assert!(clock.observe(now + 2 * GAP, now, GAP));
        assert_eq!(clock.issue(now), Ok(now + 2 * GAP + 1));
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
        clock.jump(i64::MAX - 1, 0);
        assert_eq!(clock.issue(0), Ok(i64::MAX));
        assert_eq!(clock.issue(0), Err(Exhausted));
        clock.jump(10, GAP);
        assert_eq!(clock.issue(i64::MAX), Err(Exhausted));
    }
}
