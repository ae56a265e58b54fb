//! Runs every scenario, both sides in the same run, alternating between them.

use std::time::Duration;

use crate::contended;
use crate::crash;
use crate::fenced;
use crate::mixed::{self, Mixed};
use crate::redlock;
use crate::rw_table::RwRun;
use crate::rwlock;
use crate::sem_table::SemRun;
use crate::semaphore;
use crate::server::{floor_module, info, BenchServer};
use crate::side::{Scripts, Side};
use crate::uncontended;
use crate::waiting::{self, Others, Waiting};
use crate::watchdog::{self, Renewals};

/// How much to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Per side, per measurement.
    pub duration: Duration,
    pub crash_trials: [usize; 2],
    pub watchdog_locks: usize,
    pub watchdog_rounds: usize,
    pub memory_waiters: usize,
    /// Scenario 9: waits held by one client process.
    pub waits: usize,
    /// Scenario 12: permit-return trials per side.
    pub sem_trials: usize,
}

impl Plan {
    pub fn full(duration: Duration) -> Plan {
        Plan {
            duration,
            crash_trials: [20, 50],
            watchdog_locks: 10_000,
            watchdog_rounds: 20,
            memory_waiters: 1000,
            waits: 10_000,
            sem_trials: 10,
        }
    }

    pub fn quick(duration: Duration) -> Plan {
        Plan {
            duration,
            crash_trials: [10, 10],
            watchdog_locks: 2000,
            watchdog_rounds: 5,
            memory_waiters: 100,
            waits: 2000,
            sem_trials: 3,
        }
    }
}

/// CPU use of one scenario: (server, bench client) in % of one core, for Lua, rlock and
/// HSET+DEL.
pub type CpuRow = (String, [Option<f64>; 6]);

/// Everything measured; index 0 is the Lua baseline, 1 is rlock.
pub struct Results {
    pub cores: usize,
    pub redis_version: String,
    pub duration_s: f64,
    pub uncontended: Vec<(usize, [uncontended::Run; 3])>,
    /// Scenario 1's floor module sides per load, [empty command, bare pair] (when it is loaded).
    pub floor: Vec<Option<[uncontended::Run; 2]>>,
    pub contended: [contended::Run; 2],
    pub across: [contended::Run; 2],
    pub crash: [Vec<crash::Trial>; 2],
    pub watchdog: [Renewals; 2],
    pub memory: [(f64, f64); 2],
    pub cpu: Vec<CpuRow>,
    /// Scenario 7: one server, then a RedLock over three (or why it could not run).
    pub redlock: Result<[redlock::Run; 2], String>,
    /// Scenario 8: plain `HSET`, then `LOCK.FENCED ... HSET`.
    pub fenced: [fenced::Run; 2],
    /// Scenario 9: waiting at scale (or why it could not run).
    pub waiting: Result<Waiting, String>,
    /// Scenario 10: native and Redisson-style waiters on one key.
    pub mixed: Mixed,
    /// Scenario 11: a read-mostly read-write lock, [Redisson-style, rlock].
    pub rw: [RwRun; 2],
    /// Scenario 12: a contended semaphore, [Redisson-style, rlock].
    pub sem: [SemRun; 2],
}

const SIDES: [Side; 2] = [Side::Lua, Side::Rlock];

