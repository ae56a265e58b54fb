//! Scenario 9, contended: [`waits()`] waits on one lock, each grant released at once and its
//! owner queued again, so that every acquisition is a handoff. Two ways to wait, measured in
//! alternating slices on the same server: tickets (`LOCK.WAIT` over one RESP3 connection,
//! grants pushed on it) and blocking (`LOCK.ACQUIRE ... WAIT 0`, a connection and a thread per
//! wait, `handoffs_blocked.rs`). Per grant: the server's `INFO commandstats` µs and
//! `used_cpu_*` µs, the time from a release being sent to the next holder reading its grant,
//! and how evenly the waiters were served. With the floor module loaded (`bench/floor/noop.c`),
//! two more sides in the same slices: waits handed on with nothing held, the same two ways
//! (`NOOP.QUEUE`, then `NOOP.PUSH` to end the oldest ticket; `NOOP.BLOCK`, then `NOOP.PASS` to
//! wake the oldest blocked client): what Redis charges for a ticket's push, and for blocking
//! and unblocking a client, before a module does anything of its own.

use std::collections::HashMap;
use std::time::Duration;

use redis::Value;

use crate::clock::now_ns;
use crate::handoff_slice::{mark, owner, waits, Contended, LEASE};
use crate::handoffs_blocked::blocking;
use crate::resp3::{self, Resp3, Wait};
use crate::server::{connect, floor_module};
use crate::wait_mode::Mode;

/// [tickets, blocking].
pub type Both = [Contended; 2];

/// Both modes in `slices` alternating slices of `slice` each: [tickets, blocking], and the
/// same two with nothing held when the floor module is loaded.
pub fn run(port: u16, slice: Duration, slices: usize) -> Result<(Both, Option<Both>), String> {
    let floor = |mode| Contended {
        floor: true,
        ..Contended::empty(mode)
    };
    let mut sums = vec![
        Contended::empty(Mode::Tickets),
        Contended::empty(Mode::Block),
    ];
    if floor_module().is_some() {
        sums.extend([floor(Mode::Tickets), floor(Mode::Block)]);
    }
    let sides = sums.len();
    for n in 0..slices {
        for i in 0..sides {
            let i = if n % 2 == 0 { i } else { sides - 1 - i };
            let (mode, floor) = (sums[i].mode, sums[i].floor);
            let key = format!("h:{}:{floor}:{n}", mode.name());
            sums[i].merge(once(port, mode, floor, &key, slice)?);
        }
    }
    let floors = (sums.len() == 4).then(|| [sums.remove(2), sums.remove(2)]);
    let both: Both = sums.try_into().map_err(|_| "two sides")?;
    Ok((both, floors))
}

/// One slice of `mode` on `key`: the lock's waits, or the floor module's.
pub fn once(
    port: u16,
    mode: Mode,
    floor: bool,
    key: &str,
    slice: Duration,
) -> Result<Contended, String> {
    match mode {
        Mode::Tickets => tickets(port, key, slice, floor),
        Mode::Block | Mode::Client => blocking(port, key, slice, floor),
    }
}

/// The commands of a ticket handoff: (wait, release), the lock's or the floor's.
fn ticket_commands(key: &str, w: usize, floor: bool) -> [Vec<String>; 2] {
    let owned = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    if floor {
        [owned(&["NOOP.QUEUE", key]), owned(&["NOOP.PUSH", key])]
    } else {
        let owner = owner(w);
        [
            owned(&["LOCK.WAIT", key, &owner, "LEASE", LEASE]),
            owned(&["LOCK.RELEASE", key, &owner]),
        ]
    }
}

/// The tickets of [`waits()`] owners (`commands`: each one's) over one connection: who holds
/// the lock, and each queued wait's owner. The floor's waiter 0 holds without asking.
fn queue_all(
    con: &mut Resp3,
    commands: &[[Vec<String>; 2]],
    floor: bool,
) -> Result<(usize, HashMap<u64, usize>), String> {
    let mut owner_of = HashMap::new();
    let mut held = floor.then_some(0);
    for (w, [wait, _]) in commands.iter().enumerate().skip(usize::from(floor)) {
        let reply = con.call(wait)?;
        match resp3::wait_reply(&reply) {
            Some(Wait::Held(_)) => held = Some(w),
            Some(Wait::Queued(id)) => drop(owner_of.insert(id, w)),
            None => return Err(format!("the wait answered {reply:?}")),
        }
    }
    Ok((held.ok_or("nobody held the lock")?, owner_of))
}

fn tickets(port: u16, key: &str, slice: Duration, floor: bool) -> Result<Contended, String> {
    let commands: Vec<_> = (0..waits())
        .map(|w| ticket_commands(key, w, floor))
        .collect();
    let mut con = Resp3::receiver(port)?;
    let (mut held, mut owner_of) = queue_all(&mut con, &commands, floor)?;
    let mut control = connect(port).map_err(|e| e.to_string())?;
    let mut run = Contended {
        floor,
        ..Contended::empty(Mode::Tickets)
    };
    let from = mark(&mut control, floor);
    let end = now_ns() + u64::try_from(slice.as_nanos()).unwrap_or(u64::MAX);
    while now_ns() < end {
        let [wait, release] = &commands[held];
        let (next, gap_us) = hand_on(&mut con, [wait, release], held, &mut owner_of)?;
        run.gaps_us.push(gap_us);
        held = next;
        *run.per_waiter.entry(held).or_default() += 1;
    }
    run.measured(from, mark(&mut control, floor));
    Ok(run)
}

/// The holder `held` releases and queues again (`[wait, release]`: its commands); (the next
/// holder, µs from the release being sent to its grant being read).
fn hand_on(
    con: &mut Resp3,
    [wait, release]: [&[String]; 2],
    held: usize,
    owner_of: &mut HashMap<u64, usize>,
) -> Result<(usize, f64), String> {
    let released = now_ns();
    con.queue(release);
    con.queue(wait);
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
