//! Scenario 9's contended handoffs, what both ways of waiting share: the lock they wait on,
//! the measurement of one slice ([`Contended`]) and the server's marks around it. The
//! slices themselves: `handoffs.rs` (tickets, and the alternation of the sides) and
//! `handoffs_blocked.rs` (blocked clients).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::clock::percentile;
use crate::server::{info_num, Delta, Snapshot};
use crate::wait_mode::Mode;

/// Waits queued on the lock unless `rlock-bench handoffs` is given another number.
pub const WAITS: usize = 64;

static CHOSEN: OnceLock<usize> = OnceLock::new();

/// Waits queued on the lock: [`WAITS`], or the number `handoffs` was given (set once).
pub fn waits() -> usize {
    CHOSEN.get().copied().unwrap_or(WAITS)
}

/// Queues `n` waits instead of [`WAITS`] in this process's slices.
pub fn choose_waits(n: usize) {
    let _ = CHOSEN.set(n);
}

pub(crate) const LEASE: &str = "30000";

/// One mode's contended measurement (slices summed).
#[derive(Debug, Clone)]
pub struct Contended {
    pub mode: Mode,
    /// The floor module's handoffs (nothing held), not the lock's.
    pub floor: bool,
    /// Handoffs the server counted in the windows.
    pub grants: u64,
    pub server: Delta,
    /// Release sent → next holder read its grant, µs.
    pub gaps_us: Vec<f64>,
    /// Acquisitions per waiter, in the windows.
    pub per_waiter: HashMap<usize, u64>,
    /// In every slice, each waiter had as many acquisitions as any other, give or take one.
    pub fifo: bool,
}

impl Contended {
    pub(crate) fn empty(mode: Mode) -> Contended {
        Contended {
            mode,
            floor: false,
            grants: 0,
            server: Delta::default(),
            gaps_us: Vec::new(),
            per_waiter: HashMap::new(),
            fifo: true,
        }
    }

    pub(crate) fn merge(&mut self, other: Contended) {
        let (most, fewest) = other.spread();
        self.fifo &= fewest > 0 && most - fewest <= 1;
        self.grants += other.grants;
        self.server = self.server.merge(&other.server);
        self.gaps_us.extend(other.gaps_us);
        for (w, n) in other.per_waiter {
            *self.per_waiter.entry(w).or_default() += n;
        }
    }

    /// The server commands of one handoff: [the wait, the release that hands on].
    pub(crate) fn commands(&self) -> [&'static str; 2] {
        match self.mode {
            Mode::Tickets if self.floor => ["noop.queue", "noop.push"],
            _ if self.floor => ["noop.block", "noop.pass"],
            Mode::Tickets => ["lock.wait", "lock.release"],
            Mode::Block | Mode::Client => ["lock.acquire", "lock.release"],
        }
    }

    /// Takes the server's work between the marks `from` and `to` ([`mark`]): the handoffs
    /// the lock counted, or the floor's, one per call of the command that hands on.
    pub(crate) fn measured(&mut self, from: (Snapshot, f64), to: (Snapshot, f64)) {
        self.server = from.0.until(&to.0);
        self.grants = if self.floor {
            self.server.calls_of(&self.commands()[1..])
        } else {
            (to.1 - from.1) as u64
        };
    }

    /// `INFO commandstats` µs of the handoff's commands per grant.
    pub fn commandstats_us(&self) -> f64 {
        self.server.usec_of(&self.commands()) as f64 / self.grants.max(1) as f64
    }

    /// Server `used_cpu_user` + `used_cpu_sys` µs per grant.
    pub fn cpu_us(&self) -> f64 {
        1e6 * self.server.cpu_s / self.grants.max(1) as f64
    }

    pub fn gap_us(&self, p: f64) -> f64 {
        percentile(&self.gaps_us, p)
    }

    /// (most, fewest) acquisitions of one waiter.
    pub fn spread(&self) -> (u64, u64) {
        let all = (0..waits()).map(|w| self.per_waiter.get(&w).copied().unwrap_or(0));
        (all.clone().max().unwrap_or(0), all.min().unwrap_or(0))
    }
}

/// The server's state at one moment: its statistics and the lock's handoffs so far (none
/// for the floor's, which the floor module's commands count; rlock may not be loaded).
pub(crate) fn mark(con: &mut redis::Connection, floor: bool) -> (Snapshot, f64) {
    let s = Snapshot::take(con);
    let handoffs = if floor {
        0.0
    } else {
        info_num(con, "rlock", "rlock_handoffs")
    };
    (s, handoffs)
}

pub(crate) fn owner(w: usize) -> String {
    format!("h{w}:1")
}
