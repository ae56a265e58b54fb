//! Scenario 1: every connection on keys of its own, acquire+release pairs for a fixed
//! time, with and without pipelining.

use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{cpu_seconds, now_ns, sleep_until};
use crate::server::{connect, Delta, Snapshot};
use crate::side::{Scripts, Side, LEASE_MS};

pub const CONNECTIONS: usize = 50;

/// The depth that stands for one connection sending each command alone and awaiting its
/// reply: every command then has a turn of the server's event loop to itself, as each
/// command of a handoff to a blocked client has (the next acquisition waits for the release
/// before it, and the grant's reply is written outside any command).
pub const ALONE: usize = 0;

/// The depth that stands for one connection sending each pair in one write and awaiting both
/// replies: the pair has a turn of the event loop to itself, as a ticket handoff's release and
/// the next wait of its connection have.
pub const PAIRED: usize = usize::MAX;

/// How a depth is named in the tables.
pub fn load_name(depth: usize) -> String {
    match depth {
        ALONE => "one connection, each command alone".into(),
        PAIRED => "one connection, each pair in one write".into(),
        1 => "no pipelining".into(),
        d => format!("depth {d}"),
    }
}

/// The order of the loads in the tables: pipelined deepest first, then one connection.
pub fn load_order(depth: usize) -> (u8, std::cmp::Reverse<usize>) {
    match depth {
        PAIRED => (1, std::cmp::Reverse(0)),
        ALONE => (2, std::cmp::Reverse(0)),
        d => (0, std::cmp::Reverse(d)),
    }
}

/// One side's run at one pipelining depth.
#[derive(Debug, Clone)]
pub struct Run {
    pub side: Side,
    pub pairs: u64,
    pub server: Delta,
    pub client_cpu_s: f64,
}

impl Run {
    pub fn pairs_per_s(&self) -> f64 {
        self.pairs as f64 / self.server.wall_s
    }

    /// Server µs (from `INFO commandstats`) per acquire+release pair.
    pub fn server_us_per_pair(&self) -> f64 {
        self.server.usec_of(self.side.top_level_commands()) as f64 / self.pairs.max(1) as f64
    }

    /// Server CPU ms per 1,000 pairs.
    pub fn cpu_ms_per_1000(&self) -> f64 {
        1e6 * self.server.cpu_s / self.pairs.max(1) as f64
    }

    /// Sums two runs of the same side (slices of an alternating run).
    pub fn merge(self, other: Run) -> Run {
        Run {
            side: self.side,
            pairs: self.pairs + other.pairs,
            server: self.server.merge(&other.server),
            client_cpu_s: self.client_cpu_s + other.client_cpu_s,
        }
    }
}

/// Runs `side` for `duration` on [`CONNECTIONS`] connections, `depth` pairs per round trip;
/// at depth [`ALONE`] (or [`PAIRED`]), on one connection, one command (or pair) per round trip.
pub fn run(port: u16, scripts: &Scripts, side: Side, depth: usize, duration: Duration) -> Run {
    let start = now_ns() + 200_000_000;
    let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let workers: Vec<_> = if depth == ALONE || depth == PAIRED {
        let [acquire, release] = alone_commands(scripts, side);
        let together = depth == PAIRED;
        vec![thread::spawn(move || {
            drive_alone(port, side, [&acquire, &release], together, start, end)
        })]
    } else {
        (0..CONNECTIONS)
            .map(|i| {
                let batch = packed_batch(scripts, side, i, depth);
                thread::spawn(move || drive(port, side, &batch, depth, start, end))
            })
            .collect()
    };
    let mut con = connect(port).expect("control connection");
    sleep_until(start);
    let before = Snapshot::take(&mut con);
    let cpu_before = cpu_seconds().0;
    sleep_until(end);
    let after = Snapshot::take(&mut con);
    let client_cpu_s = cpu_seconds().0 - cpu_before;
    let pairs = workers
        .into_iter()
        .map(|w| w.join().expect("worker thread"))
        .sum();
    Run {
        side,
        pairs,
        server: before.until(&after),
        client_cpu_s,
    }
}

/// `depth` acquire+release pairs on the keys of connection `conn`, packed once.
fn packed_batch(scripts: &Scripts, side: Side, conn: usize, depth: usize) -> Vec<u8> {
    let owner = format!("bench-{conn}:1");
    let mut pipe = redis::pipe();
    for j in 0..depth {
        let key = format!("u:{}:{conn}:{j}", side.name());
        pipe.add_command(side.acquire(scripts, &key, &owner, LEASE_MS));
        pipe.add_command(side.release(scripts, &key, &owner));
    }
    pipe.get_packed_pipeline()
}

/// Sends `batch` over and over from `start` to `end`; returns the pairs done by `end`.
fn drive(port: u16, side: Side, batch: &[u8], depth: usize, start: u64, end: u64) -> u64 {
    let mut con = connect(port).expect("bench connection");
    sleep_until(start);
    let mut pairs = 0;
    while now_ns() < end {
        let replies = con
            .req_packed_commands(batch, 0, 2 * depth)
            .expect("pipeline");
        check(side, &replies);
        if now_ns() <= end {
            pairs += depth as u64;
        }
    }
    pairs
}

/// The acquisition and the release of [`ALONE`]'s (and [`PAIRED`]'s) one connection, each
/// packed alone.
fn alone_commands(scripts: &Scripts, side: Side) -> [Vec<u8>; 2] {
    let key = format!("u:{}:alone", side.name());
    let owner = "bench-alone:1";
    [
        side.acquire(scripts, &key, owner, LEASE_MS)
            .get_packed_command(),
        side.release(scripts, &key, owner).get_packed_command(),
    ]
}

/// Sends the acquisition, awaits its reply, sends the release, awaits its reply (or, when
/// `together`, sends both in one write and awaits both replies), from `start` to `end`;
/// returns the pairs done by `end`.
fn drive_alone(
    port: u16,
    side: Side,
    [acquire, release]: [&[u8]; 2],
    together: bool,
    start: u64,
    end: u64,
) -> u64 {
    let mut con = connect(port).expect("bench connection");
    let both = [acquire, release].concat();
    sleep_until(start);
    let mut pairs = 0;
    while now_ns() < end {
        let replies = if together {
            con.req_packed_commands(&both, 0, 2).expect("pair")
        } else {
            let acquired = con.req_packed_command(acquire).expect("acquire");
            vec![acquired, con.req_packed_command(release).expect("release")]
        };
        check(side, &replies);
        if now_ns() <= end {
            pairs += 1;
        }
    }
    pairs
}

fn check(side: Side, replies: &[Value]) {
    for pair in replies.chunks(2) {
        assert!(
            side.acquired(&pair[0]) && side.released(&pair[1]),
            "{} pair replied {pair:?}",
            side.name()
        );
    }
}
