//! Redisson clients and native waiters on the same locks each get their share.
//!
//! `tests/redisson_node/contend.js` runs node-redisson (a Node.js port of Redisson's `RLock`:
//! its Lua scripts, and a wait on `redisson_lock__channel:{key}`) and native
//! `LOCK.ACQUIRE ... WAIT` clients, 4 of each, on 2 keys for 20 s, against a server with the
//! module and `rlock.script-turn 100`. Its packages (`tests/redisson_node/package.json`,
//! exact versions) are installed with npm under cargo's target dir, once. Without `node` or
//! `npm` on PATH the test says it is skipped and passes.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{error_text, raw, temp_dir, Server};

/// How long the clients contend, in seconds.
const SECS: u64 = 20;
/// How long the npm install may take before it counts as hung.
const INSTALL_LIMIT: Duration = Duration::from_secs(300);
/// How long the run may take past `SECS` before it counts as hung.
const RUN_MARGIN: Duration = Duration::from_secs(60);
/// `rlock.script-turn` for the run: how long a lock with queued waiters is left free for
/// script clients when their turn comes (the value the configuration page suggests).
const SCRIPT_TURN_MS: &str = "100";
/// How far a Redisson worker's acquisitions may be from the mean native worker's: a factor.
const SHARE_FACTOR: f64 = 2.0;

#[test]
#[ignore = "long: make test-all"]
fn redisson_and_native_waiters_each_get_their_share() {
    if !found("node") || !found("npm") {
        println!("skipped: node/npm not found (install nodejs and npm to run this test)");
        return;
    }
    let dir = installed();
    let server = Server::start();
    let set = raw(
        &mut server.conn(),
        &["CONFIG", "SET", "rlock.script-turn", SCRIPT_TURN_MS],
    );
    assert_eq!(error_text(&set), None, "CONFIG SET rlock.script-turn");
    let run = temp_dir();
    let summary = run.join("summary.tsv");
    let report = run.join("report.json");
    let mut node = Command::new("node");
    node.arg(dir.join("contend.js"))
        .arg(server.url())
        .args(["--secs", &SECS.to_string(), "--summary"])
        .arg(&summary)
        .current_dir(&dir);
    let status = finish(
        node,
        &report,
        Duration::from_secs(SECS) + RUN_MARGIN,
        "node contend.js",
    );
    let text = fs::read_to_string(&report).unwrap_or_default();
    println!("{text}");
    assert!(status, "node contend.js failed:\n{text}");
    let figures = Figures::parse(&fs::read_to_string(&summary).expect("read the summary"));
    let _ = fs::remove_dir_all(&run);
    figures.check();
}

/// The figures `contend.js --summary` wrote.
#[derive(Debug, Default)]
struct Figures {
    overlaps: u64,
    errors: u64,
    wait_limit_ms: f64,
    /// (index, acquisitions, timeouts) of each Redisson worker.
    redisson: Vec<(u64, u64, u64)>,
    /// Acquisitions of each native worker.
    native: Vec<u64>,
    /// Native waits that ran out.
    native_timeouts: u64,
    /// The longest wait of any native acquisition, in milliseconds.
    native_max_wait_ms: f64,
}

