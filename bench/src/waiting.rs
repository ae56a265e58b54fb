//! Scenario 9, waiting at scale: tickets (`LOCK.WAIT`, any number of waits over
//! one RESP3 connection) against today's blocking path (`LOCK.ACQUIRE ... WAIT`, a
//! connection per wait) and the Redisson-style baseline, on the bench's one server:
//! connections and memory with many waits held by one client process (`waits.rs`), and
//! the server's cost, latency and order of contended handoffs (`handoffs.rs`). The table:
//! `waiting_table.rs`.

use std::time::Duration;

use crate::handoff_slice::Contended;
use crate::handoffs;
use crate::wait_mode::Mode;
use crate::waits::{self, Held};

/// The fd limit of the client process in the connection rows.
pub const FD_LIMIT: usize = 1024;

/// Everything scenario 9 measured.
pub struct Waiting {
    /// Tickets under `ulimit -n 1024`: on 1 lock, on 1,000 locks.
    pub tickets: [Held; 2],
    /// Blocking under `ulimit -n 1024`.
    pub blocking_limited: [Held; 2],
    /// Blocking with fds enough for a connection per wait (the memory rows).
    pub blocking: [Result<Held, String>; 2],
    /// [tickets, blocking].
    pub contended: [Contended; 2],
    /// [tickets, blocking] handed on with nothing held (the floor module's), when it is
    /// loaded.
    pub contended_floor: Option<[Contended; 2]>,
    /// The client crate's own waits (`acquire` futures) on 1 lock, under `ulimit -n 1024`.
    pub client: Result<Held, String>,
}

/// Runs scenario 9 on the server at `port`: `waits` waits; `slice` per contended slice.
pub fn run(port: u16, waits: usize, slice: Duration) -> Result<Waiting, String> {
    let spread = [(waits, 1), (waits, 1000.min(waits))];
    let held = |mode, (n, keys), limit, settle| waits::hold(port, mode, (n, keys), limit, settle);
    let tickets = [
        held(Mode::Tickets, spread[0], FD_LIMIT, true)?,
        held(Mode::Tickets, spread[1], FD_LIMIT, true)?,
    ];
    let enough = waits + 1000;
    let blocking = [
        held(Mode::Block, spread[0], enough, true),
        held(Mode::Block, spread[1], enough, true),
    ];
    let blocking_limited = [
        held(Mode::Block, spread[0], FD_LIMIT, false)?,
        held(Mode::Block, spread[1], FD_LIMIT, false)?,
    ];
    let client = held(Mode::Client, spread[0], FD_LIMIT, false);
    let (contended, contended_floor) = handoffs::run(port, slice, 4)?;
    Ok(Waiting {
        tickets,
        blocking_limited,
        blocking,
        contended,
        contended_floor,
        client,
    })
}

/// The costs of the baseline and of the uncontended pair that the rows compare with:
/// (commandstats µs, used_cpu µs) per acquisition.
pub struct Others {
    pub lua: (f64, f64),
    pub pair: (f64, f64),
}
