//! The faults on connections and on the event loop: an idle `timeout` on every server,
//! `CLIENT KILL` of the workers' wait and shared connections, a storm of tickets to a receiver that
//! then closes, a flood of outcomes into a worker's mailbox, and a `DEBUG SLEEP`.

use std::time::{Duration, Instant};

use crate::faults::Injector;
use crate::process::Proc;
use crate::topology::{poll, Topology};

/// The keys the workers lock (as `run.rs` names them).
pub const KEYS: [&str; 3] = ["chaos:a", "chaos:b", "chaos:c"];
/// The longest a storm's or a flood's pipeline may take to be answered.
const PIPELINE_LIMIT: Duration = Duration::from_secs(60);

/// A direct connection to `server` whose replies may take up to `limit`.
pub(crate) fn slow_conn(server: &Proc, limit: Duration) -> Option<redis::Connection> {
    let conn = crate::machine::connect(server.port).ok()?;
    conn.set_read_timeout(Some(limit)).ok()?;
    conn.set_write_timeout(Some(limit)).ok()?;
    Some(conn)
}

/// The ids of `server`'s connections whose last command is one of `cmds` (`CLIENT LIST`).
fn connections(server: &Proc, cmds: &[&str]) -> Vec<i64> {
    let list: String = server.cmd(&["CLIENT", "LIST"]).unwrap_or_default();
    list.lines()
        .filter(|line| {
            let cmd = line.split(' ').find_map(|f| f.strip_prefix("cmd="));
            cmd.is_some_and(|c| cmds.contains(&c))
        })
        .filter_map(|line| {
            line.split(' ')
                .find_map(|f| f.strip_prefix("id="))?
                .parse()
                .ok()
        })
        .collect()
}

/// A receiver of pulled outcomes: parked in `LOCK.GRANTS`.
const RECEIVER: &[&str] = &["lock.grants"];
/// A sender of waits: last sent `LOCK.WAIT` or `LOCK.CANCEL`.
const SENDER: &[&str] = &["lock.wait", "lock.cancel"];
/// A client's shared connection (or a raw worker's): last sent a renewal or a release, so
/// its next command, often a release, meets the broken connection.
const SHARED: &[&str] = &[
    "lock.renew",
    "rwlock.renew",
    "sem.renew",
    "lock.release",
    "rwlock.release",
    "sem.release",
];

