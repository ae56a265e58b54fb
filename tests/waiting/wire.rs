//! A bare RESP connection for waiters: it writes a command and reads its one-line reply
//! later, so a test can keep hundreds of clients blocked at once, tell "no reply yet"
//! from a reply, and drop a connection while it is queued.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::Server;

/// How long a waiter's reply may take before the test fails.
const REPLY_LIMIT: Duration = Duration::from_secs(10);

/// A reply of the kinds lock commands give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Int(i64),
    Nil,
    Status(String),
    Error(String),
}

pub struct Wire {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Wire {
    pub fn connect(server: &Server) -> Wire {
        let stream = TcpStream::connect(("127.0.0.1", server.port()))
            .unwrap_or_else(|e| panic!("connect to port {}: {e}", server.port()));
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        Wire {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes one command without waiting for its reply.
    pub fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.stream.write_all(&out).expect("write a command");
    }

    /// The next reply, failing the test if none comes within the reply limit.
    pub fn reply(&mut self) -> Reply {
        self.reply_within(REPLY_LIMIT)
            .unwrap_or_else(|| panic!("no reply within {REPLY_LIMIT:?}"))
    }

    /// The next reply, or `None` if none arrives within `limit`.
    pub fn reply_within(&mut self, limit: Duration) -> Option<Reply> {
        self.reply_or_close(limit)
            .unwrap_or_else(|closed| panic!("{closed}"))
    }

    /// The next reply, `None` if none arrives within `limit`, or an error if the server
    /// closed the connection first (Sentinel kills the clients of a node it reconfigures).
    pub fn reply_or_close(&mut self, limit: Duration) -> Result<Option<Reply>, String> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(reply) = self.parse() {
                return Ok(Some(reply));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("set read timeout");
            let mut chunk = [0u8; 512];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("the server closed the connection".to_owned()),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Err(e.to_string()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("read a reply: {e}"),
            }
        }
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> Reply {
        self.send(args);
        self.reply()
    }

    /// Whether any reply bytes are waiting to be read, without blocking.
    pub fn has_pending(&mut self) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        self.stream.set_nonblocking(true).expect("set nonblocking");
        let mut byte = [0u8; 1];
        let pending = match self.stream.peek(&mut byte) {
            Ok(n) => n > 0,
            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
            Err(e) => panic!("peek: {e}"),
        };
        self.stream.set_nonblocking(false).expect("set blocking");
        pending
    }

    /// Takes one complete single-line (or short bulk) reply off the buffer.
    fn parse(&mut self) -> Option<Reply> {
        let end = self.buf.windows(2).position(|w| w == b"\r\n")?;
        let line = String::from_utf8_lossy(&self.buf[1..end]).into_owned();
        let mut used = end + 2;
        let reply = match self.buf.first() {
            Some(b':') => Reply::Int(line.parse().expect("integer reply")),
            Some(b'+') => Reply::Status(line),
            Some(b'-') => Reply::Error(line),
            Some(b'_') => Reply::Nil,
            Some(b'$') if line == "-1" => Reply::Nil,
            Some(b'$') => {
                let len: usize = line.parse().expect("bulk length");
                if self.buf.len() < used + len + 2 {
                    return None;
                }
                let text = String::from_utf8_lossy(&self.buf[used..used + len]).into_owned();
                used += len + 2;
                Reply::Status(text)
            }
            other => panic!("unexpected reply type {other:?}"),
        };
        self.buf.drain(..used);
        Some(reply)
    }
}

/// Polls `done` with short pauses until it holds or `limit` passes; returns whether it held.
pub fn poll(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}
