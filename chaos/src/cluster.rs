//! The `cluster` topology: three masters and three replicas of Redis Cluster, each behind
//! its proxy (nodes announce the proxy's port; the cluster bus goes direct), made with
//! `redis-cli --cluster create`. Its own faults: a replica's `CLUSTER FAILOVER`, and a slot
//! of a lock migrated to another master under load.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::machine::free_port;
use crate::process::Proc;
use crate::resource::strings;
use crate::topology::{poll, Deployment};

/// Cluster's `cluster-node-timeout`.
pub const NODE_TIMEOUT_MS: u64 = 2000;

/// A free port whose bus port (+10000) is free too.
pub fn node_port() -> u16 {
    let free = |port: u16| TcpListener::bind(("127.0.0.1", port)).is_ok();
    (0..100)
        .map(|_| free_port())
        .find(|&p| p < 55000 && free(p + 10000))
        .unwrap_or_else(|| panic!("no port below 55000"))
}

/// The cluster settings of a node announcing `proxy`.
pub fn node_args(port: u16, proxy: u16) -> Vec<String> {
    strings(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        &NODE_TIMEOUT_MS.to_string(),
        "--cluster-announce-ip",
        "127.0.0.1",
        "--cluster-announce-port",
        &proxy.to_string(),
        "--cluster-announce-bus-port",
        &(port + 10000).to_string(),
    ])
}

impl Deployment {
    pub(crate) fn create_cluster(&self) {
        let nodes = self.proxies.iter().map(|p| format!("127.0.0.1:{}", p.port));
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(nodes)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli (make deps): {e}"));
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed:\n{}",
            String::from_utf8_lossy(&created.stdout)
        );
        assert!(
            self.cluster_settled(Duration::from_secs(30)),
            "the cluster did not become ok"
        );
    }

    /// Every node says `cluster_state:ok` and every replica's link is up.
    pub fn cluster_settled(&self, within: Duration) -> bool {
        poll(within, || {
            self.servers.iter().all(|n| {
                let info: String = n.cmd(&["CLUSTER", "INFO"]).unwrap_or_default();
                let repl: String = n.cmd(&["INFO", "replication"]).unwrap_or_default();
                info.contains("cluster_state:ok")
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"))
            })
        })
    }

    /// The index of the node announced at `port`.
    fn node_at(&self, port: u16) -> Option<usize> {
        self.proxies.iter().position(|p| p.port == port)
    }

    /// Each replica with its master (`INFO replication`'s `master_port`).
    pub fn cluster_pairs(&self) -> Vec<(usize, usize)> {
        (0..self.servers.len())
            .filter_map(|r| {
                let repl: String = self.servers[r].cmd(&["INFO", "replication"])?;
                let port = repl.lines().find_map(|l| l.strip_prefix("master_port:"))?;
                Some((r, self.node_at(port.trim().parse().ok()?)?))
            })
            .collect()
    }

    /// A replica's `CLUSTER FAILOVER`: its master hands over (planned failover).
    pub fn cluster_failover(&self, pick: u64) -> Option<String> {
        let pairs = self.cluster_pairs();
        let &(replica, master) = pairs.get(pick as usize % pairs.len().max(1))?;
        self.servers[replica].cmd::<String>(&["CLUSTER", "FAILOVER"])?;
        let (r, m) = (&self.servers[replica].name, &self.servers[master].name);
        Some(format!("CLUSTER FAILOVER on {r} (replica of {m})"))
    }

    /// Moves the slot of `key` to another master while the workers use it, as `redis-cli
    /// --cluster reshard` does: `SETSLOT IMPORTING` on the target, `MIGRATING` on the
    /// source, `MIGRATE` of its keys, then `SETSLOT NODE` on every master, in one of two
    /// orders (by `pick`): the target, the source, then the others (redis-cli since 7.0),
    /// or the source first (as older redis-cli could, every node in its list order): the
    /// nodes then disagree for a moment and send commands back and forth.
    pub fn migrate_slot(&self, key: &str, pick: u64) -> Option<String> {
        let any = &self.servers[0];
        let slot: i64 = any.cmd(&["CLUSTER", "KEYSLOT", key])?;
        let masters: Vec<usize> = (0..self.servers.len())
            .filter(|&i| crate::sentinel::role(&self.servers[i]) == "master")
            .collect();
        let from = *masters.iter().find(|&&m| serves(&self.servers[m], slot))?;
        let others: Vec<usize> = masters.into_iter().filter(|&m| m != from).collect();
        let to = *others.get(pick as usize % others.len().max(1))?;
        let (source, target) = (&self.servers[from], &self.servers[to]);
        let (from_id, to_id): (String, String) = (
            source.cmd(&["CLUSTER", "MYID"])?,
            target.cmd(&["CLUSTER", "MYID"])?,
        );
        let slot_text = slot.to_string();
        target.cmd::<String>(&["CLUSTER", "SETSLOT", &slot_text, "IMPORTING", &from_id])?;
        source.cmd::<String>(&["CLUSTER", "SETSLOT", &slot_text, "MIGRATING", &to_id])?;
        for _ in 0..20 {
            let keys: Vec<String> = source.cmd(&["CLUSTER", "GETKEYSINSLOT", &slot_text, "100"])?;
            if keys.is_empty() {
                break;
            }
            let port = target.port.to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            let _ = source.cmd::<String>(&args);
        }
        let source_first = (pick / 7) % 2 == 1;
        let first = if source_first { [from, to] } else { [to, from] };
        let rest = others.iter().copied().filter(|&m| m != to);
        for m in first.into_iter().chain(rest) {
            let node = &self.servers[m];
            let _ = node.cmd::<String>(&["CLUSTER", "SETSLOT", &slot_text, "NODE", &to_id]);
        }
        let order = if source_first { "source" } else { "target" };
        Some(format!(
            "slot {slot} of {key} migrated from {} to {} ({order} told first)",
            source.name, target.name
        ))
    }

    /// After the run: each replica's `DEBUG DIGEST` against its master's; the replicas
    /// that still differ after 20 s.
    pub fn cluster_replica_diffs(&self) -> usize {
        if !self.cluster_settled(Duration::from_secs(40)) {
            eprintln!("the cluster did not settle after the run");
        }
        let digest = |p: &Proc| p.cmd::<String>(&["DEBUG", "DIGEST"]);
        let pairs = self.cluster_pairs();
        let same = |&(r, m): &(usize, usize)| {
            digest(&self.servers[r]).is_some()
                && digest(&self.servers[r]) == digest(&self.servers[m])
        };
        let _ = poll(Duration::from_secs(20), || pairs.iter().all(same));
        pairs.iter().filter(|p| !same(p)).count()
    }
}

/// Whether `node` serves `slot` (its `myself` line of `CLUSTER NODES`).
pub(crate) fn serves(node: &Proc, slot: i64) -> bool {
    let nodes: String = node.cmd(&["CLUSTER", "NODES"]).unwrap_or_default();
    let Some(me) = nodes.lines().find(|l| l.contains("myself")) else {
        return false;
    };
    me.split_whitespace().skip(8).filter(|r| !r.starts_with('[')).any(|r| {
        let (a, b) = r.split_once('-').unwrap_or((r, r));
        matches!((a.parse::<i64>(), b.parse::<i64>()), (Ok(a), Ok(b)) if (a..=b).contains(&slot))
    })
}
