//! A Redis Sentinel deployment of test servers (after `client/tests/support/sentinel.rs`):
//! one master and two replicas with the module, watched by three `redis-sentinel`
//! processes, all on loopback; every process is killed when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, info, temp_dir, wait_until, Server};

const REDIS_SENTINEL: &str = "redis-sentinel";
/// The master's name, as the sentinels know it.
pub const MASTER_NAME: &str = "rlockmaster";
/// How long a master may not answer before a sentinel thinks it down (shorter makes a
/// loaded machine fail over live masters nobody stopped).
pub const DOWN_AFTER_MS: u64 = 2000;
/// Sentinel's `failover-timeout`.
const FAILOVER_TIMEOUT_MS: u64 = 5000;
/// Sentinels find each other (hello messages every 2 s) and the replicas within this.
const DISCOVERED_WITHIN: Duration = Duration::from_secs(20);

/// One `redis-sentinel` process, killed when dropped.
pub struct Sentinel {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Sentinel {
    /// Starts a sentinel that watches the master at `master_port` (quorum 2).
    fn start(master_port: u16) -> Sentinel {
        let port = free_port();
        let dir = temp_dir();
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
            .unwrap_or_else(|e| {
                panic!("cannot start {REDIS_SENTINEL} (apt-get install redis-sentinel): {e}")
            });
        let sentinel = Sentinel { child, port, dir };
        let ready = wait_until(Duration::from_secs(10), || {
            sentinel.query::<String>(&["PING"]).is_some()
        });
        assert!(ready, "sentinel not ready:\n{}", sentinel.log());
        sentinel
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("sentinel.log")).unwrap_or_default()
    }

    fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> Option<T> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port)).ok()?;
        let mut con = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut con).ok()
    }

    /// The master's port, as this sentinel says.
    fn master_port(&self) -> Option<u16> {
        let reply: Option<(String, u16)> =
            self.query(&["SENTINEL", "get-master-addr-by-name", MASTER_NAME])?;
        reply.map(|(_, port)| port)
    }

    /// How many `what` (`replicas`, `sentinels`) of the master this sentinel knows.
    fn knows(&self, what: &str) -> usize {
        self.query::<Vec<redis::Value>>(&["SENTINEL", what, MASTER_NAME])
            .map_or(0, |list| list.len())
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One master, two replicas and three sentinels.
pub struct Deployment {
    pub servers: Vec<Server>,
    sentinels: Vec<Sentinel>,
}

impl Deployment {
    /// Starts the servers with `args`, then the sentinels, and waits until every sentinel
    /// knows both replicas and the other two sentinels.
    pub fn start(args: &[&str]) -> Deployment {
        let master = Server::start_with(args);
        let port = master.port().to_string();
        let mut servers = vec![master];
        for _ in 0..2 {
            let mut all = vec!["--replicaof", "127.0.0.1", &port];
            all.extend_from_slice(args);
            servers.push(Server::start_with(&all));
        }
        let sentinels = (0..3).map(|_| Sentinel::start(servers[0].port())).collect();
        let deployment = Deployment { servers, sentinels };
        let discovered = wait_until(DISCOVERED_WITHIN, || {
            deployment
                .sentinels
                .iter()
                .all(|s| s.knows("replicas") == 2 && s.knows("sentinels") == 2)
        });
        assert!(discovered, "the sentinels did not discover the deployment");
        deployment
    }

    /// `ROLE`'s first word on server `i`, `None` if it does not answer.
    fn role(&self, i: usize) -> Option<String> {
        let url = self.servers[i].url();
        let client = redis::Client::open(url).ok()?;
        let mut con = client
            .get_connection_with_timeout(Duration::from_millis(200))
            .ok()?;
        let _ = con.set_read_timeout(Some(Duration::from_millis(500)));
        let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut con).ok()?;
        redis::from_redis_value(role.into_iter().next()?).ok()
    }

    /// Waits until a majority of sentinels name a master other than server `old`, and that
    /// server says it is a master; its index.
    pub fn await_new_master(&self, old: usize, within: Duration) -> Option<usize> {
        let old_port = self.servers[old].port();
        let mut found = None;
        wait_until(within, || {
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

    /// Waits until one server is the master, every sentinel names it, and both others
    /// are its replicas, online; its index.
    pub fn await_stable(&self, within: Duration) -> Option<usize> {
        let mut found = None;
        wait_until(within, || {
            found = self.stable_master();
            found.is_some()
        });
        found
    }

    fn stable_master(&self) -> Option<usize> {
        let masters: Vec<usize> = (0..self.servers.len())
            .filter(|&i| self.role(i).as_deref() == Some("master"))
            .collect();
        let [master] = masters[..] else {
            return None;
        };
        let port = self.servers[master].port();
        let named = self.sentinels.iter().all(|s| s.master_port() == Some(port));
        let replication = info(&mut self.servers[master].conn(), "replication");
        let online = replication
            .iter()
            .filter(|(k, v)| k.starts_with("slave") && v.contains("state=online"))
            .count();
        (named && online == 2).then_some(master)
    }

    /// The servers' and sentinels' logs.
    pub fn logs(&self) -> String {
        let servers = self.servers.iter().map(Server::log);
        let sentinels = self.sentinels.iter().map(Sentinel::log);
        servers
            .chain(sentinels)
            .collect::<Vec<_>>()
            .join("\n-----\n")
    }
}
