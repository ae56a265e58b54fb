//! The fault that mixes kinds of waits on one key: latch commands on a key that a plain
//! lock, a read-write lock or a semaphore of the workers uses, while workers wait on it.
//!
//! The fault first holds the key itself, as a holder of its kind (`cross-kind:<n>`, a long
//! lease), so that the workers' waits queue behind it; then, while its own holding is still
//! there (`WATCH` and `HEXISTS` of its field before `MULTI`), it deletes the key and ends a
//! latch on it in one transaction: `MULTI; DEL k; LATCH.COUNTDOWN k; EXEC`, or sets a latch
//! there (`DEL k; LATCH.SET k 1; PEXPIRE k 3000`), blocks a `LATCH.AWAIT k` in the same
//! queue as the lock waits, and counts it down. Or, one time in five, it sends
//! `LATCH.COUNTDOWN k` alone on its held key (`WRONGTYPE`, ignored) and releases.
//!
//! Only the fault's own holding is ever deleted, and no worker believes in it: every worker
//! section, span and reply stays judged as it is. A lock wait ended by the latch (answered
//! `1` as if it were a token) is a second holder beside the next one: `overlaps`,
//! `repeated_tokens` and `backwards_tokens` count it.

use std::time::Duration;

use redis::Value;

use crate::check_sem::SEM_TOTAL;
use crate::faults::Injector;
use crate::faults_conn::{slow_conn, KEYS};
use crate::workers::rw::RW_KEYS;
use crate::workers::sem::SEM_KEYS;

/// The fault's holders' names begin so.
const HOLDER: &str = "cross-kind";
/// The fault's own lease: far longer than the few seconds it holds.
const LEASE_MS: u64 = 10_000;
/// How long the fault waits for its own holding.
const WAIT_MS: u64 = 3_000;

/// The fault's acquisition of `key` as its own holder `owner`, by the key's kind, and the
/// hash field that is there while that holding is.
fn acquire(key: &str, owner: &str) -> (redis::Cmd, String) {
    let (mut cmd, field) = if key.starts_with("rw:") {
        let mut cmd = redis::cmd("RWLOCK.ACQUIRE");
        cmd.arg(key).arg(owner).arg("WRITE");
        (cmd, format!("@h:{owner}"))
    } else if key.starts_with("sem:") {
        let mut cmd = redis::cmd("SEM.ACQUIRE");
        cmd.arg(key).arg(owner).arg(SEM_TOTAL);
        (cmd, format!("@h:{owner}"))
    } else {
        let mut cmd = redis::cmd("LOCK.ACQUIRE");
        cmd.arg(key).arg(owner);
        (cmd, owner.to_owned())
    };
    cmd.arg("LEASE").arg(LEASE_MS).arg("WAIT").arg(WAIT_MS);
    (cmd, field)
}

/// `args` sent on `conn`; its reply (an error reply is a value here: nothing is judged).
fn send(conn: &mut redis::Connection, args: &[&str]) -> Value {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query::<Value>(conn)
        .unwrap_or_else(|e| Value::SimpleString(format!("error: {e}")))
}

impl Injector<'_> {
    /// Latch commands on a workers' lock key, plain, read-write or semaphore, while the
    /// fault holds it and workers wait behind it.
    pub(crate) fn cross_kind(&mut self) -> Option<String> {
        let keys: Vec<&str> = KEYS
            .iter()
            .chain(RW_KEYS)
            .chain(SEM_KEYS)
            .copied()
            .collect();
        let key = *self.rng.pick(&keys);
        let i = self.server_of(key)?;
        let server = &self.deployment.servers[i];
        let limit = Duration::from_millis(WAIT_MS) + Duration::from_secs(5);
        let mut conn = slow_conn(server, limit)?;
        let owner = format!("{HOLDER}:{}", self.rng.range(0, 1 << 40));
        let alone = self.rng.chance(20);
        let latch = !alone && self.rng.chance(40);
        let how = match (alone, latch) {
            (true, _) => "LATCH.COUNTDOWN alone on its held key",
            (_, true) => "DEL, LATCH.SET, a LATCH.AWAIT queued, LATCH.COUNTDOWN",
            _ => "MULTI; DEL; LATCH.COUNTDOWN; EXEC",
        };
        let what = self.record(format!(
            "cross-kind on {key} ({}): holds it, then {how}",
            server.name
        ));
        let (cmd, field) = acquire(key, &owner);
        let got = cmd.query::<Value>(&mut conn);
        let held = matches!(got, Ok(Value::Int(_)));
        if !held {
            eprintln!("fault:   {key} not held by the fault: {got:?}");
        }
        // Time for the workers' waits to queue behind the fault's holding.
        std::thread::sleep(self.rng.millis(200, 800));
        let port = server.port;
        let done = if !held || alone {
            let reply = send(&mut conn, &["LATCH.COUNTDOWN", key]);
            eprintln!("fault:   LATCH.COUNTDOWN {key} alone: {reply:?}");
            false
        } else {
            self.delete_own(&mut conn, key, &field, latch, port)
        };
        if held && !done {
            let _ = release_cmd(key, &owner).query::<Value>(&mut conn);
        }
        what
    }

    /// The fault's own holding deleted and a latch ended on its key in one transaction,
    /// if the holding is still there; true when the transaction ran.
    fn delete_own(
        &self,
        conn: &mut redis::Connection,
        key: &str,
        field: &str,
        latch: bool,
        port: u16,
    ) -> bool {
        let _ = send(conn, &["WATCH", key]);
        if send(conn, &["HEXISTS", key, field]) != Value::Int(1) {
            let _ = send(conn, &["UNWATCH"]);
            eprintln!("fault:   {key}: the fault's holding is gone; nothing deleted");
            return false;
        }
        let _ = send(conn, &["MULTI"]);
        let _ = send(conn, &["DEL", key]);
        if latch {
            let _ = send(conn, &["LATCH.SET", key, "1"]);
            let _ = send(conn, &["PEXPIRE", key, "3000"]);
        } else {
            let _ = send(conn, &["LATCH.COUNTDOWN", key]);
        }
        let exec = send(conn, &["EXEC"]);
        eprintln!("fault:   MULTI on {key}: {exec:?}");
        if !matches!(exec, Value::Array(_)) {
            return false;
        }
        if latch {
            let wait = self.rng.millis(300, 1500);
            let k = key.to_owned();
            let awaiter = std::thread::spawn(move || {
                let mut c = crate::machine::connect(port).ok()?;
                c.set_read_timeout(Some(wait + Duration::from_secs(5)))
                    .ok()?;
                let ms = wait.as_millis().to_string();
                Some(send(&mut c, &["LATCH.AWAIT", &k, "WAIT", &ms]))
            });
            std::thread::sleep(self.rng.millis(100, 400));
            let down = send(conn, &["LATCH.COUNTDOWN", key]);
            let awaited = awaiter.join().ok().flatten();
            eprintln!("fault:   LATCH.COUNTDOWN {key}: {down:?}; the LATCH.AWAIT: {awaited:?}");
        }
        true
    }
}

/// The release of the fault's holding (when it did not delete it).
fn release_cmd(key: &str, owner: &str) -> redis::Cmd {
    let verb = if key.starts_with("rw:") {
        "RWLOCK.RELEASE"
    } else if key.starts_with("sem:") {
        "SEM.RELEASE"
    } else {
        "LOCK.RELEASE"
    };
    let mut cmd = redis::cmd(verb);
    cmd.arg(key).arg(owner);
    if key.starts_with("rw:") {
        cmd.arg("WRITE");
    }
    cmd
}
