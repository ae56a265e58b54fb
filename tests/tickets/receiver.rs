//! A bare connection that queues tickets and reads their outcomes: RESP3 (pushes on its
//! channel) or RESP2 (a mailbox read with `LOCK.GRANTS`), parsed whole by `redis::Parser`,
//! so that a test sees every frame the server sends, pushes included, in order.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use redis::{Parser, PushKind, Value};

use crate::support::Server;

/// How long any frame may take before the test fails.
const FRAME_LIMIT: Duration = Duration::from_secs(10);

pub struct Receiver {
    stream: TcpStream,
    parser: Parser,
    pub id: i64,
    /// Pushed outcomes read while waiting for a reply: (wait id, outcome).
    pending: Vec<(i64, String)>,
}

/// How a ticket's `LOCK.WAIT` was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    Held(i64),
    Queued(i64),
}

impl Receiver {
    /// A RESP3 connection subscribed to its channel (push).
    pub fn push(server: &Server) -> Receiver {
        let mut r = Receiver::resp2(server);
        r.call(&["HELLO", "3"]);
        let channel = format!("__rlock__:{}", r.id);
        r.send(&["SUBSCRIBE", &channel]);
        let reply = r.frame();
        assert!(
            matches!(
                &reply,
                Value::Push {
                    kind: PushKind::Subscribe,
                    ..
                }
            ),
            "SUBSCRIBE: {reply:?}"
        );
        r
    }

    /// A RESP2 connection (pull, or not a receiver at all).
    pub fn resp2(server: &Server) -> Receiver {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        stream.set_read_timeout(Some(FRAME_LIMIT)).expect("timeout");
        let mut r = Receiver {
            stream,
            parser: Parser::new(),
            id: 0,
            pending: Vec::new(),
        };
        r.id = match r.call(&["CLIENT", "ID"]) {
            Value::Int(id) => id,
            other => panic!("CLIENT ID: {other:?}"),
        };
        r
    }

    pub fn send(&mut self, args: &[&str]) {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.stream.write_all(&out).expect("write a command");
    }

    /// The next frame, whatever it is.
    pub fn frame(&mut self) -> Value {
        self.parser
            .parse_value(&mut self.stream)
            .unwrap_or_else(|e| panic!("no frame within {FRAME_LIMIT:?}: {e}"))
    }

    /// The next reply that is not a pushed outcome (those are kept for [`Receiver::outcome`]).
    pub fn reply(&mut self) -> Value {
        loop {
            let frame = self.frame();
            match outcome_of(&frame) {
                Some(outcome) => self.pending.push(outcome),
                None => return frame,
            }
        }
    }

    pub fn call(&mut self, args: &[&str]) -> Value {
        self.send(args);
        self.reply()
    }

    /// `LOCK.WAIT key owner [args...]`, answered.
    pub fn wait(&mut self, key: &str, owner: &str, args: &[&str]) -> Queued {
        let mut command = vec!["LOCK.WAIT", key, owner];
        command.extend_from_slice(args);
        queued_of(&self.call(&command))
    }

    /// The next pushed outcome: (wait id, outcome text: a token, `0`, or `-error`).
    pub fn outcome(&mut self) -> (i64, String) {
        if !self.pending.is_empty() {
            return self.pending.remove(0);
        }
        let frame = self.frame();
        outcome_of(&frame).unwrap_or_else(|| panic!("expected a pushed outcome, got {frame:?}"))
    }

    /// Whether no outcome came for this connection up to now: a `PING` is answered before
    /// any outcome pushed after it, and the outcomes already pushed come before its reply.
    pub fn no_outcome_yet(&mut self) -> bool {
        self.call(&["PING"]);
        self.pending.is_empty()
    }
}

/// A `LOCK.WAIT` reply: `[held, token]` or `[queued, wait id]`.
pub fn queued_of(reply: &Value) -> Queued {
    match reply {
        Value::Array(items) => match (items.first().and_then(text), items.get(1)) {
            (Some(tag), Some(Value::Int(n))) if tag == "held" => Queued::Held(*n),
            (Some(tag), Some(Value::Int(n))) if tag == "queued" => Queued::Queued(*n),
            _ => panic!("LOCK.WAIT reply: {reply:?}"),
        },
        other => panic!("LOCK.WAIT reply: {other:?}"),
    }
}

/// A pushed outcome: a message on a `__rlock__:` channel, `<wait id> <outcome>`.
fn outcome_of(frame: &Value) -> Option<(i64, String)> {
    let Value::Push {
        kind: PushKind::Message,
        data,
    } = frame
    else {
        return None;
    };
    let payload = data.get(1).and_then(text)?;
    let (id, outcome) = payload.split_once(' ')?;
    Some((id.parse().ok()?, outcome.to_owned()))
}

pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::SimpleString(s) => Some(s.clone()),
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}
