//! The client's local record of the locks it holds: what the watchdog renews, when each lease
//! runs out, and which holdings are lost. Pure bookkeeping, no Redis in it.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::LossReason;

/// One holding on the server, `(key, owner, token)`, as seen by the guards that share it.
#[derive(Debug)]
pub(crate) struct Holding {
    pub(crate) key: String,
    pub(crate) owner: String,
    pub(crate) token: u64,
    lost: watch::Sender<Option<LossReason>>,
}

impl Holding {
    fn new(key: &str, owner: &str, token: u64) -> Arc<Holding> {
        Arc::new(Holding {
            key: key.to_owned(),
            owner: owner.to_owned(),
            token,
            lost: watch::Sender::new(None),
        })
    }

    /// Why the holding was lost, if it was.
    pub(crate) fn lost_reason(&self) -> Option<LossReason> {
        *self.lost.borrow()
    }

    /// A receiver that sees the loss.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Option<LossReason>> {
        self.lost.subscribe()
    }

    /// Marks the holding lost; true if it was not lost before.
    pub(crate) fn mark_lost(&self, reason: LossReason) -> bool {
        self.lost.send_if_modified(|state| {
            let fresh = state.is_none();
            if fresh {
                *state = Some(reason);
            }
            fresh
        })
    }
}

/// A grant from the server, to be recorded.
#[derive(Debug, Clone)]
pub(crate) struct Grant<'a> {
    pub(crate) key: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) token: u64,
    pub(crate) lease: Duration,
    pub(crate) watchdog: bool,
    /// A time no later than when the server set the lease.
    pub(crate) at: Instant,
}

/// One `LOCK.RENEW` to send in a watchdog round.
#[derive(Debug, Clone)]
pub(crate) struct Renewal {
    pub(crate) holding: Arc<Holding>,
    pub(crate) lease: Duration,
}

#[derive(Debug)]
struct Entry {
    current: Arc<Holding>,
    holds: usize,
    watched: usize,
    lease: Duration,
    deadline: Instant,
    next_renew: Instant,
}

impl Entry {
    fn renewing(&self) -> bool {
        self.watched > 0 && self.current.lost_reason().is_none()
    }
}

/// A `(key, owner)` pair: the map's owned keys and borrowed lookups hash and compare alike,
/// so a lookup allocates no key.
trait Id {
    fn pair(&self) -> (&str, &str);
}

impl Id for (String, String) {
    fn pair(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl Id for (&str, &str) {
    fn pair(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn Id + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn Id + 'a) {
        self
    }
}

impl Hash for dyn Id + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.pair().hash(state);
    }
}

impl PartialEq for dyn Id + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for dyn Id + '_ {}

/// All holdings of one client, by `(key, owner)`.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    entries: HashMap<(String, String), Entry>,
}

fn third(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(1))
}

impl Registry {
    fn get(&self, key: &str, owner: &str) -> Option<&Entry> {
        self.entries.get(&(key, owner) as &dyn Id)
    }

    fn get_mut(&mut self, key: &str, owner: &str) -> Option<&mut Entry> {
        self.entries.get_mut(&(key, owner) as &dyn Id)
    }

    /// Records one more hold; returns the holding the new guard shares.
    pub(crate) fn register(&mut self, g: &Grant<'_>) -> Arc<Holding> {
        if let Some(e) = self.get_mut(g.key, g.owner) {
            if e.current.token == g.token {
                // Reentry: the server counted one more hold and reset the lease.
                if e.current.lost_reason().is_some() {
                    e.current = Holding::new(g.key, g.owner, g.token);
                }
                e.holds += 1;
                if g.watchdog {
                    e.watched += 1;
                    e.lease = g.lease;
                }
                e.deadline = g.at + g.lease;
                e.next_renew = e.next_renew.min(g.at + third(g.lease));
                return e.current.clone();
            }
            // A new token for the same owner: the holding we knew of is gone on the server.
            e.current.mark_lost(LossReason::NotHeld);
        }
        let current = Holding::new(g.key, g.owner, g.token);
        let entry = Entry {
            current: current.clone(),
            holds: 1,
            watched: usize::from(g.watchdog),
            lease: g.lease,
            deadline: g.at + g.lease,
            next_renew: g.at + third(g.lease),
        };
        self.entries
            .insert((g.key.to_owned(), g.owner.to_owned()), entry);
        current
    }

