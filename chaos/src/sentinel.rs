//! The Sentinel deployment's own steps: starting the sentinels, asking them which server
//! is the master, and comparing the replicas with it once the run has settled.

use std::time::Duration;

use crate::machine::free_port;
use crate::process::Proc;
use crate::topology::{poll, Deployment, Topology, DOWN_AFTER_MS, MASTER_NAME};

impl Deployment {
    pub(crate) fn start_sentinels(&mut self) {
        let master = self.proxies[0].port;
        for i in 0..3 {
            let port = free_port();
            let conf = format!(
                "port {port}\nbind 127.0.0.1\n\
                 sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 2\n\
                 sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
                 sentinel failover-timeout {MASTER_NAME} 5000\n\
                 sentinel parallel-syncs {MASTER_NAME} 2\n"
            );
            let name = format!("sentinel{i}");
            let dir = crate::machine::temp_dir(&name);
            let path = dir.join("sentinel.conf");
            std::fs::write(&path, conf).unwrap_or_else(|e| panic!("write sentinel.conf: {e}"));
            let args = vec![path.display().to_string()];
            let sentinel = Proc::start_in(dir, &name, "redis-sentinel", port, args);
            self.sentinels.push(sentinel);
        }
        // Sentinels learn replicas from INFO every 10 s and each other from hello messages
        // every 2 s; on a loaded machine the first rounds can take a while.
        let known = poll(Duration::from_secs(60), || {
            self.sentinels
                .iter()
                .all(|s| count(s, "replicas") == 2 && count(s, "sentinels") == 2)
        });
        assert!(known, "the sentinels did not discover the deployment");
    }

    /// After [`Deployment::heal`]: waits for one master with both replicas online, then
    /// for each replica to equal it (`DEBUG DIGEST`); the replicas that do not.
    pub fn replica_diffs(&self) -> usize {
        if self.topology != Topology::Sentinel {
            return 0;
        }
        let stable = poll(Duration::from_secs(40), || {
            self.master().is_some_and(|m| {
                role(&self.servers[m]) == "master" && online(&self.servers[m]) == 2
            })
        });
        let Some(m) = self.master().filter(|_| stable) else {
            eprintln!("no stable master after the run");
            return self.servers.len() - 1;
        };
        let digest = |p: &Proc| p.cmd::<String>(&["DEBUG", "DIGEST"]);
        let replicas: Vec<&Proc> = (0..self.servers.len())
            .filter(|&i| i != m)
            .map(|i| &self.servers[i])
            .collect();
        let _ = poll(Duration::from_secs(20), || {
            replicas
                .iter()
                .all(|r| digest(r).is_some() && digest(r) == digest(&self.servers[m]))
        });
        let diffs = replicas
            .iter()
            .filter(|r| digest(r) != digest(&self.servers[m]))
            .count();
        if diffs > 0 {
            eprintln!("replicas differ from the master {}", self.servers[m].name);
        }
        diffs
    }
}

fn count(sentinel: &Proc, what: &str) -> usize {
    sentinel
        .cmd::<Vec<redis::Value>>(&["SENTINEL", what, MASTER_NAME])
        .map_or(0, |v| v.len())
}

pub fn named_master(sentinel: &Proc) -> Option<u16> {
    let reply: Option<(String, u16)> =
        sentinel.cmd(&["SENTINEL", "get-master-addr-by-name", MASTER_NAME])?;
    reply.map(|(_, port)| port)
}

pub fn role(server: &Proc) -> String {
    let role: Option<Vec<redis::Value>> = server.cmd(&["ROLE"]);
    role.and_then(|r| r.into_iter().next())
        .and_then(|v| redis::from_redis_value(v).ok())
        .unwrap_or_default()
}

fn online(server: &Proc) -> usize {
    let info: String = server.cmd(&["INFO", "replication"]).unwrap_or_default();
    info.lines()
        .filter(|l| l.starts_with("slave") && l.contains("state=online"))
        .count()
}