impl Figures {
    fn parse(text: &str) -> Figures {
        let mut f = Figures::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split('\t').collect();
            let num = |i: usize| -> f64 {
                let field = fields.get(i).copied().unwrap_or("");
                field
                    .parse()
                    .unwrap_or_else(|_| panic!("bad summary line {line:?}"))
            };
            match fields[0] {
                "overlaps" => f.overlaps = num(1) as u64,
                "errors" => f.errors = num(1) as u64,
                "wait_limit_ms" => f.wait_limit_ms = num(1),
                "worker" if fields.get(1) == Some(&"redisson") => {
                    f.redisson
                        .push((num(2) as u64, num(3) as u64, num(4) as u64));
                }
                "worker" => {
                    f.native.push(num(3) as u64);
                    f.native_timeouts += num(4) as u64;
                    if fields.get(5) != Some(&"-") {
                        f.native_max_wait_ms = f.native_max_wait_ms.max(num(5));
                    }
                }
                _ => panic!("unknown summary line {line:?}"),
            }
        }
        assert!(
            !f.redisson.is_empty() && !f.native.is_empty(),
            "summary without workers:\n{text}"
        );
        f
    }

    /// Fails with every broken expectation at once.
    fn check(&self) {
        let mut broken = Vec::new();
        if self.overlaps > 0 {
            broken.push(format!(
                "{} overlaps: two clients held a lock at once",
                self.overlaps
            ));
        }
        if self.errors > 0 {
            broken.push(format!("{} errors (see error_samples)", self.errors));
        }
        let mean = self.native.iter().sum::<u64>() as f64 / self.native.len() as f64;
        for &(index, acquisitions, _) in &self.redisson {
            let got = acquisitions as f64;
            if got * SHARE_FACTOR < mean || got > mean * SHARE_FACTOR {
                broken.push(format!(
                    "Redisson worker {index}: {acquisitions} acquisitions, not within a factor \
                     {SHARE_FACTOR} of the mean native worker's {mean:.1}"
                ));
            }
        }
        // A Redisson client may time out only if a native client also waited that long.
        if self.native_timeouts == 0 && self.native_max_wait_ms < self.wait_limit_ms {
            for &(index, _, timeouts) in &self.redisson {
                if timeouts > 0 {
                    broken.push(format!(
                        "Redisson worker {index}: {timeouts} tryLock timed out, while no native \
                         wait lasted more than {:.1} ms (limit {} ms)",
                        self.native_max_wait_ms, self.wait_limit_ms
                    ));
                }
            }
        }
        assert!(broken.is_empty(), "{}", broken.join("\n"));
    }
}

/// Whether `program --version` runs.
fn found(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The directory with the scripts and their installed packages: `<target>/redisson-node`,
/// installed with npm when its `package.json` differs from the committed one.
fn installed() -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redisson_node");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("cargo's target dir")
        .to_path_buf();
    let dir = target.join("redisson-node");
    let wanted = fs::read(source.join("package.json")).expect("read package.json");
    let current = fs::read(dir.join("package.json")).ok();
    let complete = ["node-redisson", "ioredis"].iter().all(|p| {
        dir.join("node_modules")
            .join(p)
            .join("package.json")
            .is_file()
    });
    if current.as_deref() != Some(&wanted[..]) || !complete {
        install(&source, &target, &dir);
    }
    for script in ["contend.js", "options.js", "report.js"] {
        fs::copy(source.join(script), dir.join(script)).expect("copy the scripts");
    }
    dir
}

/// Installs the packages in a fresh directory, then moves it to `dir`.
fn install(source: &Path, target: &Path, dir: &Path) {
    let fresh = target.join(format!("redisson-node.{}", std::process::id()));
    let _ = fs::remove_dir_all(&fresh);
    fs::create_dir_all(&fresh).expect("create the npm directory");
    fs::copy(source.join("package.json"), fresh.join("package.json")).expect("copy package.json");
    let log = fresh.join("npm.log");
    let mut npm = Command::new("npm");
    npm.args(["install", "--no-audit", "--no-fund"])
        .current_dir(&fresh);
    let ok = finish(npm, &log, INSTALL_LIMIT, "npm install");
    let text = fs::read_to_string(&log).unwrap_or_default();
    assert!(ok, "npm install failed in {}:\n{text}", fresh.display());
    let _ = fs::remove_dir_all(dir);
    fs::rename(&fresh, dir).expect("move the installed packages in place");
}

/// Runs `cmd` with its stdout in `out` (stderr inherited) and waits up to `limit`; a run
/// past it is killed and the test fails as hung. Returns whether it exited with success.
fn finish(mut cmd: Command, out: &Path, limit: Duration, what: &str) -> bool {
    let file = fs::File::create(out).expect("create the output file");
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status.success();
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("hung: {what} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
