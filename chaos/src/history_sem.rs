//! What semaphore, latch and loss workers saw, as events of the shared history: the
//! permits a semaphore worker believed it held over a span of time, a latch's set,
//! count-downs and waits, and a loss worker's holdings. Times are this machine's clock in
//! microseconds (the workers are threads).

/// A span during which a worker believed it held `permits` of `key`'s semaphore: from the
/// reply that granted them to the send of the release that gave some back, or to the end
/// of the lease counted from the send of the command that last set it (less a margin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemSpan {
    pub worker: String,
    pub key: String,
    pub owner: String,
    pub token: u64,
    pub permits: u64,
    pub from_us: u64,
    pub to_us: u64,
    /// When the acquisition that made the holding (not an added permit) was sent.
    pub sent_us: u64,
}

/// What a latch worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latch {
    /// `LATCH.SET key count` answered 1: the latch was set on a fresh key.
    Set { key: String, count: u64 },
    /// A `LATCH.COUNTDOWN key` was about to be sent (each counter sends one, once).
    Down { key: String, sent_us: u64 },
    /// A `LATCH.AWAIT key WAIT wait_ms` sent at `sent_us`, answered at `got_us`; `released`:
    /// the waiter counts itself released (the reply was 1).
    Wait {
        worker: String,
        key: String,
        sent_us: u64,
        got_us: u64,
        wait_ms: u64,
        released: bool,
    },
}

/// A holding of a loss worker, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub key: String,
    pub owner: String,
    /// When its acquisition returned.
    pub from_us: u64,
    /// When `lost()` resolved, if it did.
    pub told_us: Option<u64>,
    /// When the worker stopped holding (its release sent, or it gave up after a loss).
    pub until_us: u64,
}
