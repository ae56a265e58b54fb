//! A bare RESP3 connection for the ticket waits of scenario 9: commands written as they
//! are, many in flight at once, and replies and pushes read in the order they come
//! (`redis::Parser` over the socket), so one connection carries any number of waits.

use std::io::Write;
use std::net::TcpStream;

use redis::{Parser, PushKind, Value};

pub struct Resp3 {
    stream: TcpStream,
    parser: Parser,
    /// Bytes written but not yet sent (see [`Resp3::queue`]).
    out: Vec<u8>,
}

/// What a ticket's `LOCK.WAIT` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Held(i64),
    Queued(u64),
}

impl Resp3 {
    /// A connection to 127.0.0.1:`port`, switched to RESP3.
    pub fn open(port: u16) -> Result<Resp3, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut con = Resp3 {
            stream,
            parser: Parser::new(),
            out: Vec::new(),
        };
        con.call(&["HELLO", "3"])?;
        Ok(con)
    }

    /// A connection that receives its own grants: RESP3, subscribed to `__rlock__:<id>`.
    pub fn receiver(port: u16) -> Result<Resp3, String> {
        let mut con = Resp3::open(port)?;
        let Value::Int(id) = con.call(&["CLIENT", "ID"])? else {
            return Err("CLIENT ID answered no integer".into());
        };
        con.call(&["SUBSCRIBE", &format!("__rlock__:{id}")])?;
        Ok(con)
    }

    /// Adds a command to the bytes [`Resp3::flush`] sends.
    pub fn queue<S: AsRef<str>>(&mut self, args: &[S]) {
        let _ = write!(self.out, "*{}\r\n", args.len());
        for a in args {
            let a = a.as_ref();
            let _ = write!(self.out, "${}\r\n{a}\r\n", a.len());
        }
    }

    pub fn flush(&mut self) -> Result<(), String> {
        let sent = self.stream.write_all(&self.out);
        self.out.clear();
        sent.map_err(|e| e.to_string())
    }

    /// The next value the server sent: a reply, or a push.
    pub fn read(&mut self) -> Result<Value, String> {
        self.parser
            .parse_value(&mut self.stream)
            .map_err(|e| e.to_string())
    }

    /// Sends one command and reads its reply (no push may come meanwhile).
    pub fn call<S: AsRef<str>>(&mut self, args: &[S]) -> Result<Value, String> {
        self.queue(args);
        self.flush()?;
        self.read()
    }
}

/// A `LOCK.WAIT` reply: `[held, token]` or `[queued, wait id]`.
pub fn wait_reply(v: &Value) -> Option<Wait> {
    let Value::Array(items) = v else {
        return None;
    };
    let [tag, Value::Int(n)] = items.as_slice() else {
        return None;
    };
    let tag = match tag {
        Value::SimpleString(s) => s.as_bytes(),
        Value::BulkString(b) => b.as_slice(),
        _ => return None,
    };
    match tag {
        b"held" => Some(Wait::Held(*n)),
        b"queued" => Some(Wait::Queued(u64::try_from(*n).ok()?)),
        _ => None,
    }
}

/// A grant message `<wait id> <outcome>` pushed on a receiver's channel: (wait id,
/// outcome), the outcome a token, 0 (timed out) or an error line.
pub fn outcome(v: &Value) -> Option<(u64, String)> {
    let Value::Push {
        kind: PushKind::Message,
        data,
    } = v
    else {
        return None;
    };
    let Some(Value::BulkString(payload)) = data.get(1) else {
        return None;
    };
    let text = std::str::from_utf8(payload).ok()?;
    let (id, outcome) = text.split_once(' ')?;
    Some((id.parse().ok()?, outcome.to_owned()))
}