impl Injector<'_> {
    /// The server the workers' lock `key` lives on: its slot's master in a cluster, else
    /// the master.
    pub(crate) fn server_of(&self, key: &str) -> Option<usize> {
        if self.deployment.topology != Topology::Cluster {
            return self.deployment.master();
        }
        let slot: i64 = self.deployment.servers[0].cmd(&["CLUSTER", "KEYSLOT", key])?;
        let servers = &self.deployment.servers;
        (0..servers.len()).find(|&i| crate::cluster::serves(&servers[i], slot))
    }

    /// `CONFIG SET timeout 1|2` on every server for 2–6 s: idle connections are closed.
    pub(crate) fn idle_timeout(&mut self) -> Option<String> {
        let secs = self.rng.range(1, 3).to_string();
        let d = self.rng.millis(2000, 6000);
        for s in &self.deployment.servers {
            let _ = s.cmd::<String>(&["CONFIG", "SET", "timeout", &secs]);
        }
        let what = self.record(format!("idle timeout {secs} s on every server for {d:?}"));
        std::thread::sleep(d);
        for s in &self.deployment.servers {
            let _ = s.cmd::<String>(&["CONFIG", "SET", "timeout", "0"]);
        }
        what
    }

    /// For `d`, every 100–400 ms, `CLIENT KILL` of one connection of the workers: a wait
    /// connection's sender or receiver, or a shared connection (a third each).
    pub(crate) fn client_kill(&mut self, d: Duration) -> Option<String> {
        let what = self.record(format!("CLIENT KILL of connections for {d:?}"));
        let until = Instant::now() + d;
        while Instant::now() < until {
            // Shared connections only under the unsafe switch: there a failed release is
            // sent once, and the hold it leaves is a leak; elsewhere the client sends it
            // again, which the judging of beliefs cannot yet tell from a leak in every case.
            let (role, cmds) = match self.rng.range(0, if self.unsafe_mode { 3 } else { 2 }) {
                0 => ("receiver", RECEIVER),
                1 => ("sender", SENDER),
                _ => ("shared", SHARED),
            };
            let servers = &self.deployment.servers;
            let found: Vec<(usize, i64)> = (0..servers.len())
                .flat_map(|i| {
                    connections(&servers[i], cmds)
                        .into_iter()
                        .map(move |id| (i, id))
                })
                .collect();
            let pick = self.rng.range(0, found.len().max(1) as u64) as usize;
            if let Some(&(i, id)) = found.get(pick) {
                let _ = servers[i].cmd::<i64>(&["CLIENT", "KILL", "ID", &id.to_string()]);
                eprintln!(
                    "fault:   CLIENT KILL ID {id} ({role}) on {}",
                    servers[i].name
                );
            }
            std::thread::sleep(self.rng.millis(100, 400));
        }
        what
    }

    /// 10,000–40,000 tickets queued (pipelined) on a workers' lock, to a receiver of the
    /// fault's own, which closes 0.1–0.5 s later; then waits (at most 60 s) for the server
    /// to answer again.
    pub(crate) fn storm(&mut self) -> Option<String> {
        let key = *self.rng.pick(&KEYS);
        let i = self.server_of(key)?;
        let server = &self.deployment.servers[i];
        let n = self.rng.range(10_000, 40_001);
        let mut receiver = slow_conn(server, PIPELINE_LIMIT)?;
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut receiver).ok()?;
        let mut sender = slow_conn(server, PIPELINE_LIMIT)?;
        let what = self.record(format!(
            "storm: {n} tickets on {key} to a receiver on {}, then the receiver closes",
            server.name
        ));
        let mut pipe = redis::pipe();
        for t in 0..n {
            let owner = format!("storm:{t}");
            let wait = pipe.cmd("LOCK.WAIT").arg(key).arg(owner);
            wait.arg("LEASE")
                .arg(500)
                .arg("WAIT")
                .arg(30000)
                .arg("TO")
                .arg(id)
                .ignore();
        }
        let _ = pipe.query::<()>(&mut sender);
        drop(sender);
        std::thread::sleep(self.rng.millis(100, 500));
        drop(receiver);
        let _ = poll(PIPELINE_LIMIT, || server.cmd::<String>(&["PING"]).is_some());
        what
    }

    /// A foreign connection mails 1,000–10,000 outcomes (`LOCK.WAIT ... WAIT 1 TO <id>` on a
    /// lock it holds, in the slot of a workers' lock) to a worker's receiver, for `d`.
    pub(crate) fn flood(&mut self, d: Duration) -> Option<String> {
        let key = *self.rng.pick(&KEYS);
        let i = self.server_of(key)?;
        let server = &self.deployment.servers[i];
        let victims = connections(server, RECEIVER);
        let victim = *victims.get(self.rng.range(0, victims.len().max(1) as u64) as usize)?;
        let mut conn = slow_conn(server, PIPELINE_LIMIT)?;
        let flood_key = format!("{{{key}}}:flood");
        let held: redis::Value = redis::cmd("LOCK.ACQUIRE")
            .arg(&flood_key)
            .arg("flood:holder")
            .arg("LEASE")
            .arg(30000)
            .query(&mut conn)
            .ok()?;
        let n = self.rng.range(1000, 10001);
        let what = self.record(format!(
            "flood: {n} outcomes on {flood_key} mailed to receiver {victim} on {} for {d:?}",
            server.name
        ));
        let mut pipe = redis::pipe();
        for t in 0..n {
            let wait = pipe
                .cmd("LOCK.WAIT")
                .arg(&flood_key)
                .arg(format!("flood:{t}"));
            wait.arg("WAIT").arg(1).arg("TO").arg(victim).ignore();
        }
        let _ = pipe.query::<()>(&mut conn);
        std::thread::sleep(d);
        let _ = redis::cmd("LOCK.FORCERELEASE")
            .arg(&flood_key)
            .query::<redis::Value>(&mut conn);
        drop(held);
        what
    }

    /// `DEBUG SLEEP` of 0.3–1 s on server `i` (blocking its event loop on purpose).
    pub(crate) fn freeze(&mut self, i: usize) -> Option<String> {
        let d = self.rng.millis(300, 1000);
        let server = &self.deployment.servers[i];
        let mut conn = slow_conn(server, d + Duration::from_secs(5))?;
        let secs = format!("{:.3}", d.as_secs_f64());
        let what = self.record(format!("DEBUG SLEEP {secs} on {}", server.name));
        let _ = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(&secs)
            .query::<redis::Value>(&mut conn);
        what
    }
}
