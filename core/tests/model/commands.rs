//! The clients' commands, each as its file in `src/commands/` and `src/handoff/` runs it:
//! its real parser says whether the owner is accepted; the real state machine or glance
//! decides; the store writes; a contended acquisition queues a wait.

use rlock_core::kind::{Family, Kind, RwMode};
use rlock_core::layout;
use rlock_core::lock::{self, AcquireStep};
use rlock_core::rwglance::{self, Quick};
use rlock_core::rwlock::{self, RwHolder, RwStep};
use rlock_core::semaphore::{self, SemHolder, SemStep};
use rlock_core::semglance;
use rlock_core::{args, parse};

use super::serve::fresh_counts;
use super::state::{Wait, LEASE};
use super::step::{OwnerCheck, Step};

/// What a client asks for, with `WAIT` (it blocks when it cannot have it now).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum What {
    Lock,
    Read,
    Write,
    Permits(u32),
    Latch,
}

impl What {
    pub const ALL: [What; 6] = [
        What::Lock,
        What::Read,
        What::Write,
        What::Permits(1),
        What::Permits(2),
        What::Latch,
    ];

    pub fn kind(self) -> Kind {
        match self {
            What::Lock => Kind::Lock,
            What::Read => Kind::Rw(RwMode::Read),
            What::Write => Kind::Rw(RwMode::Write),
            What::Permits(n) => Kind::Permits(n),
            What::Latch => Kind::Latch,
        }
    }
}

/// Whether `owner` is accepted by the acquisition of `what` (the latch takes none): the
/// command's own parser on its argument vector, or the generic rule alone.
pub fn owner_accepted(check: OwnerCheck, what: What, owner: &[u8]) -> bool {
    if check == OwnerCheck::Unchecked {
        // The rule as it was before the layouts' field names were reserved.
        return args::owner(owner).is_ok() || layout::is_fixed_field(owner);
    }
    let lease = LEASE.to_string();
    let lease = lease.as_bytes();
    match what {
        What::Lock => {
            parse::acquire::parse(&[b"LOCK.ACQUIRE", b"k", owner, b"LEASE", lease], 0).is_ok()
        }
        What::Read | What::Write => {
            let argv: [&[u8]; 6] = [b"RWLOCK.ACQUIRE", b"k", owner, b"READ", b"LEASE", lease];
            parse::rw::split_mode(&argv)
                .is_ok_and(|(_, rest)| parse::acquire::parse(&rest, 0).is_ok())
        }
        What::Permits(_) => {
            let argv: [&[u8]; 6] = [b"SEM.ACQUIRE", b"k", owner, b"1", b"LEASE", lease];
            parse::sem::split_permits(&argv)
                .is_ok_and(|(_, rest)| parse::acquire::parse(&rest, 0).is_ok())
        }
        What::Latch => true,
    }
}

