//! Three real nodes swap master and replica every ~200 ms
//! (`FAILOVER`, a hand-made switch, `kill -9` and restart on the AOF, promotions) while
//! clients take, wait for, renew, release and force-release locks, plain and read-write.
//! Each run records what every client saw and checks it (`roleswap/checker.rs`): every
//! waiter got exactly one reply, no token was issued twice, no two holdings of one key
//! overlapped (read holds of a read-write lock aside); then every replica must equal its
//! master.
//!
//! Seeded: `RLOCK_ROLESWAP_SEED` (else one from the clock, printed); `RLOCK_ROLESWAP_SECS`
//! sets the length of a run (default 25 s). `RLOCK_ROLESWAP_FAILOVER_DELAY=0` runs it with a
//! known-unsafe setting, which the checker must catch (it did: 8 overlaps in one 25 s run).
//! A failing run writes its history and timed role changes to a file it names.

#[path = "roleswap/chaos.rs"]
mod chaos;
#[path = "roleswap/checker.rs"]
mod checker;
#[path = "roleswap/clients.rs"]
mod clients;
#[path = "roleswap/history.rs"]
mod history;
#[path = "roleswap/node.rs"]
mod node;
mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chaos::Deployment;
use clients::Shared;
use history::{Event, History, Op, Outcome};
use support::{keyspace, wait_until, Rng};

const CLIENTS: u64 = 6;

fn seed() -> u64 {
    let clock = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    Rng::seed_from_env("RLOCK_ROLESWAP_SEED", clock)
}

fn run_length() -> Duration {
    let secs = std::env::var("RLOCK_ROLESWAP_SECS")
        .ok()
        .and_then(|s| s.parse().ok());
    Duration::from_secs(secs.unwrap_or(25))
}

#[test]
#[ignore = "long: make test-all"]
fn locks_stay_safe_while_roles_swap() {
    let seed = seed();
    eprintln!("roleswap seed {seed} (RLOCK_ROLESWAP_SEED={seed} to run it again)");
    let mut rng = Rng::new(seed);
    let mut deployment = Deployment::start(3);
    let shared = Shared {
        master: Arc::clone(&deployment.master_port),
        stop: Arc::new(AtomicBool::new(false)),
        history: History::new(),
    };
    let mut threads: Vec<_> = (0..CLIENTS)
        .map(|id| {
            let (shared, seed) = (shared.clone(), rng.next_u64());
            std::thread::spawn(move || clients::client(shared, id, seed))
        })
        .collect();
    let (operator, op_seed) = (shared.clone(), rng.next_u64());
    threads.push(std::thread::spawn(move || {
        clients::operator(operator, op_seed)
    }));
    let mut actions = Vec::new();
    let end = Instant::now() + run_length();
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(rng.range(150, 250) as u64));
        let at = shared.history.now();
        let done = deployment.step(&mut rng);
        actions.push(format!("{at}..{}: {done}", shared.history.now()));
    }
    shared.stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().expect("a client thread panicked");
    }
    let events = shared.history.events();
    let mut found = checker::violations(&events);
    found.extend(replicas_differ(&deployment));
    found.extend(crashes(&deployment));
    eprintln!("{}", figures(&events, &actions));
    let dump = (!found.is_empty()).then(|| dump(seed, &events, &actions));
    assert!(
        found.is_empty(),
        "seed {seed}: {} violations:\n{}\nhistory and role changes in {dump:?}",
        found.len(),
        found.join("\n")
    );
}

/// Replicas whose keys (`DUMP` and absolute expiry) differ from the master's once settled.
fn replicas_differ(deployment: &Deployment) -> Vec<String> {
    deployment.settle();
    let master = deployment.master();
    let mut found = Vec::new();
    for node in deployment.nodes.iter().filter(|n| n.port != master.port) {
        // A lease can end between the two reads: read again until both agree.
        let mut last = None;
        let agree = wait_until(Duration::from_secs(10), || {
            let (a, b) = (keyspace(&mut master.conn()), keyspace(&mut node.conn()));
            let same = a == b;
            last = Some((a.len(), b.len()));
            same
        });
        if !agree {
            found.push(format!(
                "replica {} differs from master {}: {last:?} keys",
                node.port, master.port
            ));
        }
    }
    found
}

/// Nodes whose log shows a crash or a contained panic.
fn crashes(deployment: &Deployment) -> Vec<String> {
    let signs = [
        "ASSERTION FAILED",
        "crashed by signal",
        "panic caught",
        "rlock: bug",
    ];
    deployment
        .nodes
        .iter()
        .filter(|n| signs.iter().any(|s| n.log().contains(s)))
        .map(|n| format!("node {} logged a crash:\n{}", n.port, n.log()))
        .collect()
}

/// Writes the history and the role changes, in time order, to a file; returns its path.
fn dump(seed: u64, events: &[Event], actions: &[String]) -> std::path::PathBuf {
    let mut lines: Vec<(u64, String)> = events.iter().map(|e| (e.sent, format!("{e:?}"))).collect();
    for a in actions {
        let at = a
            .split("..")
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        lines.push((at, format!("ROLE {a}")));
    }
    lines.sort();
    let text: Vec<String> = lines.into_iter().map(|(_, l)| l).collect();
    let path = std::env::temp_dir().join(format!("rlock-roleswap-{seed}.log"));
    let _ = std::fs::write(&path, text.join("\n"));
    path
}

/// What the run did, for the closing note.
fn figures(events: &[Event], actions: &[String]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in events {
        let outcome = match &e.outcome {
            Outcome::Int(_) if matches!(e.op, Op::Acquire { wait: Some(_), .. }) => "grant(wait)",
            Outcome::Int(_) => "int",
            Outcome::Nil => "nil",
            Outcome::Error(text) => text.split_whitespace().next().unwrap_or("error"),
            Outcome::Lost => "lost",
            Outcome::NoReply => "NO REPLY",
            Outcome::Extra(_) => "EXTRA REPLY",
        };
        let op = format!("{:?}", e.op);
        let op = op.split([' ', '{']).next().unwrap_or("?").to_owned();
        *counts.entry(format!("{op} {outcome}")).or_default() += 1;
    }
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for a in actions {
        let what = a.split_once(": ").map_or(a.as_str(), |(_, w)| w);
        *kinds.entry(kind(what)).or_default() += 1;
    }
    let holdings = checker::holdings(events).len();
    format!(
        "roleswap: {} commands, {holdings} grants; {counts:?}; {} role changes {kinds:?}",
        events.len(),
        actions.len()
    )
}

/// The kind of a role change, from its description.
fn kind(action: &str) -> &'static str {
    let failed = ["refused", "did not"].iter().any(|f| action.contains(f));
    match (action.split(' ').next(), failed) {
        (Some("failover"), false) => "FAILOVER",
        (Some("switch"), false) => "switch by hand",
        (Some("kill"), _) if action.contains("replica") => "kill -9 replica",
        (Some("kill"), _) => "kill -9 master + promotion",
        _ => "not done",
    }
}
