//! Scenario 9, contended: [`WAITS`] waits on one lock, each grant released at once and its
//! owner queued again, so that every acquisition is a handoff. Two ways to wait, measured in
//! alternating slices on the same server: tickets (`LOCK.WAIT` over one RESP3 connection,
//! grants pushed on it) and blocking (`LOCK.ACQUIRE ... WAIT 0`, a connection and a thread
//! per wait). Per grant: the server's `INFO commandstats` µs and `used_cpu_*` µs, the time
//! from a release being sent to the next holder reading its grant, and how evenly the
//! waiters were served.

use std::collections::HashMap;
use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{now_ns, percentile, sleep_until};
use crate::resp3::{self, Resp3, Wait};
use crate::server::{connect, info_num, Delta, Snapshot};
use crate::wait_mode::Mode;

/// Waits queued on the lock.
pub const WAITS: usize = 64;

const LEASE: &str = "30000";

/// One mode's contended measurement (slices summed).
#[derive(Debug, Clone)]
pub struct Contended {
    pub mode: Mode,
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
    fn empty(mode: Mode) -> Contended {
        Contended {
            mode,
            grants: 0,
            server: Delta::default(),
            gaps_us: Vec::new(),
            per_waiter: HashMap::new(),
            fifo: true,
        }
    }

    fn merge(&mut self, other: Contended) {
        let (most, fewest) = other.spread();
        self.fifo &= fewest > 0 && most - fewest <= 1;
        self.grants += other.grants;
        self.server = self.server.merge(&other.server);
        self.gaps_us.extend(other.gaps_us);
        for (w, n) in other.per_waiter {
            *self.per_waiter.entry(w).or_default() += n;
        }
    }

    /// `INFO commandstats` µs of the lock commands per grant.
    pub fn commandstats_us(&self) -> f64 {
        let names: &[&str] = match self.mode {
            Mode::Tickets => &["lock.wait", "lock.release"],
            Mode::Block | Mode::Client => &["lock.acquire", "lock.release"],
        };
        self.server.usec_of(names) as f64 / self.grants.max(1) as f64
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
        let all = (0..WAITS).map(|w| self.per_waiter.get(&w).copied().unwrap_or(0));
        (all.clone().max().unwrap_or(0), all.min().unwrap_or(0))
    }
}

/// Both modes in `slices` alternating slices of `slice` each: [tickets, blocking].
pub fn run(port: u16, slice: Duration, slices: usize) -> Result<[Contended; 2], String> {
    let mut sums = [
        Contended::empty(Mode::Tickets),
        Contended::empty(Mode::Block),
    ];
    for n in 0..slices {
        let order = if n % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let key = format!("h:{}:{n}", sums[i].mode.name());
            let one = once(port, sums[i].mode, &key, slice)?;
            sums[i].merge(one);
        }
    }
    Ok(sums)
}

/// One slice of `mode` on `key`.
pub fn once(port: u16, mode: Mode, key: &str, slice: Duration) -> Result<Contended, String> {
    match mode {
        Mode::Tickets => tickets(port, key, slice),
        Mode::Block | Mode::Client => blocking(port, key, slice),
    }
}

/// The server's state at one moment: its statistics and handoffs so far.
fn mark(con: &mut redis::Connection) -> (Snapshot, f64) {
    let s = Snapshot::take(con);
    (s, info_num(con, "rlock", "rlock_handoffs"))
}

/// The tickets of [`WAITS`] owners on `key`, over one connection: who holds the lock, and
/// each queued wait's owner.
fn queue_all(con: &mut Resp3, key: &str) -> Result<(usize, HashMap<u64, usize>), String> {
    let mut owner_of = HashMap::new();
    let mut held = None;
    for w in 0..WAITS {
        let reply = con.call(&["LOCK.WAIT", key, &owner(w), "LEASE", LEASE])?;
        match resp3::wait_reply(&reply) {
            Some(Wait::Held(_)) => held = Some(w),
            Some(Wait::Queued(id)) => drop(owner_of.insert(id, w)),
            None => return Err(format!("LOCK.WAIT answered {reply:?}")),
        }
    }
    Ok((held.ok_or("nobody held the lock")?, owner_of))
}

fn tickets(port: u16, key: &str, slice: Duration) -> Result<Contended, String> {
    let mut con = Resp3::receiver(port)?;
    let (mut held, mut owner_of) = queue_all(&mut con, key)?;
    let mut control = connect(port).map_err(|e| e.to_string())?;
    let mut run = Contended::empty(Mode::Tickets);
    let (before, h0) = mark(&mut control);
    let end = now_ns() + u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    while now_ns() < end {
        let (next, gap_us) = hand_on(&mut con, key, held, &mut owner_of)?;
        run.gaps_us.push(gap_us);
        held = next;
        *run.per_waiter.entry(held).or_default() += 1;
    }
    let (after, h1) = mark(&mut control);
    run.server = before.until(&after);
    run.grants = (h1 - h0) as u64;
    Ok(run)
}

