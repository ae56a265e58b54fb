//! A Redis Cluster of test servers: cluster-enabled nodes with the module, joined by
//! `redis-cli --cluster create`, and the slot migrations the tests make.

use std::process::{Command, Stdio};
use std::time::Duration;

use super::{built_module, free_port, poll, temp_dir, Server};

const REDIS_CLI: &str = "/usr/bin/redis-cli";
/// `redis-cli --cluster create` itself waits a second or two for the nodes to agree.
const CLUSTER_OK_WITHIN: Duration = Duration::from_secs(15);

impl Server {
    /// A Redis Cluster node with the rlock module loaded, not yet in a cluster.
    pub fn start_cluster_node() -> Server {
        Server::start_cluster_node_with(&[])
    }

    /// A Redis Cluster node with the rlock module loaded and `extra` arguments. Its bus
    /// port is a free port of its own (not port + 10000, which any connection's local port
    /// may hold); a port found free can be taken before the node binds it: three tries.
    pub fn start_cluster_node_with(extra: &[&str]) -> Server {
        let mut failure = String::new();
        for _ in 0..3 {
            let (port, bus) = (free_port(), free_port().to_string());
            let dir = temp_dir(port);
            let config = dir.join(format!("nodes-{port}.conf"));
            let config = config.to_string_lossy().into_owned();
            let module = built_module();
            let args = ["--loadmodule", &module, "--cluster-enabled", "yes"];
            let file = ["--cluster-config-file", &config, "--cluster-port", &bus];
            match Server::try_spawn_at(port, dir, &[&args[..], &file, extra].concat()) {
                Ok(server) => return server,
                Err(why) => failure = why,
            }
        }
        panic!("{failure}");
    }

    /// This cluster node's id.
    pub fn node_id(&self) -> String {
        self.cmd(&["CLUSTER", "MYID"])
    }

    /// Whether this cluster node serves `slot`, in its own view (`CLUSTER NODES`, `myself`).
    pub fn serves(&self, slot: u16) -> bool {
        let nodes: String = self.cmd(&["CLUSTER", "NODES"]);
        let me = nodes
            .lines()
            .find(|line| line.contains("myself"))
            .expect("CLUSTER NODES has a myself line");
        // Fields 9 on: `first-last` or `slot`, and `[slot->-id]` for a migration.
        let number = |n: &str| n.parse::<u16>().expect("a slot number");
        me.split_whitespace()
            .skip(8)
            .filter(|range| !range.starts_with('['))
            .any(|range| match range.split_once('-') {
                Some((first, last)) => (number(first)..=number(last)).contains(&slot),
                None => number(range) == slot,
            })
    }
}

