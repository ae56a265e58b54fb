//! The faults, chosen by the seed: kill -9 and restart, SIGSTOP, `CLIENT PAUSE WRITE`,
//! `FAILOVER` and `SENTINEL FAILOVER`, a live master paused past `down-after`, eviction
//! under `maxmemory`, proxy cuts, delays and one-way stalls, and holder processes paused
//! past their lease or killed; and those of `faults_conn.rs` (idle timeout, `CLIENT KILL`
//! of wait connections, ticket storm, mailbox flood, `DEBUG SLEEP`) and `faults_kinds.rs`
//! (latch commands on the locks' keys). Each is recorded in the history when it starts, and
//! those that stop a server or cut it off record their window when they heal.

use std::time::Duration;

use crate::cluster::NODE_TIMEOUT_MS;
use crate::history::{now_us, Event, History, Window};
use crate::machine::signal;
use crate::proxy::Mode;
use crate::rng::Rng;
use crate::sentinel::role;
use crate::topology::{Deployment, Topology, DOWN_AFTER_MS, MASTER_NAME};
use crate::workers::child::ChildWorker;
use crate::workers::rw::RW_KEYS;
use crate::workers::sem::SEM_KEYS;
use crate::workers::LEASE;

/// Every fault's name (the `FAULTS` list takes these).
pub const ALL: &[&str] = &[
    "kill",
    "stop",
    "pause",
    "partition",
    "delay",
    "oneway",
    "failover",
    "sentinel-failover",
    "live-master",
    "evict",
    "holder-stop",
    "holder-kill",
    "migrate",
    "promote",
    "timeout",
    "client-kill",
    "storm",
    "flood",
    "freeze",
    "cross-kind",
    "end-holding",
];

/// The faults that make sense in `topology`.
pub fn available(topology: Topology) -> Vec<&'static str> {
    let replicated = matches!(topology, Topology::Sentinel | Topology::Cluster);
    let fits = |f: &&str| match *f {
        "sentinel-failover" | "promote" => topology == Topology::Sentinel,
        "failover" | "live-master" => replicated,
        "migrate" | "flood" => topology == Topology::Cluster,
        "end-holding" => topology != Topology::Redlock,
        _ => true,
    };
    ALL.iter().copied().filter(fits).collect()
}

pub struct Injector<'a> {
    pub deployment: &'a mut Deployment,
    pub children: &'a mut Vec<ChildWorker>,
    pub history: &'a History,
    pub rng: &'a Rng,
    /// The unsafe switch: a `freeze` is not told to the checker as a deliberate stop, and
    /// `client-kill` kills the workers' shared connections too.
    pub unsafe_mode: bool,
}

/// The span a fault's window covers: (every server, or the one it chose; silent).
fn window_of(kind: &str, unsafe_mode: bool) -> Option<(bool, bool)> {
    match kind {
        "kill" | "stop" | "pause" => Some((false, true)),
        "freeze" => (!unsafe_mode).then_some((false, true)),
        "live-master" | "failover" | "sentinel-failover" | "promote" => Some((true, true)),
        "partition" | "delay" | "oneway" | "evict" => Some((false, false)),
        "migrate" => Some((true, false)),
        _ => None,
    }
}

