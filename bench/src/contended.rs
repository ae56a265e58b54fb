//! Scenarios 2 and 6: 64 waiters on one key, each acquiring and releasing in a loop, in
//! one process or spread over several (each with its own pub/sub connection).

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{cpu_seconds, now_ns, percentile, sleep_until};
use crate::redisson::{self, Latch};
use crate::server::{connect, Delta, Snapshot};
use crate::side::{self, channel, Scripts, Side, LEASE_MS};

pub const WAITERS: usize = 64;

/// One time a waiter held the lock.
#[derive(Debug, Clone, Copy)]
pub struct Holding {
    pub waiter: usize,
    pub acquired_ns: u64,
    pub released_ns: u64,
}

/// One side's contended run.
#[derive(Debug, Clone)]
pub struct Run {
    pub acquisitions: u64,
    pub per_s: f64,
    /// Release returns → next acquire returns, µs; negative when the next holder's reply
    /// came before the releaser's.
    pub handoff_p50_us: f64,
    pub handoff_p99_us: f64,
    pub commands_per_acquisition: f64,
    /// Most acquisitions of one waiter over fewest (infinite when one got none).
    pub fairness: f64,
    pub starved: usize,
    pub server: Delta,
    pub client_cpu_s: f64,
}

/// The waiters `first..first + threads` of `side` on `key`, in this process, from
/// `start` to `end` (ns); every holding they made.
pub fn waiters(
    port: u16,
    side: Side,
    threads: usize,
    first: usize,
    key: &str,
    start: u64,
    end: u64,
) -> Vec<Holding> {
    let scripts = Scripts::load(&mut connect(port).expect("connect")).expect("SCRIPT LOAD");
    let latch = Arc::new(Latch::default());
    let listener = match side {
        Side::Lua => Some(redisson::listen(port, &channel(key), latch.clone()).expect("SUBSCRIBE")),
        _ => None,
    };
    let handles: Vec<_> = (first..first + threads)
        .map(|id| {
            let (scripts, latch, key) = (scripts.clone(), latch.clone(), key.to_owned());
            thread::spawn(move || waiter(port, side, &scripts, &latch, &key, id, start, end))
        })
        .collect();
    sleep_until(end);
    latch.close();
    let holdings = handles
        .into_iter()
        .flat_map(|h| h.join().expect("waiter thread"))
        .collect();
    if let Some(l) = listener {
        let _ = l.join();
    }
    holdings
}

#[allow(clippy::too_many_arguments)]
fn waiter(
    port: u16,
    side: Side,
    scripts: &Scripts,
    latch: &Latch,
    key: &str,
    id: usize,
    start: u64,
    end: u64,
) -> Vec<Holding> {
    let mut con = connect(port).expect("waiter connection");
    let owner = format!("bench-{id}:1");
    let acquire = match side {
        Side::Lua => redisson::try_lock_packed(scripts, key, &owner),
        _ => side::acquire_waiting(key, &owner, LEASE_MS).get_packed_command(),
    };
    let release = side.release(scripts, key, &owner).get_packed_command();
    let mut held = Vec::new();
    sleep_until(start);
    while now_ns() < end {
        let got = match side {
            Side::Lua => redisson::lock(&mut con, &acquire, latch),
            _ => matches!(con.req_packed_command(&acquire), Ok(Value::Int(_))),
        };
        if !got {
            break;
        }
        let acquired_ns = now_ns();
        let reply = con.req_packed_command(&release).expect("release");
        assert!(side.released(&reply), "release replied {reply:?}");
        held.push(Holding {
            waiter: id,
            acquired_ns,
            released_ns: now_ns(),
        });
    }
    held
}

/// Scenario 2: all waiters in this process.
pub fn in_process(port: u16, side: Side, duration: Duration) -> Run {
    let (start, end) = window(duration, 300);
    let key = format!("c1:{}", side.name());
    let work = thread::spawn(move || waiters(port, side, WAITERS, 0, &key, start, end));
    let (server, client_cpu_s) = measure(port, start, end, || cpu_seconds().0);
    let holdings = work.join().expect("waiters");
    summarize(&holdings, start, end, server, client_cpu_s)
}