/// The holder `held` releases and queues again; (the next holder, µs from the release
/// being sent to its grant being read).
fn hand_on(
    con: &mut Resp3,
    key: &str,
    held: usize,
    owner_of: &mut HashMap<u64, usize>,
) -> Result<(usize, f64), String> {
    let released = now_ns();
    con.queue(&["LOCK.RELEASE", key, &owner(held)]);
    con.queue(&["LOCK.WAIT", key, &owner(held), "LEASE", LEASE]);
    con.flush()?;
    let (mut next, mut queued, mut gap_us) = (None, None, 0.0);
    // The grant is pushed inside the release, so it comes before the two replies.
    while next.is_none() || queued.is_none() {
        let v = con.read()?;
        if let Some((id, outcome)) = resp3::outcome(&v) {
            gap_us = (now_ns() - released) as f64 / 1e3;
            if outcome.parse::<i64>().map_or(true, |t| t <= 0) {
                return Err(format!("wait {id} ended with {outcome}"));
            }
            next = Some(owner_of.remove(&id).ok_or("a grant for an unknown wait")?);
        } else if let Some(Wait::Queued(id)) = resp3::wait_reply(&v) {
            queued = Some(id);
        } else if v != Value::Int(0) {
            return Err(format!("unexpected {v:?}"));
        }
    }
    owner_of.extend(queued.map(|id| (id, held)));
    Ok((next.unwrap_or(held), gap_us))
}

fn owner(w: usize) -> String {
    format!("h{w}:1")
}

/// One holding of a blocking waiter: (waiter, grant read at, release sent at), ns.
type Holding = (usize, u64, u64);

fn blocking(port: u16, key: &str, slice: Duration) -> Result<Contended, String> {
    let start = now_ns() + 300_000_000;
    let end = start + u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    let threads: Vec<_> = (0..WAITS)
        .map(|w| {
            let key = key.to_owned();
            thread::spawn(move || blocking_waiter(port, &key, w, start, end))
        })
        .collect();
    let mut control = connect(port).map_err(|e| e.to_string())?;
    sleep_until(start);
    let (before, h0) = mark(&mut control);
    sleep_until(end);
    let (after, h1) = mark(&mut control);
    let mut holdings: Vec<Holding> = Vec::new();
    for t in threads {
        holdings.extend(t.join().map_err(|_| "a waiter thread panicked")??);
    }
    holdings.sort_by_key(|h| h.1);
    let in_window = |h: &Holding| (start..end).contains(&h.1);
    let mut run = Contended::empty(Mode::Block);
    run.gaps_us = holdings
        .windows(2)
        .filter(|w| in_window(&w[1]))
        .map(|w| (w[1].1 as f64 - w[0].2 as f64) / 1e3)
        .collect();
    for h in holdings.iter().filter(|h| in_window(h)) {
        *run.per_waiter.entry(h.0).or_default() += 1;
    }
    run.server = before.until(&after);
    run.grants = (h1 - h0) as u64;
    Ok(run)
}

/// Acquires (blocking) and releases at once until `end`; once past it, a waiter ends at its
/// next grant, so every waiter ends.
fn blocking_waiter(
    port: u16,
    key: &str,
    w: usize,
    start: u64,
    end: u64,
) -> Result<Vec<Holding>, String> {
    let mut con = connect(port).map_err(|e| e.to_string())?;
    let acquire = redis::cmd("LOCK.ACQUIRE")
        .arg(key)
        .arg(owner(w))
        .arg(&["LEASE", LEASE, "WAIT", "0"][..])
        .get_packed_command();
    let release = redis::cmd("LOCK.RELEASE")
        .arg(key)
        .arg(owner(w))
        .get_packed_command();
    con.set_read_timeout(None).map_err(|e| e.to_string())?;
    let mut held = Vec::new();
    sleep_until(start.saturating_sub(200_000_000));
    loop {
        match con.req_packed_command(&acquire) {
            Ok(Value::Int(_)) => {}
            other => return Err(format!("LOCK.ACQUIRE answered {other:?}")),
        }
        let granted = now_ns();
        let released = now_ns();
        let reply = con
            .req_packed_command(&release)
            .map_err(|e| e.to_string())?;
        if reply != Value::Int(0) {
            return Err(format!("LOCK.RELEASE answered {reply:?}"));
        }
        held.push((w, granted, released));
        if granted >= end {
            return Ok(held);
        }
    }
}
