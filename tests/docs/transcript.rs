//! Replays the `redis-cli` sessions of a page against a real server.
//!
//! A session is a fenced block whose info string starts with `redis-cli`:
//! - `redis> CMD` lines are sent, and the lines after each, up to the next command, are
//!   the reply `redis-cli` prints; `$ redis-cli --eval NAME k1 , a1` runs the script of
//!   the page's ```` ```lua NAME ```` block with `EVAL`;
//! - further words name the connection: ```` ```redis-cli client-2 ```` is another client
//!   (one connection per name, kept for the whole page), `-3` a RESP3 one;
//! - a block's last command may have no reply: it blocks (the check waits until the server
//!   counts one more blocked client) and its reply is the first lines of a later block of
//!   the same connection, before any command there;
//! - varying values are marked as [`pattern`](super::pattern) says.
//!
//! The blocks of a page run in order on one server, so a page reads as one session.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::markdown::Block;
use crate::pattern::{matches, split, Tokens};
use crate::resp::{lines, Conn, Reply};

/// How long a command left without reply may take to block.
const BLOCK_LIMIT: Duration = Duration::from_secs(5);
/// What `redis-cli` prints after `SUBSCRIBE`; not part of any reply.
const SUBSCRIBED: &str = "Reading messages... (press Ctrl-C to quit)";

/// One command of a block and the reply lines written under it.
struct Step {
    line: usize,
    text: String,
    expected: Vec<String>,
}

struct Client {
    conn: Conn,
    /// The command whose reply is still to come.
    pending: Option<String>,
}

pub struct Replay {
    port: u16,
    control: Conn,
    clients: HashMap<String, Client>,
    tokens: Tokens,
    scripts: HashMap<String, String>,
}

/// Whether a block is a transcript to replay.
pub fn is_session(block: &Block) -> bool {
    block.lang() == "redis-cli"
}

/// Whether a block looks like a session, marked or not.
pub fn looks_like_session(block: &Block) -> bool {
    block
        .lines
        .iter()
        .any(|l| l.starts_with("redis> ") || l.starts_with("$ redis-cli"))
}

impl Replay {
    pub fn new(port: u16) -> Result<Replay, String> {
        Ok(Replay {
            port,
            control: Conn::open(port, false)?,
            clients: HashMap::new(),
            tokens: Tokens::new(),
            scripts: HashMap::new(),
        })
    }

    /// Runs one block: a session is replayed, a ```` ```lua NAME ```` block remembered.
    pub fn block(&mut self, block: &Block) -> Result<(), String> {
        let words: Vec<&str> = block.info.split_whitespace().collect();
        if words.first() == Some(&"lua") {
            if let Some(name) = words.get(1) {
                self.scripts
                    .insert((*name).to_owned(), block.lines.join("\n"));
            }
            return Ok(());
        }
        if !is_session(block) {
            return Ok(());
        }
        let resp3 = words.contains(&"-3");
        let name = words[1..]
            .iter()
            .find(|w| **w != "-3")
            .unwrap_or(&"default");
        let name = format!("{name}{}", if resp3 { " -3" } else { "" });
        let (lead, steps) = parse(block);
        if !self.clients.contains_key(&name) {
            let conn = Conn::open(self.port, resp3)?;
            self.clients.insert(
                name.clone(),
                Client {
                    conn,
                    pending: None,
                },
            );
        }
        if !lead.is_empty() {
            self.pending_reply(&name, &lead, block.line)?;
        }
        let last = steps.len().saturating_sub(1);
        for (i, step) in steps.iter().enumerate() {
            if step.expected.is_empty() && i == last {
                self.send_blocking(&name, step)?;
            } else {
                self.run(&name, step)?;
            }
        }
        Ok(())
    }

    fn run(&mut self, name: &str, step: &Step) -> Result<(), String> {
        let args = self.args(step)?;
        let client = self.clients.get_mut(name).ok_or("no such client")?;
        let reply = client.conn.call(&args).map_err(|e| at(step.line, &e))?;
        compare(
            &mut self.tokens,
            step.line,
            &step.text,
            &step.expected,
            &reply,
        )
    }

