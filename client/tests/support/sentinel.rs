//! A Redis Sentinel deployment of test servers: one master and two replicas with the module,
//! watched by three `redis-sentinel` processes, all on loopback; every process is killed
//! (by its pid) when dropped. Failovers are quick: a master is down after
//! [`DOWN_AFTER_MS`] without an answer.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{built_module, free_port, poll, temp_dir, Server};

const REDIS_SENTINEL: &str = "/usr/bin/redis-sentinel";
/// The master's name, as the sentinels know it.
pub const MASTER_NAME: &str = "rlockmaster";
/// How long a master may not answer before a sentinel thinks it down. Shorter makes a
/// loaded machine see failovers nobody asked for (at 500 ms often, at 1000 ms once in a
/// while): a failover of a live master that is not fenced is a split brain.
pub const DOWN_AFTER_MS: u64 = 2000;
/// Sentinel's `failover-timeout` (a sentinel tries again after twice this).
const FAILOVER_TIMEOUT_MS: u64 = 5000;
/// Sentinels find each other (hello messages every 2 s) and the replicas within this.
const DISCOVERED_WITHIN: Duration = Duration::from_secs(15);

/// One `redis-sentinel` process, killed when dropped.
pub struct Sentinel {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl Sentinel {
    /// Starts a sentinel that watches the master at `master_port` (quorum 2).
    fn start(master_port: u16) -> Sentinel {
        assert!(
            Path::new(REDIS_SENTINEL).exists(),
            "{REDIS_SENTINEL} is missing: install it with `apt-get install redis-sentinel`"
        );
        let port = free_port();
        let dir = temp_dir(port);
        let config = format!(
            "port {port}\nbind 127.0.0.1\ndir {dir}\n\
             sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 2\n\
             sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n\
             sentinel parallel-syncs {MASTER_NAME} 2\n",
            dir = dir.display()
        );
        let conf = dir.join("sentinel.conf");
        std::fs::write(&conf, config).expect("write sentinel.conf");
        let log = std::fs::File::create(dir.join("sentinel.log")).expect("create log");
        let child = Command::new(REDIS_SENTINEL)
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {REDIS_SENTINEL}: {e}"));
        let sentinel = Sentinel {
            child: Some(child),
            port,
            dir,
        };
        let ready = poll(Duration::from_secs(10), || {
            sentinel.try_cmd::<String>(&["PING"]).is_some()
        });
        assert!(ready, "sentinel not ready:\n{}", sentinel.log());
        sentinel
    }

    /// The sentinel's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The sentinel's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sentinel.log")).unwrap_or_default()
    }

