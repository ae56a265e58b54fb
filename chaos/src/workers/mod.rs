//! The workers: client-crate tasks ([`client`]), raw `LOCK.*` commands as redis-cli users
//! send them ([`raw`]), tickets over one RESP3 connection ([`ticket`]), Redisson-style Lua
//! scripts ([`redisson`]), client-crate workers in child processes that the faults can
//! pause or kill ([`child`]), raw `RWLOCK.*` read-write workers ([`rw`]), and raw `SEM.*`
//! semaphore ([`sem`]) and `LATCH.*` latch ([`latch`]) workers, and client-crate holders
//! whose holdings a fault ends on the server ([`loss`]).

pub mod child;
pub mod client;
pub mod field_owner;
pub mod latch;
pub mod loss;
pub mod raw;
pub mod redisson;
pub mod rw;
mod rw_conn;
mod rw_steps;
pub mod rw_tally;
pub mod sem;
pub mod sem_tally;
pub mod several;
pub mod ticket;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rlock_client::ClientOptions;

use crate::history::{History, Mode, Section, Write};
use crate::resource::Resource;
use crate::rng::Rng;

/// The lease every worker asks for (watchdog or explicit): short, so that pauses and
/// failovers outlast it.
pub const LEASE: Duration = Duration::from_millis(2000);

/// The options of the client-crate workers' clients. With the unsafe switch, a release
/// that fails for its connection is not sent again: its hold stays behind until its lease
/// ends, a leaked hold the checker must count; and the clients do not listen for the
/// server's announcements of ended holdings: the loss workers learn of them at a renewal,
/// late losses the checker must count.
pub fn client_options(unsafe_mode: bool) -> ClientOptions {
    let options = ClientOptions::new().response_timeout(Duration::from_secs(1));
    if unsafe_mode {
        return options.unsafe_release_once().listen_for_losses(false);
    }
    options
}

/// What the workers share.
pub struct Ctx {
    pub history: History,
    pub resource: Arc<Resource>,
    pub rng: Rng,
    pub stop: AtomicBool,
    /// The lock names the workers contend on.
    pub keys: Vec<String>,
    /// The unsafe switch: workers write after losing, and count themselves as holders.
    pub ignore_loss: bool,
}

impl Ctx {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub fn key(&self) -> String {
        self.rng.pick(&self.keys).clone()
    }

    /// How long a critical section works: mostly short, now and then past the lease.
    pub fn work(&self) -> Duration {
        if self.rng.chance(3) {
            return self.rng.millis(2000, 3500);
        }
        self.rng.millis(0, 150)
    }
}

/// A critical section being recorded.
pub struct Draft {
    pub worker: String,
    pub key: String,
    pub owner: String,
    pub token: u64,
    pub fenced: bool,
    pub lease_ms: u64,
}

impl Draft {
    /// The section once its writes are known; `believed`: still held after the end write.
    pub fn finish(self, begin: Write, end: Option<Write>, believed: bool) -> Section {
        Section {
            worker: self.worker,
            key: self.key,
            owner: self.owner,
            token: self.token,
            fenced: self.fenced,
            lease_ms: self.lease_ms,
            begin,
            end,
            believed,
            mode: Mode::Plain,
        }
    }
}
