//! One run: the deployment, the resource, the workers and the faults for `secs` seconds;
//! then everything healed, the replicas compared, the logs read, and the history judged.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::check::{judge, unavailability, Counts};
use crate::check_watch::CONTROL;
use crate::faults::Injector;
use crate::history::{now_us, History};
use crate::resource::Resource;
use crate::rng::Rng;
use crate::topology::{poll, Deployment, Topology};
use crate::watch::Watch;
use crate::workers::child::ChildWorker;
use crate::workers::Ctx;

pub struct Settings {
    pub topology: Topology,
    pub secs: u64,
    pub seed: u64,
    pub faults: Vec<String>,
    pub unsafe_mode: bool,
    /// The kinds of workers (see `crew::KINDS`).
    pub workers: Vec<String>,
}

/// Runs and prints the report; the counts.
pub fn run(s: &Settings) -> Counts {
    let runtime = Runtime::new().unwrap_or_else(|e| panic!("tokio runtime: {e}"));
    let (resource_server, resource) = Resource::start(!s.unsafe_mode);
    let mut deployment = Deployment::start(s.topology, runtime.handle(), s.unsafe_mode);
    let history = History::default();
    let ctx = Arc::new(Ctx {
        history: history.clone(),
        resource: resource.clone(),
        rng: Rng::new(s.seed.wrapping_mul(31).wrapping_add(7)),
        stop: Default::default(),
        keys: ["chaos:a", "chaos:b", "chaos:c"]
            .map(str::to_owned)
            .to_vec(),
        ignore_loss: s.unsafe_mode,
    });
    let mut crew = crate::crew::start(&runtime, &ctx, &deployment, &s.workers, s.seed);
    let watched: Vec<(String, u16)> = deployment
        .servers
        .iter()
        .map(|p| (p.name.clone(), p.port))
        .collect();
    let control = (CONTROL.to_owned(), resource_server.port);
    // The plain locks' keys and the read-write workers'.
    let rw_keys = crate::workers::rw::RW_KEYS.iter().map(|k| k.to_string());
    let sampled: Vec<String> = ctx.keys.iter().cloned().chain(rw_keys).collect();
    let watch = Watch::start(&watched, control, &sampled, &history);
    inject_faults(s, &mut deployment, &mut crew.children, &history);
    // Gaps are measured up to here: the end of the faults, not of the settling.
    let ended_us = now_us();
    watch.stop();
    ctx.stop.store(true, Ordering::Relaxed);
    deployment.heal();
    wind_down(&runtime, crew);
    let counts = judge_run(&history.events(), &mut deployment, ended_us);
    if s.workers.iter().any(|w| w == "rw") {
        eprintln!(
            "read-write steps: {}",
            crate::workers::rw_tally::take_tally()
        );
    }
    if s.workers.iter().any(|w| w == "sem" || w == "latch") {
        let steps = crate::workers::sem_tally::take_tally();
        eprintln!("semaphore and latch steps: {steps}");
    }
    runtime.shutdown_timeout(Duration::from_secs(1));
    counts
}

/// Waits (bounded) for every worker to stop.
fn wind_down(runtime: &Runtime, crew: crate::crew::Crew) {
    for mut child in crew.children {
        child.finish(Duration::from_secs(10));
    }
    runtime.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(15), futures_all(crew.tasks)).await;
    });
    poll(Duration::from_secs(40), || {
        crew.threads.iter().all(JoinHandle::is_finished)
    });
}

/// Judges the history, compares the replicas, reads the logs, and prints what it found.
fn judge_run(
    events: &[crate::history::Event],
    deployment: &mut Deployment,
    ended_us: u64,
) -> Counts {
    let watch = crate::check_watch::describe(events);
    let sem = crate::check_sem::describe(events);
    // Latch lines apart from the semaphores': 30 of each, so that many of one kind never
    // hide the other.
    let latch = crate::check_sem::early(events);
    let late = crate::check_late::describe(events);
    for line in crate::check::describe(events)
        .iter()
        .take(30)
        .chain(watch.iter().take(30))
        .chain(sem.iter().take(30))
        .chain(latch.iter().take(30))
        .chain(late.iter().take(30))
    {
        eprintln!("{line}");
    }
    let mut counts = judge(events);
    counts.replica_diffs = if deployment.topology == Topology::Cluster {
        deployment.cluster_replica_diffs()
    } else {
        deployment.replica_diffs()
    };
    counts.crashes = deployment.crashes();
    let outside = deployment.outside_stops();
    if outside > 0 {
        println!(
            "outside stops: {outside} (SIGTERM or SIGKILL from outside this run; not crashes)"
        );
    }
    if let Some((what, ms)) = crate::check::worst_fault(events, ended_us) {
        eprintln!("longest unavailability: {ms} ms after {what}");
    }
    let (p50, max) = unavailability(events, ended_us);
    println!("unavailability after each fault: p50={p50}ms max={max}ms");
    counts
}

async fn futures_all(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for task in tasks {
        let _ = task.await;
    }
}

fn inject_faults(
    s: &Settings,
    deployment: &mut Deployment,
    children: &mut Vec<ChildWorker>,
    history: &History,
) {
    let rng = Rng::new(s.seed);
    let started = Instant::now();
    let until = started + Duration::from_secs(s.secs);
    // The workers warm up before the first fault.
    std::thread::sleep(Duration::from_secs(2).min(until.saturating_duration_since(Instant::now())));
    while Instant::now() < until && !s.faults.is_empty() {
        let kind = rng.pick(&s.faults).clone();
        let mut injector = Injector {
            deployment,
            children,
            history,
            rng: &rng,
            unsafe_mode: s.unsafe_mode,
        };
        injector.inject(&kind);
        let _ = deployment.crashes(); // restarts a process that died unasked
        let gap = rng
            .millis(500, 2500)
            .min(until.saturating_duration_since(Instant::now()));
        std::thread::sleep(gap);
    }
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

/// The last line: every safety count.
pub fn safety_line(s: &Settings, c: &Counts) -> String {
    format!(
        "SAFETY topology={} seed={} secs={} acquisitions={} faults={} overlaps={} stale_accepted={} \
         repeated_tokens={} backwards_tokens={} lost_replies={} double_replies={} replica_diffs={} crashes={} \
         leaked_holds={} stalls={} rw_acquisitions={} rw_overlaps={} rw_wrong_replies={} \
         sem_acquisitions={} sem_overlaps={} latch_waits={} latch_early={} late_losses={}",
        s.topology.name(), s.seed, s.secs, c.acquisitions, c.faults, c.overlaps, c.stale_accepted,
        c.repeated_tokens, c.backwards_tokens, c.lost_replies, c.double_replies, c.replica_diffs, c.crashes,
        c.leaked_holds, c.stalls, c.rw_acquisitions, c.rw_overlaps, c.rw_wrong_replies,
        c.sem_acquisitions, c.sem_overlaps, c.latch_waits, c.latch_early, c.late_losses
    )
}