    /// Runs a command on a fresh connection; `None` if the sentinel does not answer.
    fn try_cmd<T: redis::FromRedisValue>(&self, args: &[&str]) -> Option<T> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).ok()?;
        let mut conn = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut conn).ok()
    }

    /// The master's port, as this sentinel says.
    pub fn master_port(&self) -> Option<u16> {
        let reply: Option<(String, u16)> =
            self.try_cmd(&["SENTINEL", "get-master-addr-by-name", MASTER_NAME])?;
        reply.map(|(_, port)| port)
    }

    /// How many `what` (`replicas`, `sentinels`) of the master this sentinel knows.
    fn knows(&self, what: &str) -> usize {
        self.try_cmd::<Vec<redis::Value>>(&["SENTINEL", what, MASTER_NAME])
            .map_or(0, |list| list.len())
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One master, two replicas and three sentinels. A server that is killed keeps its place
/// (and port) in [`Deployment::servers`] and can be started again as a replica.
pub struct Deployment {
    pub servers: Vec<Server>,
    pub sentinels: Vec<Sentinel>,
    /// Arguments every `redis-server` gets (module configs, `min-replicas-to-write`...).
    args: Vec<String>,
}

impl Deployment {
    /// Starts the servers with `args` (besides the module and replication settings), then
    /// the sentinels, and waits until every sentinel knows both replicas and the other two
    /// sentinels.
    pub fn start(args: &[&str]) -> Deployment {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let master = start_server(free_port(), &args, None);
        let master_port = master.port();
        let mut servers = vec![master];
        for _ in 0..2 {
            servers.push(start_server(free_port(), &args, Some(master_port)));
        }
        let sentinels = (0..3).map(|_| Sentinel::start(master_port)).collect();
        let deployment = Deployment {
            servers,
            sentinels,
            args,
        };
        let discovered = poll(DISCOVERED_WITHIN, || {
            deployment
                .sentinels
                .iter()
                .all(|s| s.knows("replicas") == 2 && s.knows("sentinels") == 2)
        });
        assert!(discovered, "the sentinels did not discover the deployment");
        deployment
    }

    /// `redis+sentinel://127.0.0.1:<port>,.../<master>`.
    pub fn url(&self) -> String {
        let sentinels: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        format!("redis+sentinel://{}/{MASTER_NAME}", sentinels.join(","))
    }

    /// The index of the server whose `ROLE` is master (the first, if several say so).
    pub fn master(&self) -> Option<usize> {
        (0..self.servers.len()).find(|&i| self.role(i).as_deref() == Some("master"))
    }

    /// `ROLE`'s first word on server `i`, `None` if it does not answer.
    pub fn role(&self, i: usize) -> Option<String> {
        let mut conn = self.servers[i]
            .redis()
            .get_connection_with_timeout(Duration::from_millis(200))
            .ok()?;
        let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut conn).ok()?;
        redis::from_redis_value(role.into_iter().next()?).ok()
    }

    /// Kills server `i` (SIGKILL); it keeps its place.
    pub fn kill(&mut self, i: usize) {
        self.servers[i].kill();
    }

    /// Waits until a majority of sentinels name a master other than the server at
    /// `old_port`, and that server says it is a master; its index, or `None` if not
    /// `within`.
    pub fn await_new_master(&self, old_port: u16, within: Duration) -> Option<usize> {
        let mut found = None;
        poll(within, || {
            let ports: Vec<u16> = self
                .sentinels
                .iter()
                .filter_map(Sentinel::master_port)
                .collect();
            let Some(&port) = ports.iter().find(|&&p| p != old_port) else {
                return false;
            };
            let agree = ports.iter().filter(|&&p| p == port).count();
            let index = self.servers.iter().position(|s| s.port() == port);
            found = index.filter(|&i| agree >= 2 && self.role(i).as_deref() == Some("master"));
            found.is_some()
        });
        found
    }

    /// Starts killed server `i` again, on its port, as a replica of server `master`.
    pub fn restart_as_replica(&mut self, i: usize, master: usize) {
        let port = self.servers[i].port();
        let master_port = self.servers[master].port();
        self.servers[i] = start_server(port, &self.args, Some(master_port));
    }

    /// Waits until server `master` has `replicas` replicas online; whether it did `within`.
    pub fn await_replicas(&self, master: usize, replicas: usize, within: Duration) -> bool {
        poll(within, || self.online_replicas(master) >= replicas)
    }

    /// How many replicas server `i` has online (`INFO replication`).
    fn online_replicas(&self, i: usize) -> usize {
        let info: String = self.servers[i].cmd(&["INFO", "replication"]);
        let online = info.lines().filter(|l| l.starts_with("slave"));
        online.filter(|l| l.contains("state=online")).count()
    }

    /// Waits until one server says it is the master, every sentinel names it, and it has
    /// `replicas` replicas online; its index, or `None` if not `within`.
    pub fn await_stable(&self, replicas: usize, within: Duration) -> Option<usize> {
        let mut found = None;
        poll(within, || {
            found = self.stable_master(replicas);
            found.is_some()
        });
        found
    }

    fn stable_master(&self, replicas: usize) -> Option<usize> {
        let masters: Vec<usize> = (0..self.servers.len())
            .filter(|&i| self.role(i).as_deref() == Some("master"))
            .collect();
        let [master] = masters[..] else {
            return None;
        };
        let port = self.servers[master].port();
        let named = self.sentinels.iter().all(|s| s.master_port() == Some(port));
        (named && self.online_replicas(master) >= replicas).then_some(master)
    }

    /// The most failovers (`+switch-master`) one sentinel has seen.
    pub fn switches(&self) -> usize {
        let seen = self
            .sentinels
            .iter()
            .map(|s| s.log().matches("+switch-master").count());
        seen.max().unwrap_or(0)
    }

    /// The servers' and sentinels' logs, to show when something went wrong.
    pub fn logs(&self) -> String {
        let servers = self.servers.iter().map(|s| s.log());
        let sentinels = self.sentinels.iter().map(Sentinel::log);
        servers
            .chain(sentinels)
            .collect::<Vec<_>>()
            .join("\n-----\n")
    }
}

/// A server with the module and `args` on `port`; a replica of `master` if given.
fn start_server(port: u16, args: &[String], master: Option<u16>) -> Server {
    let module = built_module();
    let master = master.map(|p| p.to_string());
    let mut all = vec!["--loadmodule", &module, "--repl-diskless-sync-delay", "0"];
    if let Some(master) = &master {
        all.extend(["--replicaof", "127.0.0.1", master]);
    }
    all.extend(args.iter().map(String::as_str));
    Server::spawn_at(port, temp_dir(port), &all)
}
