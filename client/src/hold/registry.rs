//! The client's local record of the locks it holds: what the watchdog renews, when each lease
//! runs out, and which holdings are lost. Pure bookkeeping, no Redis in it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::hold::releasing::Releasing;
use crate::pure::error::LossReason;
use crate::pure::holding::safe_deadline;
pub(crate) use crate::pure::holding::Holding;
use crate::pure::kind::{Kind, Units};
use crate::pure::pair::Id;

/// A grant from the server, to be recorded.
#[derive(Debug, Clone)]
pub(crate) struct Grant<'a> {
    pub(crate) key: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) kind: Kind, // a plain lock, a read or a write hold
    pub(crate) token: u64,
    pub(crate) lease: Duration,
    pub(crate) watchdog: bool,
    /// The send time of the request that set the lease (no later than the server's time).
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
    /// What the server counts for the guards' holds: holds, permits, or read and write holds.
    units: Units,
    watched: usize,
    /// The lease renewals send.
    lease: Duration,
    /// The send time and lease of the latest-sent request known to have set the lease,
    /// and when its answer came.
    set_at: Instant,
    set_lease: Duration,
    set_answered: Instant,
    next_renew: Instant,
}

impl Entry {
    fn renewing(&self) -> bool {
        self.watched > 0 && self.current.lost_reason().is_none()
    }

    /// A request sent at `at` set the lease to `lease` (its answer came just now): the safe
    /// deadline follows the one sent last. When the two crossed (each sent before the
    /// other's answer came, on different connections), either may have been applied last,
    /// so the shorter of the two leases counts; a request sent after the previous one was
    /// answered was applied after it, and its lease alone counts.
    fn lease_set(&mut self, at: Instant, lease: Duration, margin: Duration) {
        let crossed = at < self.set_answered;
        let counted = if crossed {
            lease.min(self.set_lease)
        } else {
            lease
        };
        if at >= self.set_at {
            self.set_at = at;
            self.set_lease = lease;
            self.set_answered = Instant::now();
        }
        self.current
            .set_deadline(safe_deadline(self.set_at, counted, margin));
    }
}

/// All holdings of one client, by `(key, owner)`.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    entries: HashMap<(String, String), Entry>,
    /// The releases sent for holds forgotten here, until answered.
    releasing: Releasing,
    /// The margin of every safe deadline (see `holding.rs`).
    margin: Duration,
    losses: Arc<AtomicU64>,
}

