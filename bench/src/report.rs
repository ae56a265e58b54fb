//! The Markdown report: one table of both sides with their ratios, and one of the
//! CPU each side used.

use std::fmt::Write;

use crate::rows::rows;
use crate::suite::Results;

/// The whole report as Markdown.
pub fn render(r: &Results) -> String {
    let rows = rows(r);
    let mut out = String::new();
    let _ = writeln!(out, "Machine: {} cores; Redis {}; {} s per side per measurement (scenario 1: {} alternating slices); `--save \"\" --appendonly no`; loopback.\n", r.cores, r.redis_version, r.duration_s, crate::suite::SLICES);
    let _ = writeln!(
        out,
        "| Scenario | Metric | Lua (Redisson) | rlock | rlock ÷ Lua | HSET+DEL |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|");
    for x in &rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            x.scenario, x.metric, x.lua, x.rlock, x.ratio, x.plain
        );
    }
    hot_table(&mut out, r);
    let _ = writeln!(
        out,
        "\nCPU use while measuring (% of one core; the machine has {}):\n",
        r.cores
    );
    let _ = writeln!(out, "| Scenario | Lua: server | Lua: bench client | rlock: server | rlock: bench client | HSET+DEL: server | HSET+DEL: bench client |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    for c in &r.cpu {
        let cells: Vec<String> =
            c.1.iter()
                .map(|v| v.map_or("—".into(), |p| format!("{p:.0} %")))
                .collect();
        let _ = writeln!(out, "| {} | {} |", c.0, cells.join(" | "));
    }
    redlock_table(&mut out, &r.redlock);
    crate::fenced::table(&mut out, &r.fenced);
    let others = crate::suite::others(&r.uncontended[0].1[1], &r.contended[0]);
    crate::waiting_table::table(&mut out, &r.waiting, &others);
    crate::mixed::table(&mut out, &r.mixed);
    crate::rw_table::table(&mut out, &r.rw);
    crate::sem_table::table(&mut out, &r.sem);
    out
}

/// The hot commands against their goals and floors, from scenarios 1, 2, 8 and 9.
fn hot_table(out: &mut String, r: &Results) {
    let hot = crate::hot::Hot {
        uncontended: crate::hot::in_order(
            (r.uncontended.iter().zip(&r.floor))
                .map(|((depth, runs), floor)| (*depth, runs, floor.as_ref()))
                .collect(),
        ),
        lua: &r.contended[0],
        handoffs: r
            .waiting
            .as_ref()
            .map(|w| (&w.contended, w.contended_floor.as_ref()))
            .map_err(String::as_str),
        fenced: &r.fenced,
    };
    crate::hot::table(out, &hot);
}

/// Scenario 7: the client crate's lock on one server against a RedLock over three.
pub fn redlock_table(out: &mut String, runs: &Result<[crate::redlock::Run; 2], String>) {
    let _ = writeln!(
        out,
        "\nScenario 7: one lock, 8 tasks of one process (client crate, 10 s lease, release at once):\n"
    );
    let [one, three] = match runs {
        Ok(runs) => runs,
        Err(e) => {
            let _ = writeln!(out, "not measured: {e}");
            return;
        }
    };
    let _ = writeln!(
        out,
        "| Metric | one server (`Lock`) | RedLock, 3 servers | ratio |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let lines = [
        (
            "acquisitions",
            one.acquisitions as f64,
            three.acquisitions as f64,
        ),
        ("acquisitions/s", one.per_s, three.per_s),
        (
            "handoff p50 (ms)",
            one.handoff_p(50.0),
            three.handoff_p(50.0),
        ),
        (
            "handoff p99 (ms)",
            one.handoff_p(99.0),
            three.handoff_p(99.0),
        ),
    ];
    for (metric, a, b) in lines {
        let ratio = if a > 0.0 {
            format!("×{:.2}", b / a)
        } else {
            "—".into()
        };
        let digits = if metric.starts_with("acquisitions") {
            0
        } else {
            2
        };
        let _ = writeln!(out, "| {metric} | {a:.digits$} | {b:.digits$} | {ratio} |");
    }
}
