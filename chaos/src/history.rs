//! What every worker saw, in one shared history: acquisitions, critical sections (with the
//! resource's stamps of their begin and end writes), raw waits and their replies, faults.
//! Child-process workers send their events to the parent as text lines.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch on this machine (the resource shares its clock).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One write of a critical section to the fenced resource, as the resource answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// The resource's clock (`TIME`) when it ran the write, in microseconds.
    pub stamp_us: u64,
    pub accepted: bool,
    /// The highest token the resource had accepted for the key before (-1: none).
    pub max_before: i64,
    /// Whether that highest token was accepted from this same owner.
    pub same_holder: bool,
}

/// A critical section: a holder's begin and end writes, and whether it still believed it
/// held (not lost, within the lease it was told) after the end write returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub worker: String,
    pub key: String,
    pub owner: String,
    pub token: u64,
    /// False for holders without a fencing token (Redisson-style scripts).
    pub fenced: bool,
    pub lease_ms: u64,
    pub begin: Write,
    pub end: Option<Write>,
    pub believed: bool,
    pub mode: Mode,
}

/// How a section held its key: a plain lock, or a read-write lock's read or write holds.
/// Read sections of a key may overlap one another; any other pair of holdings may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Plain,
    Read,
    Write,
}

/// A raw `LOCK.ACQUIRE ... WAIT` and how many replies its connection brought.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub worker: String,
    pub key: String,
    pub replies: u8,
    /// The connection failed (the reply may have been lost with it: not counted).
    pub conn_error: bool,
}

/// A span of a fault during which a server was made slow or unreachable on purpose, or its
/// clients cut off from it: `server` is a server's name, or `*` for every server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub server: String,
    pub from_us: u64,
    pub to_us: u64,
    /// The server itself stopped answering (stopped, killed, paused, sleeping, failing
    /// over): its heartbeat may be late.
    pub silent: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Acquire {
        t_us: u64,
        ok: bool,
        worker: String,
    },
    Section(Section),
    Wait(Wait),
    Fault {
        t_us: u64,
        what: String,
    },
    Window(Window),
    /// A read-write worker got a reply that the command's interface rules out (a reentry
    /// or downgrade that changed the token, a reader's fenced write accepted, ...).
    Wrong {
        worker: String,
        key: String,
        what: String,
    },
    /// A worker's belief about `owner` on `key` begins (it starts to acquire) or ends (its
    /// release or failed acquisition returned).
    Belief {
        t_us: u64,
        key: String,
        owner: String,
        begin: bool,
    },
    /// The owners holding `key` on the servers, asked at `sent_us`, answered by `got_us`.
    Sample {
        sent_us: u64,
        got_us: u64,
        key: String,
        owners: Vec<String>,
    },
    /// A heartbeat `PING` to `server` answered (or given up) late; `starved_us`: how long
    /// the server's main thread and the prober waited for a CPU meanwhile.
    Stall {
        server: String,
        sent_us: u64,
        got_us: u64,
        starved_us: u64,
    },
    Sem(crate::history_sem::SemSpan),
    Latch(crate::history_sem::Latch),
    /// A loss worker's holding (`check_late.rs`).
    Held(crate::history_sem::Held),
    /// The `end-holding` fault ended the holdings of `owners` on `key` at `t_us`.
    Ended {
        t_us: u64,
        key: String,
        owners: Vec<String>,
    },
}

/// The shared history. In a child-process worker it prints each event as a line instead,
/// at once, so that a killed child loses nothing it recorded.
#[derive(Debug, Clone, Default)]
pub struct History {
    events: Arc<Mutex<Vec<Event>>>,
    printing: bool,
}

impl History {
    pub fn printing() -> History {
        History {
            printing: true,
            ..History::default()
        }
    }

