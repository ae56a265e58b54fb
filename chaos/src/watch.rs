//! The watchers that run beside the faults: a heartbeat prober per server (and one on the
//! resource, the control for the machine's own hiccups), and a sampler of the locks' holders
//! on the servers. Both go direct, not through the proxies, and record into the history what
//! the checker judges (`check_watch.rs`): late heartbeats, and holders of the workers' keys.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use redis::Value;

use crate::history::{now_us, Event, History};

/// A heartbeat answered later than this after it was sent is a stall.
pub const STALL_MS: u64 = 250;
/// How often a prober sends its `PING`.
const PING_EVERY: Duration = Duration::from_millis(50);
/// How often the sampler asks every server for every key's holder.
const SAMPLE_EVERY: Duration = Duration::from_millis(100);
/// How long a prober waits for a reply before it records the heartbeat as given up.
const PING_LIMIT: Duration = Duration::from_secs(30);

/// A server to watch: its name (as in fault windows) and its own port.
pub type Server = (String, u16);

pub struct Watch {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Watch {
    /// Starts a prober on each of `servers` and on `control`, and the sampler of `keys`.
    pub fn start(servers: &[Server], control: Server, keys: &[String], history: &History) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for server in servers.iter().cloned().chain([control]) {
            let (stop, history) = (stop.clone(), history.clone());
            threads.push(std::thread::spawn(move || probe(server, &history, &stop)));
        }
        let (servers, keys) = (servers.to_vec(), keys.to_vec());
        let (stop2, history) = (stop.clone(), history.clone());
        threads.push(std::thread::spawn(move || {
            sample(&servers, &keys, &history, &stop2)
        }));
        Watch { stop, threads }
    }

    /// Stops the watchers; waits a little for them (a prober may be waiting on a frozen
    /// server: it is left to end by itself).
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let done = |t: &JoinHandle<()>| t.is_finished();
        crate::topology::poll(Duration::from_secs(3), || self.threads.iter().all(done));
    }
}

fn open(port: u16, limit: Duration) -> Option<redis::Connection> {
    let conn = crate::machine::connect(port).ok()?;
    conn.set_read_timeout(Some(limit)).ok()?;
    Some(conn)
}

/// `PING` every 50 ms on one connection; a reply (or error reply) later than 250 ms, or
/// none within 30 s, is recorded as a [`Event::Stall`], with how long the server's main
/// thread and the prober's own thread waited for a CPU meanwhile (the machine's load, not
/// the server's doing). A broken connection is opened again.
fn probe((name, port): Server, history: &History, stop: &AtomicBool) {
    let mut conn = None;
    let mut sched = String::new();
    while !stop.load(Ordering::Relaxed) {
        let Some(c) = conn.as_mut() else {
            conn = open(port, PING_LIMIT);
            sched = conn.as_mut().and_then(main_thread).unwrap_or_default();
            std::thread::sleep(PING_EVERY);
            continue;
        };
        let queued = || queued_ns(&sched) + queued_ns("/proc/thread-self/schedstat");
        let (before, sent_us) = (queued(), now_us());
        let reply: redis::RedisResult<Value> = redis::cmd("PING").query(c);
        let (got_us, starved_us) = (now_us(), queued().saturating_sub(before) / 1000);
        let answered = match &reply {
            Ok(_) => true,
            Err(e) if e.is_timeout() => true,
            Err(e) => !e.is_io_error() && !e.is_connection_dropped(),
        };
        if !answered {
            conn = None;
        } else if got_us.saturating_sub(sent_us) > STALL_MS * 1000 {
            let server = name.clone();
            history.push(Event::Stall {
                server,
                sent_us,
                got_us,
                starved_us,
            });
            if reply.is_err() {
                conn = None;
            }
        }
        std::thread::sleep(PING_EVERY);
    }
}

/// The schedstat file of the server's main thread (its `process_id`, from `INFO server`).
fn main_thread(conn: &mut redis::Connection) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("server").query(conn).ok()?;
    let pid = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))?
        .trim();
    Some(format!("/proc/{pid}/task/{pid}/schedstat"))
}

