//! The pending lease checks of the registry's queues: at most one per lock, the earliest,
//! and the timers to stop (replaced by an earlier check, or left by a queue that emptied).

use std::hash::Hash;

use super::{Db, Registry};

impl<C: Copy + Eq + Hash> Registry<C> {
    /// Records that a check of `key` fires at `at` (Unix ms); false when an earlier one is
    /// pending, or nobody waits, and no new check is needed.
    pub fn claim_check(&mut self, db: Db, key: &[u8], at: i64) -> bool {
        match self.queue_mut(db, key) {
            Some(q) if q.check_at.is_some_and(|t| t <= at) => false,
            Some(q) => {
                q.check_at = Some(at);
                true
            }
            None => false,
        }
    }

    /// Records `timer` as the timer of the check just claimed for `key`; returns the timer
    /// it replaces, which has not fired and is to be stopped.
    pub fn replace_check_timer(&mut self, db: Db, key: &[u8], timer: u64) -> Option<u64> {
        self.queue_mut(db, key)?.check_timer.replace(timer)
    }

    /// Takes the lease timers left by queues that emptied: they have not fired, and are to
    /// be stopped.
    pub fn take_stale_timers(&mut self) -> Vec<u64> {
        if self.stale_timers.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.stale_timers).into_iter().collect()
    }

    /// The check of `timer` ran at `now`: forget a pending time that has passed, and the
    /// timer, which has fired.
    pub fn check_ran(&mut self, db: Db, key: &[u8], now: i64, timer: u64) {
        self.stale_timers.remove(&timer);
        if let Some(q) = self.queue_mut(db, key) {
            if q.check_at.is_some_and(|t| t <= now) {
                q.check_at = None;
            }
            if q.check_timer == Some(timer) {
                q.check_timer = None;
            }
        }
    }
}
