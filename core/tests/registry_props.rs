//! The waiter registry's rules as properties, on random sequences of operations: every
//! wait ends exactly once, whoever ends it, and each lock's waiters are served in the
//! order they came. A model (one FIFO list per lock) says what each operation must return.

use std::collections::BTreeMap;

use proptest::prelude::*;
use rlock_core::kind::Family;
use rlock_core::registry::{Db, Registry, Waiter};

/// Few clients, so that a client's handle is reused after its wait ended; two databases
/// and two names, so that queues with the same name stay apart.
const CLIENTS: usize = 6;
const LOCKS: [(Db, &[u8]); 3] = [(0, b"a"), (0, b"b"), (1, b"a")];

#[derive(Debug, Clone)]
enum Op {
    Enqueue {
        client: usize,
        lock: usize,
    },
    PopFirst {
        lock: usize,
    },
    /// Takes the client's wait; with the wrong wait id when `stale`.
    Take {
        client: usize,
        with_id: bool,
        stale: bool,
    },
    TakeMany {
        clients: Vec<usize>,
    },
    TakeQueue {
        lock: usize,
    },
    TakeAll,
}

fn op() -> impl Strategy<Value = Op> {
    let client = 0..CLIENTS;
    let lock = 0..LOCKS.len();
    prop_oneof![
        4 => (client.clone(), lock.clone()).prop_map(|(client, lock)| Op::Enqueue { client, lock }),
        2 => lock.clone().prop_map(|lock| Op::PopFirst { lock }),
        2 => (client.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(client, with_id, stale)| Op::Take { client, with_id, stale }),
        1 => proptest::collection::vec(client, 0..4).prop_map(|clients| Op::TakeMany { clients }),
        1 => lock.prop_map(|lock| Op::TakeQueue { lock }),
        1 => Just(Op::TakeAll),
    ]
}

/// The registry beside its model: the waits of each lock in arrival order, as
/// `(client, wait id)`, and how many times each wait id has ended.
#[derive(Default)]
struct Run {
    registry: Registry<usize>,
    model: BTreeMap<usize, Vec<(usize, u64)>>,
    ended: BTreeMap<u64, usize>,
    next_id: u64,
}

impl Run {
    fn queued(&self, client: usize) -> Option<(usize, u64)> {
        self.model.iter().find_map(|(lock, waits)| {
            let found = waits.iter().find(|(c, _)| *c == client);
            found.map(|(_, id)| (*lock, *id))
        })
    }

    fn end(&mut self, ids: impl IntoIterator<Item = u64>) {
        for id in ids {
            *self.ended.entry(id).or_default() += 1;
            for waits in self.model.values_mut() {
                waits.retain(|(_, queued)| *queued != id);
            }
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Enqueue { client, lock } => {
                // A client waits once at a time: the module queues no client twice.
                if self.queued(client).is_some() {
                    return;
                }
                self.next_id += 1;
                let id = self.next_id;
                let (db, key) = LOCKS[lock];
                self.registry.enqueue(db, key, waiter(client, id, lock));
                self.ended.insert(id, 0);
                self.model.entry(lock).or_default().push((client, id));
            }
            Op::PopFirst { lock } => {
                let (db, key) = LOCKS[lock];
                let popped = self
                    .registry
                    .pop_first(db, key, Family::Lock)
                    .map(|w| (w.client, w.id));
                let first = self.model.get(&lock).and_then(|w| w.first().copied());
                assert_eq!(popped, first, "not the first come");
                self.end(popped.map(|(_, id)| id));
            }
            Op::Take {
                client,
                with_id,
                stale,
            } => {
                let queued = self.queued(client);
                let id = queued.map(|(_, id)| if stale { id + 1_000_000 } else { id });
                let asked = if with_id { Some(id.unwrap_or(7)) } else { None };
                let taken = self.registry.take(client, asked).map(|w| (w.client, w.id));
                let expected = queued.filter(|_| !(with_id && stale));
                assert_eq!(taken.map(|(_, id)| id), expected.map(|(_, id)| id));
                self.end(taken.map(|(_, id)| id));
            }
            Op::TakeMany { clients } => {
                let waits: Vec<(usize, u64)> = clients
                    .iter()
                    .filter_map(|c| self.queued(*c).map(|(_, id)| (*c, id)))
                    .collect();
                let mut timers = self.registry.take_many(&waits).timers;
                timers.sort_unstable();
                let mut expected: Vec<u64> = waits.iter().map(|(_, id)| *id).collect();
                expected.sort_unstable();
                expected.dedup();
                assert_eq!(timers, expected, "each wait asked for, taken once");
                self.end(timers);
            }
            Op::TakeQueue { lock } => {
                let (db, key) = LOCKS[lock];
                let taken: Vec<u64> = self
                    .registry
                    .take_queue(db, key)
                    .iter()
                    .map(|w| w.id)
                    .collect();
                let queued: Vec<u64> = self
                    .model
                    .get(&lock)
                    .into_iter()
                    .flatten()
                    .map(|w| w.1)
                    .collect();
                assert_eq!(taken, queued, "a queue is taken in arrival order");
                self.end(taken);
            }
            Op::TakeAll => self.take_all(),
        }
    }

    fn take_all(&mut self) {
        let all: Vec<Waiter<usize>> = self.registry.take_all();
        let mut by_lock: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for w in &all {
            by_lock.entry(w.owner[0].into()).or_default().push(w.id);
        }
        for (lock, waits) in &self.model {
            let ids: Vec<u64> = waits.iter().map(|w| w.1).collect();
            let taken = by_lock.remove(&(*lock as u64)).unwrap_or_default();
            assert_eq!(taken, ids, "every queue is taken in arrival order");
        }
        assert!(by_lock.is_empty(), "only queued waits are taken");
        self.end(all.iter().map(|w| w.id));
    }
}

/// A wait whose owner is its lock's index, and whose deadline timer is its id, so that
/// `take_many`'s timers name the waits it took.
fn waiter(client: usize, id: u64, lock: usize) -> Waiter<usize> {
    Waiter {
        id,
        client,
        owner: vec![u8::try_from(lock).unwrap()].into(),
        lease_ms: 1000,
        deadline_timer: Some(id),
        wait_until: None,
        kind: Default::default(),
    }
}

proptest! {
    #[test]
    fn every_wait_ends_exactly_once_in_fifo_order(ops in proptest::collection::vec(op(), 0..80)) {
        let mut run = Run::default();
        for op in ops {
            run.apply(op);
            prop_assert!(run.ended.values().all(|n| *n <= 1), "a wait ended twice");
            let queued: usize = run.model.values().map(Vec::len).sum();
            prop_assert_eq!(run.registry.waiting(), queued);
        }
        run.take_all();
        prop_assert!(run.ended.values().all(|n| *n == 1), "a wait never ended, or twice");
        prop_assert_eq!(run.registry.waiting(), 0);
        prop_assert_eq!(run.registry.memory(), 0);
    }
}