impl Step<'_> {
    /// The client asks for `what`, with `WAIT`.
    pub fn acquire(&mut self, client: usize, what: What) {
        let owner = self.owner(client);
        if what != What::Latch && !owner_accepted(self.settings.owner_check, what, &owner) {
            return;
        }
        let contended = match what {
            What::Lock => self.acquire_lock(&owner),
            What::Read => self.acquire_rw(&owner, RwMode::Read),
            What::Write => self.acquire_rw(&owner, RwMode::Write),
            What::Permits(n) => self.acquire_sem(&owner, n.into()),
            // `commands/latch_await.rs`: an open latch answers 1 at once.
            What::Latch => matches!(self.st.store.read_latch(), Ok(Some(1..))),
        };
        if contended {
            let wait = self.st.waits.len();
            let kind = what.kind();
            self.st.waits.push(Wait {
                client,
                kind,
                token: None,
                reply: None,
                ends: 0,
            });
            let owner = if what == What::Latch {
                Vec::new()
            } else {
                owner
            };
            self.q.enqueue(wait, &owner, kind);
        }
    }

    /// A fresh holding or a reentry told to its client.
    fn took(
        &mut self,
        owner: &[u8],
        family: Family,
        counts: (i64, i64),
        (token, fresh): (i64, bool),
    ) {
        let until = self.st.now + LEASE;
        self.st.hold(owner, family, counts, token, until);
        if fresh {
            self.tell_fresh(token);
        }
    }

    /// `handoff/take.rs` `attempt`; whether it must wait.
    fn acquire_lock(&mut self, owner: &[u8]) -> bool {
        let Ok(current) = self.st.store.read_lock() else {
            return false;
        };
        let until = self.st.now + LEASE;
        match lock::acquire(current.as_ref(), owner) {
            AcquireStep::Fresh => {
                let token = self.issue();
                self.st.store.write_holding(owner, 1, token, until, false);
                self.took(owner, Family::Lock, (1, 0), (token, true));
            }
            AcquireStep::Reenter { count, token } => {
                self.st
                    .store
                    .write_holding(owner, count, token, until, true);
                self.took(owner, Family::Lock, (count, 0), (token, false));
            }
            AcquireStep::Contended => return true,
            AcquireStep::CountOverflow => {}
        }
        false
    }

    /// `handoff/rw_take.rs` `attempt`: a glance decides, or the whole hash (lapsed holders
    /// out, the line served first). `queued`: waits of its own family (the lines' rule).
    fn acquire_rw(&mut self, owner: &[u8], mode: RwMode) -> bool {
        let queued = self.q.lane_len(Family::Rw) > 0;
        let Ok(glance) = self.st.store.rw_glance(owner) else {
            return false;
        };
        let step = match rwglance::acquire(&glance, owner, mode, queued, self.st.now) {
            Quick::Decided(step) => step,
            Quick::Slow => {
                if self.live_rw().is_err() {
                    return false;
                }
                self.serve();
                let Ok(state) = self.st.store.read_rw() else {
                    return false;
                };
                let queued = self.q.lane_len(Family::Rw) > 0;
                rwlock::acquire(&state.unwrap_or_default(), owner, mode, queued)
            }
        };
        let (counts, token, fresh) = match step {
            RwStep::Fresh => (fresh_counts(mode), self.issue(), true),
            RwStep::Reenter {
                reads,
                writes,
                token,
            } => ((reads, writes), token, false),
            RwStep::Contended => return true,
            RwStep::Upgrade | RwStep::CountOverflow => return false,
        };
        let until = self.st.now + LEASE;
        let holder = RwHolder {
            owner: owner.to_vec(),
            reads: counts.0,
            writes: counts.1,
            token,
            deadline_ms: Some(until),
        };
        self.st.store.set_rw_holder(&holder);
        self.took(owner, Family::Rw, counts, (token, fresh));
        false
    }

    /// `handoff/sem_take.rs` `attempt`.
    fn acquire_sem(&mut self, owner: &[u8], permits: i64) -> bool {
        let queued = self.q.lane_len(Family::Sem) > 0;
        let Ok(glance) = self.st.store.sem_glance(owner) else {
            return false;
        };
        let step = match semglance::acquire(&glance, owner, permits, queued, self.st.now) {
            Quick::Decided(step) => step,
            Quick::Slow => {
                if self.live_sem().is_err() {
                    return false;
                }
                self.serve();
                let Ok(state) = self.st.store.read_sem() else {
                    return false;
                };
                let queued = self.q.lane_len(Family::Sem) > 0;
                semaphore::acquire(&state.unwrap_or_default(), owner, permits, queued)
            }
        };
        let (all, token, fresh) = match step {
            SemStep::Fresh => (permits, self.issue(), true),
            SemStep::Reenter { permits, token } => (permits, token, false),
            SemStep::Contended => return true,
            SemStep::TooMany { .. } => return false,
        };
        let until = self.st.now + LEASE;
        self.st.store.set_sem_holder(&SemHolder {
            owner: owner.to_vec(),
            permits: all,
            token,
            deadline_ms: until,
        });
        self.took(owner, Family::Sem, (all, 0), (token, fresh));
        false
    }
}
