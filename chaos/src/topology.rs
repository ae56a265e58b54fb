//! What the topologies share, below their own steps (`deploy.rs`, `sentinel.rs`,
//! `cluster.rs`): the topology names, the deployment's processes and proxies, and polling.

use std::time::{Duration, Instant};

use crate::process::Proc;
use crate::proxy::Proxy;

pub const MASTER_NAME: &str = "chaosmaster";
/// Sentinel's `down-after-milliseconds`.
pub const DOWN_AFTER_MS: u64 = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    Single,
    Sentinel,
    Redlock,
    Cluster,
}

impl Topology {
    pub fn parse(name: &str) -> Option<Topology> {
        match name {
            "single" => Some(Topology::Single),
            "sentinel" => Some(Topology::Sentinel),
            "redlock" => Some(Topology::Redlock),
            "cluster" => Some(Topology::Cluster),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::Sentinel => "sentinel",
            Topology::Redlock => "redlock",
            Topology::Cluster => "cluster",
        }
    }
}

pub struct Deployment {
    pub topology: Topology,
    pub servers: Vec<Proc>,
    pub proxies: Vec<Proxy>,
    pub sentinels: Vec<Proc>,
    /// Each server's arguments, without the replication ones a restart adds.
    pub(crate) base_args: Vec<Vec<String>>,
}

/// Polls `done` every 50 ms for at most `within`; whether it came true.
pub fn poll(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
