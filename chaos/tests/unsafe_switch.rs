//! The checker is trusted only after it has caught a known-unsafe setting: with fencing off
//! and holder processes paused past their lease, a short run must report violations, name
//! them, and exit with status 1; with workers that forget holdings and a `DEBUG SLEEP` the
//! checker is not told of, it must count leaked holds and stalls; with read-write workers
//! alone, which then hold past their lease and forget holdings, it must count overlaps of
//! read-write locks and leaked holds; with semaphore and latch workers alone, which then
//! believe past their lease and count a timeout as a release, it must count a semaphore
//! over its permits and a latch released early; with loss workers whose client does not
//! listen for the server's announcements, it must count late losses.

use std::process::Command;

/// Seeds to try: whether a paused holder was holding when it was paused is up to timing, so
/// one short run may find nothing; one of these must.
const SEEDS: [u64; 4] = [3, 4, 5, 6];

#[test]
fn unsafe_switch_reports_violations_and_fails() {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = unsafe_run(seed);
        if run.found_violations() {
            return run.assert_reported();
        }
        runs.push(run.safety);
    }
    panic!("no unsafe run reported a violation: {runs:#?}");
}

#[test]
fn unsafe_switch_counts_leaked_holds_and_stalls() {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = unsafe_run_with(seed, "freeze");
        if run.count("leaked_holds") > 0 && run.count("stalls") > 0 {
            assert!(run.stderr.contains("leaked hold on "), "{}", run.stderr);
            assert!(run.stderr.contains("stall on "), "{}", run.stderr);
            return assert_eq!(run.status, Some(1), "{}", run.safety);
        }
        runs.push(run.safety);
    }
    panic!("no unsafe run counted both a leaked hold and a stall: {runs:#?}");
}

#[test]
fn unsafe_switch_makes_read_write_workers_overlap_and_leak() {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = unsafe_run_of(seed, "none", "rw");
        assert!(run.count("rw_acquisitions") > 0, "{}", run.safety);
        if run.count("rw_overlaps") > 0 && run.count("leaked_holds") > 0 {
            assert!(run.count("overlaps") >= run.count("rw_overlaps"));
            assert!(run.stderr.contains("overlap on rw:"), "{}", run.stderr);
            assert!(run.stderr.contains("leaked hold on rw:"), "{}", run.stderr);
            return assert_eq!(run.status, Some(1), "{}", run.safety);
        }
        runs.push(run.safety);
    }
    panic!("no unsafe run of read-write workers counted an overlap and a leak: {runs:#?}");
}

#[test]
fn unsafe_switch_makes_semaphore_and_latch_workers_fail() {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = unsafe_run_of(seed, "none", "sem,latch");
        assert!(run.count("sem_acquisitions") > 0, "{}", run.safety);
        assert!(run.count("latch_waits") > 0, "{}", run.safety);
        if run.count("sem_overlaps") > 0 && run.count("latch_early") > 0 {
            assert!(run.count("overlaps") >= run.count("sem_overlaps"));
            assert!(
                run.stderr.contains("over its permits on sem:"),
                "{}",
                run.stderr
            );
            assert!(
                run.stderr.contains("latch wait ended early: "),
                "{}",
                run.stderr
            );
            return assert_eq!(run.status, Some(1), "{}", run.safety);
        }
        runs.push(run.safety);
    }
    panic!("no unsafe run of semaphore and latch workers failed both rules: {runs:#?}");
}

struct UnsafeRun {
    seed: u64,
    safety: String,
    stderr: String,
    status: Option<i32>,
}

fn unsafe_run(seed: u64) -> UnsafeRun {
    unsafe_run_with(seed, "holder-stop")
}

fn unsafe_run_with(seed: u64, faults: &str) -> UnsafeRun {
    unsafe_run_of(seed, faults, "all")
}

#[test]
fn unsafe_switch_makes_loss_workers_late() {
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = unsafe_run_of(seed, "end-holding", "loss");
        if run.count("late_losses") > 0 {
            assert!(run.stderr.contains("late loss on loss:"), "{}", run.stderr);
            return assert_eq!(run.status, Some(1), "{}", run.safety);
        }
        runs.push(run.safety);
    }
    panic!("no unsafe run of loss workers counted a late loss: {runs:#?}");
}

fn unsafe_run_of(seed: u64, faults: &str, workers: &str) -> UnsafeRun {
    let output = Command::new(env!("CARGO_BIN_EXE_rlock-chaos"))
        .args([
            "--topology",
            "single",
            "--secs",
            "20",
            "--seed",
            &seed.to_string(),
        ])
        .args(["--faults", faults, "--workers", workers, "--unsafe"])
        .output()
        .expect("run rlock-chaos");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let safety = stdout.lines().last().unwrap_or_default().to_owned();
    let head = format!("SAFETY topology=single seed={seed} secs=20 ");
    assert!(safety.starts_with(&head), "{stdout}\n{stderr}");
    UnsafeRun {
        seed,
        safety,
        stderr,
        status: output.status.code(),
    }
}

impl UnsafeRun {
    fn count(&self, name: &str) -> u64 {
        let field = self
            .safety
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {}", self.safety));
        field.parse().expect("a count")
    }

    fn found_violations(&self) -> bool {
        assert!(self.count("acquisitions") > 0, "{}", self.safety);
        self.count("overlaps") + self.count("stale_accepted") > 0
    }

    /// The violations are named on stderr, and the run fails.
    fn assert_reported(&self) {
        let named =
            self.stderr.contains("overlap on ") || self.stderr.contains("stale write accepted");
        assert!(named, "seed {}: {}", self.seed, self.stderr);
        assert_eq!(self.status, Some(1), "{}", self.safety);
    }
}
