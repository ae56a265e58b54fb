//! One step of the model: the state being changed, its queue, and what every path that
//! ends a wait or hands out a token records (so that the properties can judge the history).

use rlock_core::kind::{Family, Kind};
use rlock_core::registry::Waiter;
use rlock_core::token::TokenClock;

use super::lines::Lines;
use super::state::{Reply, State, LEASE};

/// How the latch releases its waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatchRelease {
    /// Its own family's waits (`take_lane`): the rule of every path that ends waits.
    Lane,
    /// Every wait of the key (`take_queue`): the module's old release, unsafe.
    WholeQueue,
}

/// What decides whether an owner is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerCheck {
    /// Each command's own parser in `core/src/parse/`.
    Parser,
    /// The generic rule alone (`args::owner`: not empty, no `@`), blind to the layouts'
    /// field names: unsafe.
    Unchecked,
}

/// The switches of one check.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The owner names of the clients, one set per initial state.
    pub owners: Vec<[&'static str; 3]>,
    pub latch: LatchRelease,
    pub owner_check: OwnerCheck,
}

pub struct Step<'a> {
    pub settings: &'a Settings,
    pub st: State,
    pub q: Lines,
}

impl<'a> Step<'a> {
    pub fn new(settings: &'a Settings, st: &State) -> Step<'a> {
        let q = Lines::of(&st.queue);
        Step {
            settings,
            st: st.clone(),
            q,
        }
    }

    pub fn finish(self) -> State {
        let mut st = self.st;
        st.queue = self.q.into_queue();
        st
    }

    pub fn owner(&self, client: usize) -> Vec<u8> {
        self.st.owners[client].clone()
    }

    /// A fresh token from the core's counter (`token.rs`), at the clock in µs.
    pub fn issue(&mut self) -> i64 {
        let clock = TokenClock::new();
        clock.observe_issued(self.st.tokens);
        let token = clock.issue(self.st.now * 1000).expect("tokens left");
        self.st.tokens = clock.last();
        token
    }

    /// A client is told a fresh token.
    pub fn tell_fresh(&mut self, token: i64) {
        if token <= self.st.told {
            self.st.flaws.token_back = true;
        }
        self.st.told = self.st.told.max(token);
    }

    /// Whether a latch's waits may go now: its count at zero, or no key.
    pub fn latch_open(&self) -> bool {
        matches!(self.st.store.read_latch(), Ok(None) | Ok(Some(..=0)))
    }

    /// The wait `wait` ends with `reply`, by an event of `by`'s family.
    pub fn end(&mut self, wait: usize, reply: Reply, by: Family) {
        let open = self.latch_open();
        let w = &mut self.st.waits[wait];
        w.ends += 1;
        let (kind, token) = (w.kind, w.token);
        w.reply = Some(reply.clone());
        let flaws = &mut self.st.flaws;
        flaws.double_end |= w.ends > 1;
        flaws.foreign_end |= kind.family() != by;
        let Reply::Granted(n) = reply else {
            return;
        };
        if kind == Kind::Latch {
            flaws.latch_early |= !open;
        } else if token != Some(n) {
            // Its client takes the integer for a fresh token (a reentry's is its own).
            flaws.not_its_token = true;
            self.tell_fresh(n);
        }
    }

    /// The queued `waiter` was written a holding of `counts` with `token` (`fresh`: a new
    /// token): it leaves with the token, and its owner holds.
    pub fn grant(&mut self, waiter: &Waiter<usize>, token: i64, fresh: bool, counts: (i64, i64)) {
        let family = waiter.kind.family();
        self.st.waits[waiter.client].token = Some(token);
        let until = self.st.now + LEASE;
        self.st.hold(&waiter.owner, family, counts, token, until);
        if fresh {
            self.tell_fresh(token);
        }
        self.end(waiter.client, Reply::Granted(token), family);
    }

    /// The key was replaced or deleted by a plain Redis command: every holding on it is lost.
    pub fn key_replaced(&mut self) {
        self.st.held.clear();
        self.st.total = None;
    }
}
