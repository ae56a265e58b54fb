//! The bench's own `redis-server` with the module loaded, on a free loopback port, and
//! snapshots of what it reports about itself (`INFO commandstats cpu memory`).

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::Value;

/// Commands that set up connections or observe the server, left out of command counts.
const NOT_COUNTED: [&str; 9] = [
    "info",
    "client",
    "hello",
    "ping",
    "script",
    "subscribe",
    "unsubscribe",
    "select",
    "config",
];

pub struct BenchServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl BenchServer {
    /// Starts `redis-server` (or `$RLOCK_SERVER`) with the module at `module` (and the empty
    /// module command of [`floor_module`], when there is one) and waits for its first `PONG`.
    pub fn start(module: &Path) -> Result<BenchServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let dir = std::env::temp_dir().join(format!("rlock-bench-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // `$RLOCK_SERVER` (as for the tests: valkey-server, say), else redis-server.
        let program = std::env::var_os("RLOCK_SERVER").unwrap_or_else(|| "redis-server".into());
        let child = Command::new(program)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--maxclients", "12000"])
            .arg("--dir")
            .arg(&dir)
            .arg("--loadmodule")
            .arg(module)
            .args(
                floor_module()
                    .map(|floor| [PathBuf::from("--loadmodule"), floor])
                    .into_iter()
                    .flatten(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run redis-server ({e}): apt-get install redis-server"))?;
        let server = BenchServer { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(mut con) = server.try_conn() {
                if redis::cmd("PING").query::<String>(&mut con).is_ok() {
                    return Ok(server);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("redis-server on port {port} did not answer PING"))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn try_conn(&self) -> redis::RedisResult<redis::Connection> {
        connect(self.port)
    }

    pub fn conn(&self) -> redis::Connection {
        self.try_conn()
            .unwrap_or_else(|e| panic!("cannot connect to the bench server: {e}"))
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The empty module command's module (`NOOP.KEYED`, `bench/floor/noop.c`), built by
/// `bench/floor/build.sh` (`make bench` builds it): `$RLOCK_FLOOR_MODULE`, if the file is there
/// (as an absolute path: the server changes to its `--dir` before it loads modules).
pub fn floor_module() -> Option<PathBuf> {
    std::env::var_os("RLOCK_FLOOR_MODULE")
        .and_then(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p.is_file())
}

/// A connection to the bench server on `port`.
pub fn connect(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    client.get_connection_with_timeout(Duration::from_secs(5))
}

/// The `name:value` lines of `INFO <sections>`.
pub fn info(con: &mut redis::Connection, sections: &[&str]) -> HashMap<String, String> {
    let mut cmd = redis::cmd("INFO");
    for s in sections {
        cmd.arg(*s);
    }
    let text = match cmd.query::<Value>(con) {
        Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).into_owned(),
        Ok(Value::VerbatimString { text, .. }) => text,
        other => panic!("unexpected INFO reply {other:?}"),
    };
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// A numeric `INFO` field.
pub fn info_num(con: &mut redis::Connection, section: &str, name: &str) -> f64 {
    info(con, &[section])
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no numeric {name}"))
}

/// What the server had done up to one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Per command: (calls, usec).
    commands: HashMap<String, (u64, u64)>,
    cpu_s: f64,
    at: Instant,
}

impl Snapshot {
    pub fn take(con: &mut redis::Connection) -> Snapshot {
        let fields = info(con, &["commandstats", "cpu"]);
        let commands = fields
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("cmdstat_")?.to_owned(), parse_stat(v))))
            .collect();
        let cpu =
            |name: &str| -> f64 { fields.get(name).and_then(|v| v.parse().ok()).unwrap_or(0.0) };
        Snapshot {
            commands,
            cpu_s: cpu("used_cpu_user") + cpu("used_cpu_sys"),
            at: Instant::now(),
        }
    }

    /// What happened between `self` and the later snapshot `later`.
    pub fn until(&self, later: &Snapshot) -> Delta {
        let get = |s: &Snapshot, name: &str| s.commands.get(name).copied().unwrap_or((0, 0));
        let mut calls = 0;
        let mut commands = HashMap::new();
        for name in later.commands.keys() {
            let (c1, u1) = get(later, name);
            let (c0, u0) = get(self, name);
            let done = c1.saturating_sub(c0);
            if !NOT_COUNTED.contains(&name.as_str()) {
                calls += done;
            }
            commands.insert(name.clone(), (done, u1.saturating_sub(u0)));
        }
        Delta {
            calls,
            commands,
            cpu_s: later.cpu_s - self.cpu_s,
            wall_s: later.at.duration_since(self.at).as_secs_f64(),
        }
    }
}

fn parse_stat(v: &str) -> (u64, u64) {
    let field = |name: &str| -> u64 {
        v.split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("calls"), field("usec"))
}

/// The server's work between two snapshots.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    /// Commands executed, counting the ones scripts call, not counting [`NOT_COUNTED`].
    pub calls: u64,
    /// Per command: (calls, usec).
    commands: HashMap<String, (u64, u64)>,
    /// Server CPU (user + sys), seconds.
    pub cpu_s: f64,
    pub wall_s: f64,
}

impl Delta {
    /// The sum of two measurements (slices of an alternating run).
    pub fn merge(&self, other: &Delta) -> Delta {
        let mut commands = self.commands.clone();
        for (name, (n, u)) in &other.commands {
            let sum = commands.entry(name.clone()).or_default();
            *sum = (sum.0 + n, sum.1 + u);
        }
        Delta {
            calls: self.calls + other.calls,
            commands,
            cpu_s: self.cpu_s + other.cpu_s,
            wall_s: self.wall_s + other.wall_s,
        }
    }

    /// (calls, microseconds) of the named commands.
    fn totals(&self, names: &[&str]) -> (u64, u64) {
        let found = names.iter().filter_map(|n| self.commands.get(*n));
        found.fold((0, 0), |(n, u), c| (n + c.0, u + c.1))
    }

    /// Calls of the named commands.
    pub fn calls_of(&self, names: &[&str]) -> u64 {
        self.totals(names).0
    }

    /// Microseconds spent in the named commands.
    pub fn usec_of(&self, names: &[&str]) -> u64 {
        self.totals(names).1
    }

    /// Server CPU use in percent of one core.
    pub fn cpu_percent(&self) -> f64 {
        if self.wall_s > 0.0 {
            100.0 * self.cpu_s / self.wall_s
        } else {
            0.0
        }
    }
}