    /// Forgets one hold of `h`. True if that hold is still counted on the server's holding
    /// (same token), so a `LOCK.RELEASE` must be sent for it.
    pub(crate) fn unregister(&mut self, h: &Holding, watchdog: bool) -> bool {
        let Some(e) = self.get_mut(&h.key, &h.owner) else {
            return false;
        };
        if e.current.token != h.token {
            return false;
        }
        e.holds = e.holds.saturating_sub(1);
        if watchdog {
            e.watched = e.watched.saturating_sub(1);
        }
        if e.holds == 0 {
            self.entries
                .remove(&(h.key.as_str(), h.owner.as_str()) as &dyn Id);
        }
        true
    }

    /// Marks `h` lost, and its entry too if the entry still describes the same holding.
    pub(crate) fn mark_lost(&mut self, h: &Holding, reason: LossReason) -> bool {
        let fresh = h.mark_lost(reason);
        if let Some(e) = self.get(&h.key, &h.owner) {
            if e.current.token == h.token {
                e.current.mark_lost(reason);
            }
        }
        fresh
    }

    /// The renewal period: a third of the shortest renewed lease.
    pub(crate) fn period(&self) -> Option<Duration> {
        let leases = self.entries.values().filter(|e| e.renewing());
        leases.map(|e| third(e.lease)).min()
    }

    /// The holdings to renew in a round at `now`: those that would be late by the next round.
    pub(crate) fn due(&self, now: Instant, period: Duration) -> Vec<Renewal> {
        let horizon = now + period;
        let due = self.entries.values();
        due.filter(|e| e.renewing() && e.next_renew <= horizon)
            .map(|e| Renewal {
                holding: e.current.clone(),
                lease: e.lease,
            })
            .collect()
    }

    fn entry_of(&mut self, r: &Renewal) -> Option<&mut Entry> {
        let h = &r.holding;
        let e = self.get_mut(&h.key, &h.owner)?;
        Arc::ptr_eq(&e.current, h).then_some(e)
    }

    /// A round sent `r` at `at`, whatever the answer: next try a third of a lease later.
    pub(crate) fn attempted(&mut self, r: &Renewal, at: Instant) {
        if let Some(e) = self.entry_of(r) {
            e.next_renew = at + third(e.lease);
        }
    }

    /// The server renewed `r` (sent at `at`): its lease now runs to `at + lease` at least.
    pub(crate) fn renewed(&mut self, r: &Renewal, at: Instant) {
        if let Some(e) = self.entry_of(r) {
            e.deadline = e.deadline.max(at + r.lease);
        }
    }

    /// Marks lost every holding whose lease has run out by `now`; returns them.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<Arc<Holding>> {
        let live = self.entries.values();
        let expired: Vec<_> = live
            .filter(|e| e.current.lost_reason().is_none() && e.deadline <= now)
            .map(|e| e.current.clone())
            .collect();
        for h in &expired {
            h.mark_lost(LossReason::Expired);
        }
        expired
    }

    /// When the watchdog must next look: the next renewal or lease end, if any.
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        let live = self.entries.values();
        live.filter(|e| e.current.lost_reason().is_none())
            .map(|e| match e.watched {
                0 => e.deadline,
                _ => e.deadline.min(e.next_renew),
            })
            .min()
    }

    /// How many live guards hold `(key, owner)` with `token`.
    pub(crate) fn holds(&self, key: &str, owner: &str, token: u64) -> usize {
        self.get(key, owner)
            .filter(|e| e.current.token == token)
            .map_or(0, |e| e.holds)
    }

    /// How many distinct holdings are recorded.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
