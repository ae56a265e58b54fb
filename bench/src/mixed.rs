//! Scenario 10: native waiters and Redisson-style waiters contending on one key, in one
//! process. [`NATIVE`] threads wait in the server's queue (`LOCK.ACQUIRE key owner LEASE ms
//! WAIT 3000`); [`REDISSON`] threads wait as Redisson's `tryLock(3 s)` does (the script, then
//! a sleep on the process's semaphore, which the process's one pub/sub connection releases
//! once per unlock message, then the script again). Each holds the lock for [`HOLD`], then
//! releases it, in a loop; an attempt that ends after the run is not counted. The table
//! gives each side's acquisitions per contender, the ratio of the two, each side's waits and
//! the waits that ran out.

use std::fmt::Write;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use redis::{ConnectionLike, Value};

use crate::clock::{now_ns, percentile, sleep_until};
use crate::redisson::{self, Latch};
use crate::server::connect;
use crate::side::{channel, Scripts, Side, LEASE_MS};

/// Native contenders (`LOCK.ACQUIRE ... WAIT`).
pub const NATIVE: usize = 4;
/// Redisson-style contenders (script and pub/sub).
pub const REDISSON: usize = 4;
/// How long one acquisition may wait, on both sides.
pub const WAIT: Duration = Duration::from_secs(3);
/// How long each holding lasts.
pub const HOLD: Duration = Duration::from_millis(1);
/// `rlock.script-turn` during the run (ms), where the module has it; restored after.
pub const SCRIPT_TURN: &str = "100";

/// One contender's acquisitions, waits that ran out, and waits (ms) of its acquisitions.
#[derive(Debug, Clone, Default)]
pub struct Contender {
    pub acquisitions: u64,
    pub timeouts: u64,
    pub waits_ms: Vec<f64>,
}

/// Both sides of one run.
#[derive(Debug, Clone, Default)]
pub struct Mixed {
    pub native: Vec<Contender>,
    pub redisson: Vec<Contender>,
    /// Whether `rlock.script-turn` was set to [`SCRIPT_TURN`] (the module has it).
    pub script_turn: bool,
}

/// One side's figures for the table.
struct SideFigures {
    mean: f64,
    fewest: u64,
    most: u64,
    waits: Vec<f64>,
    timeouts: u64,
}

impl SideFigures {
    fn of(side: &[Contender]) -> SideFigures {
        let counts = side.iter().map(|c| c.acquisitions);
        SideFigures {
            mean: counts.clone().sum::<u64>() as f64 / side.len().max(1) as f64,
            fewest: counts.clone().min().unwrap_or(0),
            most: counts.max().unwrap_or(0),
            waits: side.iter().flat_map(|c| c.waits_ms.clone()).collect(),
            timeouts: side.iter().map(|c| c.timeouts).sum(),
        }
    }

