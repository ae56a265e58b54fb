//! Scenario 11: a read-mostly read-write lock. [`CONTENDERS`] contenders spread over
//! [`PROCESSES`] processes (as scenario 6) loop on one key: each attempt is a read
//! ([`READ_PERCENT`] %) or a write, acquired and released at once.
//!
//! - **rlock**: `RWLOCK.ACQUIRE key owner READ|WRITE LEASE 30000 WAIT 0` (waiting in the
//!   server's queue), then `RWLOCK.RELEASE key owner READ|WRITE`;
//! - **Redisson-style**: Redisson's `RReadWriteLock` scripts (`tests/support/redisson_rwlock.rs`)
//!   with `EVALSHA`, waiting as its `lock()` does: the script, then a sleep on the process's
//!   semaphore, which the process's one subscription to `redisson_rwlock:{key}` releases
//!   once per `0` message (a read unlock) and for every sleeper on a `1` (a write unlock),
//!   until the lock's TTL runs out, then the script again.
//!
//! The figures: `rw_table.rs`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{cpu_seconds, now_ns, sleep_until};
use crate::redisson::{self, Latch};
use crate::rw_scripts::{self as scripts, Holder};
use crate::rw_side::{RwSide, CONTENDERS, PROCESSES, READ_PERCENT};
use crate::rw_table::{summarize, Attempt, RwRun};
use crate::server::{connect, Delta, Snapshot};
use crate::side::LEASE_MS;

/// Both sides, one after the other, on the server at `port`: [Redisson-style, rlock].
pub fn run(port: u16, duration: Duration) -> [RwRun; 2] {
    let rlock = across(port, RwSide::Rlock, duration);
    let redisson = across(port, RwSide::Redisson, duration);
    [redisson, rlock]
}

/// `rwlock SECONDS`: scenario 11 alone, on a server started here.
pub fn alone(args: &[String], module: &std::path::Path) -> Result<(), String> {
    let [seconds] = args else {
        return Err("usage: rlock-bench rwlock SECONDS".to_owned());
    };
    let seconds: f64 = seconds
        .parse()
        .map_err(|_| format!("bad seconds {seconds:?}"))?;
    let server = crate::server::BenchServer::start(module)?;
    let runs = run(server.port(), Duration::from_secs_f64(seconds));
    let mut table = String::new();
    crate::rw_table::table(&mut table, &runs);
    println!("{table}");
    Ok(())
}

