//! Scenario 12: a contended semaphore. [`PERMITS`] permits, [`CONTENDERS`] contenders spread
//! over [`PROCESSES`] processes (as scenario 11), each taking 1 permit, holding it
//! [`HOLD_US`] µs and giving it back, in a loop.
//!
//! - **rlock**: `SEM.ACQUIRE key owner 1 LEASE 30000 WAIT 0` (waiting in the semaphore's
//!   FIFO queue), then `SEM.RELEASE key owner`;
//! - **Redisson-style**: the `RPermitExpirableSemaphore` scripts
//!   (`tests/support/redisson_semaphore.rs`) with `EVALSHA`, a new permit id per
//!   acquisition, and its `acquire(leaseTime)` wait: the script, then a sleep on the
//!   process's semaphore (until the earliest lease end the script returned), which the
//!   process's one subscription to `redisson_sc:{key}` releases by the count each message
//!   carries (at most one per thread subscribed), then the script again.
//!
//! Then the permit-return trials: a holder takes the one permit of a semaphore with a short
//! lease and stops; a waiter asks for it. The figures: `sem_table.rs`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::clock::{cpu_seconds, now_ns, sleep_until};
use crate::redisson::Latch;
use crate::sem_scripts as scripts;
use crate::sem_side::Shas;
use crate::sem_side::{create, listen, native_acquire, now_ms, redisson_acquire, release, taken};
use crate::sem_table::{summarize, Grant, SemRun, SemSide, CONTENDERS, HOLD_US, PERMITS};
use crate::sem_table::{table, DEAD_LEASE_MS, PROCESSES};
use crate::server::{connect, BenchServer, Delta, Snapshot};
use crate::side::LEASE_MS;

/// Both sides, one after the other, on the server at `port`: [Redisson-style, rlock];
/// `trials` permit-return trials each.
pub fn run(port: u16, duration: Duration, trials: usize) -> [SemRun; 2] {
    let mut rlock = across(port, SemSide::Rlock, duration);
    let mut redisson = across(port, SemSide::Redisson, duration);
    for t in 0..trials {
        rlock
            .returns_ms
            .push(permit_return(port, SemSide::Rlock, t));
        redisson
            .returns_ms
            .push(permit_return(port, SemSide::Redisson, t));
    }
    [redisson, rlock]
}

/// `semaphore SECONDS`: scenario 12 alone, on a server started here.
pub fn alone(args: &[String], module: &std::path::Path) -> Result<(), String> {
    let [seconds] = args else {
        return Err("usage: rlock-bench semaphore SECONDS".to_owned());
    };
    let seconds: f64 = seconds
        .parse()
        .map_err(|_| format!("bad seconds {seconds:?}"))?;
    let server = BenchServer::start(module)?;
    let runs = run(server.port(), Duration::from_secs_f64(seconds), 10);
    let mut out = String::new();
    table(&mut out, &runs);
    println!("{out}");
    Ok(())
}

