//! The event counters of `INFO rlock` (SPEC.md §7): plain atomics, bumped where the events
//! happen and read by the module's `hooks/info_section.rs`.

use std::sync::atomic::{AtomicI64, Ordering};

/// A monotonic event counter.
pub struct Counter(AtomicI64);

impl Counter {
    const fn new() -> Self {
        Counter(AtomicI64::new(0))
    }

    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` (a count of things, not of events).
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Fresh holdings granted by `LOCK.ACQUIRE` itself.
pub static ACQUIRED: Counter = Counter::new();
/// Acquisitions by the holder that only raised the count.
pub static REENTERED: Counter = Counter::new();
/// Successful `LOCK.RELEASE` calls.
pub static RELEASED: Counter = Counter::new();
/// `LOCK.RENEW` calls that answered 1.
pub static RENEWED: Counter = Counter::new();
/// Locks handed directly to a queued waiter, whatever freed them.
pub static HANDOFFS: Counter = Counter::new();
/// Handoffs caused by a lease running out.
pub static EXPIRY_HANDOFFS: Counter = Counter::new();
/// Waiters whose `WAIT` ran out.
pub static WAIT_TIMEOUTS: Counter = Counter::new();
/// `NOTHELD` errors sent.
pub static NOT_HELD_ERRORS: Counter = Counter::new();

/// `LOCK.RENEW` calls that answered 0: the caller had lost the lock.
pub static RENEWALS_LOST: Counter = Counter::new();
/// `LOCK.ACQUIRE` calls answered nil at once (held by another, no `WAIT` or no way to block,
/// or held back by the failover delay).
pub static CONTENDED: Counter = Counter::new();
/// `LOCK.FORCERELEASE` calls that removed a lock.
pub static FORCE_RELEASES: Counter = Counter::new();
/// Holds given back because the waiter they were handed to left before its reply.
pub static REVOKED_GRANTS: Counter = Counter::new();
/// Releases that left a lock with native waiters free for script clients, their turn.
pub static SCRIPT_TURNS: Counter = Counter::new();
/// Fresh read holdings of read-write locks (acquired or handed on).
pub static READ_HOLDINGS: Counter = Counter::new();
/// Fresh write holdings of read-write locks (acquired or handed on).
pub static WRITE_HOLDINGS: Counter = Counter::new();
/// Write holds refused to owners holding read holds only.
pub static UPGRADES_REFUSED: Counter = Counter::new();
/// Waits on countdown latches released because the count reached zero (or the key went).
pub static LATCH_RELEASES: Counter = Counter::new();
/// Fresh holdings of semaphores (acquired or handed on).
pub static SEM_HOLDINGS: Counter = Counter::new();
/// Permits of semaphores granted, fresh or added by a holder.
pub static SEM_PERMITS_GRANTED: Counter = Counter::new();
/// Ends of listened holdings announced to their holders (`LOCK.LISTEN`).
pub static LOSSES_ANNOUNCED: Counter = Counter::new();

/// Every counter with its `INFO` field name, in the order `INFO rlock` lists them.
pub const ALL: [(&str, &Counter); 20] = [
    ("acquired", &ACQUIRED),
    ("reentered", &REENTERED),
    ("released", &RELEASED),
    ("renewed", &RENEWED),
    ("handoffs", &HANDOFFS),
    ("expiry_handoffs", &EXPIRY_HANDOFFS),
    ("wait_timeouts", &WAIT_TIMEOUTS),
    ("not_held_errors", &NOT_HELD_ERRORS),
    ("renewals_lost", &RENEWALS_LOST),
    ("contended", &CONTENDED),
    ("force_releases", &FORCE_RELEASES),
    ("revoked_grants", &REVOKED_GRANTS),
    ("script_turns", &SCRIPT_TURNS),
    ("rw_read_holdings", &READ_HOLDINGS),
    ("rw_write_holdings", &WRITE_HOLDINGS),
    ("rw_upgrades_refused", &UPGRADES_REFUSED),
    ("latch_releases", &LATCH_RELEASES),
    ("sem_holdings", &SEM_HOLDINGS),
    ("sem_permits_granted", &SEM_PERMITS_GRANTED),
    ("losses_announced", &LOSSES_ANNOUNCED),
];

/// A gauge: a count that goes up and down.
pub struct Gauge(AtomicI64);

impl Gauge {
    const fn new() -> Self {
        Gauge(AtomicI64::new(0))
    }

    pub fn up(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    pub fn down(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Module timers armed and not yet fired or stopped.
pub static TIMERS: Gauge = Gauge::new();