/// A Redis Cluster of masters with the module and no replicas, made with
/// `redis-cli --cluster create`; every server is killed (by its pid) when dropped.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    /// Starts `masters` nodes, joins them, and waits until every node says `cluster_state:ok`.
    pub fn start(masters: usize) -> Cluster {
        Cluster::create(masters, 0, &[])
    }

    /// Starts `masters` masters with `replicas` replicas each, all with `extra` arguments,
    /// and waits until every node says `cluster_state:ok` and every replica is in sync.
    /// The masters are [`Cluster::nodes`]`[..masters]` (as `redis-cli` assigns them).
    pub fn start_replicated(masters: usize, replicas: usize, extra: &[&str]) -> Cluster {
        let cluster = Cluster::create(masters, replicas, extra);
        let synced = |n: &Server| {
            let info: String = n.cmd(&["INFO", "replication"]);
            info.contains("role:master") || info.contains("master_link_status:up")
        };
        let in_sync = poll(CLUSTER_OK_WITHIN, || cluster.nodes.iter().all(synced));
        assert!(in_sync, "replicas not in sync");
        cluster
    }

    fn create(masters: usize, replicas: usize, extra: &[&str]) -> Cluster {
        let count = masters * (1 + replicas);
        let nodes = (0..count)
            .map(|_| Server::start_cluster_node_with(extra))
            .collect();
        let cluster = Cluster { nodes };
        let created = Command::new(REDIS_CLI)
            .args(["--cluster", "create"])
            .args(
                cluster
                    .nodes
                    .iter()
                    .map(|n| format!("127.0.0.1:{}", n.port())),
            )
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!("cannot run {REDIS_CLI} (apt-get install redis-tools): {e}")
            });
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        cluster.wait_ok();
        cluster
    }

    fn wait_ok(&self) {
        let ok = |n: &Server| {
            let info: String = n.cmd(&["CLUSTER", "INFO"]);
            info.lines().any(|line| line.trim() == "cluster_state:ok")
        };
        assert!(
            poll(CLUSTER_OK_WITHIN, || self.nodes.iter().all(ok)),
            "the cluster is not ok within {CLUSTER_OK_WITHIN:?}"
        );
    }

    /// `key`'s slot, as the server computes it.
    pub fn slot(&self, key: &str) -> u16 {
        self.nodes[0].cmd(&["CLUSTER", "KEYSLOT", key])
    }

    /// The index of the replica of node `master` (the first, if several).
    pub fn replica_of(&self, master: usize) -> usize {
        let id = self.nodes[master].node_id();
        (0..self.nodes.len())
            .find(|&i| {
                let info: String = self.nodes[i].cmd(&["CLUSTER", "NODES"]);
                info.lines()
                    .any(|l| l.contains("myself") && l.contains(&format!("slave {id}")))
            })
            .expect("a replica of the master")
    }

    /// The index of the one node that serves `key`'s slot.
    pub fn owner(&self, key: &str) -> usize {
        let slot = self.slot(key);
        let owners: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].serves(slot))
            .collect();
        assert_eq!(owners.len(), 1, "slot {slot} has owners {owners:?}");
        owners[0]
    }

    /// A key with `prefix` whose slot node `node` serves.
    pub fn key_on(&self, node: usize, prefix: &str) -> String {
        (0..1000)
            .map(|i| format!("{prefix}:{i}"))
            .find(|key| self.owner(key) == node)
            .expect("a key for every node within 1000 tries")
    }

    /// Starts moving `slot` from node `from` to node `to`: `IMPORTING` on the target,
    /// then `MIGRATING` on the source.
    pub fn begin_migration(&self, slot: u16, from: usize, to: usize) {
        let slot = slot.to_string();
        let (source, target) = (&self.nodes[from], &self.nodes[to]);
        let from_id = source.node_id();
        let to_id = target.node_id();
        let _: String = target.cmd(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        let _: String = source.cmd(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
    }

    /// Moves `keys` (of a slot being migrated) from node `from` to node `to`.
    pub fn migrate_keys(&self, from: usize, to: usize, keys: &[&str]) {
        let port = self.nodes[to].port().to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        args.extend_from_slice(keys);
        let reply: String = self.nodes[from].cmd(&args);
        assert_eq!(reply, "OK", "MIGRATE {keys:?}");
    }

    /// Ends a migration: `slot` belongs to node `to`, told to the target first, then to
    /// every other node.
    pub fn finish_migration(&self, slot: u16, to: usize) {
        let slot = slot.to_string();
        let to_id = self.nodes[to].node_id();
        let others = (0..self.nodes.len()).filter(|&i| i != to);
        for i in std::iter::once(to).chain(others) {
            let _: String = self.nodes[i].cmd(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
    }
}

/// Whether `$RLOCK_SERVER` is Valkey 9 or later, which migrates slots atomically
/// (`CLUSTER MIGRATESLOTS`); if not, says that the test is skipped.
pub fn atomic_migration() -> bool {
    let version = Command::new(super::server_binary())
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let major = version
        .strip_prefix("Valkey server v=")
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    let atomic = major.is_some_and(|m| m >= 9);
    if !atomic {
        eprintln!(
            "skipped: atomic slot migration needs Valkey 9 or later as RLOCK_SERVER \
             (make valkey9; make test-all runs it); this server is {version:?}"
        );
    }
    atomic
}

impl Cluster {
    /// Moves `slot` from node `from` to node `to` whole, with Valkey 9's
    /// `CLUSTER MIGRATESLOTS`; returns once the target serves it and the source has no key
    /// left in it.
    pub fn migrate_atomically(&self, slot: u16, from: usize, to: usize) {
        let (source, target) = (&self.nodes[from], &self.nodes[to]);
        let (slot_text, to_id) = (slot.to_string(), target.node_id());
        let range = ["SLOTSRANGE", &slot_text, &slot_text, "NODE", &to_id];
        let reply: String = source.cmd(&[&["CLUSTER", "MIGRATESLOTS"][..], &range].concat());
        assert_eq!(reply, "OK", "CLUSTER MIGRATESLOTS");
        let keys_left = || source.cmd::<u64>(&["CLUSTER", "COUNTKEYSINSLOT", &slot_text]);
        let moved = poll(CLUSTER_OK_WITHIN, || {
            target.serves(slot) && keys_left() == 0
        });
        assert!(
            moved,
            "slot {slot} did not move:\n{}\n{}",
            source.log(),
            target.log()
        );
    }
}
