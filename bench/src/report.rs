//! The Markdown report: one table of both sides with ratios and targets, and one of the
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
        "| Scenario | Metric | Lua (Redisson) | rlock | rlock ÷ Lua | HSET+DEL | Target | Result |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---|---|");
    for x in &rows {
        let verdict = match x.pass {
            Some(true) => "pass",
            Some(false) => "**MISSED**",
            None => "",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            x.scenario, x.metric, x.lua, x.rlock, x.ratio, x.plain, x.target, verdict
        );
    }
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
    let missed: Vec<String> = rows
        .iter()
        .filter(|x| x.pass == Some(false))
        .map(|x| format!("{}: {} (target {})", x.scenario, x.metric, x.target))
        .collect();
    let _ = writeln!(
        out,
        "\nTargets missed: {}.",
        if missed.is_empty() {
            "none".to_owned()
        } else {
            missed.join("; ")
        }
    );
    out
}
