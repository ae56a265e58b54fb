//! The hot commands in one table, from one run on one server: the uncontended
//! acquire+release pair (depth 16, no pipelining, and one connection) against the Lua lock,
//! `HSET`+`DEL`, two calls of an empty module command and the bare pair (the floor module's
//! `NOOP.HOLD` + `NOOP.FREE`: the pair's module API calls alone); an acquisition handed over
//! to a blocked client and to a ticket against the Lua lock's contended acquisition, the
//! uncontended pair and the same wait handed on by the floor module with nothing held; a
//! fenced `HSET` against a plain one. Each as the server's µs per operation, from `INFO
//! commandstats` and from `used_cpu_user` + `used_cpu_sys`, with the ratios the goals are
//! stated in.
//!
//! `make bench` prints it from its scenarios 1, 2, 8 and 9; `rlock-bench hot SECONDS` runs
//! just those measurements.

use std::fmt::Write;
use std::time::Duration;

use crate::contended;
use crate::fenced;
use crate::handoff_slice::Contended;
use crate::handoffs;
use crate::numbers::{num, ratio};
use crate::server::BenchServer;
use crate::side::{Scripts, Side};
use crate::suite::{self, SLICES};
use crate::uncontended;

/// What the table is made from.
pub struct Hot<'a> {
    /// Per load: [Lua, rlock, HSET+DEL], and the floor module's sides if it was loaded.
    pub uncontended: Vec<Pairs<'a>>,
    /// The Lua lock's contended acquisitions (64 waiters, one process).
    pub lua: &'a contended::Run,
    /// [tickets, blocked clients], and the same with nothing held if the floor module is
    /// loaded, or why they were not measured.
    pub handoffs: Result<(&'a [Contended; 2], Option<&'a [Contended; 2]>), &'a str>,
    /// [`HSET`, `LOCK.FENCED ... HSET`].
    pub fenced: &'a [fenced::Run; 2],
}

/// `hot SECONDS`: the table's measurements alone, on a server started here; SECONDS per
/// side per measurement.
pub fn alone(args: &[String], module: &std::path::Path) -> Result<(), String> {
    let [seconds] = args else {
        return Err("usage: rlock-bench hot SECONDS".to_owned());
    };
    let seconds: f64 = seconds.parse().map_err(|_| "SECONDS: a number")?;
    let duration = Duration::from_secs_f64(seconds);
    let server = BenchServer::start(module)?;
    let port = server.port();
    let scripts = Scripts::load(&mut server.conn()).map_err(|e| e.to_string())?;
    let mut pairs = Vec::new();
    for depth in [16, 1, uncontended::PAIRED, uncontended::ALONE] {
        eprintln!("uncontended, {}", uncontended::load_name(depth));
        let slice = duration / SLICES as u32;
        pairs.push((
            depth,
            suite::alternate(|side| uncontended::run(port, &scripts, side, depth, slice)),
        ));
    }
    eprintln!("contended: the Lua lock");
    let lua = contended::in_process(port, Side::Lua, duration);
    eprintln!("contended: tickets and blocked clients");
    let handed = handoffs::run(port, duration / 4, 4);
    eprintln!("fenced writes");
    let fenced = fenced::run(port, duration);
    let hot = Hot {
        uncontended: pairs
            .iter()
            .map(|(d, (r, f))| (*d, r, f.as_ref()))
            .collect(),
        lua: &lua,
        handoffs: handed
            .as_ref()
            .map(|(modes, floor)| (modes, floor.as_ref()))
            .map_err(String::as_str),
        fenced: &fenced,
    };
    let mut out = String::new();
    table(&mut out, &hot);
    println!("{out}");
    Ok(())
}

fn verdict(value: f64, goal: f64) -> &'static str {
    if value <= goal {
        "met"
    } else {
        "not met"
    }
}

/// A ratio and whether it is within `goal`.
fn against(value: f64, base: f64, goal: f64) -> String {
    if base > 0.0 {
        format!("{} ({})", ratio(value, base), verdict(value / base, goal))
    } else {
        "—".into()
    }
}

/// One figure of a run.
type Measure = fn(&uncontended::Run) -> f64;

/// One load's pairs: (depth, [Lua, rlock, HSET+DEL], [the empty module command, the bare
/// pair]).
pub type Pairs<'a> = (
    usize,
    &'a [uncontended::Run; 3],
    Option<&'a [uncontended::Run; 2]>,
);

