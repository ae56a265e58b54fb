//! Scenario 9, waits at scale: a client process queues N waits (on 1 lock or on many) and
//! holds them while the server is measured: the connections it took, `used_memory` per
//! wait, and what `rlock_waiters_memory` says. The process is a child of the bench started
//! through `sh -c 'ulimit -n LIMIT; exec ...'`, so the fd limit is the one asked for (1024,
//! the usual default, or one high enough for a connection per wait) whatever the bench's.
//!
//! Two ways to wait: `tickets`, every wait a `LOCK.WAIT` over one RESP3 connection
//! subscribed to its grants; `block`, today's `LOCK.ACQUIRE ... WAIT 0`, a connection each.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::resp3::{self, Resp3, Wait};
use crate::server::{connect, info_num};
use crate::wait_mode::{key, Mode};

/// What one client process with `waits` waits on `keys` locks cost.
#[derive(Debug, Clone)]
pub struct Held {
    pub waits: usize,
    pub keys: usize,
    /// The process's `ulimit -n`.
    pub fd_limit: usize,
    /// Waits the server had queued.
    pub queued: usize,
    /// Why the process queued fewer than `waits`.
    pub failure: Option<String>,
    /// Server connections the process used (`connected_clients` delta).
    pub connections: usize,
    /// `used_memory` delta per queued wait, right after they were queued.
    pub bytes_at_once: f64,
    /// The same after [`SETTLE`] (the client cron has shrunk idle buffers).
    pub bytes_settled: Option<f64>,
    /// `rlock_waiters_memory` per queued wait.
    pub estimate: f64,
}

/// How long the memory is left to settle before it is read again.
const SETTLE: Duration = Duration::from_secs(5);

/// Holds `keys` locks, starts a client process with `waits` waits on them under
/// `ulimit -n fd_limit`, measures, and ends it. `settle`: read the memory again later.
pub fn hold(
    port: u16,
    mode: Mode,
    (waits, keys): (usize, usize),
    fd_limit: usize,
    settle: bool,
) -> Result<Held, String> {
    let mut con = connect(port).map_err(|e| e.to_string())?;
    let mut take = redis::pipe();
    for k in 0..keys {
        let key = key(mode, keys, k);
        take.cmd("LOCK.ACQUIRE")
            .arg(key)
            .arg(&["holder:1", "LEASE", "600000"][..]);
    }
    let _: redis::Value = take.query(&mut con).map_err(|e| e.to_string())?;
    let m0 = quiet(&mut con);
    let c0 = info_num(&mut con, "clients", "connected_clients");
    let mut child = spawn(port, mode, (waits, keys), fd_limit)?;
    let mut line = String::new();
    if let Some(out) = child.stdout.as_mut() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    if line.is_empty() {
        line = format!("no answer (could it set `ulimit -n {fd_limit}`?)");
    }
    let measured = measure(&mut con, &line, (m0, c0), settle);
    drop(child.stdin.take()); // the process ends, and its waits with it
    let _ = child.wait();
    let gone = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        info_num(&mut con, "rlock", "rlock_waiters") == 0.0
    });
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let (queued, failure, connections, bytes_at_once, bytes_settled, estimate) = measured?;
    if !gone {
        return Err("the waits never left the server".into());
    }
    Ok(Held {
        waits,
        keys,
        fd_limit,
        queued,
        failure,
        connections,
        bytes_at_once,
        bytes_settled,
        estimate,
    })
}

/// `used_memory` once it has stopped falling: the server frees what an earlier run left
/// (closed connections, the pooled temporary clients of blocked ones) over some seconds.
/// Stopped: four readings 0.5 s apart within 64 KB.
fn quiet(con: &mut redis::Connection) -> f64 {
    let mut seen = vec![info_num(con, "memory", "used_memory")];
    for _ in 0..120 {
        std::thread::sleep(Duration::from_millis(500));
        seen.push(info_num(con, "memory", "used_memory"));
        let last = &seen[seen.len().saturating_sub(4)..];
        let (lo, hi) = last
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), m| (lo.min(*m), hi.max(*m)));
        if last.len() == 4 && hi - lo < 64.0 * 1024.0 {
            break;
        }
    }
    seen.last().copied().unwrap_or(0.0)
}

