//! Starts the workers a run asks for (`--workers`, default all that apply): tasks of the
//! client crate, threads of raw and Redisson-style clients, child processes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::thread::JoinHandle;

use rlock_client::Client;
use tokio::runtime::Runtime;

use crate::history::History;
use crate::topology::{Deployment, Topology, MASTER_NAME};
use crate::workers::child::ChildWorker;
use crate::workers::raw::Target;
use crate::workers::{client, latch, loss, raw, redisson, rw, sem, several, ticket, Ctx};

/// Every kind of worker (the `--workers` list takes these).
pub const KINDS: &[&str] = &[
    "client", "owner", "child", "raw", "ticket", "redisson", "redlock", "multi", "rw", "sem",
    "latch", "loss",
];

/// The kinds `all` means: RedLock and MultiLock need several servers, and read-write locks
/// semaphores and latches have no RedLock (their workers use one server); raw and ticket
/// clients do not follow a cluster's redirections; scripts do not wait
/// out the failover delay, so Redisson-style workers share keys with the others only where
/// no replica is promoted (and in the unsafe switch).
pub fn default_kinds(topology: Topology, unsafe_mode: bool) -> Vec<String> {
    let fits = |k: &&&str| match **k {
        "redlock" | "multi" => topology == Topology::Redlock,
        "redisson" => {
            topology == Topology::Single || (unsafe_mode && topology == Topology::Sentinel)
        }
        "raw" | "ticket" => topology != Topology::Cluster,
        "rw" | "sem" | "latch" | "loss" => topology != Topology::Redlock,
        _ => true,
    };
    KINDS.iter().filter(fits).map(|k| k.to_string()).collect()
}

pub struct Crew {
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
    pub threads: Vec<JoinHandle<()>>,
    pub children: Vec<ChildWorker>,
}

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Starts `kinds` of workers on `deployment`.
pub fn start(
    runtime: &Runtime,
    ctx: &Arc<Ctx>,
    deployment: &Deployment,
    kinds: &[String],
    seed: u64,
) -> Crew {
    let has = |k: &str| kinds.iter().any(|x| x == k);
    let urls = deployment.urls();
    let clients = open_clients(runtime, &urls, ctx.ignore_loss);
    let mut tasks: Vec<Task> = Vec::new();
    for i in 0..3 {
        if has("redlock") {
            tasks.push(Box::pin(several::run_redlock(
                ctx.clone(),
                clients.clone(),
                format!("redlock{i}"),
            )));
        }
        if has("multi") && i < 2 {
            tasks.push(Box::pin(several::run_multilock(
                ctx.clone(),
                clients.clone(),
                format!("multi{i}"),
            )));
        }
        if has("client") {
            tasks.push(Box::pin(client::run(
                ctx.clone(),
                clients[0].clone(),
                format!("client{i}"),
            )));
        }
    }
    for i in 0..if has("loss") { 3 } else { 0 } {
        let name = format!("loss{i}");
        tasks.push(Box::pin(loss::run(ctx.clone(), clients[0].clone(), name)));
    }
    if has("owner") {
        let owner = Arc::new(clients[0].owner());
        for i in 0..3 {
            tasks.push(Box::pin(client::run_owner_task(
                ctx.clone(),
                owner.clone(),
                format!("owner{i}"),
            )));
        }
    }
    let target = target(deployment);
    let mut threads = Vec::new();
    for i in 0..2 {
        let (c, t) = (ctx.clone(), target.clone());
        if has("raw") {
            threads.push(std::thread::spawn(move || {
                raw::run(c, t, format!("raw{i}"))
            }));
        }
        let (c, t) = (ctx.clone(), target.clone());
        if has("ticket") {
            threads.push(std::thread::spawn(move || {
                ticket::run(c, t, format!("ticket{i}"))
            }));
        }
        let (c, t) = (ctx.clone(), target.clone());
        if has("redisson") {
            threads.push(std::thread::spawn(move || {
                redisson::run(c, t, format!("redisson{i}"))
            }));
        }
    }
    if has("rw") {
        for i in 0..4 {
            let (c, t) = (ctx.clone(), rw_target(deployment, ctx));
            let name = format!("{}{i}", crate::check::RW_WORKERS);
            let tickets = deployment.topology != Topology::Cluster;
            threads.push(std::thread::spawn(move || rw::run(c, t, name, tickets)));
        }
    }
    for i in 0..if has("sem") { 4 } else { 0 } {
        let (c, t) = (ctx.clone(), rw_target(deployment, ctx));
        let name = format!("{}{i}", crate::check_sem::SEM_WORKERS);
        threads.push(std::thread::spawn(move || sem::run(c, t, name)));
    }
    for i in 0..if has("latch") { 2 } else { 0 } {
        let (c, t) = (ctx.clone(), rw_target(deployment, ctx));
        let tickets = deployment.topology != Topology::Cluster;
        threads.push(std::thread::spawn(move || {
            latch::run(c, t, format!("latch{i}"), tickets)
        }));
    }
    let children = if has("child") {
        spawn_children(ctx, &urls[0], seed)
    } else {
        Vec::new()
    };
    Crew {
        tasks: tasks.into_iter().map(|t| runtime.spawn(t)).collect(),
        threads,
        children,
    }
}

fn open_clients(runtime: &Runtime, urls: &[String], unsafe_mode: bool) -> Vec<Client> {
    let options = crate::workers::client_options(unsafe_mode);
    runtime.block_on(async {
        let mut clients = Vec::new();
        for url in urls {
            let client = Client::open_with(url, options).await;
            clients.push(client.unwrap_or_else(|e| panic!("open {url}: {e}")));
        }
        clients
    })
}

fn spawn_children(ctx: &Ctx, url: &str, seed: u64) -> Vec<ChildWorker> {
    let history: &History = &ctx.history;
    (0..2)
        .map(|i| {
            let name = format!("child{i}");
            ChildWorker::spawn(
                &name,
                url,
                &ctx.resource,
                &ctx.keys,
                seed + i,
                ctx.ignore_loss,
                history,
            )
        })
        .collect()
}

/// How read-write workers find a lock server: as raw workers do, and in a cluster any
/// node (they follow its redirections), so that one node down stops none of them.
fn rw_target(deployment: &Deployment, ctx: &Arc<Ctx>) -> Target {
    if deployment.topology != Topology::Cluster {
        return target(deployment);
    }
    let ports: Vec<u16> = deployment.proxies.iter().map(|p| p.port).collect();
    let ctx = ctx.clone();
    Arc::new(move || Some(*ctx.rng.pick(&ports)))
}

/// How raw and Redisson workers find the lock server: its proxy, or the master's that the
/// sentinels name.
fn target(deployment: &Deployment) -> Target {
    let fixed = deployment.proxies[0].port;
    if deployment.topology != Topology::Sentinel {
        return Arc::new(move || Some(fixed));
    }
    let sentinels: Vec<u16> = deployment.sentinels.iter().map(|s| s.port).collect();
    Arc::new(move || {
        sentinels.iter().find_map(|&port| {
            let mut conn = crate::machine::connect(port).ok()?;
            let reply: Option<(String, u16)> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(MASTER_NAME)
                .query(&mut conn)
                .ok()?;
            reply.map(|(_, p)| p)
        })
    })
}