/// One side's run: the contenders spread over [`PROCESSES`] child processes.
fn across(port: u16, side: SemSide, duration: Duration) -> SemRun {
    let start = now_ns() + 1_500_000_000;
    let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let per = CONTENDERS / PROCESSES;
    let key = format!("sem12:{}:{}", side.name(), std::process::id());
    create(&mut connect(port).expect("connection"), side, &key, PERMITS);
    let exe = std::env::current_exe().expect("own executable");
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let args = [usize::from(port), per, p * per].map(|n| n.to_string());
            Command::new(&exe)
                .arg("sem-worker")
                .args(args)
                .args([side.name(), &key, &start.to_string(), &end.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let server = measure(port, start, end);
    let mut grants = Vec::new();
    let mut client_cpu_s = 0.0;
    for child in children {
        let out = child.wait_with_output().expect("worker output");
        assert!(out.status.success(), "a semaphore worker failed");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match Grant::parse(line) {
                Some(g) => grants.push(g),
                None => {
                    let cpu = line.strip_prefix("C ").and_then(|c| c.trim().parse().ok());
                    client_cpu_s += cpu.unwrap_or(0.0);
                }
            }
        }
    }
    summarize(side, &grants, (start, end), server, client_cpu_s)
}

/// Server snapshots at `start` and `end`.
fn measure(port: u16, start: u64, end: u64) -> Delta {
    let mut con = connect(port).expect("control connection");
    sleep_until(start);
    let before = Snapshot::take(&mut con);
    sleep_until(end);
    before.until(&Snapshot::take(&mut con))
}

/// `sem-worker PORT THREADS FIRST SIDE KEY START END`: one process's contenders; prints
/// their grants and the process's CPU time in the window.
pub fn worker_main(args: &[String]) -> Result<(), String> {
    let [port, threads, first, side, key, start, end] = args else {
        return Err("sem-worker PORT THREADS FIRST SIDE KEY START END".to_owned());
    };
    let num = |s: &String| s.parse::<u64>().map_err(|_| format!("bad number {s:?}"));
    let side = SemSide::parse(side).ok_or("sem-worker: side")?;
    let (port, threads, first) = (num(port)? as u16, num(threads)?, num(first)?);
    let window = (num(start)?, num(end)?);
    let cpu = thread::spawn(move || {
        sleep_until(window.0);
        let before = cpu_seconds().0;
        sleep_until(window.1);
        cpu_seconds().0 - before
    });
    let shas = Shas::load(port).map_err(|e| format!("SCRIPT LOAD: {e}"))?;
    let latch = Arc::new(Latch::default());
    let listener = match side {
        SemSide::Redisson => Some(listen(port, key, latch.clone())?),
        SemSide::Rlock => None,
    };
    let handles: Vec<_> = (first as usize..(first + threads) as usize)
        .map(|id| {
            let (shas, latch, key) = (shas.clone(), latch.clone(), key.clone());
            thread::spawn(move || contender(port, side, &shas, &latch, &key, id, window))
        })
        .collect();
    sleep_until(window.1);
    latch.close();
    let mut out = std::io::stdout().lock();
    for h in handles {
        for g in h.join().map_err(|_| "a contender thread panicked")? {
            let _ = writeln!(out, "{}", g.line());
        }
    }
    let _ = writeln!(out, "C {}", cpu.join().unwrap_or(0.0));
    if let Some(l) = listener {
        let _ = l.join();
    }
    Ok(())
}

/// One contender: acquisitions until the window ends (a Redisson-style wait still sleeping
/// then gives up).
fn contender(
    port: u16,
    side: SemSide,
    shas: &Shas,
    latch: &Latch,
    key: &str,
    id: usize,
    (start, end): (u64, u64),
) -> Vec<Grant> {
    let mut con = connect(port).expect("contender connection");
    let owner = format!("sem-{id}");
    let mut grants = Vec::new();
    sleep_until(start);
    for n in 0u64.. {
        if now_ns() >= end {
            break;
        }
        let asked_ns = now_ns();
        let permit = format!("{id:08x}{n:08x}");
        let held = match side {
            SemSide::Rlock => native_acquire(&mut con, key, &owner, LEASE_MS),
            SemSide::Redisson => redisson_acquire(&mut con, shas, latch, key, &permit, LEASE_MS),
        };
        if !held {
            break;
        }
        let acquired_ns = now_ns();
        thread::sleep(Duration::from_micros(HOLD_US));
        release(&mut con, side, shas, key, &owner, &permit);
        grants.push(Grant {
            contender: id,
            asked_ns,
            acquired_ns,
        });
    }
    grants
}

/// One permit-return trial: a holder takes the one permit with a [`DEAD_LEASE_MS`] lease
/// and stops; a waiter asks for it at once. Returns the ms from the lease end to the grant.
fn permit_return(port: u16, side: SemSide, trial: usize) -> f64 {
    let key = format!("sem12r:{}:{}:{trial}", side.name(), std::process::id());
    let mut con = connect(port).expect("connection");
    create(&mut con, side, &key, 1);
    let shas = Shas::load(port).expect("SCRIPT LOAD");
    let latch = Arc::new(Latch::default());
    let listener = match side {
        SemSide::Redisson => Some(listen(port, &key, latch.clone()).expect("SUBSCRIBE")),
        SemSide::Rlock => None,
    };
    let taken_ns = now_ns();
    let held = match side {
        SemSide::Rlock => native_acquire(&mut con, &key, "dead", DEAD_LEASE_MS),
        SemSide::Redisson => {
            let lease_end = taken_ns / 1_000_000 + DEAD_LEASE_MS;
            let call = scripts::acquire(&shas.acquire, &key, "dead", lease_end, now_ms());
            call.query(&mut con).is_ok_and(|v| taken(&v))
        }
    };
    assert!(held, "the holder got no permit");
    let got = match side {
        SemSide::Rlock => native_acquire(&mut con, &key, "waiter", LEASE_MS),
        SemSide::Redisson => redisson_acquire(&mut con, &shas, &latch, &key, "waiter", LEASE_MS),
    };
    let granted_ns = now_ns();
    assert!(got, "the waiter got no permit");
    latch.close();
    if let Some(l) = listener {
        let _ = l.join();
    }
    let lease_end_ns = taken_ns + DEAD_LEASE_MS * 1_000_000;
    (granted_ns as f64 - lease_end_ns as f64) / 1e6
}
