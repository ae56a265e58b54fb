//! Taking the waits of one lock out at once: all of them (of every family), the first of
//! them, or those of one family.

use std::hash::Hash;

use super::{cost, queue_cost, Db, Registry, Waiter};
use crate::kind::Family;

impl<C: Copy + Eq + Hash> Registry<C> {
    /// Takes the waiters of `key`, of every family, in their order of arrival.
    pub fn take_queue(&mut self, db: Db, key: &[u8]) -> Vec<Waiter<C>> {
        let Some(queue) = self.dbs.get_mut(&db).and_then(|q| q.remove(key)) else {
            return Vec::new();
        };
        self.stale_timers.extend(queue.check_timer);
        self.bytes = self.bytes.saturating_sub(queue_cost::<C>(key));
        let taken = queue.into_waiters();
        for waiter in &taken {
            self.bytes = self.bytes.saturating_sub(cost(waiter));
            self.index.remove(&waiter.client);
        }
        self.drop_if_empty(db, key);
        taken
    }

    /// Takes the first `n` waiters queued on `key`, of every family, in their order of
    /// arrival.
    pub fn take_first(&mut self, db: Db, key: &[u8], n: usize) -> Vec<Waiter<C>> {
        let Some(queue) = self.queue_mut(db, key) else {
            return Vec::new();
        };
        let taken: Vec<Waiter<C>> = std::iter::from_fn(|| queue.pop_earliest())
            .take(n)
            .collect();
        for waiter in &taken {
            self.bytes = self.bytes.saturating_sub(cost(waiter));
            self.index.remove(&waiter.client);
        }
        self.drop_if_empty(db, key);
        taken
    }

    /// Takes the first `n` waiters of `family` queued on `key`, in their order of arrival;
    /// those of other families stay queued.
    pub fn take_lane(&mut self, db: Db, key: &[u8], family: Family, n: usize) -> Vec<Waiter<C>> {
        let Some(queue) = self.queue_mut(db, key) else {
            return Vec::new();
        };
        let lane = queue.lane_mut(family);
        let taken: Vec<Waiter<C>> = if n >= lane.len() {
            std::mem::take(lane).into_values().collect()
        } else {
            std::iter::from_fn(|| lane.pop_first().map(|(_, w)| w))
                .take(n)
                .collect()
        };
        for waiter in &taken {
            self.bytes = self.bytes.saturating_sub(cost(waiter));
            self.index.remove(&waiter.client);
        }
        self.drop_if_empty(db, key);
        taken
    }
}
