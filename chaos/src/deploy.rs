//! Starting and healing the topologies (their shared types are in `topology.rs`), each of
//! real processes on loopback, every server behind a proxy of its
//! own that all its clients, replicas and sentinels go through (servers announce the
//! proxy's port): `single` (one server, AOF), `sentinel` (a master, two replicas, three
//! `redis-sentinel`s), `redlock` (three independent servers, AOF).

use tokio::runtime::Handle;

use crate::cluster::{node_args, node_port};
use crate::machine::{module_path, server_binary};
use crate::process::Proc;
use crate::proxy::{Mode, Proxy};
use crate::resource::strings;
use crate::sentinel::named_master;
use crate::topology::{Deployment, Topology, MASTER_NAME};

/// A server's arguments: module, AOF (fsync always), its proxy's port announced.
fn server_args(port: u16, proxy: u16, unsafe_mode: bool, topology: Topology) -> Vec<String> {
    let module = module_path().display().to_string();
    let mut args = strings(&["--port", &port.to_string(), "--bind", "127.0.0.1"]);
    args.extend(strings(&[
        "--loadmodule",
        &module,
        "--save",
        "",
        "--appendonly",
        "yes",
    ]));
    args.extend(strings(&[
        "--appendfsync",
        "always",
        "--enable-debug-command",
        "local",
    ]));
    args.extend(strings(&["--replica-announce-ip", "127.0.0.1"]));
    args.extend(strings(&["--replica-announce-port", &proxy.to_string()]));
    args.extend(strings(&["--repl-diskless-sync-delay", "0"]));
    // The Redisson-style workers get their turns on locks with native waiters.
    args.extend(strings(&["--rlock.script-turn", "100"]));
    if unsafe_mode {
        args.extend(strings(&["--maxmemory-policy", "volatile-ttl"]));
    }
    if matches!(topology, Topology::Sentinel | Topology::Cluster) {
        let delay = if unsafe_mode { "0" } else { "5000" };
        args.extend(strings(&["--rlock.failover-delay", delay]));
        if !unsafe_mode {
            args.extend(strings(&[
                "--min-replicas-to-write",
                "1",
                "--min-replicas-max-lag",
                "1",
            ]));
        }
    }
    args
}

impl Deployment {
    pub fn start(topology: Topology, runtime: &Handle, unsafe_mode: bool) -> Deployment {
        let count = match topology {
            Topology::Single => 1,
            Topology::Sentinel | Topology::Redlock => 3,
            Topology::Cluster => 6,
        };
        let ports: Vec<u16> = (0..count).map(|_| node_port()).collect();
        let proxies: Vec<Proxy> = ports.iter().map(|&p| Proxy::start(runtime, p)).collect();
        let mut base_args = Vec::new();
        let mut servers = Vec::new();
        for (i, &port) in ports.iter().enumerate() {
            let mut args = server_args(port, proxies[i].port, unsafe_mode, topology);
            if topology == Topology::Cluster {
                args.extend(node_args(port, proxies[i].port));
            }
            let mut all = args.clone();
            if topology == Topology::Sentinel && i > 0 {
                all.extend(strings(&[
                    "--replicaof",
                    "127.0.0.1",
                    &proxies[0].port.to_string(),
                ]));
            }
            servers.push(Proc::start(
                &format!("server{i}"),
                &server_binary(),
                port,
                all,
            ));
            base_args.push(args);
        }
        let mut deployment = Deployment {
            topology,
            servers,
            proxies,
            sentinels: Vec::new(),
            base_args,
        };
        if topology == Topology::Sentinel {
            deployment.start_sentinels();
        }
        if topology == Topology::Cluster {
            deployment.create_cluster();
        }
        deployment
    }

    /// The URLs clients open: one per lock server, or the sentinels'.
    pub fn urls(&self) -> Vec<String> {
        if self.topology == Topology::Sentinel {
            let s: Vec<String> = self
                .sentinels
                .iter()
                .map(|s| format!("127.0.0.1:{}", s.port))
                .collect();
            return vec![format!("redis+sentinel://{}/{MASTER_NAME}", s.join(","))];
        }
        let servers = if self.topology == Topology::Cluster {
            1
        } else {
            self.proxies.len()
        };
        self.proxies[..servers]
            .iter()
            .map(|p| format!("redis://127.0.0.1:{}/", p.port))
            .collect()
    }

    /// The master as the sentinels name it (a majority), else server 0: its index.
    pub fn master(&self) -> Option<usize> {
        if self.topology != Topology::Sentinel {
            return Some(0);
        }
        let named: Vec<u16> = self.sentinels.iter().filter_map(named_master).collect();
        let port = *named
            .iter()
            .find(|&&p| named.iter().filter(|&&q| q == p).count() >= 2)?;
        self.proxies.iter().position(|p| p.port == port)
    }

    /// Starts a killed server again; in a Sentinel deployment as a replica of the master
    /// the sentinels name, unless that is itself.
    pub fn restart(&mut self, i: usize) {
        let mut args = self.base_args[i].clone();
        if let Some(m) = self
            .master()
            .filter(|&m| m != i && self.topology == Topology::Sentinel)
        {
            args.extend(strings(&[
                "--replicaof",
                "127.0.0.1",
                &self.proxies[m].port.to_string(),
            ]));
        }
        self.servers[i].set_args(args);
        self.servers[i].restart();
    }

    /// Heals every fault: proxies pass, stopped servers continue, killed ones restart.
    pub fn heal(&mut self) {
        for p in &self.proxies {
            p.set(Mode::Pass);
        }
        for i in 0..self.servers.len() {
            self.servers[i].resume();
            if self.servers[i].pid().is_none() {
                self.restart(i);
            }
            let _ = self.servers[i].cmd::<String>(&["CONFIG", "SET", "maxmemory", "0"]);
            let _ = self.servers[i].cmd::<String>(&["CLIENT", "UNPAUSE"]);
            let _ = self.servers[i].cmd::<String>(&["CONFIG", "SET", "timeout", "0"]);
        }
    }

    /// Processes stopped from outside the run (not crashes): see [`Proc::reap_unasked`].
    pub fn outside_stops(&self) -> usize {
        let all = self.servers.iter().chain(self.sentinels.iter());
        all.map(|p| p.outside_stops).sum()
    }

    /// Crash lines in the logs, and exits nobody asked for that look like crashes.
    pub fn crashes(&mut self) -> usize {
        let all = self.servers.iter_mut().chain(self.sentinels.iter_mut());
        all.map(|p| {
            p.reap_unasked();
            let crashes = p.crash_lines() + p.unasked_exits;
            p.report_crash(crashes);
            crashes
        })
        .sum()
    }
}