/// Runs every scenario on `server`; scenario 7 also on the two `others`.
pub fn run(plan: &Plan, server: &BenchServer, others: &[BenchServer; 2]) -> Results {
    let port = server.port();
    let mut con = server.conn();
    let scripts = Scripts::load(&mut con).expect("SCRIPT LOAD");
    let mut cpu = Vec::new();
    let mut uncontended = Vec::new();
    let mut floor = Vec::new();
    for depth in [1, 16, uncontended::PAIRED, uncontended::ALONE] {
        eprintln!("scenario 1: uncontended, {}", uncontended::load_name(depth));
        let slice = plan.duration / SLICES as u32;
        let (runs, noop) = alternate(|side| uncontended::run(port, &scripts, side, depth, slice));
        floor.push(noop);
        let pct = |r: &uncontended::Run| {
            [
                Some(r.server.cpu_percent()),
                Some(100.0 * r.client_cpu_s / r.server.wall_s),
            ]
        };
        let [a, b, c] = [pct(&runs[0]), pct(&runs[1]), pct(&runs[2])];
        cpu.push((
            format!("1. uncontended, {}", uncontended::load_name(depth)),
            [a[0], a[1], b[0], b[1], c[0], c[1]],
        ));
        uncontended.push((depth, runs));
    }
    eprintln!("scenario 2: contended, one process");
    let contended = SIDES.map(|side| contended::in_process(port, side, plan.duration));
    cpu.push(contended_cpu("2. contended, 1 process", &contended));
    eprintln!("scenario 6: contended, four processes");
    let across = [Side::Rlock, Side::Lua]
        .map(|side| contended::across_processes(port, side, plan.duration, 4));
    let across = [across[1].clone(), across[0].clone()];
    cpu.push(contended_cpu(
        "6. contended, 4 processes (clients: the 4 workers)",
        &across,
    ));
    eprintln!("scenario 3: holder crash");
    let crash = crashes(port, &scripts, plan.crash_trials);
    eprintln!("scenarios 4 and 5: watchdog and memory");
    let watchdog = SIDES.map(|side| {
        watchdog::renewals(
            port,
            &scripts,
            side,
            plan.watchdog_locks,
            plan.watchdog_rounds,
        )
    });
    let memory =
        SIDES.map(|side| watchdog::waiter_memory(port, &scripts, side, plan.memory_waiters));
    eprintln!("scenario 7: RedLock over three servers vs one server");
    let redlock = redlock::run(&[server, &others[0], &others[1]], plan.duration);
    eprintln!("scenario 8: a fenced write against a plain one");
    let fenced = fenced::run(port, plan.duration);
    eprintln!("scenario 9: waiting at scale");
    let waiting = waiting::run(port, plan.waits, plan.duration / 3);
    eprintln!("scenario 10: native and Redisson-style waiters on one key");
    let mixed = mixed::run(port, plan.duration);
    eprintln!("scenario 11: a read-mostly read-write lock");
    let rw = rwlock::run(port, plan.duration);
    eprintln!("scenario 12: a contended semaphore");
    let sem = semaphore::run(port, plan.duration, plan.sem_trials);
    Results {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        redis_version: info(&mut con, &["server"])
            .remove("redis_version")
            .unwrap_or_default(),
        duration_s: plan.duration.as_secs_f64(),
        uncontended,
        floor,
        contended,
        across,
        crash,
        watchdog,
        memory,
        cpu,
        redlock,
        fenced,
        waiting,
        mixed,
        rw,
        sem,
    }
}

/// What scenario 9 compares with: the Lua baseline's contended acquisition (scenario 2) and
/// rlock's uncontended pair without pipelining (scenario 1).
pub fn others(pair: &uncontended::Run, lua: &contended::Run) -> Others {
    let n = lua.acquisitions.max(1) as f64;
    Others {
        lua: (
            lua.server.usec_of(Side::Lua.top_level_commands()) as f64 / n,
            1e6 * lua.server.cpu_s / n,
        ),
        pair: (pair.server_us_per_pair(), pair.cpu_ms_per_1000()),
    }
}

/// Slices per side of each scenario 1 measurement.
pub const SLICES: usize = 6;

/// Runs Lua, rlock, HSET+DEL and (when its module is loaded) the floor module's empty command
/// and bare pair in [`SLICES`] slices each, in the order ABCDE EDCBA ABCDE ..., so that
/// changes in the machine's speed during the run fall on all alike, and sums each side's
/// slices: ([Lua, rlock, HSET+DEL], [empty command, bare pair]).
pub fn alternate(
    mut once: impl FnMut(Side) -> uncontended::Run,
) -> ([uncontended::Run; 3], Option<[uncontended::Run; 2]>) {
    let mut order = vec![Side::Lua, Side::Rlock, Side::Plain];
    if floor_module().is_some() {
        order.extend([Side::Noop, Side::Bare]);
    }
    let mut sums: Vec<uncontended::Run> = order.iter().map(|&side| once(side)).collect();
    for slice in 1..SLICES {
        for i in 0..order.len() {
            let i = if slice % 2 == 1 {
                order.len() - 1 - i
            } else {
                i
            };
            let run = once(order[i]);
            sums[i] = sums[i].clone().merge(run);
        }
    }
    let floors = sums.get(3..5).map(|f| [f[0].clone(), f[1].clone()]);
    let three = [sums[0].clone(), sums[1].clone(), sums[2].clone()];
    (three, floors)
}

fn contended_cpu(name: &str, runs: &[contended::Run; 2]) -> CpuRow {
    let pct = |r: &contended::Run| {
        [
            Some(r.server.cpu_percent()),
            Some(100.0 * r.client_cpu_s / r.server.wall_s),
        ]
    };
    let [a, b] = [pct(&runs[0]), pct(&runs[1])];
    (name.to_owned(), [a[0], a[1], b[0], b[1], None, None])
}

/// Batches of crash trials, alternating sides until each has its count.
fn crashes(port: u16, scripts: &Scripts, trials: [usize; 2]) -> [Vec<crash::Trial>; 2] {
    let mut done: [Vec<crash::Trial>; 2] = [Vec::new(), Vec::new()];
    let mut tag = 0;
    while done[0].len() < trials[0] || done[1].len() < trials[1] {
        for (i, side) in [(1, Side::Rlock), (0, Side::Lua)] {
            let left = trials[i].saturating_sub(done[i].len()).min(crash::BATCH);
            if left > 0 {
                tag += 1;
                done[i].extend(crash::batch(port, scripts, side, left, tag));
            }
        }
    }
    done
}
