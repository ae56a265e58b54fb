//! rlock-bench: runs rlock's `LOCK.*` commands and a Redisson-style Lua lock against the
//! same `redis-server` (started here, on loopback, with the module loaded), alternating
//! between them, and prints a Markdown table of both sides and their ratio.
//!
//! Usage: `cargo run --release -p rlock-bench -- [--quick] [--duration-secs N]`.
//! The module comes from `$RLOCK_MODULE`, else `target/release/librlock.so`.
//! The table also goes to `target/bench-report.md`.
//!
//! Layout: `suite.rs` runs the scenarios (`uncontended.rs`, `contended.rs`, `crash.rs`,
//! `watchdog.rs`); `hot.rs` the hot commands' table (scenarios 1, 2, 8 and 9 against their goals
//! and floors); `side.rs` holds both sides' commands and the baseline's scripts, `redisson.rs` its
//! way of waiting; `redlock.rs` scenario 7 (the client crate's RedLock over three servers against
//! its one-server lock); `fenced.rs` scenario 8 (a fenced write against a plain one); `waiting.rs`
//! scenario 9 (waiting at scale: `waits.rs` many waits held by one client process, `handoffs.rs`
//! contended handoffs (`handoffs_blocked.rs` by blocked clients, `handoff_slice.rs` what both
//! share), `resp3.rs` the tickets' raw RESP3 connection); `mixed.rs` scenario 10 (native and
//! Redisson-style waiters on one key); `rwlock.rs` scenario 11 (a read-mostly read-write lock
//! against Redisson's `RReadWriteLock` scripts, `rw_table.rs` its figures); `semaphore.rs` scenario
//! 12 (a contended semaphore against Redisson's `RPermitExpirableSemaphore` scripts, `sem_side.rs`
//! both sides' calls, `sem_table.rs` its figures); `losses.rs` scenario 13 (how soon a holder
//! learns that the server ended its holding); `server.rs` the server and its statistics;
//! `report.rs` the table.

mod client_waits;
mod clock;
mod contended;
mod crash;
mod fenced;
mod handoff_slice;
mod handoffs;
mod handoffs_blocked;
mod hot;
mod losses;
mod mixed;
mod numbers;
mod redisson;
mod redlock;
mod report;
mod resp3;
mod rows;
#[path = "../../tests/support/redisson_rwlock.rs"]
mod rw_scripts;
mod rw_side;
mod rw_table;
mod rwlock;
#[path = "../../tests/support/redisson_semaphore.rs"]
mod sem_scripts;
mod sem_side;
mod sem_table;
mod semaphore;
mod server;
mod side;
mod suite;
mod uncontended;
mod wait_mode;
mod waiting;
mod waiting_table;
mod waits;
mod watchdog;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "usage: rlock-bench [--quick] [--duration-secs N]
       rlock-bench hot SECONDS                               (the hot commands' table alone, on a server started here)
       rlock-bench losses TRIALS                             (scenario 13 alone: how soon lost() resolves, on a server started here)
       rlock-bench load PORT lua|rlock|plain|noop|bare DEPTH SECONDS  (scenario 1 alone, against a running server)
       rlock-bench contend PORT lua|rlock SECONDS            (scenario 2 alone, against a running server)
       rlock-bench redlock SECONDS                           (scenario 7 alone, on three servers started here)
       rlock-bench fenced SECONDS                            (scenario 8 alone, on a server started here)
       rlock-bench waiting WAITS SECONDS                     (scenario 9 alone, on a server started here)
       rlock-bench handoffs PORT [floor-]tickets|block SECONDS [WAITS]  (scenario 9's contended handoffs, 64 waits unless told, against a running server; floor-: the floor module's, nothing held)
       rlock-bench mixed SECONDS                             (scenario 10 alone, on a server started here)
       rlock-bench rwlock SECONDS                            (scenario 11 alone, on a server started here)
       rlock-bench semaphore SECONDS                         (scenario 12 alone, on a server started here)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("worker") => contended::worker_main(&args[1..]),
        Some("hot") => module().and_then(|m| hot::alone(&args[1..], &m)),
        Some("losses") => module().and_then(|m| losses::alone(&args[1..], &m)),
        Some("load") => load(&args[1..]),
        Some("contend") => contend(&args[1..]),
        Some("redlock") => redlock_alone(&args[1..]),
        Some("fenced") => fenced_alone(&args[1..]),
        Some("waiting") => waiting_alone(&args[1..]),
        Some("waits") => waits::process_main(&args[1..]),
        Some("handoffs") => handoffs_alone(&args[1..]),
        Some("mixed") => mixed_alone(&args[1..]),
        Some("rwlock") => module().and_then(|m| rwlock::alone(&args[1..], &m)),
        Some("rw-worker") => rwlock::worker_main(&args[1..]),
        Some("semaphore") => module().and_then(|m| semaphore::alone(&args[1..], &m)),
        Some("sem-worker") => semaphore::worker_main(&args[1..]),
        _ => parse(&args).and_then(|plan| bench(&plan)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlock-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<suite::Plan, String> {
    let mut quick = false;
    let mut seconds = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--duration-secs" => {
                let n = it
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|n| *n > 0.0);
                seconds =
                    Some(n.ok_or(format!("--duration-secs needs a positive number\n{USAGE}"))?);
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let default = if quick { 1.0 } else { 6.0 };
    let duration = Duration::from_secs_f64(seconds.unwrap_or(default));
    Ok(if quick {
        suite::Plan::quick(duration)
    } else {
        suite::Plan::full(duration)
    })
}

fn workspace() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The module to load: `$RLOCK_MODULE`, else the workspace's release build.
fn module() -> Result<PathBuf, String> {
    let module = std::env::var_os("RLOCK_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release/librlock.so"));
    if !module.is_file() {
        return Err(format!(
            "module not found at {}: run `cargo build --release -p rlock` first",
            module.display()
        ));
    }
    Ok(module)
}