/// The client process, under `ulimit -n fd_limit`.
fn spawn(
    port: u16,
    mode: Mode,
    (waits, keys): (usize, usize),
    fd_limit: usize,
) -> Result<std::process::Child, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let script = format!("ulimit -n {fd_limit} || exit 97; exec \"$0\" \"$@\"");
    Command::new("sh")
        .args(["-c", &script])
        .arg(exe)
        .args(["waits", &port.to_string(), mode.name()])
        .args([waits.to_string(), keys.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the client process: {e}"))
}

type Measured = (usize, Option<String>, usize, f64, Option<f64>, f64);

/// Reads the server once the process says (`line`) how many waits it sent.
fn measure(
    con: &mut redis::Connection,
    line: &str,
    (m0, c0): (f64, f64),
    settle: bool,
) -> Result<Measured, String> {
    let (sent, failure) = match line.trim().split_once(' ') {
        Some(("ready", rest)) => {
            let (n, why) = rest.split_once(' ').unwrap_or((rest, "-"));
            let n: usize = n.parse().map_err(|_| format!("bad line {line:?}"))?;
            (n, (why != "-").then(|| why.to_owned()))
        }
        _ => return Err(format!("the client process failed: {line:?}")),
    };
    let mut seen = 0;
    for _ in 0..600 {
        seen = info_num(con, "rlock", "rlock_waiters") as usize;
        if seen >= sent {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if seen == 0 {
        return Err(format!("the server queued none of the {sent} waits"));
    }
    let failure = match failure {
        None if seen < sent => Some(format!("only {seen} of {sent} queued")),
        failure => failure,
    };
    let sent = seen;
    let per = |m: f64| (m - m0) / sent as f64;
    let connections = (info_num(con, "clients", "connected_clients") - c0).max(0.0) as usize;
    let at_once = per(info_num(con, "memory", "used_memory"));
    let estimate = info_num(con, "rlock", "rlock_waiters_memory") / sent as f64;
    let settled = settle.then(|| {
        std::thread::sleep(SETTLE);
        per(info_num(con, "memory", "used_memory"))
    });
    Ok((sent, failure, connections, at_once, settled, estimate))
}

/// The client process (`rlock-bench waits PORT MODE WAITS KEYS`): queues its waits, says
/// `ready <queued> <error or ->` and keeps them until its stdin closes.
pub fn process_main(args: &[String]) -> Result<(), String> {
    let [port, mode, waits, keys] = args else {
        return Err("waits PORT tickets|block|client WAITS KEYS".into());
    };
    let port: u16 = port.parse().map_err(|_| "port")?;
    let (waits, keys): (usize, usize) = (
        waits.parse().map_err(|_| "waits")?,
        keys.parse().map_err(|_| "keys")?,
    );
    let mut held_tickets = None;
    let mut held_conns = Vec::new();
    let (queued, failure) = match mode.as_str() {
        "tickets" => match queue_tickets(port, waits, keys) {
            Ok(con) => {
                held_tickets = Some(con);
                (waits, None)
            }
            Err(e) => (0, Some(e)),
        },
        "block" => block(port, waits, keys, &mut held_conns),
        "client" => {
            let result = crate::client_waits::run(port, waits, keys);
            let why = result
                .failure
                .map_or("-".to_owned(), |e| e.replace('\n', " "));
            println!("ready {} {why}", result.pending);
            let _ = std::io::stdout().flush();
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            return Ok(());
        }
        _ => return Err(format!("unknown mode {mode}")),
    };
    let why = failure.map_or("-".to_owned(), |e| e.replace('\n', " "));
    println!("ready {queued} {why}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop((held_tickets, held_conns));
    Ok(())
}

/// `waits` tickets over one connection, sent in batches; the connection that holds them.
fn queue_tickets(port: u16, waits: usize, keys: usize) -> Result<Resp3, String> {
    let mut con = Resp3::receiver(port)?;
    let mut sent = 0;
    while sent < waits {
        let batch = (waits - sent).min(1000);
        for i in sent..sent + batch {
            let owner = format!("w{i}:1");
            let key = key(Mode::Tickets, keys, i);
            con.queue(&["LOCK.WAIT", &key, &owner, "LEASE", "30000"]);
        }
        con.flush()?;
        for _ in 0..batch {
            let reply = con.read()?;
            if !matches!(resp3::wait_reply(&reply), Some(Wait::Queued(_))) {
                return Err(format!("LOCK.WAIT answered {reply:?}"));
            }
        }
        sent += batch;
    }
    Ok(con)
}

/// `waits` blocking acquisitions, a connection each, until a connection fails: (opened,
/// why it stopped).
fn block(
    port: u16,
    waits: usize,
    keys: usize,
    conns: &mut Vec<TcpStream>,
) -> (usize, Option<String>) {
    for i in 0..waits {
        let owner = format!("w{i}:1");
        let cmd = redis::cmd("LOCK.ACQUIRE")
            .arg(key(Mode::Block, keys, i))
            .arg(owner)
            .arg(&["LEASE", "30000", "WAIT", "0"][..])
            .get_packed_command();
        let sent = TcpStream::connect(("127.0.0.1", port)).and_then(|mut s| {
            s.write_all(&cmd)?;
            Ok(s)
        });
        match sent {
            Ok(s) => conns.push(s),
            Err(e) => return (i, Some(e.to_string())),
        }
    }
    (waits, None)
}
