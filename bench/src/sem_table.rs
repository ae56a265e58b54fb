//! Scenario 12's shape and figures (`semaphore.rs`): each side's acquisitions summed up, the
//! permit-return trials, and the table.

use std::collections::HashMap;
use std::fmt::Write;

use crate::clock::percentile;
use crate::numbers::{num, ratio};
use crate::server::Delta;

pub const PERMITS: u64 = 4;
pub const CONTENDERS: usize = 64;
pub const PROCESSES: usize = 4;
/// How long a contender holds its permit, µs.
pub const HOLD_US: u64 = 200;
/// The dead holders' lease in the permit-return trials, ms.
pub const DEAD_LEASE_MS: u64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemSide {
    Redisson,
    Rlock,
}

impl SemSide {
    pub fn name(self) -> &'static str {
        match self {
            SemSide::Redisson => "redisson",
            SemSide::Rlock => "rlock",
        }
    }

    pub fn parse(name: &str) -> Option<SemSide> {
        [SemSide::Redisson, SemSide::Rlock]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// The commands whose `INFO commandstats` time is this side's server time.
    pub fn top_level_commands(self) -> &'static [&'static str] {
        match self {
            SemSide::Redisson => &["evalsha"],
            SemSide::Rlock => &["sem.acquire", "sem.release"],
        }
    }
}

/// One acquisition of one contender: when it asked and when it got the permit (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub contender: usize,
    pub asked_ns: u64,
    pub acquired_ns: u64,
}

impl Grant {
    /// The worker's output line: `G contender asked acquired`.
    pub fn line(&self) -> String {
        format!(
            "G {} {} {}",
            self.contender, self.asked_ns, self.acquired_ns
        )
    }

    pub fn parse(line: &str) -> Option<Grant> {
        let f: Vec<u64> = line
            .strip_prefix("G ")?
            .split_whitespace()
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let [contender, asked_ns, acquired_ns] = f.as_slice() else {
            return None;
        };
        Some(Grant {
            contender: usize::try_from(*contender).ok()?,
            asked_ns: *asked_ns,
            acquired_ns: *acquired_ns,
        })
    }
}

/// One side's run.
#[derive(Debug, Clone)]
pub struct SemRun {
    pub acquired: u64,
    pub per_s: f64,
    pub usec_per_acquisition: f64,
    pub cpu_us_per_acquisition: f64,
    pub commands_per_acquisition: f64,
    /// Most acquisitions of one contender over fewest (∞ when one got none).
    pub fairness: f64,
    pub starved: usize,
    pub wait_p50_ms: f64,
    pub wait_p99_ms: f64,
    /// Permit-return trials: from the dead holder's lease end to the waiter's grant, ms.
    pub returns_ms: Vec<f64>,
    pub server: Delta,
    pub client_cpu_s: f64,
}

/// Sums up the `grants` of `side` made in `(start, end)` (ns).
pub fn summarize(
    side: SemSide,
    grants: &[Grant],
    (start, end): (u64, u64),
    server: Delta,
    client_cpu_s: f64,
) -> SemRun {
    let inside: Vec<&Grant> = grants
        .iter()
        .filter(|g| (start..end).contains(&g.acquired_ns))
        .collect();
    let mut counts: HashMap<usize, u64> = (0..CONTENDERS).map(|c| (c, 0)).collect();
    for g in &inside {
        *counts.entry(g.contender).or_default() += 1;
    }
    let most = counts.values().max().copied().unwrap_or(0);
    let fewest = counts.values().min().copied().unwrap_or(0);
    let waits: Vec<f64> = inside
        .iter()
        .map(|g| g.acquired_ns.saturating_sub(g.asked_ns) as f64 / 1e6)
        .collect();
    let n = inside.len().max(1) as f64;
    SemRun {
        acquired: inside.len() as u64,
        per_s: inside.len() as f64 / ((end - start) as f64 / 1e9),
        usec_per_acquisition: server.usec_of(side.top_level_commands()) as f64 / n,
        cpu_us_per_acquisition: 1e6 * server.cpu_s / n,
        commands_per_acquisition: server.calls as f64 / n,
        fairness: if fewest == 0 {
            f64::INFINITY
        } else {
            most as f64 / fewest as f64
        },
        starved: counts.values().filter(|c| **c == 0).count(),
        wait_p50_ms: percentile(&waits, 50.0),
        wait_p99_ms: percentile(&waits, 99.0),
        returns_ms: Vec::new(),
        server,
        client_cpu_s,
    }
}

/// One figure of a run.
type Figure = fn(&SemRun) -> f64;