/// `redlock SECONDS`: scenario 7 alone, on three servers started here.
fn redlock_alone(args: &[String]) -> Result<(), String> {
    let [seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let module = module()?;
    let servers = [
        server::BenchServer::start(&module)?,
        server::BenchServer::start(&module)?,
        server::BenchServer::start(&module)?,
    ];
    let [a, b, c] = &servers;
    let runs = redlock::run(&[a, b, c], Duration::from_secs_f64(seconds));
    let mut table = String::new();
    report::redlock_table(&mut table, &runs);
    println!("{table}");
    Ok(())
}

/// `fenced SECONDS`: scenario 8 alone, on a server started here.
fn fenced_alone(args: &[String]) -> Result<(), String> {
    let [seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let server = server::BenchServer::start(&module()?)?;
    let runs = fenced::run(server.port(), Duration::from_secs_f64(seconds));
    let mut table = String::new();
    fenced::table(&mut table, &runs);
    println!("{table}");
    Ok(())
}

/// `mixed SECONDS`: scenario 10 alone, on a server started here.
fn mixed_alone(args: &[String]) -> Result<(), String> {
    let [seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let server = server::BenchServer::start(&module()?)?;
    let run = mixed::run(server.port(), Duration::from_secs_f64(seconds));
    let mut table = String::new();
    mixed::table(&mut table, &run);
    println!("{table}");
    Ok(())
}

/// `waiting WAITS SECONDS`: scenario 9 alone, on a server started here, with the Lua
/// baseline's contended cost and the uncontended pair measured for SECONDS each to compare
/// with; SECONDS is also each contended slice's length.
fn waiting_alone(args: &[String]) -> Result<(), String> {
    let [waits, seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let waits: usize = waits.parse().map_err(|_| USAGE.to_owned())?;
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let duration = Duration::from_secs_f64(seconds);
    let server = server::BenchServer::start(&module()?)?;
    let port = server.port();
    let scripts = side::Scripts::load(&mut server.conn()).map_err(|e| e.to_string())?;
    let pair = uncontended::run(port, &scripts, side::Side::Rlock, 1, duration);
    let lua = contended::in_process(port, side::Side::Lua, duration);
    let others = suite::others(&pair, &lua);
    let measured = waiting::run(port, waits, duration);
    let mut table = String::new();
    waiting_table::table(&mut table, &measured, &others);
    println!("{table}");
    Ok(())
}

/// `handoffs PORT [floor-]tickets|block SECONDS [WAITS]`: 64 waits (or WAITS) on one lock
/// handing it on, against a server started elsewhere (for instance under callgrind);
/// `floor-`: the floor module's waits, handed on with nothing held.
fn handoffs_alone(args: &[String]) -> Result<(), String> {
    let (port, mode, seconds) = match args {
        [port, mode, seconds] => (port, mode, seconds),
        [port, mode, seconds, waits] => {
            let waits: usize = waits.parse().map_err(|_| USAGE.to_owned())?;
            if waits < 2 {
                return Err("WAITS must be at least 2: one holds, the others wait".into());
            }
            handoff_slice::choose_waits(waits);
            (port, mode, seconds)
        }
        _ => return Err(USAGE.to_owned()),
    };
    let port: u16 = port.parse().map_err(|_| USAGE.to_owned())?;
    let (floor, name) = match mode.strip_prefix("floor-") {
        Some(name) => (true, name),
        None => (false, mode.as_str()),
    };
    let mode = match name {
        "tickets" => wait_mode::Mode::Tickets,
        "block" => wait_mode::Mode::Block,
        _ => return Err(USAGE.to_owned()),
    };
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let key = format!("h:{}:{}", mode.name(), std::process::id());
    let run = handoffs::once(port, mode, floor, &key, Duration::from_secs_f64(seconds))?;
    println!(
        "{}{}: {} handoffs, {:.2} commandstats µs and {:.2} used_cpu µs per handoff; release → grant p50 {:.0} µs, p99 {:.0} µs",
        if floor { "floor-" } else { "" },
        mode.name(),
        run.grants,
        run.commandstats_us(),
        run.cpu_us(),
        run.gap_us(50.0),
        run.gap_us(99.0)
    );
    Ok(())
}

fn bench(plan: &suite::Plan) -> Result<(), String> {
    let module = module()?;
    let server = server::BenchServer::start(&module)?;
    let others = [
        server::BenchServer::start(&module)?,
        server::BenchServer::start(&module)?,
    ];
    let results = suite::run(plan, &server, &others);
    let trials = if plan.waits < 10_000 { 50 } else { 300 };
    let losses = losses::run(&server, trials, trials / 10);
    drop(server);
    drop(others);
    let mut table = report::render(&results);
    losses::table(&mut table, &losses);
    println!("{table}");
    let path = workspace().join("target/bench-report.md");
    std::fs::write(&path, &table).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    eprintln!("report written to {}", path.display());
    Ok(())
}

/// `load PORT SIDE DEPTH SECONDS`: scenario 1 alone against a server started elsewhere
/// (for instance under `perf record`).
fn load(args: &[String]) -> Result<(), String> {
    let [port, side, depth, seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let port: u16 = port.parse().map_err(|_| USAGE.to_owned())?;
    let side = side::Side::parse(side).ok_or(USAGE.to_owned())?;
    let depth: usize = depth.parse().map_err(|_| USAGE.to_owned())?;
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let mut con = server::connect(port).map_err(|e| e.to_string())?;
    let scripts = side::Scripts::load(&mut con).map_err(|e| e.to_string())?;
    let run = uncontended::run(
        port,
        &scripts,
        side,
        depth,
        Duration::from_secs_f64(seconds),
    );
    println!(
        "{}: {:.0} pairs/s, {:.2} server µs per pair, {:.2} server CPU ms per 1,000 pairs",
        side.name(),
        run.pairs_per_s(),
        run.server_us_per_pair(),
        run.cpu_ms_per_1000()
    );
    Ok(())
}

/// `contend PORT SIDE SECONDS`: scenario 2 alone against a server started elsewhere.
fn contend(args: &[String]) -> Result<(), String> {
    let [port, side, seconds] = args else {
        return Err(USAGE.to_owned());
    };
    let port: u16 = port.parse().map_err(|_| USAGE.to_owned())?;
    let side = side::Side::parse(side).ok_or(USAGE.to_owned())?;
    let seconds: f64 = seconds.parse().map_err(|_| USAGE.to_owned())?;
    let run = contended::in_process(port, side, Duration::from_secs_f64(seconds));
    println!(
        "{}: {:.0} acquisitions/s, {:.1} server commands and {:.1} server CPU µs per acquisition",
        side.name(),
        run.per_s,
        run.commands_per_acquisition,
        1e6 * run.server.cpu_s / run.acquisitions.max(1) as f64
    );
    Ok(())
}