fn add_units(to: &mut Units, more: Units) {
    *to = [to[0] + more[0], to[1] + more[1]];
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

    /// A registry whose safe deadlines keep `margin` (see `holding.rs`).
    pub(crate) fn new(margin: Duration) -> Registry {
        Registry {
            margin,
            ..Registry::default()
        }
    }

    /// Records one more hold; returns the holding the new guard shares.
    pub(crate) fn register(&mut self, g: &Grant<'_>) -> Arc<Holding> {
        let margin = self.margin;
        let deadline = safe_deadline(g.at, g.lease, margin);
        let losses = self.losses.clone();
        if let Some(e) = self.get_mut(g.key, g.owner) {
            if e.current.token == g.token {
                // Reentry: the server counted one more hold and reset the lease.
                if e.current.lost_reason().is_some() {
                    e.current = Holding::new((g.key, g.owner, g.kind), g.token, deadline, &losses);
                    (e.set_at, e.set_lease) = (g.at, g.lease);
                    e.set_answered = Instant::now();
                } else {
                    e.lease_set(g.at, g.lease, margin);
                }
                e.holds += 1;
                add_units(&mut e.units, g.kind.units());
                if g.watchdog {
                    e.watched += 1;
                    e.lease = g.lease;
                }
                e.next_renew = e.next_renew.min(g.at + third(g.lease));
                return e.current.clone();
            }
            // A new token for the same owner: the holding we knew of is gone on the server.
            e.current.mark_lost(LossReason::NotHeld);
        }
        let current = Holding::new((g.key, g.owner, g.kind), g.token, deadline, &losses);
        self.releasing.holding_changed(g.key, g.owner, g.token);
        let entry = Entry {
            current: current.clone(),
            holds: 1,
            units: g.kind.units(),
            watched: usize::from(g.watchdog),
            lease: g.lease,
            set_at: g.at,
            set_lease: g.lease,
            set_answered: Instant::now(),
            next_renew: g.at + third(g.lease),
        };
        self.entries
            .insert((g.key.to_owned(), g.owner.to_owned()), entry);
        current
    }

    /// Forgets one hold of `h`, of `kind`. True if that hold may still be counted on the
    /// server's holding (same token, and the server has not said it lost it), so a
    /// `LOCK.RELEASE` must be sent for it.
    pub(crate) fn unregister(&mut self, h: &Holding, kind: Kind, watchdog: bool) -> bool {
        let Some(e) = self.get_mut(&h.key, &h.owner) else {
            return false;
        };
        if e.current.token != h.token {
            return false;
        }
        let refused =
            [h.lost_reason(), e.current.lost_reason()].contains(&Some(LossReason::NotHeld));
        e.holds = e.holds.saturating_sub(1);
        let [a, b] = kind.units();
        e.units = [e.units[0].saturating_sub(a), e.units[1].saturating_sub(b)];
        if watchdog {
            e.watched = e.watched.saturating_sub(1);
        }
        if e.holds == 0 {
            self.entries
                .remove(&(h.key.as_str(), h.owner.as_str()) as &dyn Id);
        }
        if !refused {
            self.releasing.add(&h.key, &h.owner, h.token, kind.units());
        }
        !refused
    }

    /// A release of one hold of `h` that no guard holds is about to be sent.
    pub(crate) fn sending(&mut self, h: &Holding, kind: Kind) {
        self.releasing.add(&h.key, &h.owner, h.token, kind.units());
    }

    /// The release a true [`unregister`](Registry::unregister) called for was answered,
    /// will not be sent, or its holding has surely ended.
    pub(crate) fn released(&mut self, h: &Holding, kind: Kind) {
        self.releasing.done(&h.key, &h.owner, h.token, kind.units());
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

    /// The current holding of `(key, owner)`, if recorded.
    pub(crate) fn holding(&self, key: &str, owner: &str) -> Option<Arc<Holding>> {
        self.get(key, owner).map(|e| e.current.clone())
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

    /// Every holding the watchdog renews, due or not.
    pub(crate) fn renewing(&self) -> Vec<Renewal> {
        let live = self.entries.values().filter(|e| e.renewing());
        let renewal = |e: &Entry| Renewal {
            holding: e.current.clone(),
            lease: e.lease,
        };
        live.map(renewal).collect()
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
        let margin = self.margin;
        if let Some(e) = self.entry_of(r) {
            e.lease_set(at, r.lease, margin);
        }
    }

    /// When the watchdog must next look: the next renewal or safe deadline, if any.
    pub(crate) fn next_wakeup(&self) -> Option<Instant> {
        let live = self.entries.values();
        live.filter(|e| e.current.lost_reason().is_none())
            .map(|e| match e.watched {
                0 => e.current.deadline(),
                _ => e.current.deadline().min(e.next_renew),
            })
            .min()
    }

    /// What the server may count for `(key, owner)` and this client knows of, by token
    /// (holds, permits, or read and write holds): its guards', and the releases sent but
    /// not yet answered.
    pub(crate) fn known(&self, key: &str, owner: &str) -> Vec<(u64, Units)> {
        let held = self.get(key, owner).map(|e| (e.current.token, e.units));
        let releasing = self.releasing.units(key, owner);
        held.into_iter().chain(releasing).collect()
    }

    /// Whether a release of `(key, owner)` is in flight for a holding no guard of this
    /// client holds: the server may still count its hold, which is no longer the owner's.
    pub(crate) fn leaving(&self, key: &str, owner: &str) -> bool {
        let held = self.get(key, owner).map(|e| e.current.token);
        self.releasing
            .units(key, owner)
            .any(|(token, _)| Some(token) != held)
    }

    /// How many distinct holdings are recorded.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// How many holdings were lost while recorded.
    pub(crate) fn losses(&self) -> u64 {
        self.losses.load(Ordering::Relaxed)
    }

    /// Forgets every hold; returns each holding that may still be held on the server, with
    /// its holds (the `LOCK.RELEASE`s it needs).
    pub(crate) fn drain(&mut self) -> Vec<(Arc<Holding>, usize)> {
        let all = self.entries.drain().map(|(_, e)| (e.current, e.holds));
        let held = all.filter(|(h, _)| h.lost_reason() != Some(LossReason::NotHeld));
        held.collect()
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
