//! What the module does after an event: each family's waits are served by its own rules
//! and by what the key now is, the families in the order of their first waits
//! (`Registry::heads`); a wait that what the key is cannot serve stays queued, or is
//! refused with its own command's error. One small function per family, each after the
//! module file it mirrors. The module serves from the command or from a check armed by the
//! event (`handoff/expiry.rs`); the model serves at once, after every step, which is where
//! a check would lead.

use rlock_core::kind::{Family, Kind, RwMode};
use rlock_core::rwlock::{self, RwHolder, RwState, RwStep};
use rlock_core::semaphore::{self, SemHolder, SemState, SemStep};

use super::state::{Reply, LEASE};
use super::step::{LatchRelease, Step};
use super::store::WrongType;

impl Step<'_> {
    /// `handoff/expiry.rs` `serve_or_rearm`, per family: the lines in `heads()` order,
    /// again while one of them changed something (a pruned holder may free the key).
    pub fn serve(&mut self) {
        for _ in 0..4 {
            let mut changed = false;
            for family in self.q.heads() {
                changed |= match family {
                    Family::Latch => self.release_latch(),
                    Family::Lock => self.serve_lock(),
                    Family::Rw => self.serve_rw(),
                    Family::Sem => self.serve_sem(),
                };
            }
            if !changed {
                return;
            }
        }
    }

    /// `handoff/latch_serve.rs` `check` and `release_all`: an open latch lets its waits go,
    /// each with 1; `LatchRelease::WholeQueue` is the old `take_queue`.
    pub fn release_latch(&mut self) -> bool {
        if !self.latch_open() {
            return false;
        }
        let taken = match self.settings.latch {
            LatchRelease::Lane => self.q.take_lane(Family::Latch),
            LatchRelease::WholeQueue => self.q.take_queue(),
        };
        for w in &taken {
            self.end(w.client, Reply::Granted(1), Family::Latch);
        }
        !taken.is_empty()
    }

    /// `handoff/door.rs` `hand_off`: a free key goes to the first plain lock wait, through
    /// the door (a fresh token); a key held, or not a lock, keeps them waiting.
    fn serve_lock(&mut self) -> bool {
        if !matches!(self.st.store.read_lock(), Ok(None)) {
            return false;
        }
        let Some(first) = self.q.pop_first(Family::Lock) else {
            return false;
        };
        let token = self.issue();
        let until = self.st.now + LEASE;
        self.st
            .store
            .write_holding(&first.owner, 1, token, until, false);
        self.grant(&first, token, true, (1, 0));
        true
    }

    /// `handoff/rw_serve.rs` `live_state`: holders whose lease ended are taken out.
    pub fn live_rw(&mut self) -> Result<(RwState, bool), WrongType> {
        let Some(mut state) = self.st.store.read_rw()? else {
            return Ok((RwState::default(), false));
        };
        let lapsed = state.lapsed(self.st.now);
        for owner in &lapsed {
            let gone = RwHolder {
                owner: owner.clone(),
                reads: 0,
                writes: 0,
                token: 0,
                deadline_ms: Some(0),
            };
            self.st.store.set_rw_holder(&gone);
            state.remove(owner);
        }
        Ok((state, !lapsed.is_empty()))
    }

    /// `handoff/rw_serve.rs` `serve`: the read-write line served from its head while its
    /// first wait can be granted.
    fn serve_rw(&mut self) -> bool {
        let Ok((mut state, mut changed)) = self.live_rw() else {
            return false;
        };
        while let Some(first) = self.q.first(Family::Rw) {
            let Kind::Rw(mode) = first.kind else {
                unreachable!()
            };
            let (counts, token, fresh) = match rwlock::acquire(&state, &first.owner, mode, false) {
                RwStep::Fresh => (fresh_counts(mode), self.issue(), true),
                RwStep::Reenter {
                    reads,
                    writes,
                    token,
                } => ((reads, writes), token, false),
                RwStep::Contended => break,
                RwStep::Upgrade | RwStep::CountOverflow => {
                    let w = self.q.pop_first(Family::Rw).expect("first");
                    self.end(w.client, Reply::Error("refused"), Family::Rw);
                    changed = true;
                    continue;
                }
            };
            let until = self.st.now + LEASE;
            let holder = RwHolder {
                owner: first.owner.to_vec(),
                reads: counts.0,
                writes: counts.1,
                token,
                deadline_ms: Some(until),
            };
            self.st.store.set_rw_holder(&holder);
            state.put(holder);
            let w = self.q.pop_first(Family::Rw).expect("first");
            self.grant(&w, token, fresh, counts);
            changed = true;
        }
        changed
    }

    /// `handoff/sem_serve.rs` `live_state`: holders whose lease ended are taken out, and
    /// `@next` settled; no key is a semaphore of 0 permits.
    pub fn live_sem(&mut self) -> Result<SemState, WrongType> {
        let Some(mut state) = self.st.store.read_sem()? else {
            return Ok(SemState::default());
        };
        for owner in state.lapsed(self.st.now) {
            let gone = SemHolder {
                owner: owner.clone(),
                permits: 0,
                token: 0,
                deadline_ms: 0,
            };
            self.st.store.set_sem_holder(&gone);
            state.remove(&owner);
        }
        self.st.store.settle_sem_next(&state);
        Ok(state)
    }

    /// `handoff/sem_serve.rs` `serve`: the semaphore's line served in order without
    /// barging; a first wait for more than the total is refused.
    fn serve_sem(&mut self) -> bool {
        let Ok(mut state) = self.live_sem() else {
            return false;
        };
        let mut changed = false;
        while let Some(first) = self.q.first(Family::Sem) {
            let Kind::Permits(n) = first.kind else {
                unreachable!()
            };
            let (permits, token, fresh) =
                match semaphore::acquire(&state, &first.owner, n.into(), false) {
                    SemStep::Fresh => (n.into(), self.issue(), true),
                    SemStep::Reenter { permits, token } => (permits, token, false),
                    SemStep::Contended => break,
                    SemStep::TooMany { .. } => {
                        let w = self.q.pop_first(Family::Sem).expect("first");
                        self.end(w.client, Reply::Error("too many permits"), Family::Sem);
                        changed = true;
                        continue;
                    }
                };
            let until = self.st.now + LEASE;
            let holder = SemHolder {
                owner: first.owner.to_vec(),
                permits,
                token,
                deadline_ms: until,
            };
            self.st.store.set_sem_holder(&holder);
            state.put(holder);
            let w = self.q.pop_first(Family::Sem).expect("first");
            self.grant(&w, token, fresh, (permits, 0));
            changed = true;
        }
        changed
    }
}

/// The counts of a fresh holding of `mode`.
pub fn fresh_counts(mode: RwMode) -> (i64, i64) {
    match mode {
        RwMode::Read => (1, 0),
        RwMode::Write => (0, 1),
    }
}