/// One side's run: the contenders spread over [`PROCESSES`] child processes.
fn across(port: u16, side: RwSide, duration: Duration) -> RwRun {
    let start = now_ns() + 1_500_000_000;
    let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let per = CONTENDERS / PROCESSES;
    let key = format!("rw11:{}:{}", side.name(), std::process::id());
    let exe = std::env::current_exe().expect("own executable");
    let children: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let args = [usize::from(port), per, p * per].map(|n| n.to_string());
            Command::new(&exe)
                .arg("rw-worker")
                .args(args)
                .args([side.name(), &key, &start.to_string(), &end.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let server = measure(port, start, end);
    let mut attempts = Vec::new();
    let mut client_cpu_s = 0.0;
    for child in children {
        let out = child.wait_with_output().expect("worker output");
        assert!(out.status.success(), "a read-write worker failed");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            match Attempt::parse(line) {
                Some(a) => attempts.push(a),
                None => client_cpu_s += line.strip_prefix("C ").map_or(0.0, parse_f64),
            }
        }
    }
    summarize(side, &attempts, (start, end), server, client_cpu_s)
}

fn parse_f64(s: &str) -> f64 {
    s.trim().parse().unwrap_or(0.0)
}

/// Server snapshots at `start` and `end`.
fn measure(port: u16, start: u64, end: u64) -> Delta {
    let mut con = connect(port).expect("control connection");
    sleep_until(start);
    let before = Snapshot::take(&mut con);
    sleep_until(end);
    before.until(&Snapshot::take(&mut con))
}

/// `rw-worker PORT THREADS FIRST SIDE KEY START END`: one process's contenders; prints
/// their attempts and the process's CPU time in the window.
pub fn worker_main(args: &[String]) -> Result<(), String> {
    let [port, threads, first, side, key, start, end] = args else {
        return Err("rw-worker PORT THREADS FIRST SIDE KEY START END".to_owned());
    };
    let num = |s: &String| s.parse::<u64>().map_err(|_| format!("bad number {s:?}"));
    let side = RwSide::parse(side).ok_or("rw-worker: side")?;
    let (port, threads, first) = (num(port)? as u16, num(threads)?, num(first)?);
    let (start, end) = (num(start)?, num(end)?);
    let cpu = thread::spawn(move || {
        sleep_until(start);
        let before = cpu_seconds().0;
        sleep_until(end);
        cpu_seconds().0 - before
    });
    let ids = first as usize..(first + threads) as usize;
    let attempts = contenders(port, side, ids, key, (start, end))?;
    let mut out = std::io::stdout().lock();
    for a in attempts {
        let _ = writeln!(out, "{}", a.line());
    }
    let _ = writeln!(out, "C {}", cpu.join().unwrap_or(0.0));
    Ok(())
}

/// The SHA1s of the scripts: [read, write].
#[derive(Clone)]
struct Shas {
    lock: [String; 2],
    unlock: [String; 2],
}

impl Shas {
    fn load(port: u16) -> redis::RedisResult<Shas> {
        let mut con = connect(port)?;
        let mut load = |body: &str| -> redis::RedisResult<String> {
            redis::cmd("SCRIPT").arg("LOAD").arg(body).query(&mut con)
        };
        Ok(Shas {
            lock: [load(scripts::READ_LOCK)?, load(scripts::WRITE_LOCK)?],
            unlock: [load(scripts::READ_UNLOCK)?, load(scripts::WRITE_UNLOCK)?],
        })
    }
}

/// The contenders `ids` of `side` on `key` in this process; every attempt they made.
fn contenders(
    port: u16,
    side: RwSide,
    ids: std::ops::Range<usize>,
    key: &str,
    window: (u64, u64),
) -> Result<Vec<Attempt>, String> {
    let shas = Shas::load(port).map_err(|e| format!("SCRIPT LOAD: {e}"))?;
    let latch = Arc::new(Latch::default());
    let listener = match side {
        RwSide::Redisson => {
            let channel = scripts::channel(key);
            Some(redisson::listen(port, &channel, latch.clone()).map_err(|e| e.to_string())?)
        }
        RwSide::Rlock => None,
    };
    let handles: Vec<_> = ids
        .map(|id| {
            let (shas, latch, key) = (shas.clone(), latch.clone(), key.to_owned());
            thread::spawn(move || contender(port, side, &shas, &latch, &key, id, window))
        })
        .collect();
    sleep_until(window.1);
    latch.close();
    let attempts = handles
        .into_iter()
        .flat_map(|h| h.join().expect("contender thread"))
        .collect();
    if let Some(l) = listener {
        let _ = l.join();
    }
    Ok(attempts)
}

/// One contender's packed commands: [read, write] acquire and release.
struct Ops {
    acquire: [Vec<u8>; 2],
    release: [Vec<u8>; 2],
}

impl Ops {
    fn new(side: RwSide, shas: &Shas, key: &str, owner: &str) -> Ops {
        let holder = Holder::new(key, owner, LEASE_MS);
        let pack = |c: redis::Cmd| c.get_packed_command();
        let native = |verb: &str, mode: &str, rest: &[&str]| {
            let mut cmd = redis::cmd(verb);
            cmd.arg(key).arg(owner).arg(mode).arg(rest);
            pack(cmd)
        };
        let lease = LEASE_MS.to_string();
        let waiting = ["LEASE", lease.as_str(), "WAIT", "0"];
        match side {
            RwSide::Redisson => Ops {
                acquire: [0, 1].map(|w| pack(holder.lock(w == 1).evalsha(&shas.lock[w]))),
                release: [0, 1].map(|w| pack(holder.unlock(w == 1).evalsha(&shas.unlock[w]))),
            },
            RwSide::Rlock => Ops {
                acquire: ["READ", "WRITE"].map(|m| native("RWLOCK.ACQUIRE", m, &waiting)),
                release: ["READ", "WRITE"].map(|m| native("RWLOCK.RELEASE", m, &[])),
            },
        }
    }
}

/// One contender: attempts until the window ends; an attempt the run's end cut short (a
/// Redisson-style wait still sleeping) is recorded without an acquisition.
fn contender(
    port: u16,
    side: RwSide,
    shas: &Shas,
    latch: &Latch,
    key: &str,
    id: usize,
    (start, end): (u64, u64),
) -> Vec<Attempt> {
    let mut con = connect(port).expect("contender connection");
    let ops = Ops::new(side, shas, key, &format!("rw-{id}:1"));
    let mut rng = (id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut attempts = Vec::new();
    sleep_until(start);
    while now_ns() < end {
        let write = next(&mut rng) % 100 >= READ_PERCENT;
        let w = usize::from(write);
        let asked_ns = now_ns();
        let got = match side {
            RwSide::Redisson => redisson::lock(&mut con, &ops.acquire[w], latch),
            RwSide::Rlock => match con.req_packed_command(&ops.acquire[w]) {
                Ok(Value::Int(_)) => true,
                other => panic!("RWLOCK.ACQUIRE replied {other:?}"),
            },
        };
        let mut attempt = Attempt::new(id, write, asked_ns);
        if got {
            attempt.acquired_ns = now_ns();
            let reply = con.req_packed_command(&ops.release[w]);
            assert!(matches!(reply, Ok(Value::Int(_))), "release: {reply:?}");
            attempt.released_ns = now_ns();
        }
        attempts.push(attempt);
        if !got {
            break;
        }
    }
    attempts
}

/// xorshift64.
fn next(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    x
}