impl Injector<'_> {
    /// Injects one fault of kind `kind`, waits for its duration, and heals it.
    pub fn inject(&mut self, kind: &str) {
        let n = self.deployment.servers.len() as u64;
        let i = self.rng.range(0, n) as usize;
        let d = self.rng.millis(300, 3000);
        let from_us = now_us();
        let what = match kind {
            "kill" => self.kill(i, d),
            "stop" => self.stop(i, d),
            "live-master" => self.live_master(),
            "pause" => self.pause(i, d),
            "partition" => self.proxy(i, Mode::Cut, d),
            "delay" => self.proxy(i, Mode::Delay(self.rng.millis(20, 300)), d),
            "oneway" => {
                let mode = if self.rng.chance(50) {
                    Mode::StallUp
                } else {
                    Mode::StallDown
                };
                self.proxy(i, mode, d)
            }
            "failover" => self.failover(),
            "sentinel-failover" => self.sentinel_failover(),
            "evict" => self.evict(i, d),
            "holder-stop" => self.holder(false),
            "holder-kill" => self.holder(true),
            "promote" => self.promote(d),
            "migrate" => {
                // A plain lock's slot, a read-write lock's, a semaphore's, or the slot
                // of a latch worker's keys.
                let keys = [
                    "chaos:a",
                    "chaos:b",
                    "chaos:c",
                    RW_KEYS[0],
                    RW_KEYS[1],
                    SEM_KEYS[0],
                    SEM_KEYS[1],
                    "latch:{latch0}",
                    "latch:{latch1}",
                ];
                let key = *self.rng.pick(&keys);
                let what = self.deployment.move_slot(key, self.rng.next());
                what.and_then(|w| self.record(w))
            }
            "timeout" => self.idle_timeout(),
            "client-kill" => self.client_kill(d),
            "storm" => self.storm(),
            "flood" => self.flood(d),
            "freeze" => self.freeze(i),
            "cross-kind" => self.cross_kind(),
            "end-holding" => self.end_holding(),
            _ => return,
        };
        let Some(what) = what else { return };
        eprintln!("fault: {what}");
        if let Some((all, silent)) = window_of(kind, self.unsafe_mode) {
            let server = if all {
                "*".to_owned()
            } else {
                self.deployment.servers[i].name.clone()
            };
            let to_us = now_us();
            let window = Window {
                server,
                from_us,
                to_us,
                silent,
            };
            self.history.push(Event::Window(window));
        }
    }

    pub(crate) fn record(&self, what: String) -> Option<String> {
        self.history.fault(what.clone());
        Some(what)
    }

    fn kill(&mut self, i: usize, d: Duration) -> Option<String> {
        let what = self.record(format!(
            "kill -9 {} for {d:?}",
            self.deployment.servers[i].name
        ));
        self.deployment.servers[i].kill();
        std::thread::sleep(d);
        self.deployment.restart(i);
        what
    }

    fn stop(&mut self, i: usize, d: Duration) -> Option<String> {
        let what = self.record(format!(
            "SIGSTOP {} for {d:?}",
            self.deployment.servers[i].name
        ));
        self.deployment.servers[i].stop();
        std::thread::sleep(d);
        self.deployment.servers[i].resume();
        what
    }

    /// The master paused past `down-after`, so that Sentinel fails it over while it lives.
    fn live_master(&mut self) -> Option<String> {
        let m = self.master()?;
        let down_after = if self.deployment.topology == Topology::Cluster {
            NODE_TIMEOUT_MS
        } else {
            DOWN_AFTER_MS
        };
        let d = Duration::from_millis(down_after) + self.rng.millis(1500, 4000);
        self.stop(m, d)
    }

    fn pause(&mut self, i: usize, d: Duration) -> Option<String> {
        let server = &self.deployment.servers[i];
        let ms = d.as_millis().to_string();
        server.cmd::<String>(&["CLIENT", "PAUSE", &ms, "WRITE"])?;
        let what = self.record(format!("CLIENT PAUSE {ms} WRITE on {}", server.name));
        std::thread::sleep(d);
        what
    }

    fn proxy(&mut self, i: usize, mode: Mode, d: Duration) -> Option<String> {
        let what = self.record(format!(
            "proxy of {} {mode:?} for {d:?}",
            self.deployment.servers[i].name
        ));
        self.deployment.proxies[i].set(mode);
        std::thread::sleep(d);
        self.deployment.proxies[i].set(Mode::Pass);
        what
    }

    /// A master: the sentinels' choice, or one of the cluster's masters.
    fn master(&self) -> Option<usize> {
        if self.deployment.topology != Topology::Cluster {
            return self.deployment.master();
        }
        let servers = &self.deployment.servers;
        let masters: Vec<usize> = (0..servers.len())
            .filter(|&i| role(&servers[i]) == "master")
            .collect();
        masters
            .get(self.rng.range(0, masters.len() as u64) as usize)
            .copied()
    }

    fn failover(&mut self) -> Option<String> {
        if self.deployment.topology == Topology::Cluster {
            let what = self.deployment.cluster_failover(self.rng.next())?;
            let what = self.record(what);
            std::thread::sleep(Duration::from_secs(3));
            return what;
        }
        let m = self.deployment.master()?;
        let server = &self.deployment.servers[m];
        server.cmd::<String>(&["FAILOVER", "TIMEOUT", "3000"])?;
        let what = self.record(format!("FAILOVER on {}", server.name));
        std::thread::sleep(Duration::from_secs(3));
        what
    }

    fn sentinel_failover(&mut self) -> Option<String> {
        let s = self.rng.range(0, self.deployment.sentinels.len() as u64) as usize;
        let sentinel = &self.deployment.sentinels[s];
        sentinel.cmd::<String>(&["SENTINEL", "FAILOVER", MASTER_NAME])?;
        let what = self.record(format!("SENTINEL FAILOVER via {}", sentinel.name));
        std::thread::sleep(Duration::from_secs(3));
        what
    }

    /// A replica promoted behind the sentinels' back (`REPLICAOF NO ONE`), then demoted
    /// again to the master they name.
    fn promote(&mut self, d: Duration) -> Option<String> {
        let m = self.deployment.master()?;
        let servers = &self.deployment.servers;
        let replicas: Vec<usize> = (0..servers.len())
            .filter(|&i| i != m && role(&servers[i]) == "slave")
            .collect();
        let r = *replicas.get(self.rng.range(0, replicas.len() as u64) as usize)?;
        servers[r].cmd::<String>(&["REPLICAOF", "NO", "ONE"])?;
        let what = self.record(format!("REPLICAOF NO ONE on {} for {d:?}", servers[r].name));
        std::thread::sleep(d);
        let master = self.deployment.master().unwrap_or(m);
        let port = self.deployment.proxies[master].port.to_string();
        if master != r {
            let _ = self.deployment.servers[r].cmd::<String>(&["REPLICAOF", "127.0.0.1", &port]);
        }
        what
    }

    /// `maxmemory` below what the server uses: with `noeviction` lock writes are refused;
    /// with a volatile policy (the unsafe switch) locks are evicted.
    fn evict(&mut self, i: usize, d: Duration) -> Option<String> {
        let server = &self.deployment.servers[i];
        server.cmd::<String>(&["CONFIG", "SET", "maxmemory", "1"])?;
        let what = self.record(format!("maxmemory 1 on {} for {d:?}", server.name));
        std::thread::sleep(d);
        let _ = server.cmd::<String>(&["CONFIG", "SET", "maxmemory", "0"]);
        what
    }

    /// A holder process paused past its lease (a GC pause), or killed and started again.
    fn holder(&mut self, kill: bool) -> Option<String> {
        if self.children.is_empty() {
            return None;
        }
        let c = self.rng.range(0, self.children.len() as u64) as usize;
        let name = self.children[c].name.clone();
        if kill {
            let what = self.record(format!("kill -9 holder process {name}"));
            self.children[c].kill_and_restart();
            return what;
        }
        let pid = self.children[c].pid()?;
        let d = LEASE + self.rng.millis(300, 2000);
        let what = self.record(format!("SIGSTOP holder process {name} for {d:?}"));
        signal("STOP", pid);
        std::thread::sleep(d);
        signal("CONT", pid);
        what
    }
}