/// Scenario 6: the waiters spread over `processes` child processes of this binary.
pub fn across_processes(port: u16, side: Side, duration: Duration, processes: usize) -> Run {
    let (start, end) = window(duration, 1500);
    let per = WAITERS / processes;
    let exe = std::env::current_exe().expect("own executable");
    let children: Vec<_> = (0..processes)
        .map(|p| {
            let args = [
                port.to_string(),
                side.name().into(),
                per.to_string(),
                (p * per).to_string(),
                format!("c{processes}:{}", side.name()),
                start.to_string(),
                end.to_string(),
            ];
            Command::new(&exe)
                .arg("worker")
                .args(args)
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let (server, _) = measure(port, start, end, || 0.0);
    let mut holdings = Vec::new();
    let mut client_cpu_s = 0.0;
    for child in children {
        let out = child.wait_with_output().expect("worker output");
        assert!(out.status.success(), "a worker failed");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["H", w, a, r] => holdings.push(Holding {
                    waiter: w.parse().unwrap_or(0),
                    acquired_ns: a.parse().unwrap_or(0),
                    released_ns: r.parse().unwrap_or(0),
                }),
                ["C", cpu] => client_cpu_s += cpu.parse::<f64>().unwrap_or(0.0),
                _ => {}
            }
        }
    }
    summarize(&holdings, start, end, server, client_cpu_s)
}

/// The worker process of [`across_processes`]: runs its waiters and prints its holdings
/// and its CPU time in the window.
pub fn worker_main(args: &[String]) -> Result<(), String> {
    let num = |i: usize| -> Result<u64, String> {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .ok_or(format!("worker argument {i}"))
    };
    let side = args
        .get(1)
        .and_then(|s| Side::parse(s))
        .ok_or("worker side")?;
    let key = args.get(4).ok_or("worker key")?.clone();
    let (port, threads, first, start, end) = (
        num(0)? as u16,
        num(2)? as usize,
        num(3)? as usize,
        num(5)?,
        num(6)?,
    );
    let cpu = thread::spawn(move || {
        sleep_until(start);
        let before = cpu_seconds().0;
        sleep_until(end);
        cpu_seconds().0 - before
    });
    let holdings = waiters(port, side, threads, first, &key, start, end);
    let mut out = std::io::stdout().lock();
    for h in holdings {
        let _ = writeln!(out, "H {} {} {}", h.waiter, h.acquired_ns, h.released_ns);
    }
    let _ = writeln!(out, "C {}", cpu.join().unwrap_or(0.0));
    Ok(())
}

fn window(duration: Duration, lead_ms: u64) -> (u64, u64) {
    let start = now_ns() + lead_ms * 1_000_000;
    (
        start,
        start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
    )
}

/// Server snapshots at `start` and `end`, and the client CPU `cpu` counted between them.
fn measure(port: u16, start: u64, end: u64, cpu: impl Fn() -> f64) -> (Delta, f64) {
    let mut con = connect(port).expect("control connection");
    sleep_until(start);
    let (before, cpu0) = (Snapshot::take(&mut con), cpu());
    sleep_until(end);
    let (after, cpu1) = (Snapshot::take(&mut con), cpu());
    (before.until(&after), cpu1 - cpu0)
}

fn summarize(holdings: &[Holding], start: u64, end: u64, server: Delta, client_cpu_s: f64) -> Run {
    let mut sorted: Vec<Holding> = holdings.to_vec();
    sorted.sort_by_key(|h| h.acquired_ns);
    let in_window = |h: &Holding| (start..end).contains(&h.acquired_ns);
    let handoffs: Vec<f64> = sorted
        .windows(2)
        .filter(|w| in_window(&w[1]))
        .map(|w| (w[1].acquired_ns as f64 - w[0].released_ns as f64) / 1000.0)
        .collect();
    let mut counts: HashMap<usize, u64> = (0..WAITERS).map(|w| (w, 0)).collect();
    for h in sorted.iter().filter(|h| in_window(h)) {
        *counts.entry(h.waiter).or_default() += 1;
    }
    let acquisitions: u64 = counts.values().sum();
    let (max, min) = (
        counts.values().max().copied().unwrap_or(0),
        counts.values().min().copied().unwrap_or(0),
    );
    Run {
        acquisitions,
        per_s: acquisitions as f64 / ((end - start) as f64 / 1e9),
        handoff_p50_us: percentile(&handoffs, 50.0),
        handoff_p99_us: percentile(&handoffs, 99.0),
        commands_per_acquisition: server.calls as f64 / acquisitions.max(1) as f64,
        fairness: if min == 0 {
            f64::INFINITY
        } else {
            max as f64 / min as f64
        },
        starved: counts.values().filter(|c| **c == 0).count(),
        server,
        client_cpu_s,
    }
}