    pub fn push(&self, event: Event) {
        if self.printing {
            if let Some(line) = to_line(&event) {
                use std::io::Write as _;
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            return;
        }
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }

    pub fn acquired(&self, worker: &str, ok: bool) {
        let (t_us, worker) = (now_us(), worker.to_owned());
        self.push(Event::Acquire { t_us, ok, worker });
    }

    pub fn believe(&self, key: &str, owner: &str, begin: bool) {
        self.push(Event::Belief {
            t_us: now_us(),
            key: key.to_owned(),
            owner: owner.to_owned(),
            begin,
        });
    }

    pub fn fault(&self, what: String) {
        self.push(Event::Fault {
            t_us: now_us(),
            what,
        });
    }

    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

fn write_text(w: Option<&Write>) -> String {
    match w {
        Some(w) => format!(
            "{} {} {} {}",
            w.stamp_us, w.accepted as u8, w.max_before, w.same_holder as u8
        ),
        None => "- - - -".to_owned(),
    }
}

fn parse_write(f: &[&str]) -> Option<Write> {
    Some(Write {
        stamp_us: f[0].parse().ok()?,
        accepted: f[1] == "1",
        max_before: f[2].parse().ok()?,
        same_holder: f[3] == "1",
    })
}

/// One event as a line (names and keys have no spaces).
pub fn to_line(event: &Event) -> Option<String> {
    match event {
        Event::Acquire { t_us, ok, worker } => Some(format!("A {t_us} {} {worker}", *ok as u8)),
        Event::Section(s) => Some(format!(
            "S {} {} {} {} {} {} {} {} {} {}",
            s.worker,
            s.key,
            s.owner,
            s.token,
            s.fenced as u8,
            s.lease_ms,
            write_text(Some(&s.begin)),
            write_text(s.end.as_ref()),
            s.believed as u8,
            ["p", "r", "w"][s.mode as usize]
        )),
        Event::Belief {
            t_us,
            key,
            owner,
            begin,
        } => Some(format!("B {t_us} {key} {owner} {}", *begin as u8)),
        _ => None,
    }
}

/// The event of a line written by [`to_line`].
pub fn from_line(line: &str) -> Option<Event> {
    let f: Vec<&str> = line.split_whitespace().collect();
    match (f.first(), f.len()) {
        (Some(&"A"), 4) => Some(Event::Acquire {
            t_us: f[1].parse().ok()?,
            ok: f[2] == "1",
            worker: f[3].to_owned(),
        }),
        (Some(&"B"), 5) => Some(Event::Belief {
            t_us: f[1].parse().ok()?,
            key: f[2].to_owned(),
            owner: f[3].to_owned(),
            begin: f[4] == "1",
        }),
        (Some(&"S"), 17) => Some(Event::Section(Section {
            worker: f[1].to_owned(),
            key: f[2].to_owned(),
            owner: f[3].to_owned(),
            token: f[4].parse().ok()?,
            fenced: f[5] == "1",
            lease_ms: f[6].parse().ok()?,
            begin: parse_write(&f[7..11])?,
            end: parse_write(&f[11..15]),
            believed: f[15] == "1",
            mode: match f[16] {
                "r" => Mode::Read,
                "w" => Mode::Write,
                _ => Mode::Plain,
            },
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_acquisitions_survive_their_lines() {
        let w = Write {
            stamp_us: 5,
            accepted: true,
            max_before: -1,
            same_holder: false,
        };
        let s = Section {
            worker: "w1".into(),
            key: "k".into(),
            owner: "o:1".into(),
            token: 42,
            fenced: true,
            lease_ms: 2000,
            begin: w,
            end: None,
            believed: true,
            mode: Mode::Plain,
        };
        for event in [
            Event::Section(s.clone()),
            Event::Section(Section {
                end: Some(w),
                mode: Mode::Read,
                ..s
            }),
            Event::Acquire {
                t_us: 9,
                ok: false,
                worker: "w2".into(),
            },
            Event::Belief {
                t_us: 11,
                key: "k".into(),
                owner: "c1:7".into(),
                begin: true,
            },
        ] {
            let line = to_line(&event).expect("a line");
            assert_eq!(from_line(&line), Some(event), "{line}");
        }
    }
}
