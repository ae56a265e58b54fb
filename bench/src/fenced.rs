//! Scenario 8: what a fenced write costs. `LOCK.FENCED lock owner token HSET key f v`
//! against the plain `HSET key f v`, on [`CONNECTIONS`] connections with a lock and a hash of
//! their own (one hash tag), [`DEPTH`] writes per round trip, in alternating slices. The
//! server's µs per write come from `INFO commandstats`: `lock.fenced`'s time includes the
//! `HSET` it runs.

use std::fmt::Write;
use std::thread;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::clock::{now_ns, sleep_until};
use crate::server::{connect, Delta, Snapshot};

pub const CONNECTIONS: usize = 8;
pub const DEPTH: usize = 16;
const SLICES: u32 = 4;

/// One side's writes and the server's work while they ran.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub writes: u64,
    pub server: Delta,
}

impl Run {
    pub fn writes_per_s(&self) -> f64 {
        self.writes as f64 / self.server.wall_s.max(1e-9)
    }

    /// Server µs per write of the command `name` (`hset` or `lock.fenced`).
    pub fn server_us_per_write(&self, name: &str) -> f64 {
        self.server.usec_of(&[name]) as f64 / self.writes.max(1) as f64
    }
}

/// Plain, then fenced, in `SLICES` alternating slices of `duration / SLICES` each.
pub fn run(port: u16, duration: Duration) -> [Run; 2] {
    let tokens: Vec<i64> = (0..CONNECTIONS).map(|i| acquire(port, i)).collect();
    let mut sums = [Run::default(), Run::default()];
    for slice in 0..SLICES {
        for fenced in if slice % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        } {
            let run = slice_run(port, &tokens, fenced, duration / SLICES);
            let sum = &mut sums[usize::from(fenced)];
            sum.writes += run.writes;
            sum.server = sum.server.merge(&run.server);
        }
    }
    sums
}

fn lock_key(conn: usize) -> String {
    format!("lock:{{f{conn}}}")
}

fn acquire(port: u16, conn: usize) -> i64 {
    let mut con = connect(port).expect("connection");
    let mut cmd = redis::cmd("LOCK.ACQUIRE");
    cmd.arg(lock_key(conn))
        .arg("bench")
        .arg("LEASE")
        .arg(3_600_000);
    cmd.query(&mut con).expect("LOCK.ACQUIRE")
}

fn slice_run(port: u16, tokens: &[i64], fenced: bool, duration: Duration) -> Run {
    let start = now_ns() + 100_000_000;
    let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let workers: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(conn, &token)| {
            let batch = batch(conn, token, fenced);
            thread::spawn(move || drive(port, &batch, start, end))
        })
        .collect();
    let mut con = connect(port).expect("control connection");
    sleep_until(start);
    let before = Snapshot::take(&mut con);
    sleep_until(end);
    let after = Snapshot::take(&mut con);
    let writes = workers.into_iter().map(|w| w.join().expect("worker")).sum();
    Run {
        writes,
        server: before.until(&after),
    }
}

/// [`DEPTH`] writes of connection `conn`, packed once.
fn batch(conn: usize, token: i64, fenced: bool) -> Vec<u8> {
    let mut pipe = redis::pipe();
    for j in 0..DEPTH {
        let mut cmd = if fenced {
            let mut cmd = redis::cmd("LOCK.FENCED");
            cmd.arg(lock_key(conn)).arg("bench").arg(token).arg("HSET");
            cmd
        } else {
            redis::cmd("HSET")
        };
        cmd.arg(format!("order:{{f{conn}}}")).arg(j).arg("v");
        pipe.add_command(cmd);
    }
    pipe.get_packed_pipeline()
}

fn drive(port: u16, batch: &[u8], start: u64, end: u64) -> u64 {
    let mut con = connect(port).expect("bench connection");
    sleep_until(start);
    let mut writes = 0;
    while now_ns() < end {
        let replies = con.req_packed_commands(batch, 0, DEPTH).expect("pipeline");
        let ok = replies.iter().all(|r| matches!(r, Value::Int(_)));
        assert!(ok, "a write failed: {replies:?}");
        if now_ns() <= end {
            writes += DEPTH as u64;
        }
    }
    writes
}

/// The table of scenario 8.
pub fn table(out: &mut String, runs: &[Run; 2]) {
    let [plain, fenced] = runs;
    let _ = writeln!(
        out,
        "\nScenario 8: a fenced write (`LOCK.FENCED lock owner token HSET ...`) against a plain `HSET`, {CONNECTIONS} connections, depth {DEPTH}:\n"
    );
    let _ = writeln!(out, "| Metric | `HSET` | `LOCK.FENCED ... HSET` | ratio |");
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let (a, b) = (
        plain.server_us_per_write("hset"),
        fenced.server_us_per_write("lock.fenced"),
    );
    let _ = writeln!(
        out,
        "| server µs per write (commandstats) | {a:.2} | {b:.2} | ×{:.2} |",
        b / a.max(1e-9)
    );
    let (a, b) = (plain.writes_per_s(), fenced.writes_per_s());
    let _ = writeln!(
        out,
        "| writes/s | {a:.0} | {b:.0} | ×{:.2} |",
        b / a.max(1e-9)
    );
}