/// The loads in the tables' order: depth 16, no pipelining, then one connection.
pub fn in_order(mut loads: Vec<Pairs<'_>>) -> Vec<Pairs<'_>> {
    loads.sort_by_key(|(depth, ..)| uncontended::load_order(*depth));
    loads
}

/// The three tables.
pub fn table(out: &mut String, hot: &Hot<'_>) {
    let _ = writeln!(
        out,
        "\nThe hot commands, server µs per operation (commandstats: the commands' own time; used_cpu: the whole server's CPU, network included):\n"
    );
    let _ = writeln!(out, "| Load | Measure | Lua | rlock | rlock ÷ Lua (goal ≤ ×0.30) | HSET+DEL | rlock ÷ HSET+DEL (goal ≤ ×3) | empty module command ×2 | rlock ÷ empty ×2 | the contract's API calls alone | those ÷ Lua | rlock ÷ those |");
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (depth, [lua, rl, plain], floors) in &hot.uncontended {
        let measures: [(&str, Measure); 2] = [
            ("commandstats µs per pair", |r| r.server_us_per_pair()),
            ("used_cpu µs per pair", |r| r.cpu_ms_per_1000()),
        ];
        for (name, of) in measures {
            let (a, b, c) = (of(lua), of(rl), of(plain));
            let floor = floors.map(|[noop, _]| of(noop));
            let bare = floors.map(|[_, bare]| of(bare));
            let _ = writeln!(
                out,
                "| uncontended pair, {} | {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                uncontended::load_name(*depth),
                num(a),
                num(b),
                against(b, a, 0.30),
                num(c),
                against(b, c, 3.0),
                floor.map_or("not loaded".into(), num),
                floor.map_or("—".into(), |f| ratio(b, f)),
                bare.map_or("not loaded".into(), num),
                bare.map_or("—".into(), |f| ratio(f, a)),
                bare.map_or("—".into(), |f| ratio(b, f)),
            );
        }
    }
    contended_table(out, hot);
    fenced_table(out, hot.fenced);
}

/// Handed-over acquisitions against the Lua lock's, the uncontended pair (no pipelining, and
/// on one connection served as the handoff's commands are: a ticket's release and the next
/// wait in one turn of the event loop, a blocked client's commands each in a turn of its
/// own; a handoff is never read in one turn with another, since each acquisition waits for
/// the release before it) and the same wait handed on by the floor module.
fn contended_table(out: &mut String, hot: &Hot<'_>) {
    let _ = writeln!(
        out,
        "\nContended, {} waits on one lock, every acquisition a handoff (server µs per acquisition):\n",
        crate::handoff_slice::waits()
    );
    let (handed, floor) = match hot.handoffs {
        Ok(handed) => handed,
        Err(why) => {
            let _ = writeln!(out, "not measured: {why}");
            return;
        }
    };
    let pair_at = |depth: usize| {
        let found = hot.uncontended.iter().find(|(d, ..)| *d == depth);
        found.map(|(_, runs, _)| [runs[1].server_us_per_pair(), runs[1].cpu_ms_per_1000()])
    };
    let pairs = [
        pair_at(1),
        pair_at(uncontended::PAIRED),
        pair_at(uncontended::ALONE),
    ];
    let lua_n = hot.lua.acquisitions.max(1) as f64;
    let lua = [
        hot.lua.server.usec_of(Side::Lua.top_level_commands()) as f64 / lua_n,
        1e6 * hot.lua.server.cpu_s / lua_n,
    ];
    let _ = writeln!(out, "| rlock waits as | Measure | Lua | rlock | rlock ÷ Lua | uncontended pair, no pipelining | rlock ÷ that (goal ≤ ×2) | uncontended pair, one connection, served as this handoff | rlock ÷ that (goal ≤ ×2) | the same wait handed on with nothing held | rlock ÷ that |");
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (side, c) in [(1, &handed[1]), (0, &handed[0])] {
        let who = if side == 1 {
            "blocked clients (`LOCK.ACQUIRE ... WAIT 0`)"
        } else {
            "tickets (`LOCK.WAIT`)"
        };
        let floors = floor.map(|f| [f[side].commandstats_us(), f[side].cpu_us()]);
        for (i, (name, value)) in [
            ("commandstats", c.commandstats_us()),
            ("used_cpu", c.cpu_us()),
        ]
        .into_iter()
        .enumerate()
        {
            let [p, paired, alone] = pairs.map(|p| p.map_or(0.0, |p| p[i]));
            // Tickets: the pair in one write; blocked clients: each command alone.
            let (like, how) = if side == 0 {
                (paired, "in one write")
            } else {
                (alone, "each command alone")
            };
            let (floor, over_floor) = match floors {
                Some(f) => (num(f[i]), ratio(value, f[i])),
                None => ("not loaded".into(), "—".into()),
            };
            let _ = writeln!(
                out,
                "| {who} | {name} µs | {} | {} | {} | {} | {} | {} ({how}) | {} | {floor} | {over_floor} |",
                num(lua[i]),
                num(value),
                ratio(value, lua[i]),
                num(p),
                against(value, p, 2.0),
                num(like),
                against(value, like, 2.0),
            );
        }
    }
}

fn fenced_table(out: &mut String, runs: &[fenced::Run; 2]) {
    let [plain, fenced] = runs;
    let _ = writeln!(
        out,
        "\nA fenced write, {} connections, depth {} (server µs per write):\n",
        fenced::CONNECTIONS,
        fenced::DEPTH
    );
    let _ = writeln!(
        out,
        "| Measure | `HSET` | `LOCK.FENCED ... HSET` | ratio (goal ≤ ×3) |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let cpu = |r: &fenced::Run| 1e6 * r.server.cpu_s / r.writes.max(1) as f64;
    let rows = [
        (
            "commandstats µs",
            plain.server_us_per_write("hset"),
            fenced.server_us_per_write("lock.fenced"),
        ),
        ("used_cpu µs", cpu(plain), cpu(fenced)),
    ];
    for (name, a, b) in rows {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |",
            num(a),
            num(b),
            against(b, a, 3.0)
        );
    }
}
