//! The rows of the report's main table: each metric for both sides and their ratio.

use crate::contended;
use crate::numbers::{num, ratio};
use crate::suite::Results;
use crate::uncontended;

pub struct Row {
    pub scenario: String,
    pub metric: String,
    pub lua: String,
    pub rlock: String,
    pub ratio: String,
    pub plain: String,
}

fn row(
    scenario: impl Into<String>,
    metric: &str,
    lua: String,
    rlock: String,
    ratio: String,
) -> Row {
    Row {
        scenario: scenario.into(),
        metric: metric.to_owned(),
        lua,
        rlock,
        ratio,
        plain: String::new(),
    }
}

impl Row {
    fn plain(mut self, plain: String) -> Row {
        self.plain = plain;
        self
    }
}

fn pair(metric: &str, scenario: impl Into<String>, lua: f64, rlock: f64) -> Row {
    row(scenario, metric, num(lua), num(rlock), ratio(rlock, lua))
}

fn uncontended_rows(rows: &mut Vec<Row>, depth: usize, runs: &[uncontended::Run; 3]) {
    let [lua, rl, plain] = runs;
    let s = format!("1. uncontended, {}", uncontended::load_name(depth));
    let s = s.as_str();
    let rate = pair(
        "acquire+release pairs/s",
        s,
        lua.pairs_per_s(),
        rl.pairs_per_s(),
    )
    .plain(format!(
        "{} ({})",
        num(plain.pairs_per_s()),
        ratio(plain.pairs_per_s(), lua.pairs_per_s())
    ));
    rows.push(rate);
    let us = pair(
        "server µs per pair (commandstats)",
        s,
        lua.server_us_per_pair(),
        rl.server_us_per_pair(),
    )
    .plain(num(plain.server_us_per_pair()));
    rows.push(us);
    rows.push(
        pair(
            "server CPU ms per 1,000 pairs",
            s,
            lua.cpu_ms_per_1000(),
            rl.cpu_ms_per_1000(),
        )
        .plain(num(plain.cpu_ms_per_1000())),
    );
}

fn contended_rows(rows: &mut Vec<Row>, s: &'static str, runs: &[contended::Run; 2]) {
    let [lua, rl] = runs;
    let label = format!(
        "acquisitions/s ({} / {} in the window)",
        lua.acquisitions, rl.acquisitions
    );
    rows.push(pair(&label, s, lua.per_s, rl.per_s));
    rows.push(pair(
        "handoff p50 µs (release returns → next acquire returns; < 0: the next holder's reply came first)",
        s,
        lua.handoff_p50_us,
        rl.handoff_p50_us,
    ));
    rows.push(pair(
        "handoff p99 µs",
        s,
        lua.handoff_p99_us,
        rl.handoff_p99_us,
    ));
    rows.push(pair(
        "server commands per acquisition",
        s,
        lua.commands_per_acquisition,
        rl.commands_per_acquisition,
    ));
    let fair = |r: &contended::Run| {
        if r.starved > 0 {
            format!("∞ ({} of 64 got none)", r.starved)
        } else {
            num(r.fairness)
        }
    };
    rows.push(row(
        s,
        "fairness: max/min acquisitions per waiter",
        fair(lua),
        fair(rl),
        ratio(rl.fairness, lua.fairness),
    ));
}

/// Every row, in the order of the scenarios.
pub fn rows(r: &Results) -> Vec<Row> {
    let mut rows = Vec::new();
    for (depth, runs) in &r.uncontended {
        uncontended_rows(&mut rows, *depth, runs);
    }
    contended_rows(
        &mut rows,
        "2. contended, 64 waiters, 1 process",
        &r.contended,
    );
    contended_rows(
        &mut rows,
        "6. contended, 64 waiters, 4 processes",
        &r.across,
    );
    let s = "3. holder crash, lease 1 s";
    let client = |i: usize| -> Vec<f64> { r.crash[i].iter().map(|t| t.client_ms).collect() };
    let server = |i: usize| -> Vec<f64> { r.crash[i].iter().map(|t| t.server_ms).collect() };
    let (lua, rl) = (&client(0), &client(1));
    let (lua_server, rl_server) = (server(0), server(1));
    let (lua50, lua99) = (
        crate::clock::percentile(lua, 50.0),
        crate::clock::percentile(lua, 99.0),
    );
    let (rl50, rl99) = (
        crate::clock::percentile(rl, 50.0),
        crate::clock::percentile(rl, 99.0),
    );
    let trials = format!(
        "deadline → acquisition p50 ms ({} / {} trials)",
        lua.len(),
        rl.len()
    );
    rows.push(pair(&trials, s, lua50, rl50));
    rows.push(pair("deadline → acquisition p99 ms", s, lua99, rl99));
    rows.push(pair(
        "server grants it, ms after the deadline, p99 (new holding's PEXPIRETIME, 1 ms steps)",
        s,
        crate::clock::percentile(&lua_server, 99.0),
        crate::clock::percentile(&rl_server, 99.0),
    ));
    rows.push(row(
        s,
        "rlock expiry handoff p99 ms",
        "—".into(),
        num(rl99),
        "—".into(),
    ));
    let s = "4. watchdog";
    let [lua, rl] = &r.watchdog;
    let locks = format!(
        "renewal round of {} locks, p50 ms ({} rounds)",
        rl.locks, rl.rounds
    );
    rows.push(pair(&locks, s, lua.round_ms_p50, rl.round_ms_p50));
    rows.push(pair(
        "server CPU ms per round",
        s,
        lua.server_cpu_ms_per_round,
        rl.server_cpu_ms_per_round,
    ));
    rows.push(pair(
        "server µs per renewal (commandstats)",
        s,
        lua.server_us_per_renewal,
        rl.server_us_per_renewal,
    ));
    let trips = row(
        s,
        "round trips per round (one connection)",
        lua.round_trips_per_round.to_string(),
        rl.round_trips_per_round.to_string(),
        "—".into(),
    );
    rows.push(trips);
    let s = "5. memory";
    rows.push(pair(
        "used_memory bytes per held lock",
        s,
        r.watchdog[0].bytes_per_lock,
        r.watchdog[1].bytes_per_lock,
    ));
    let [(lua_w, _), (rl_w, rl_wait)] = r.memory;
    rows.push(pair(
        "server bytes per queued waiter (rlock: its blocked connection; Lua: its share of one pub/sub connection)",
        s,
        lua_w,
        rl_w,
    ));
    rows.push(row(
        s,
        "… of which the blocked wait itself",
        "—".into(),
        num(rl_wait),
        "—".into(),
    ));
    rows
}
