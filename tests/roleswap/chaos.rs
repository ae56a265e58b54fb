//! The deployment whose roles swap: one master and its replicas, changed by `FAILOVER`, by a
//! hand-made switch (`CLIENT PAUSE`, `REPLICAOF NO ONE`, `REPLICAOF`), and by `kill -9` of
//! the master (a replica is promoted; the old master restarts on its AOF as a replica) or of
//! a replica. Clients learn the master's port from [`Deployment::master_port`].

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::Value;

use crate::node::{connect, Node, SETTLE};
use crate::support::{info_field, wait_until, Rng};

pub struct Deployment {
    pub nodes: Vec<Node>,
    master: usize,
    pub master_port: Arc<AtomicU16>,
}

impl Deployment {
    pub fn start(size: usize) -> Deployment {
        let first = Node::start(None);
        let port = first.port;
        let mut nodes = vec![first];
        nodes.extend((1..size).map(|_| Node::start(Some(port))));
        let deployment = Deployment {
            nodes,
            master: 0,
            master_port: Arc::new(AtomicU16::new(port)),
        };
        deployment.settle();
        deployment
    }

    pub fn master(&self) -> &Node {
        &self.nodes[self.master]
    }

    fn replicas(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|i| *i != self.master)
            .collect()
    }

    fn promote(&mut self, to: usize) {
        self.master = to;
        self.master_port
            .store(self.nodes[to].port, Ordering::Relaxed);
    }

    /// One random change of roles; returns what it did.
    pub fn step(&mut self, rng: &mut Rng) -> String {
        let to = *rng.pick(&self.replicas());
        let done = match rng.below(100) {
            0..=39 => self.failover(to),
            40..=64 => self.switch(to),
            65..=84 => self.kill_master(to),
            _ => self.kill_replica(to),
        };
        self.point_replicas();
        done
    }

    /// `FAILOVER TO` the replica `to`: Redis pauses writes, waits for it, and swaps.
    fn failover(&mut self, to: usize) -> String {
        let port = self.nodes[to].port.to_string();
        let mut con = self.master().conn();
        let reply = redis::cmd("FAILOVER")
            .arg(&["TO", "127.0.0.1", &port, "TIMEOUT", "3000"])
            .query::<Value>(&mut con);
        if !matches!(reply, Ok(Value::Okay)) {
            return format!("failover to {port} refused: {reply:?}");
        }
        let target = &self.nodes[to];
        if wait_until(SETTLE, || target.role().as_deref() == Some("master")) {
            self.promote(to);
            format!("failover to {port}")
        } else {
            format!("failover to {port} did not happen")
        }
    }

    /// By hand: writes paused on the master, the replica caught up and promoted, then the
    /// old master made its replica.
    fn switch(&mut self, to: usize) -> String {
        let old = self.master;
        let mut master = self.master().conn();
        let _: Value = redis::cmd("CLIENT")
            .arg(&["PAUSE", "3000", "WRITE"])
            .query(&mut master)
            .unwrap_or(Value::Nil);
        let offset = info_field(&mut master, "replication", "master_repl_offset");
        let mut replica = self.nodes[to].conn();
        let caught_up = wait_until(Duration::from_secs(10), || {
            info_field(&mut replica, "replication", "slave_repl_offset") == offset
        });
        let port = self.nodes[to].port;
        if caught_up {
            let _: Value = redis::cmd("REPLICAOF")
                .arg(&["NO", "ONE"])
                .query(&mut replica)
                .unwrap_or(Value::Nil);
            self.promote(to);
            let _: Value = redis::cmd("REPLICAOF")
                .arg("127.0.0.1")
                .arg(port)
                .query(&mut master)
                .unwrap_or(Value::Nil);
        }
        let _: Value = redis::cmd("CLIENT")
            .arg("UNPAUSE")
            .query(&mut master)
            .unwrap_or(Value::Nil);
        let port_old = self.nodes[old].port;
        match caught_up {
            true => format!("switch {port_old} -> {port}"),
            false => format!("switch to {port}: replica did not catch up"),
        }
    }

    /// `kill -9` of the master; `to` is promoted; the old master restarts as its replica.
    fn kill_master(&mut self, to: usize) -> String {
        let old = self.master;
        self.nodes[old].kill();
        let mut con = self.nodes[to].conn();
        let _: Value = redis::cmd("REPLICAOF")
            .arg(&["NO", "ONE"])
            .query(&mut con)
            .unwrap_or(Value::Nil);
        self.promote(to);
        let port = self.nodes[to].port;
        self.nodes[old].restart_as_replica_of(port);
        format!("kill -9 {}, promote {port}", self.nodes[old].port)
    }

    fn kill_replica(&mut self, which: usize) -> String {
        let master = self.master().port;
        self.nodes[which].restart_as_replica_of(master);
        format!("kill -9 and restart replica {}", self.nodes[which].port)
    }

    /// Every replica replicates the master directly (no chains).
    fn point_replicas(&self) {
        let port = self.master().port;
        for i in self.replicas() {
            if let Some(mut con) = connect(self.nodes[i].port, SETTLE) {
                let _: redis::RedisResult<Value> = redis::cmd("REPLICAOF")
                    .arg("127.0.0.1")
                    .arg(port)
                    .query(&mut con);
            }
        }
    }

    /// Waits until every replica is linked to the master and has its writes.
    pub fn settle(&self) {
        self.point_replicas();
        for i in self.replicas() {
            let node = &self.nodes[i];
            assert!(
                wait_until(SETTLE, || node.link_up()),
                "replica {} never linked",
                node.port
            );
        }
        let mut con = self.master().conn();
        let want = self.replicas().len() as i64;
        let acked: i64 = redis::cmd("WAIT")
            .arg(want)
            .arg(5000)
            .query(&mut con)
            .unwrap_or(0);
        assert_eq!(
            acked, want,
            "replicas did not acknowledge the master's writes"
        );
    }
}
