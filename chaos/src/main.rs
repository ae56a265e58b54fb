//! `rlock-chaos`: runs rlock under random faults chosen by a seed, records what every
//! client saw, and judges the history (see docs/chaos.md).
//!
//! `rlock-chaos [--topology single|sentinel|redlock|cluster|mix] [--secs N] [--seed N]
//! [--faults kill,stop,...|all|none] [--workers client,owner,...|all] [--unsafe]`; `rlock-chaos worker ...` is a child worker.

mod check;
mod check_gaps;
mod check_late;
mod check_sem;
mod check_watch;
mod cluster;
mod crew;
mod deploy;
mod faults;
mod faults_conn;
mod faults_end;
mod faults_kinds;
mod history;
mod history_sem;
mod machine;
mod migrate_atomic;
mod process;
mod proxy;
mod resource;
mod rng;
mod run;
mod sentinel;
mod topology;
mod watch;
mod workers;

use std::process::ExitCode;

use run::Settings;
use topology::Topology;

const TOPOLOGIES: [Topology; 4] = [
    Topology::Single,
    Topology::Sentinel,
    Topology::Redlock,
    Topology::Cluster,
];

struct Args {
    topology: String,
    secs: u64,
    seed: u64,
    faults: String,
    workers: String,
    unsafe_mode: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        topology: "mix".into(),
        secs: 120,
        seed: 1,
        faults: "all".into(),
        workers: "all".into(),
        unsafe_mode: false,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--topology" => parsed.topology = value()?,
            "--secs" => parsed.secs = value()?.parse().map_err(|_| "--secs: a number")?,
            "--seed" => parsed.seed = value()?.parse().map_err(|_| "--seed: a number")?,
            "--faults" => parsed.faults = value()?,
            "--workers" => parsed.workers = value()?,
            "--unsafe" => parsed.unsafe_mode = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(parsed)
}

/// The settings of each run: `mix` shares the seconds between the topologies.
fn settings(a: &Args) -> Result<Vec<Settings>, String> {
    let topologies = match a.topology.as_str() {
        "mix" => TOPOLOGIES.to_vec(),
        name => vec![Topology::parse(name).ok_or(format!("unknown topology {name}"))?],
    };
    let secs = (a.secs / topologies.len() as u64).max(5);
    topologies
        .into_iter()
        .map(|topology| {
            let available = faults::available(topology);
            let faults: Vec<String> = if a.faults == "all" {
                available.iter().map(|f| f.to_string()).collect()
            } else if a.faults == "none" {
                Vec::new()
            } else {
                let chosen: Vec<String> = a.faults.split(',').map(str::to_owned).collect();
                if let Some(bad) = chosen.iter().find(|f| !faults::ALL.contains(&f.as_str())) {
                    return Err(format!(
                        "unknown fault {bad} (known: {})",
                        faults::ALL.join(",")
                    ));
                }
                chosen
                    .into_iter()
                    .filter(|f| available.contains(&f.as_str()))
                    .collect()
            };
            let workers = match a.workers.as_str() {
                "all" => crew::default_kinds(topology, a.unsafe_mode),
                list => {
                    let chosen: Vec<String> = list.split(',').map(str::to_owned).collect();
                    if let Some(bad) = chosen.iter().find(|w| !crew::KINDS.contains(&w.as_str())) {
                        return Err(format!(
                            "unknown worker {bad} (known: {})",
                            crew::KINDS.join(",")
                        ));
                    }
                    chosen
                }
            };
            Ok(Settings {
                topology,
                secs,
                seed: a.seed,
                faults,
                unsafe_mode: a.unsafe_mode,
                workers,
            })
        })
        .collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("worker") {
        return match workers::child::main(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rlock-chaos worker: {e}");
                ExitCode::from(2)
            }
        };
    }
    let runs = match parse(&args).and_then(|a| settings(&a)) {
        Ok(runs) => runs,
        Err(e) => {
            eprintln!("rlock-chaos: {e}");
            return ExitCode::from(2);
        }
    };
    let mut violations = 0;
    for s in &runs {
        eprintln!("== workers {}", s.workers.join(","));
        eprintln!(
            "== {} for {} s, seed {}, faults {}",
            s.topology.name(),
            s.secs,
            s.seed,
            s.faults.join(",")
        );
        let counts = run::run(s);
        violations += counts.violations();
        println!("{}", run::safety_line(s, &counts));
    }
    if violations == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
