//! Scenario 9's table: each metric for the baseline, blocking waits and tickets, and the
//! ratios.

use std::fmt::Write;

use crate::handoff_slice::{self, Contended};
use crate::waiting::{Others, Waiting};
use crate::waits::Held;

struct Row {
    metric: String,
    cells: [String; 3],
    ratios: [String; 2],
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "—".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("×{:.2}", a / b)
    } else {
        "—".into()
    }
}

fn row(metric: String, lua: f64, block: f64, tickets: f64) -> Row {
    Row {
        metric,
        cells: [num(lua), num(block), num(tickets)],
        ratios: [ratio(tickets, block), ratio(tickets, lua)],
    }
}

fn where_(h: &Held) -> String {
    if h.keys == 1 {
        "1 lock".into()
    } else {
        format!("{} locks", h.keys)
    }
}

fn connection_row(t: &Held, b: &Held) -> Row {
    let cell = |h: &Held| match &h.failure {
        Some(why) => format!("fails after {} waits: {why}", h.queued),
        None => format!("{} ({} waits queued)", h.connections, h.queued),
    };
    Row {
        metric: format!(
            "client connections for {} waits, {}, `ulimit -n {}`",
            t.waits,
            where_(t),
            t.fd_limit
        ),
        cells: ["—".into(), cell(b), cell(t)],
        ratios: ["—".into(), "—".into()],
    }
}

/// The client crate as built: its `acquire` futures, with the connections they took.
fn client_row(c: &Result<Held, String>) -> Row {
    let (cell, waits) = match c {
        Ok(h) => {
            let cell = match &h.failure {
                Some(why) => format!("{} connections, {why}", h.connections),
                None => format!("{} ({} waits queued)", h.connections, h.queued),
            };
            (cell, h.waits.to_string())
        }
        Err(e) => (format!("not measured: {e}"), "many".into()),
    };
    Row {
        metric: format!(
            "client connections of `rlock-client` for {waits} `acquire` futures, 1 lock, `ulimit -n {}`",
            crate::waiting::FD_LIMIT
        ),
        cells: ["—".into(), "—".into(), cell],
        ratios: ["—".into(), "—".into()],
    }
}

fn settled(h: &Held) -> f64 {
    h.bytes_settled.unwrap_or(h.bytes_at_once)
}

fn memory_rows(rows: &mut Vec<Row>, t: &Held, b: &Result<Held, String>) {
    let (b_settled, b_once, b_est) = match b {
        Ok(b) => (settled(b), b.bytes_at_once, b.estimate / settled(b)),
        Err(_) => (f64::NAN, f64::NAN, f64::NAN),
    };
    let m = row(
        format!(
            "server `used_memory` bytes per queued wait, {} waits, {} (5 s later)",
            t.waits,
            where_(t)
        ),
        f64::NAN,
        b_settled,
        settled(t),
    );
    rows.push(m);
    rows.push(row(
        "… right after queueing".into(),
        f64::NAN,
        b_once,
        t.bytes_at_once,
    ));
    let est = t.estimate / settled(t);
    let mut e = row(
        "`rlock_waiters_memory` ÷ that (5 s later)".into(),
        f64::NAN,
        b_est,
        est,
    );
    e.ratios = ["—".into(), "—".into()];
    rows.push(e);
}

fn contended_rows(rows: &mut Vec<Row>, w: &Waiting, o: &Others) {
    let [t, b] = &w.contended;
    let (tc, bc) = (t.commandstats_us(), b.commandstats_us());
    let grants = format!(
        "contended, {} waits on 1 lock: acquisitions (handoffs) in the same time",
        handoff_slice::waits()
    );
    rows.push(row(grants, f64::NAN, b.grants as f64, t.grants as f64));
    rows.push(row(
        "server µs per acquisition, handoff included (commandstats)".into(),
        o.lua.0,
        bc,
        tc,
    ));
    let mut pair = row(
        "… ÷ uncontended acquire+release pair".into(),
        o.lua.0 / o.pair.0,
        bc / o.pair.0,
        tc / o.pair.0,
    );
    pair.ratios[1] = "—".into();
    rows.push(pair);
    rows.push(row(
        "server CPU µs per acquisition (`used_cpu_*`)".into(),
        o.lua.1,
        b.cpu_us(),
        t.cpu_us(),
    ));
    let mut cpu_pair = row(
        "… ÷ uncontended pair".into(),
        o.lua.1 / o.pair.1,
        b.cpu_us() / o.pair.1,
        t.cpu_us() / o.pair.1,
    );
    cpu_pair.ratios[1] = "—".into();
    rows.push(cpu_pair);
    for p in [50.0, 99.0] {
        rows.push(row(
            format!("release sent → next holder reads its grant, p{p:.0} µs"),
            f64::NAN,
            b.gap_us(p),
            t.gap_us(p),
        ));
    }
    let fair = |c: &Contended| {
        let (most, fewest) = c.spread();
        most as f64 / fewest.max(1) as f64
    };
    let (bf, tf, t_fifo) = (fair(b), fair(t), t.fifo);
    rows.push(row(
        "fairness: most ÷ fewest acquisitions per waiter".into(),
        f64::NAN,
        bf,
        tf,
    ));
    rows.push(Row {
        metric: "tickets served in FIFO order (≤ 1 apart in every slice)".into(),
        cells: [
            "—".into(),
            "—".into(),
            if t_fifo { "yes" } else { "no" }.into(),
        ],
        ratios: ["—".into(), "—".into()],
    });
}

/// Scenario 9's table.
pub fn table(out: &mut String, w: &Result<Waiting, String>, o: &Others) {
    let _ = writeln!(out, "\nScenario 9: waiting at scale: the Lua baseline, rlock's blocking `LOCK.ACQUIRE ... WAIT` (a connection per wait) and rlock's tickets (`LOCK.WAIT` over one RESP3 connection, grants pushed), one server:\n");
    let w = match w {
        Ok(w) => w,
        Err(e) => {
            let _ = writeln!(out, "not measured: {e}");
            return;
        }
    };
    let mut rows = Vec::new();
    for i in 0..2 {
        rows.push(connection_row(&w.tickets[i], &w.blocking_limited[i]));
    }
    rows.push(client_row(&w.client));
    for i in 0..2 {
        memory_rows(&mut rows, &w.tickets[i], &w.blocking[i]);
    }
    contended_rows(&mut rows, w, o);
    let _ = writeln!(out, "| Metric | Lua (Redisson) | rlock blocking | rlock tickets | tickets ÷ blocking | tickets ÷ Lua |");
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        let [l, b, t] = &r.cells;
        let [tb, tl] = &r.ratios;
        let _ = writeln!(out, "| {} | {l} | {b} | {t} | {tb} | {tl} |", r.metric);
    }
    for (i, b) in w.blocking.iter().enumerate() {
        if let Err(e) = b {
            let _ = writeln!(out, "\nBlocking memory row {} not measured: {e}", i + 1);
        }
    }
}
