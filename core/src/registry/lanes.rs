//! One lock's queue: a line of waits per family ([`Family`]), each in its order of
//! arrival. The numbers given at enqueueing are the registry's, unique across lines, so
//! that the lines can be read back in one order of arrival (`peek`, `take_queue`), and the
//! family whose first wait came first is known (`heads`).

use std::collections::BTreeMap;

use super::Waiter;
use crate::kind::Family;

/// The waits of one lock, a line per family, and its pending check.
#[derive(Debug)]
pub(super) struct Queue<C> {
    lanes: [BTreeMap<u64, Waiter<C>>; 4],
    /// When the earliest pending check of this lock fires (Unix ms).
    pub(super) check_at: Option<i64>,
    /// The timer of that check, until it fires or is replaced.
    pub(super) check_timer: Option<u64>,
    /// Whom the lock was last handed to from this queue: a hint for reading the lock, which
    /// the reader checks against the lock itself.
    pub(super) handed_to: Option<Box<[u8]>>,
}

impl<C> Default for Queue<C> {
    fn default() -> Self {
        Queue {
            lanes: Default::default(),
            check_at: None,
            check_timer: None,
            handed_to: None,
        }
    }
}

impl<C> Queue<C> {
    pub(super) fn insert(&mut self, number: u64, waiter: Waiter<C>) {
        self.lanes[waiter.kind.family().index()].insert(number, waiter);
    }

    /// The line a wait numbered `number` is in, if it is queued.
    pub(super) fn lane_of(&self, number: u64) -> Option<Family> {
        Family::ALL
            .into_iter()
            .find(|f| self.lanes[f.index()].contains_key(&number))
    }

    pub(super) fn get(&self, number: u64) -> Option<&Waiter<C>> {
        self.lanes.iter().find_map(|lane| lane.get(&number))
    }

    pub(super) fn remove(&mut self, number: u64) -> Option<Waiter<C>> {
        self.lanes.iter_mut().find_map(|lane| lane.remove(&number))
    }

    pub(super) fn lane_mut(&mut self, family: Family) -> &mut BTreeMap<u64, Waiter<C>> {
        &mut self.lanes[family.index()]
    }

    pub(super) fn first(&self, family: Family) -> Option<&Waiter<C>> {
        self.lanes[family.index()].values().next()
    }

    pub(super) fn pop_first(&mut self, family: Family) -> Option<Waiter<C>> {
        self.lanes[family.index()].pop_first().map(|(_, w)| w)
    }

    /// Takes the wait that came first, of whatever family.
    pub(super) fn pop_earliest(&mut self) -> Option<Waiter<C>> {
        let lane = self
            .lanes
            .iter_mut()
            .filter_map(|lane| lane.keys().next().copied().map(|n| (n, lane)))
            .min_by_key(|(n, _)| *n)?
            .1;
        lane.pop_first().map(|(_, w)| w)
    }

    pub(super) fn len(&self) -> usize {
        self.lanes.iter().map(BTreeMap::len).sum()
    }

    pub(super) fn lane_len(&self, family: Family) -> usize {
        self.lanes[family.index()].len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lanes.iter().all(BTreeMap::is_empty)
    }

    /// The families that have waits, the one whose first wait came first first.
    pub(super) fn heads(&self) -> Vec<Family> {
        let mut heads: Vec<(u64, Family)> = Family::ALL
            .into_iter()
            .filter_map(|f| self.lanes[f.index()].keys().next().map(|n| (*n, f)))
            .collect();
        heads.sort_unstable();
        heads.into_iter().map(|(_, f)| f).collect()
    }

    /// The first `n` waits of every line, in one order of arrival.
    pub(super) fn first_n(&self, n: usize) -> Vec<&Waiter<C>> {
        let mut firsts: Vec<(u64, &Waiter<C>)> = self
            .lanes
            .iter()
            .flat_map(|lane| lane.iter().take(n).map(|(k, w)| (*k, w)))
            .collect();
        firsts.sort_unstable_by_key(|(k, _)| *k);
        firsts.into_iter().take(n).map(|(_, w)| w).collect()
    }

    /// Every wait, in one order of arrival.
    pub(super) fn into_waiters(self) -> Vec<Waiter<C>> {
        let mut all: Vec<(u64, Waiter<C>)> = self.lanes.into_iter().flatten().collect();
        all.sort_unstable_by_key(|(k, _)| *k);
        all.into_iter().map(|(_, w)| w).collect()
    }
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
