//! Taking many waits out at once (a receiver's connection closed with all its tickets):
//! linear in the waits taken, with a small constant. The index is scanned in its own
//! order when the waits taken are a good part of it (a scan touches memory in order, where
//! a lookup per wait would miss the cache every time); each queue is looked up once and
//! walked in its order.

use std::collections::BTreeMap;
use std::hash::Hash;
use std::rc::Rc;

use super::{cost, Db, Registry, Waiter};
use crate::idhash::IdMap;
use crate::kind::Family;

/// Where a wait being taken was: its lock, its number there, its entry and wait id.
struct Place<C> {
    db: Db,
    key: Rc<[u8]>,
    number: u64,
    client: C,
    id: u64,
}

/// What [`Registry::take_many`] took out.
#[derive(Debug, Default)]
pub struct Taken {
    /// The deadline timers of the waits taken.
    pub timers: Vec<u64>,
    /// The queues that still have waits and lost one that may have kept them out of their
    /// lock ([`Kind::holds_back_others`](crate::kind::Kind::holds_back_others)): to be
    /// served again.
    pub reopened: Vec<(Db, Vec<u8>)>,
}

impl<C: Copy + Eq + Hash> Registry<C> {
    /// Takes these queued waits (entry, wait id) out of their queues.
    pub fn take_many(&mut self, waits: &[(C, u64)]) -> Taken {
        let mut places = self.unindex(waits);
        let same = |a: &Place<C>, b: &Place<C>| a.db == b.db && Rc::ptr_eq(&a.key, &b.key);
        if !places.windows(2).all(|w| same(&w[0], &w[1])) {
            // A lock's name is one allocation shared by its queue's waiters: its address
            // tells the queues apart.
            places.sort_unstable_by_key(|p| (p.db, Rc::as_ptr(&p.key).cast::<u8>() as usize));
        }
        let mut taken = Taken::default();
        for group in places.chunk_by(same) {
            self.take_from_queue(group, &mut taken);
        }
        taken
    }

    /// Takes the index entries of `waits` out; where they were.
    fn unindex(&mut self, waits: &[(C, u64)]) -> Vec<Place<C>> {
        let mut places = Vec::with_capacity(waits.len());
        if waits.len().saturating_mul(4) < self.index.len() {
            for &(client, id) in waits {
                if let Some((db, key, number)) = self.index.remove(&client) {
                    places.push(Place {
                        db,
                        key,
                        number,
                        client,
                        id,
                    });
                }
            }
            return places;
        }
        let wanted: IdMap<C, u64> = waits.iter().copied().collect();
        self.index.retain(|client, (db, key, number)| {
            let Some(&id) = wanted.get(client) else {
                return true;
            };
            let (db, key, number) = (*db, Rc::clone(key), *number);
            places.push(Place {
                db,
                key,
                number,
                client: *client,
                id,
            });
            false
        });
        places
    }

    /// Takes the waits of one queue out of it: one by one when they are few, or in one
    /// walk of the queue, in its order, when they are a good part of it.
    fn take_from_queue(&mut self, group: &[Place<C>], taken: &mut Taken) {
        let Some(first) = group.first() else {
            return;
        };
        let (db, key) = (first.db, Rc::clone(&first.key));
        let Some(queue) = self.dbs.get_mut(&db).and_then(|q| q.get_mut(&key[..])) else {
            return;
        };
        // (number, entry, wait id) of each wait, without a pointer to chase, by the line
        // of its family.
        let mut lanes: [Vec<(u64, C, u64)>; 4] = Default::default();
        for p in group {
            if let Some(family) = queue.lane_of(p.number) {
                lanes[family.index()].push((p.number, p.client, p.id));
            }
        }
        let mut freed = 0;
        let mut reopens = false;
        let timers = &mut taken.timers;
        let mut take = |client: C, id: u64, waiter: &Waiter<C>| {
            let ours = waiter.client == client && waiter.id == id;
            if ours {
                freed += cost(waiter);
                timers.extend(waiter.deadline_timer);
                reopens |= waiter.kind.holds_back_others();
            }
            ours
        };
        let mut waits = Vec::new();
        for family in Family::ALL {
            let mut lane_waits = std::mem::take(&mut lanes[family.index()]);
            if lane_waits.is_empty() {
                continue;
            }
            let lane = queue.lane_mut(family);
            if lane_waits.len().saturating_mul(4) < lane.len() {
                by_number(lane, &mut lane_waits, &mut take);
            } else {
                in_order(lane, &mut lane_waits, &mut take);
            }
            waits.append(&mut lane_waits);
        }
        // Another wait of such an entry stays queued, and so does its index entry.
        for &(number, client, _) in &waits {
            self.index.insert(client, (db, Rc::clone(&key), number));
        }
        self.bytes = self.bytes.saturating_sub(freed);
        self.drop_if_empty(db, &key);
        if reopens && self.queue_len(db, &key) > 0 {
            taken.reopened.push((db, key.to_vec()));
        }
    }
}

/// What a wait of `waits` (number, entry, wait id) is checked and taken with: whether the
/// waiter at that number is that wait (then it is taken).
type Take<'a, C> = dyn FnMut(C, u64, &Waiter<C>) -> bool + 'a;

/// Takes each of `waits` out of `waiters` by its number; leaves in `waits` those that
/// were not there.
fn by_number<C: Copy>(
    waiters: &mut BTreeMap<u64, Waiter<C>>,
    waits: &mut Vec<(u64, C, u64)>,
    take: &mut Take<'_, C>,
) {
    waits.retain(|&(number, client, id)| {
        let ours = waiters.get(&number).is_some_and(|w| take(client, id, w));
        if ours {
            waiters.remove(&number);
        }
        !ours
    });
}

/// Takes `waits` out of `waiters` in one walk of both in order; leaves in `waits` those
/// whose entry is still queued (another wait of it).
fn in_order<C: Copy + Eq>(
    waiters: &mut BTreeMap<u64, Waiter<C>>,
    waits: &mut Vec<(u64, C, u64)>,
    take: &mut Take<'_, C>,
) {
    waits.sort_unstable_by_key(|w| w.0);
    let mut next = waits.iter().peekable();
    waiters.retain(|number, waiter| {
        while next.next_if(|w| w.0 < *number).is_some() {}
        next.next_if(|&&(n, client, id)| n == *number && take(client, id, waiter))
            .is_none()
    });
    waits.retain(|(n, client, _)| waiters.get(n).is_some_and(|w| w.client == *client));
}
