//! A bare RESP2/RESP3 connection that reads whole replies (arrays and maps included) and
//! prints them as `redis-cli` does on a terminal, so a documented session can be compared
//! line by line with what the server answers now.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// How long one reply may take before the check fails.
pub const REPLY_LIMIT: Duration = Duration::from_secs(10);

/// A reply, as far as `redis-cli` tells kinds apart.
#[derive(Debug, Clone)]
pub enum Reply {
    Int(i64),
    Nil,
    Bulk(Vec<u8>),
    Status(String),
    Error(String),
    Double(String),
    Bool(bool),
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
}

pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    /// A connection to 127.0.0.1:`port`; with `resp3`, `HELLO 3` is sent first.
    pub fn open(port: u16, resp3: bool) -> Result<Conn, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut conn = Conn {
            stream,
            buf: Vec::new(),
        };
        if resp3 {
            conn.call(&[b"HELLO".to_vec(), b"3".to_vec()])?;
        }
        Ok(conn)
    }

    pub fn send(&mut self, args: &[Vec<u8>]) -> Result<(), String> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).map_err(|e| e.to_string())
    }

    pub fn call(&mut self, args: &[Vec<u8>]) -> Result<Reply, String> {
        self.send(args)?;
        self.reply()
    }

    /// The next reply, or an error if none comes within [`REPLY_LIMIT`].
    pub fn reply(&mut self) -> Result<Reply, String> {
        let deadline = Instant::now() + REPLY_LIMIT;
        loop {
            if let Some((reply, used)) = parse(&self.buf)? {
                self.buf.drain(..used);
                return Ok(reply);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no reply within {REPLY_LIMIT:?}"));
            }
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
}

/// One reply off the front of `buf` and the bytes it took, or `None` if it is incomplete.
fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = String::from_utf8_lossy(&buf[1..end]).into_owned();
    let used = end + 2;
    let number = |text: &str| -> Result<i64, String> {
        text.parse()
            .map_err(|_| format!("bad RESP number {text:?}"))
    };
    let reply = match buf[0] {
        b':' => Reply::Int(number(&line)?),
        b'+' => Reply::Status(line),
        b'-' => Reply::Error(line),
        b'_' => Reply::Nil,
        b',' => Reply::Double(line),
        b'#' => Reply::Bool(line == "t"),
        b'$' | b'=' if line == "-1" => Reply::Nil,
        b'$' | b'=' => {
            let len = usize::try_from(number(&line)?).map_err(|e| e.to_string())?;
            if buf.len() < used + len + 2 {
                return Ok(None);
            }
            let body = &buf[used..used + len];
            // A verbatim string starts with its format, `txt:`.
            let body = if buf[0] == b'=' {
                &body[4.min(len)..]
            } else {
                body
            };
            return Ok(Some((Reply::Bulk(body.to_vec()), used + len + 2)));
        }
        b'*' | b'~' | b'>' if line == "-1" => Reply::Nil,
        b'*' | b'~' | b'>' => return items(buf, used, number(&line)?, false),
        b'%' => return items(buf, used, number(&line)? * 2, true),
        other => return Err(format!("unknown RESP type {:?}", other as char)),
    };
    Ok(Some((reply, used)))
}

/// `count` replies after the header (`used` bytes), as an array or, paired, a map.
fn items(
    buf: &[u8],
    mut used: usize,
    count: i64,
    map: bool,
) -> Result<Option<(Reply, usize)>, String> {
    let mut all = Vec::new();
    for _ in 0..count {
        let Some((item, n)) = parse(&buf[used..])? else {
            return Ok(None);
        };
        all.push(item);
        used += n;
    }
    if !map {
        return Ok(Some((Reply::Array(all), used)));
    }
    let mut pairs = Vec::new();
    let mut it = all.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        pairs.push((k, v));
    }
    Ok(Some((Reply::Map(pairs), used)))
}

/// The lines `redis-cli` prints for a reply on a terminal; `raw` for the commands it prints
/// raw (`INFO`).
pub fn lines(reply: &Reply, raw: bool) -> Vec<String> {
    match reply {
        Reply::Bulk(bytes) if raw => String::from_utf8_lossy(bytes)
            .trim_end()
            .split("\r\n")
            .map(str::to_owned)
            .collect(),
        Reply::Int(n) => vec![format!("(integer) {n}")],
        Reply::Nil => vec!["(nil)".into()],
        Reply::Bulk(bytes) => vec![quoted(bytes)],
        Reply::Status(text) => vec![text.clone()],
        Reply::Error(text) => vec![format!("(error) {text}")],
        Reply::Double(text) => vec![format!("(double) {text}")],
        Reply::Bool(b) => vec![format!("({b})")],
        Reply::Array(items) if items.is_empty() => vec!["(empty array)".into()],
        Reply::Array(items) => numbered(items.iter().map(|item| lines(item, raw)), ")"),
        Reply::Map(pairs) => numbered(
            pairs.iter().map(|(k, v)| {
                let mut value = lines(v, raw);
                value[0] = format!("{} => {}", lines(k, raw).join(" "), value[0]);
                value
            }),
            "#",
        ),
    }
}

/// Items numbered `1) `, ` 2) `... (right-aligned), their further lines indented under them.
fn numbered(items: impl ExactSizeIterator<Item = Vec<String>>, mark: &str) -> Vec<String> {
    let width = items.len().to_string().len();
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        let prefix = format!("{:>width$}{mark} ", i + 1);
        for (j, line) in item.into_iter().enumerate() {
            let lead = if j == 0 {
                prefix.clone()
            } else {
                " ".repeat(prefix.len())
            };
            out.push(format!("{lead}{line}"));
        }
    }
    out
}

/// A bulk string as `redis-cli` quotes it: `"..."`, escapes for `"`, `\` and the control
/// characters, `\xHH` for other bytes outside printable ASCII.
fn quoted(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' | b'\\' => out.extend(['\\', b as char]),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}