fn longest(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// Scenario 12's table.
pub fn table(out: &mut String, runs: &[SemRun; 2]) {
    let _ = writeln!(
        out,
        "\nScenario 12: one semaphore of {PERMITS} permits, {CONTENDERS} contenders in \
         {PROCESSES} processes, each taking 1 permit, holding it {HOLD_US} µs, giving it back \
         (rlock: `SEM.ACQUIRE ... WAIT 0`; Redisson-style: the `RPermitExpirableSemaphore` \
         scripts, pub/sub, one semaphore per process):\n"
    );
    let _ = writeln!(
        out,
        "| Metric | Redisson-style | rlock | rlock ÷ Redisson-style |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let [r, n] = runs;
    let rows: [(&str, Figure); 8] = [
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
        ("wait p50 ms", |x| x.wait_p50_ms),
        ("wait p99 ms", |x| x.wait_p99_ms),
        (
            "permit return after a holder died, p50 ms past its lease end",
            |x| percentile(&x.returns_ms, 50.0),
        ),
        ("permit return, longest ms past the lease end", |x| {
            longest(&x.returns_ms)
        }),
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
    let fair = |x: &SemRun| match x.starved {
        0 => num(x.fairness),
        s => format!("∞ ({s} of {CONTENDERS} got none)"),
    };
    let _ = writeln!(
        out,
        "| acquisitions in the window | {} | {} | |",
        r.acquired, n.acquired
    );
    let _ = writeln!(
        out,
        "| fairness: max/min acquisitions per contender | {} | {} | {} |",
        fair(r),
        fair(n),
        ratio(n.fairness, r.fairness)
    );
    let cpu = |x: &SemRun| {
        let wall = x.server.wall_s.max(1e-9);
        let client = 100.0 * x.client_cpu_s / wall;
        format!("{:.0} % / {client:.0} %", x.server.cpu_percent())
    };
    let _ = writeln!(
        out,
        "| CPU while measuring, server / the 4 workers (% of one core) | {} | {} | |",
        cpu(r),
        cpu(n)
    );
    let trials = r.returns_ms.len().min(n.returns_ms.len());
    let _ = writeln!(
        out,
        "\nPermit return: {trials} trials per side, a holder with a {DEAD_LEASE_MS} ms lease stops \
         without giving its permit back while another client waits for it."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(contender: usize, asked_ns: u64, acquired_ns: u64) -> Grant {
        Grant {
            contender,
            asked_ns,
            acquired_ns,
        }
    }

    #[test]
    fn a_grant_goes_through_its_line() {
        let g = grant(63, 1_000, 2_500);
        assert_eq!(Grant::parse(&g.line()), Some(g));
        assert_eq!(Grant::parse("C 0.5"), None);
        assert_eq!(Grant::parse("G 1 2"), None);
    }

    /// Every contender gets one grant in the window; contender 0 gets two more, one of
    /// them after the window (not counted).
    fn grants() -> Vec<Grant> {
        let mut g: Vec<Grant> = (0..CONTENDERS)
            .map(|c| grant(c, 1_000_000, 2_000_000))
            .collect();
        g.push(grant(0, 3_000_000, 7_000_000));
        g.push(grant(0, 3_000_000, 2_000_000_000));
        g
    }

    #[test]
    fn only_the_window_counts() {
        let run = summarize(
            SemSide::Rlock,
            &grants(),
            (0, 1_000_000_000),
            Delta::default(),
            0.0,
        );
        assert_eq!(run.acquired, CONTENDERS as u64 + 1);
        assert_eq!(run.per_s, (CONTENDERS + 1) as f64);
        assert_eq!((run.fairness, run.starved), (2.0, 0));
        assert_eq!((run.wait_p50_ms, run.wait_p99_ms), (1.0, 4.0));
    }

    #[test]
    fn a_contender_with_no_grant_is_starved() {
        let some = &grants()[1..CONTENDERS];
        let run = summarize(
            SemSide::Redisson,
            some,
            (0, 1_000_000_000),
            Delta::default(),
            0.0,
        );
        assert_eq!((run.fairness, run.starved), (f64::INFINITY, 1));
        let mut out = String::new();
        let mut native = run.clone();
        (native.starved, native.fairness) = (0, 1.5);
        native.returns_ms = vec![0.5, 2.0, 1.0];
        table(&mut out, &[run, native]);
        assert!(out.contains("| ∞ (1 of 64 got none) | 1.50 |"), "{out}");
        assert!(
            out.contains("p50 ms past its lease end | 0.00 | 1.00 | — |"),
            "{out}"
        );
        assert!(
            out.contains("longest ms past the lease end | 0.00 | 2.00 |"),
            "{out}"
        );
    }
}
