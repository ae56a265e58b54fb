//! Scenario 11's figures (`rwlock.rs`): each side's attempts summed up, and the table.

use std::collections::HashMap;
use std::fmt::Write;

use crate::clock::percentile;
use crate::numbers::{num, ratio};
use crate::rw_side::{RwSide, CONTENDERS, PROCESSES, READ_PERCENT};
use crate::server::Delta;

/// One attempt of one contender; `acquired_ns` is 0 when the run's end cut it short.
#[derive(Debug, Clone, Copy)]
pub struct Attempt {
    pub contender: usize,
    pub write: bool,
    pub asked_ns: u64,
    pub acquired_ns: u64,
    pub released_ns: u64,
}

impl Attempt {
    pub fn new(contender: usize, write: bool, asked_ns: u64) -> Attempt {
        Attempt {
            contender,
            write,
            asked_ns,
            acquired_ns: 0,
            released_ns: 0,
        }
    }

    /// The worker's output line: `A contender write asked acquired released`.
    pub fn line(&self) -> String {
        let a = self;
        let w = u8::from(a.write);
        let times = format!("{} {} {}", a.asked_ns, a.acquired_ns, a.released_ns);
        format!("A {} {w} {times}", a.contender)
    }

    pub fn parse(line: &str) -> Option<Attempt> {
        let f: Vec<u64> = line
            .strip_prefix("A ")?
            .split_whitespace()
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let [contender, write, asked_ns, acquired_ns, released_ns] = f.as_slice() else {
            return None;
        };
        Some(Attempt {
            contender: usize::try_from(*contender).ok()?,
            write: *write == 1,
            asked_ns: *asked_ns,
            acquired_ns: *acquired_ns,
            released_ns: *released_ns,
        })
    }

    fn wait_ms(&self) -> f64 {
        (self.acquired_ns.saturating_sub(self.asked_ns)) as f64 / 1e6
    }
}

/// One side's run.
#[derive(Debug, Clone)]
pub struct RwRun {
    /// Acquisitions in the window: [reads, writes].
    pub acquired: [u64; 2],
    pub per_s: f64,
    /// `INFO commandstats` µs of the side's commands per acquisition.
    pub usec_per_acquisition: f64,
    pub cpu_us_per_acquisition: f64,
    pub commands_per_acquisition: f64,
    /// Into or out of a write hold: previous releases → this acquisition, µs.
    pub handoff_p50_us: f64,
    pub handoff_p99_us: f64,
    /// Most acquisitions of one contender over fewest (∞ when one got none).
    pub fairness: f64,
    pub starved: usize,
    /// Waits of acquired writes, ms: p99 and longest.
    pub write_wait_p99_ms: f64,
    pub write_wait_max_ms: f64,
    /// Writes still waiting when the run ended, and the longest of their waits then, ms.
    pub writes_cut: usize,
    pub writes_cut_max_ms: f64,
    pub read_wait_p99_ms: f64,
    pub server: Delta,
    pub client_cpu_s: f64,
}

/// Sums up `attempts` of `side` made in `(start, end)` (ns).
pub fn summarize(
    side: RwSide,
    attempts: &[Attempt],
    (start, end): (u64, u64),
    server: Delta,
    client_cpu_s: f64,
) -> RwRun {
    let mut held: Vec<Attempt> = attempts
        .iter()
        .filter(|a| a.acquired_ns != 0)
        .copied()
        .collect();
    held.sort_by_key(|a| a.acquired_ns);
    let in_window: Vec<&Attempt> = held
        .iter()
        .filter(|a| (start..end).contains(&a.acquired_ns))
        .collect();
    let mut counts: HashMap<usize, u64> = (0..CONTENDERS).map(|c| (c, 0)).collect();
    let mut acquired = [0, 0];
    for a in &in_window {
        *counts.entry(a.contender).or_default() += 1;
        acquired[usize::from(a.write)] += 1;
    }
    let n = (acquired[0] + acquired[1]).max(1) as f64;
    let (most, fewest) = (
        counts.values().max().copied().unwrap_or(0),
        counts.values().min().copied().unwrap_or(0),
    );
    // Every acquired attempt's wait, also one granted after the window (asked within it).
    let waits = |write: bool| -> Vec<f64> {
        let mine = held.iter().filter(|a| a.write == write);
        mine.map(|a| a.wait_ms()).collect()
    };
    let cut: Vec<f64> = attempts
        .iter()
        .filter(|a| a.write && a.acquired_ns == 0)
        .map(|a| end.saturating_sub(a.asked_ns) as f64 / 1e6)
        .collect();
    let handoffs = handoffs(&held, start, end);
    let writes = waits(true);
    RwRun {
        acquired,
        per_s: n / ((end - start) as f64 / 1e9),
        usec_per_acquisition: server.usec_of(side.top_level_commands()) as f64 / n,
        cpu_us_per_acquisition: 1e6 * server.cpu_s / n,
        commands_per_acquisition: server.calls as f64 / n,
        handoff_p50_us: percentile(&handoffs, 50.0),
        handoff_p99_us: percentile(&handoffs, 99.0),
        fairness: if fewest == 0 {
            f64::INFINITY
        } else {
            most as f64 / fewest as f64
        },
        starved: counts.values().filter(|c| **c == 0).count(),
        write_wait_p99_ms: percentile(&writes, 99.0),
        write_wait_max_ms: writes.iter().copied().fold(0.0, f64::max),
        writes_cut: cut.len(),
        writes_cut_max_ms: cut.iter().copied().fold(0.0, f64::max),
        read_wait_p99_ms: percentile(&waits(false), 99.0),
        server,
        client_cpu_s,
    }
}

