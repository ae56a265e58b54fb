//! The commands that end or renew a holding, each as its file in `src/handoff/` (or
//! `src/commands/`) runs it: a glance decides, or the whole hash, lapsed holders out.

use rlock_core::kind::{Family, RwMode};
use rlock_core::lock::{self, ReleaseStep};
use rlock_core::rwglance::{self, Quick};
use rlock_core::rwlock::{self, RwRelease};
use rlock_core::semaphore::{self, SemRelease};
use rlock_core::semglance;

use super::commands::What;
use super::state::SHORT_LEASE;
use super::step::Step;

impl Step<'_> {
    /// `LOCK.RELEASE`, `RWLOCK.RELEASE` (one hold of its mode), `SEM.RELEASE` (all).
    pub fn release(&mut self, client: usize, what: What) {
        let owner = self.owner(client);
        let Some(held) = self.st.holding(&owner, what.kind().family()).cloned() else {
            return;
        };
        let (token, until) = (held.token, held.until);
        let counts = match what {
            What::Lock => match self
                .st
                .store
                .read_lock()
                .map(|c| lock::release(c.as_ref(), &owner))
            {
                Ok(ReleaseStep::Remaining(n)) => {
                    let expires = self.st.store.expires_at.unwrap_or(until);
                    self.st.store.write_holding(&owner, n, token, expires, true);
                    (n, 0)
                }
                // `handoff/door.rs` `end_holding`: deleted, then served.
                Ok(ReleaseStep::Freed) => {
                    self.st.store.delete();
                    (0, 0)
                }
                _ => return,
            },
            What::Read | What::Write => {
                let mode = if what == What::Read {
                    RwMode::Read
                } else {
                    RwMode::Write
                };
                match self.release_rw(&owner, mode) {
                    Some(counts) => counts,
                    None => return,
                }
            }
            What::Permits(_) => match self.release_sem(&owner) {
                true => (0, 0),
                false => return,
            },
            What::Latch => return,
        };
        self.st
            .hold(&owner, what.kind().family(), counts, token, until);
    }

    /// `handoff/rw_take.rs` `release`: the counts left, or `None` when nothing was held.
    fn release_rw(&mut self, owner: &[u8], mode: RwMode) -> Option<(i64, i64)> {
        let glance = self.st.store.rw_glance(owner).ok()?;
        let (step, mine) = match rwglance::release(&glance, owner, mode, None, self.st.now) {
            Quick::Decided(step) => (step, glance.mine),
            Quick::Slow => {
                let (state, _) = self.live_rw().ok()?;
                (
                    rwlock::release(&state, owner, mode, None),
                    state.holder(owner).cloned(),
                )
            }
        };
        let mut holder = mine?;
        (holder.reads, holder.writes) = match step {
            RwRelease::NotHeld => return None,
            RwRelease::Gone => (0, 0),
            RwRelease::Remaining { reads, writes, .. } => (reads, writes),
        };
        self.st.store.set_rw_holder(&holder);
        Some((holder.reads, holder.writes))
    }

    /// `handoff/sem_take.rs` `release` of all the owner's permits: whether it held any.
    fn release_sem(&mut self, owner: &[u8]) -> bool {
        let Ok(glance) = self.st.store.sem_glance(owner) else {
            return false;
        };
        let (step, mine) = match semglance::release(&glance, owner, None, None, self.st.now) {
            Quick::Decided(step) => (step, glance.mine),
            Quick::Slow => match self.live_sem() {
                Ok(state) => (
                    semaphore::release(&state, owner, None, None),
                    state.holder(owner).cloned(),
                ),
                Err(_) => return false,
            },
        };
        match (step, mine) {
            (SemRelease::Gone, Some(mut holder)) => {
                holder.permits = 0;
                self.st.store.set_sem_holder(&holder);
                true
            }
            _ => false,
        }
    }

    /// `LOCK.RENEW`, `RWLOCK.RENEW`, `SEM.RENEW` with a shorter lease.
    pub fn renew(&mut self, client: usize, family: Family) {
        let owner = self.owner(client);
        let until = self.st.now + SHORT_LEASE;
        let renewed = match family {
            Family::Lock => match self.st.store.read_lock() {
                Ok(Some(h)) if h.is_held_by(&owner) => {
                    self.st.store.expires_at = Some(until);
                    true
                }
                _ => false,
            },
            Family::Rw => match self
                .st
                .store
                .rw_glance(&owner)
                .map(|g| rwglance::renewal(&g, None, self.st.now))
            {
                Ok(Quick::Decided(Some(mut h))) => {
                    h.deadline_ms = Some(until);
                    self.st.store.set_rw_holder(&h);
                    true
                }
                _ => false,
            },
            Family::Sem => match self
                .st
                .store
                .sem_glance(&owner)
                .map(|g| semglance::renewal(&g, None, self.st.now))
            {
                Ok(Quick::Decided(Some(mut h))) => {
                    h.deadline_ms = until;
                    self.st.store.set_sem_holder(&h);
                    true
                }
                _ => false,
            },
            Family::Latch => false,
        };
        if let (true, Some(h)) = (renewed, self.st.holding(&owner, family).cloned()) {
            self.st.hold(&owner, family, h.counts, h.token, until);
        }
    }
}