    /// Sends a command that must block, and waits until the server counts it blocked.
    fn send_blocking(&mut self, name: &str, step: &Step) -> Result<(), String> {
        let before = blocked(&mut self.control)?;
        let args = self.args(step)?;
        let client = self.clients.get_mut(name).ok_or("no such client")?;
        client.conn.send(&args)?;
        client.pending = Some(step.text.clone());
        let deadline = Instant::now() + BLOCK_LIMIT;
        while blocked(&mut self.control)? <= before {
            if Instant::now() >= deadline {
                return Err(at(step.line, &format!("`{}` did not block", step.text)));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    fn pending_reply(
        &mut self,
        name: &str,
        expected: &[String],
        line: usize,
    ) -> Result<(), String> {
        let client = self.clients.get_mut(name).ok_or("no such client")?;
        let text = client.pending.take().unwrap_or_default();
        let reply = client.conn.reply().map_err(|e| at(line, &e))?;
        compare(&mut self.tokens, line, &text, expected, &reply)
    }

    /// The arguments of a step: a command as `redis-cli` splits it, or the `EVAL` of a
    /// `redis-cli --eval` line.
    fn args(&mut self, step: &Step) -> Result<Vec<Vec<u8>>, String> {
        let Some(eval) = step.text.strip_prefix("$ redis-cli --eval ") else {
            return split(&step.text, &mut self.tokens);
        };
        let mut words = split(eval, &mut self.tokens)?;
        let name = String::from_utf8_lossy(&words.remove(0)).into_owned();
        let script = self
            .scripts
            .get(&name)
            .ok_or_else(|| at(step.line, &format!("no ```lua {name} block")))?;
        let comma = words.iter().position(|w| w == b",").unwrap_or(words.len());
        let mut args = vec![
            b"EVAL".to_vec(),
            script.clone().into_bytes(),
            comma.to_string().into_bytes(),
        ];
        args.extend(words.into_iter().filter(|w| w != b","));
        Ok(args)
    }
}

/// The reply lines before the block's first command, and its commands.
fn parse(block: &Block) -> (Vec<String>, Vec<Step>) {
    let mut lead = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    for (n, raw) in block.lines.iter().enumerate() {
        let line = raw.trim_end();
        if let Some(text) = line.strip_prefix("redis> ") {
            let text = text.to_owned();
            steps.push(Step {
                line: block.line + n + 1,
                text,
                expected: Vec::new(),
            });
        } else if line.starts_with("$ redis-cli --eval ") {
            let text = line.to_owned();
            steps.push(Step {
                line: block.line + n + 1,
                text,
                expected: Vec::new(),
            });
        } else if line == SUBSCRIBED {
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.to_owned());
        } else {
            lead.push(line.to_owned());
        }
    }
    (lead, steps)
}

fn compare(
    tokens: &mut Tokens,
    line: usize,
    text: &str,
    expected: &[String],
    reply: &Reply,
) -> Result<(), String> {
    let raw = text
        .split_whitespace()
        .next()
        .is_some_and(|c| c.eq_ignore_ascii_case("INFO"));
    let actual = lines(reply, raw);
    let same = actual.len() == expected.len()
        && expected
            .iter()
            .zip(&actual)
            .all(|(e, a)| matches(e, a.trim_end(), tokens));
    if same {
        return Ok(());
    }
    Err(at(
        line,
        &format!(
            "`{text}`\n--- documented\n{}\n--- server\n{}",
            expected.join("\n"),
            actual.join("\n")
        ),
    ))
}

/// `INFO clients`' `blocked_clients`.
fn blocked(control: &mut Conn) -> Result<i64, String> {
    let reply = control.call(&[b"INFO".to_vec(), b"clients".to_vec()])?;
    let Reply::Bulk(text) = reply else {
        return Err(format!("INFO clients answered {reply:?}"));
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| "no blocked_clients in INFO clients".to_owned())
}

fn at(line: usize, message: &str) -> String {
    format!("line {line}: {message}")
}
