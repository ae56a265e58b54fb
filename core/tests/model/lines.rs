//! The key's queue: the core's real `Registry` decides (who is first in a family's line,
//! the families' order of arrival, what a take takes), rebuilt at each step from the
//! state's snapshot (a `Registry` is not `Hash`), and the snapshot kept beside it.

use rlock_core::kind::{Family, Kind};
use rlock_core::registry::{Registry, Waiter};

use super::state::{Queued, LEASE};

const DB: i32 = 0;
const KEY: &[u8] = b"k";

pub struct Lines {
    registry: Registry<usize>,
    /// The same waits, in their order of arrival.
    order: Vec<Queued>,
}

fn waiter(q: &Queued) -> Waiter<usize> {
    Waiter {
        id: q.wait as u64 + 1,
        client: q.wait,
        owner: q.owner.clone().into_boxed_slice(),
        lease_ms: LEASE,
        deadline_timer: None,
        wait_until: None,
        kind: q.kind,
    }
}

impl Lines {
    pub fn of(queue: &[Queued]) -> Lines {
        let mut registry = Registry::default();
        for q in queue {
            registry.enqueue(DB, KEY, waiter(q));
        }
        Lines {
            registry,
            order: queue.to_vec(),
        }
    }

    /// The snapshot, checked against the registry's own counts.
    pub fn into_queue(self) -> Vec<Queued> {
        assert_eq!(
            self.registry.queue_len(DB, KEY),
            self.order.len(),
            "registry and snapshot differ"
        );
        for family in Family::ALL {
            let snapshot = self
                .order
                .iter()
                .filter(|q| q.kind.family() == family)
                .count();
            assert_eq!(
                self.registry.lane_len(DB, KEY, family),
                snapshot,
                "{family:?} line"
            );
        }
        self.order
    }

    fn forget(&mut self, taken: &[Waiter<usize>]) {
        self.order
            .retain(|q| taken.iter().all(|w| w.client != q.wait));
    }

    pub fn enqueue(&mut self, wait: usize, owner: &[u8], kind: Kind) {
        let q = Queued {
            wait,
            owner: owner.to_vec(),
            kind,
        };
        self.registry.enqueue(DB, KEY, waiter(&q));
        self.order.push(q);
    }

    pub fn first(&self, family: Family) -> Option<Waiter<usize>> {
        self.registry.first(DB, KEY, family).cloned()
    }

    pub fn pop_first(&mut self, family: Family) -> Option<Waiter<usize>> {
        let w = self.registry.pop_first(DB, KEY, family)?;
        self.forget(std::slice::from_ref(&w));
        Some(w)
    }

    pub fn take_lane(&mut self, family: Family) -> Vec<Waiter<usize>> {
        let taken = self.registry.take_lane(DB, KEY, family, usize::MAX);
        self.forget(&taken);
        taken
    }

    pub fn take_queue(&mut self) -> Vec<Waiter<usize>> {
        let taken = self.registry.take_queue(DB, KEY);
        self.forget(&taken);
        taken
    }

    /// Takes the wait `wait` out, wherever it is.
    pub fn take(&mut self, wait: usize) -> Option<Waiter<usize>> {
        let w = self.registry.take(wait, Some(wait as u64 + 1))?;
        self.forget(std::slice::from_ref(&w));
        Some(w)
    }

    pub fn heads(&self) -> Vec<Family> {
        self.registry.heads(DB, KEY)
    }

    pub fn lane_len(&self, family: Family) -> usize {
        self.registry.lane_len(DB, KEY, family)
    }
}
