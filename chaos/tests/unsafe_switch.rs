//! The checker is trusted only after it has caught a known-unsafe setting: with fencing off
//! and holder processes paused past their lease, a short run must report violations, name
//! them, and exit with status 1.

use std::process::Command;

#[test]
fn unsafe_switch_reports_violations_and_fails() {
    let output = Command::new(env!("CARGO_BIN_EXE_rlock-chaos"))
        .args(["--topology", "single", "--secs", "20", "--seed", "3"])
        .args(["--faults", "holder-stop", "--unsafe"])
        .output()
        .expect("run rlock-chaos");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let safety = stdout.lines().last().unwrap_or_default().to_owned();
    assert!(
        safety.starts_with("SAFETY topology=single seed=3 secs=20 "),
        "{stdout}\n{stderr}"
    );
    let count = |name: &str| -> u64 {
        let field = safety
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {safety}"));
        field.parse().expect("a count")
    };
    assert!(count("acquisitions") > 0, "{safety}");
    assert!(
        count("overlaps") + count("stale_accepted") > 0,
        "{safety}\n{stderr}"
    );
    assert!(
        stderr.contains("overlap on ") || stderr.contains("stale write accepted"),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{safety}");
}