/// The handoffs into and out of write holds, in acquisition order: from the last release
/// before an acquisition to the acquisition, where it or the one before is a write.
fn handoffs(held: &[Attempt], start: u64, end: u64) -> Vec<f64> {
    let mut last_release = 0u64;
    let mut out = Vec::new();
    for (i, a) in held.iter().enumerate() {
        let exclusive = a.write || (i > 0 && held[i - 1].write);
        if i > 0 && exclusive && (start..end).contains(&a.acquired_ns) {
            out.push((a.acquired_ns as f64 - last_release as f64) / 1000.0);
        }
        last_release = last_release.max(a.released_ns);
    }
    out
}

/// One figure of a run.
type Figure = fn(&RwRun) -> f64;

/// Scenario 11's table.
pub fn table(out: &mut String, runs: &[RwRun; 2]) {
    let _ = writeln!(
        out,
        "\nScenario 11: one read-write lock, {CONTENDERS} contenders in {PROCESSES} processes, \
         {READ_PERCENT} % reads, each acquired and released at once (rlock: `RWLOCK.ACQUIRE ... \
         WAIT 0`; Redisson-style: the `RReadWriteLock` scripts, pub/sub, one semaphore per \
         process):\n"
    );
    let _ = writeln!(
        out,
        "| Metric | Redisson-style | rlock | rlock ÷ Redisson-style |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let [r, n] = runs;
    let fair = |x: &RwRun| match x.starved {
        0 => num(x.fairness),
        s => format!("∞ ({s} of {CONTENDERS} got none)"),
    };
    let rows: [(&str, Figure); 9] = [
        ("acquisitions/s", |x| x.per_s),
        ("server µs per acquisition (commandstats)", |x| {
            x.usec_per_acquisition
        }),
        ("server CPU µs per acquisition (used_cpu)", |x| {
            x.cpu_us_per_acquisition
        }),
        ("server commands per acquisition", |x| {
            x.commands_per_acquisition
        }),
        ("handoff p50 µs (into or out of a write hold)", |x| {
            x.handoff_p50_us
        }),
        ("handoff p99 µs", |x| x.handoff_p99_us),
        ("read wait p99 ms", |x| x.read_wait_p99_ms),
        ("write wait p99 ms", |x| x.write_wait_p99_ms),
        ("longest write wait ms", |x| x.write_wait_max_ms),
    ];
    for (metric, f) in rows {
        let (a, b) = (f(r), f(n));
        let _ = writeln!(
            out,
            "| {metric} | {} | {} | {} |",
            num(a),
            num(b),
            ratio(b, a)
        );
    }
    let counts = |x: &RwRun| format!("{} / {}", x.acquired[0], x.acquired[1]);
    let cut = |x: &RwRun| format!("{} (longest {} ms)", x.writes_cut, num(x.writes_cut_max_ms));
    let lines = [
        (
            "reads / writes acquired in the window",
            counts(r),
            counts(n),
            String::new(),
        ),
        (
            "fairness: max/min acquisitions per contender",
            fair(r),
            fair(n),
            ratio(n.fairness, r.fairness),
        ),
        (
            "writes still waiting at the end",
            cut(r),
            cut(n),
            String::new(),
        ),
    ];
    for (metric, a, b, c) in lines {
        let _ = writeln!(out, "| {metric} | {a} | {b} | {c} |");
    }
    let cpu = |x: &RwRun| {
        let wall = x.server.wall_s.max(1e-9);
        format!(
            "{:.0} % / {:.0} %",
            x.server.cpu_percent(),
            100.0 * x.client_cpu_s / wall
        )
    };
    let _ = writeln!(
        out,
        "| CPU while measuring, server / the 4 workers (% of one core) | {} | {} | |",
        cpu(r),
        cpu(n)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(contender: usize, write: bool, acquired_ns: u64, released_ns: u64) -> Attempt {
        let mut a = Attempt::new(contender, write, acquired_ns - 5);
        (a.acquired_ns, a.released_ns) = (acquired_ns, released_ns);
        a
    }

    #[test]
    fn an_attempt_goes_through_its_line() {
        let a = held(7, true, 1_000, 2_000);
        let b = Attempt::parse(&a.line()).expect("parses");
        assert_eq!((b.contender, b.write, b.asked_ns), (7, true, 995));
        assert_eq!((b.acquired_ns, b.released_ns), (1_000, 2_000));
        assert!(Attempt::parse("C 0.5").is_none());
    }

    #[test]
    fn handoffs_are_the_ones_into_or_out_of_a_write() {
        // Two overlapping reads, a write after both, a read after the write.
        let h = [
            held(0, false, 10_000, 30_000),
            held(1, false, 20_000, 40_000),
        ];
        let h = [
            h[0],
            h[1],
            held(2, true, 45_000, 50_000),
            held(3, false, 52_000, 53_000),
        ];
        assert_eq!(handoffs(&h, 0, 100_000), vec![5.0, 2.0]);
    }
}