    fn longest(&self) -> f64 {
        self.waits.iter().copied().fold(0.0, f64::max)
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Native,
    Redisson,
}

/// Runs both sides together on one key for `duration`.
pub fn run(port: u16, duration: Duration) -> Mixed {
    let mut con = connect(port).expect("connect");
    let before: Option<(String, String)> = redis::cmd("CONFIG")
        .arg(&["GET", "rlock.script-turn"][..])
        .query(&mut con)
        .ok();
    let set = |value: &str| {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg(&["SET", "rlock.script-turn", value][..]);
        cmd.query::<()>(&mut connect(port).expect("connect"))
            .is_ok()
    };
    let script_turn = before.is_some() && set(SCRIPT_TURN);
    let mixed = contend(port, duration);
    if let Some((_, value)) = before {
        set(&value);
    }
    Mixed {
        script_turn,
        ..mixed
    }
}

fn contend(port: u16, duration: Duration) -> Mixed {
    let key = format!("m10:{}", std::process::id());
    let scripts = Scripts::load(&mut connect(port).expect("connect")).expect("SCRIPT LOAD");
    let latch = Arc::new(Latch::default());
    let listener = redisson::listen(port, &channel(&key), latch.clone()).expect("SUBSCRIBE");
    let start = now_ns() + 300_000_000;
    let end = start + u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    let spawn = |kind: Kind, id: usize| {
        let (scripts, latch, key) = (scripts.clone(), latch.clone(), key.clone());
        thread::spawn(move || contender(port, kind, id, &scripts, &latch, &key, start, end))
    };
    let native: Vec<_> = (0..NATIVE).map(|id| spawn(Kind::Native, id)).collect();
    let others: Vec<_> = (0..REDISSON).map(|id| spawn(Kind::Redisson, id)).collect();
    sleep_until(end);
    // A Redisson-style sleep still running ends here; a native wait within its `WAIT`.
    latch.close();
    let native = native.into_iter().map(join).collect();
    let redisson = others.into_iter().map(join).collect();
    let _ = listener.join();
    Mixed {
        native,
        redisson,
        script_turn: false,
    }
}

fn join(handle: thread::JoinHandle<Contender>) -> Contender {
    handle.join().expect("contender thread")
}

#[allow(clippy::too_many_arguments)]
fn contender(
    port: u16,
    kind: Kind,
    id: usize,
    scripts: &Scripts,
    latch: &Latch,
    key: &str,
    start: u64,
    end: u64,
) -> Contender {
    let mut con = connect(port).expect("contender connection");
    let (side, owner) = match kind {
        Kind::Native => (Side::Rlock, format!("native-{id}:1")),
        Kind::Redisson => (Side::Lua, format!("redisson-{id}:1")),
    };
    let acquire = match kind {
        Kind::Native => acquire_within(key, &owner).get_packed_command(),
        Kind::Redisson => redisson::try_lock_packed(scripts, key, &owner),
    };
    let release = side.release(scripts, key, &owner).get_packed_command();
    let mut me = Contender::default();
    sleep_until(start);
    while now_ns() < end {
        let asked = Instant::now();
        let got = match kind {
            Kind::Native => match con.req_packed_command(&acquire) {
                Ok(Value::Int(_)) => Some(true),
                Ok(Value::Nil) => Some(false),
                other => panic!("LOCK.ACQUIRE replied {other:?}"),
            },
            Kind::Redisson => redisson::try_lock(&mut con, &acquire, latch, WAIT),
        };
        let Some(got) = got else { break };
        // An attempt that ends after the run is not counted: the other side may have
        // stopped by then.
        if now_ns() < end {
            if got {
                me.waits_ms.push(asked.elapsed().as_secs_f64() * 1e3);
                me.acquisitions += 1;
            } else {
                me.timeouts += 1;
            }
        }
        if got {
            thread::sleep(HOLD);
            let reply = con.req_packed_command(&release).expect("release");
            assert!(side.released(&reply), "release replied {reply:?}");
        }
    }
    me
}

/// `LOCK.ACQUIRE key owner LEASE <lease> WAIT <WAIT>`.
fn acquire_within(key: &str, owner: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("LOCK.ACQUIRE");
    cmd.arg(key)
        .arg(owner)
        .arg("LEASE")
        .arg(LEASE_MS)
        .arg("WAIT")
        .arg(WAIT.as_millis().to_string());
    cmd
}

/// Scenario 10's table.
pub fn table(out: &mut String, m: &Mixed) {
    let _ = writeln!(
        out,
        "\nScenario 10: one key, {NATIVE} native waiters (`LOCK.ACQUIRE ... WAIT {}`) and \
         {REDISSON} Redisson-style waiters (script, pub/sub, one semaphore per process, \
         `tryLock` {} s) in one process, each holding {} ms; {}:\n",
        WAIT.as_millis(),
        WAIT.as_secs(),
        HOLD.as_millis(),
        if m.script_turn {
            format!("`rlock.script-turn {SCRIPT_TURN}`")
        } else {
            "the module has no `rlock.script-turn`".to_owned()
        }
    );
    let (n, r) = (SideFigures::of(&m.native), SideFigures::of(&m.redisson));
    let _ = writeln!(
        out,
        "| Metric | native | Redisson-style | native ÷ Redisson-style |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let ratio = |a: f64, b: f64| match a / b {
        x if b <= 0.0 || !x.is_finite() => "∞".to_owned(),
        x if x >= 0.1 => format!("×{x:.2}"),
        x => format!("×{x:.4}"),
    };
    let lines = [
        (
            "acquisitions per contender (mean)".to_owned(),
            format!("{:.0}", n.mean),
            format!("{:.0}", r.mean),
            ratio(n.mean, r.mean),
        ),
        (
            "fewest / most of one contender".to_owned(),
            format!("{} / {}", n.fewest, n.most),
            format!("{} / {}", r.fewest, r.most),
            String::new(),
        ),
    ];
    for (metric, a, b, c) in lines {
        let _ = writeln!(out, "| {metric} | {a} | {b} | {c} |");
    }
    let ms = |f: &SideFigures, p: f64| {
        let v = if p > 100.0 {
            f.longest()
        } else {
            percentile(&f.waits, p)
        };
        (!f.waits.is_empty()).then_some(v)
    };
    for (metric, p) in [
        ("wait p50 (ms)", 50.0),
        ("wait p99 (ms)", 99.0),
        ("longest wait (ms)", 101.0),
    ] {
        let (a, b) = (ms(&n, p), ms(&r, p));
        let show = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.2}"));
        let c = match (a, b) {
            (Some(a), Some(b)) => ratio(a, b),
            _ => String::new(),
        };
        let _ = writeln!(out, "| {metric} | {} | {} | {c} |", show(a), show(b));
    }
    let _ = writeln!(
        out,
        "| waits that ran out ({} s) | {} | {} | |",
        WAIT.as_secs(),
        n.timeouts,
        r.timeouts
    );
}