/// Nanoseconds the thread of a schedstat file has waited on a run queue, runnable but
/// not running (its second field); 0 when unreadable.
fn queued_ns(path: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

/// Every 100 ms, `LOCK.INFO` of each key on every server that answers for it (a cluster's
/// replicas and other masters redirect: skipped); the owners seen, one sample per key. A
/// key that `LOCK.INFO` finds of the wrong type is a read-write lock: `RWLOCK.INFO` from
/// then on.
fn sample(servers: &[Server], keys: &[String], history: &History, stop: &AtomicBool) {
    let mut conns: Vec<Option<redis::Connection>> = servers.iter().map(|_| None).collect();
    let mut read_write: Vec<&str> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        for key in keys {
            let sent_us = now_us();
            let mut owners = Vec::new();
            for (conn, (_, port)) in conns.iter_mut().zip(servers) {
                if conn.is_none() {
                    *conn = open(*port, Duration::from_secs(2));
                }
                let Some(c) = conn.as_mut() else { continue };
                match owners_on(c, key, &mut read_write) {
                    Some(seen) => {
                        for owner in seen.into_iter() {
                            if !owners.contains(&owner) {
                                owners.push(owner);
                            }
                        }
                    }
                    None => *conn = None,
                }
            }
            let (key, got_us) = (key.clone(), now_us());
            history.push(Event::Sample {
                sent_us,
                got_us,
                key,
                owners,
            });
        }
        std::thread::sleep(SAMPLE_EVERY);
    }
}

/// The owners of `key` on one server; `None` when the connection broke.
fn owners_on<'k>(
    c: &mut redis::Connection,
    key: &'k str,
    read_write: &mut Vec<&'k str>,
) -> Option<Vec<String>> {
    let rw = read_write.contains(&key);
    let info = if rw { "RWLOCK.INFO" } else { "LOCK.INFO" };
    match redis::cmd(info).arg(key).query::<Value>(c) {
        Ok(info) => Some(owners_of(&info).collect()),
        Err(e) if e.is_io_error() || e.is_timeout() => None,
        Err(e) => {
            if e.code() == Some("WRONGTYPE") && !rw {
                read_write.push(key);
            }
            Some(Vec::new())
        }
    }
}

/// The `owner` field of a `LOCK.INFO` reply, or each holder's owner in the `holders` field
/// of a `RWLOCK.INFO` reply (RESP2 arrays of field, value pairs).
fn owners_of(info: &Value) -> impl Iterator<Item = String> + '_ {
    let fields = match info {
        Value::Array(fields) => fields.as_slice(),
        _ => &[],
    };
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    fields.chunks(2).flat_map(move |pair| match pair {
        [Value::BulkString(f), Value::BulkString(v)] if f == b"owner" => vec![text(v)],
        [Value::BulkString(f), Value::Array(holders)] if f == b"holders" => holders
            .iter()
            .filter_map(|h| match h {
                Value::Array(h) => match h.first() {
                    Some(Value::BulkString(owner)) => Some(text(owner)),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn owners_are_read_from_lock_info_and_from_rwlock_info() {
        let plain = Value::Array(vec![
            bulk("owner"),
            bulk("c1:7"),
            bulk("token"),
            Value::Int(3),
        ]);
        assert_eq!(owners_of(&plain).collect::<Vec<_>>(), ["c1:7"]);
        let holder = |owner: &str| {
            let counts = [1, 0, 1500, 9].map(Value::Int);
            Value::Array([bulk(owner)].into_iter().chain(counts).collect())
        };
        let rw = Value::Array(vec![
            bulk("mode"),
            bulk("read"),
            bulk("holders"),
            Value::Array(vec![holder("rw0:4"), holder("rw2:9")]),
            bulk("waiters"),
            Value::Int(0),
        ]);
        assert_eq!(owners_of(&rw).collect::<Vec<_>>(), ["rw0:4", "rw2:9"]);
        assert_eq!(owners_of(&Value::Nil).count(), 0);
    }
}
