//! Noticing that the node did not run for a while (SIGSTOP, a VM pause, a swap storm): a
//! master that was stalled long enough to be failed over must not grant or renew until its
//! view of its replicas is fresh again (SPEC.md §5).
//!
//! A module timer beats every [`BEAT_MS`]. A gap between beats (or between the last beat
//! and a command) longer than [`STALL_MS`] is a stall: grants, renewals and reentries are
//! then held back for [`FRESH_MS`] from when it is noticed, which is more than one period
//! of Redis's replication cron (it refreshes the count of good replicas about once a
//! second, and the links of replicas that left are closed by then). A command can notice a
//! stall before the timer does: the commands that piled up while the node stood still run
//! before any timer when it resumes.

use std::sync::atomic::{AtomicI64, Ordering};

/// How often the heartbeat timer runs (ms).
pub const BEAT_MS: i64 = 100;
/// A gap between beats longer than this is a stall (ms).
pub const STALL_MS: i64 = 1000;
/// How long grants and renewals are held back after a stall is noticed (ms).
pub const FRESH_MS: i64 = 2000;

/// The node's heartbeat and the hold-back of its last stall.
pub struct StallClock {
    /// When the heartbeat last ran (Unix ms); 0: not yet.
    last_beat: AtomicI64,
    /// When the hold-back of the last stall ends (Unix ms); 0: none.
    held_until: AtomicI64,
    /// Stalls noticed since the module loaded.
    stalls: AtomicI64,
}

/// The node's clock.
pub static STALLS: StallClock = StallClock::new();

impl StallClock {
    pub const fn new() -> StallClock {
        StallClock {
            last_beat: AtomicI64::new(0),
            held_until: AtomicI64::new(0),
            stalls: AtomicI64::new(0),
        }
    }

    /// The heartbeat ran at `now`.
    pub fn beat(&self, now: i64) {
        self.observe(now);
        self.last_beat.store(now, Ordering::Relaxed);
    }

    /// The heartbeat starts (again) at `now`: the time before (loading the data) is no
    /// stall.
    pub fn restart(&self, now: i64) {
        self.last_beat.store(now, Ordering::Relaxed);
    }

    /// If grants are held back at `now` after a stall, until when. A gap since the last
    /// beat longer than [`STALL_MS`] is noticed here (and starts a hold-back).
    pub fn observe(&self, now: i64) -> Option<i64> {
        let last = self.last_beat.load(Ordering::Relaxed);
        if last > 0 && now.saturating_sub(last) > STALL_MS {
            let until = now.saturating_add(FRESH_MS);
            self.held_until.fetch_max(until, Ordering::Relaxed);
            self.stalls.fetch_add(1, Ordering::Relaxed);
            // Noticed once: the hold-back runs from here, not from every later reading.
            self.last_beat.store(now, Ordering::Relaxed);
        }
        let until = self.held_until.load(Ordering::Relaxed);
        (until > now).then_some(until)
    }
}

impl StallClock {
    /// Stalls noticed since the module loaded.
    pub fn count(&self) -> i64 {
        self.stalls.load(Ordering::Relaxed)
    }
}

impl Default for StallClock {
    fn default() -> Self {
        StallClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_stall_before_the_first_beat() {
        let clock = StallClock::new();
        assert_eq!(clock.observe(5_000_000), None);
    }

    #[test]
    fn regular_beats_hold_nothing_back() {
        let clock = StallClock::new();
        for i in 0..50 {
            clock.beat(1_000 + i * BEAT_MS);
            assert_eq!(clock.observe(1_000 + i * BEAT_MS + 50), None);
        }
    }

    #[test]
    fn a_gap_noticed_by_a_command_holds_back_from_then() {
        let clock = StallClock::new();
        clock.beat(10_000);
        let resumed = 10_000 + STALL_MS + 1;
        assert_eq!(clock.observe(resumed), Some(resumed + FRESH_MS));
        // The next beat (late) does not move the hold-back, and the gap is not seen twice.
        clock.beat(resumed + 5);
        assert_eq!(clock.observe(resumed + 10), Some(resumed + FRESH_MS));
        for t in (resumed + 5..=resumed + FRESH_MS).step_by(BEAT_MS as usize) {
            clock.beat(t);
        }
        assert_eq!(clock.observe(resumed + FRESH_MS), None);
    }

    #[test]
    fn a_gap_noticed_by_the_heartbeat_holds_back_too() {
        let clock = StallClock::new();
        clock.beat(10_000);
        clock.beat(14_000);
        assert_eq!(clock.observe(14_001), Some(14_000 + FRESH_MS));
    }

    #[test]
    fn loading_is_no_stall() {
        let clock = StallClock::new();
        clock.beat(10_000);
        clock.restart(60_000);
        assert_eq!(clock.observe(60_050), None);
        clock.beat(60_100);
        assert_eq!(clock.observe(60_150), None);
    }

    #[test]
    fn a_gap_of_exactly_the_limit_is_no_stall() {
        let clock = StallClock::new();
        clock.beat(10_000);
        assert_eq!(clock.observe(10_000 + STALL_MS), None);
    }
}
