//! SPEC.md §7: any input gives a reply or an error, never a crash, and touches no key it
//! does not name. Random LOCK.* commands with random arguments, from a printed seed.

mod support;

use std::collections::BTreeMap;

use redis::Value;
use support::{error_text, key_state, raw, try_raw, KeyState, Rng, Server};

const COMMANDS: usize = 12_000;
const NAMES: [&str; 10] = [
    "lock.acquire",
    "lock.wait",
    "lock.grants",
    "lock.cancel",
    "lock.release",
    "lock.renew",
    "lock.info",
    "lock.forcerelease",
    "lock.apply",
    "lock.raise",
];
/// Keys the fuzzer uses; none of them is a canary.
const FUZZ_KEYS: [&str; 4] = ["fz:0", "fz:1", "fz:{2}", "fz:3"];
const OWNERS: [&str; 3] = ["fz-owner:1", "fz-owner:2", "fz-owner:3"];
const WORDS: [&str; 12] = [
    "LEASE", "WAIT", "lease", "wait", "Lease", "LEASE ", "@token", "@", "owner", "TO", "BLOCK",
    "COUNT",
];
const NUMBERS: [&str; 14] = [
    "0",
    "1",
    "100",
    "30000",
    "-1",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999",
    "1.5",
    "01",
    "+5",
    "1e3",
];

/// Canary keys (longer than any random key the fuzzer makes), created before the run.
const CANARY_STRING: &str = "canary:string:never-fuzzed";
const CANARY_LIST: &str = "canary:list:never-fuzzed";
const CANARY_SET: &str = "canary:set:never-fuzzed";
const CANARY_LOCK: &str = "canary:lock:never-fuzzed";
const CANARY_HASH: &str = "canary:hash:never-fuzzed";
const CANARY_OWNER: &str = "canary-owner:never-fuzzed";
const CANARIES: [&str; 5] = [
    CANARY_STRING,
    CANARY_LIST,
    CANARY_SET,
    CANARY_LOCK,
    CANARY_HASH,
];

fn random_case(rng: &mut Rng, name: &str) -> Vec<u8> {
    name.bytes()
        .map(|b| {
            if rng.chance(30) {
                b.to_ascii_uppercase()
            } else {
                b
            }
        })
        .collect()
}

fn random_arg(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0 | 1 => rng.pick(&FUZZ_KEYS).as_bytes().to_vec(),
        2 | 3 => rng.pick(&WORDS).as_bytes().to_vec(),
        4 | 5 => rng.pick(&NUMBERS).as_bytes().to_vec(),
        6 => rng.range(-1000, 100_000).to_string().into_bytes(),
        7 => Vec::new(),
        8 => {
            let len = rng.below(13) as usize;
            rng.bytes(len)
        }
        _ => {
            let specials: [&[u8]; 6] = [b"\0", b"\r\n", b"\xff\xfe", b"\xc3\x28", b"{", b"}"];
            let mut arg = rng.pick(&FUZZ_KEYS).as_bytes().to_vec();
            arg.extend_from_slice(rng.pick::<&[u8]>(&specials));
            arg
        }
    }
}

/// Any of the commands with 0..=8 random arguments.
fn chaos_command(rng: &mut Rng) -> Vec<Vec<u8>> {
    let name = *rng.pick(&NAMES);
    let mut cmd = vec![random_case(rng, name)];
    let arity = rng.below(9) as usize;
    for _ in 0..arity {
        cmd.push(random_arg(rng));
    }
    cmd
}

/// A command shaped like a real call, with a fuzz key, a small set of owners and option
/// pairs, so that the lock state machine is exercised, not only the parser.
fn shaped_command(rng: &mut Rng) -> Vec<Vec<u8>> {
    let name = *rng.pick(&NAMES);
    let mut cmd = vec![random_case(rng, name)];
    cmd.push(if rng.chance(90) {
        rng.pick(&FUZZ_KEYS).as_bytes().to_vec()
    } else {
        random_arg(rng)
    });
    if name == "lock.info" || name == "lock.forcerelease" {
        return cmd;
    }
    cmd.push(if rng.chance(85) {
        rng.pick(&OWNERS).as_bytes().to_vec()
    } else {
        random_arg(rng)
    });
    if name == "lock.release" {
        return cmd;
    }
    for _ in 0..rng.below(3) {
        cmd.push(if rng.chance(70) {
            rng.pick(&WORDS[..5]).as_bytes().to_vec()
        } else if rng.chance(66) {
            rng.pick(&WORDS[9..]).as_bytes().to_vec()
        } else {
            random_arg(rng)
        });
        cmd.push(match rng.below(10) {
            0..=5 => rng.range(1, 5_000).to_string().into_bytes(),
            6..=8 => rng.pick(&NUMBERS).as_bytes().to_vec(),
            _ => random_arg(rng),
        });
    }
    if rng.chance(5) {
        cmd.pop();
    }
    cmd
}

fn random_command(rng: &mut Rng) -> Vec<Vec<u8>> {
    if rng.chance(50) {
        shaped_command(rng)
    } else {
        chaos_command(rng)
    }
}

/// An acquire with a `WAIT` (or `LOCK.GRANTS` with `BLOCK`) could block for real; those run
/// inside MULTI/EXEC, where the spec says they do not block, so the fuzzer never waits on a
/// lock it cannot get.
fn may_block(cmd: &[Vec<u8>]) -> bool {
    let has = |word: &[u8]| cmd[1..].iter().any(|a| a.eq_ignore_ascii_case(word));
    (cmd[0].eq_ignore_ascii_case(b"lock.acquire") && has(b"wait"))
        || (cmd[0].eq_ignore_ascii_case(b"lock.grants") && has(b"block"))
}

/// What the fuzzer saw: replies by kind, and errors that betray a caught panic.
#[derive(Default)]
struct Tally {
    replies: BTreeMap<String, usize>,
    internal: Vec<String>,
}

impl Tally {
    fn check(&mut self, cmd: &[Vec<u8>], reply: &Value) {
        let kind = match reply {
            Value::Array(items) if cmd.first().map(Vec::as_slice) == Some(&b"EXEC"[..]) => {
                for item in items {
                    self.check(&[], item);
                }
                return;
            }
            Value::Int(_) => "integer".to_owned(),
            Value::Nil => "nil".to_owned(),
            Value::Array(_) | Value::Map(_) => "array".to_owned(),
            Value::SimpleString(s) => s.clone(),
            Value::Okay => "OK".to_owned(),
            other => match error_text(other) {
                Some(text) => {
                    if text.contains("internal error") || text.contains("panic") {
                        self.internal.push(text.clone());
                    }
                    error_kind(&text)
                }
                None => format!("{other:?}"),
            },
        };
        *self.replies.entry(kind).or_default() += 1;
    }
}

/// An error text without what it echoes, so that the tally groups alike errors.
fn error_kind(text: &str) -> String {
    let cut = text.find('\'').unwrap_or(text.len()).min(40);
    text[..cut].to_owned()
}

fn send(con: &mut redis::Connection, cmd: &[Vec<u8>], seed: u64, n: usize) -> Value {
    try_raw(con, cmd).unwrap_or_else(|e| {
        panic!(
            "connection broke on command #{n} {} (seed {seed}): {e}",
            support::show(cmd)
        )
    })
}

fn make_canaries(con: &mut redis::Connection) -> Vec<KeyState> {
    raw(con, &["SET", CANARY_STRING, "value"]);
    raw(con, &["RPUSH", CANARY_LIST, "a", "b"]);
    raw(con, &["SADD", CANARY_SET, "a", "b"]);
    raw(
        con,
        &["LOCK.ACQUIRE", CANARY_LOCK, CANARY_OWNER, "LEASE", "600000"],
    );
    raw(con, &["HSET", CANARY_HASH, "a", "1", "b", "2"]);
    let states: Vec<KeyState> = CANARIES
        .iter()
        .map(|k| key_state(con, k.as_bytes()))
        .collect();
    for (key, state) in CANARIES.iter().zip(&states) {
        assert!(state.dump.is_some(), "canary {key} was not created");
    }
    states
}

#[test]
fn random_lock_commands_never_break_the_server() {
    let seed = Rng::seed_from_env("RLOCK_FUZZ_SEED", 0xF0CC_2024);
    println!("fuzz seed: {seed} (set RLOCK_FUZZ_SEED to repeat)");
    let mut rng = Rng::new(seed);
    let mut server = Server::start();
    let mut con = server.conn();
    let canaries = make_canaries(&mut con);
    let mut tally = Tally::default();

    for n in 0..COMMANDS {
        let cmd = random_command(&mut rng);
        if may_block(&cmd) {
            send(&mut con, &[b"MULTI".to_vec()], seed, n);
            let queued = send(&mut con, &cmd, seed, n);
            let exec = [b"EXEC".to_vec()];
            let reply = send(&mut con, &exec, seed, n);
            tally.check(&cmd, &queued);
            tally.check(&exec, &reply);
        } else {
            let reply = send(&mut con, &cmd, seed, n);
            tally.check(&cmd, &reply);
        }
    }

    for (kind, count) in &tally.replies {
        println!("{count:6}  {kind}");
    }
    assert!(server.is_running(), "redis-server died:\n{}", server.log());
    let pong = raw(&mut con, &["PING"]);
    assert_eq!(pong, Value::SimpleString("PONG".into()));
    let mut fresh = server.conn();
    assert_eq!(
        raw(&mut fresh, &["PING"]),
        Value::SimpleString("PONG".into())
    );
    for (key, before) in CANARIES.iter().zip(&canaries) {
        assert_eq!(
            &key_state(&mut fresh, key.as_bytes()),
            before,
            "canary {key} changed (seed {seed})"
        );
    }
    assert!(
        tally.internal.is_empty(),
        "{} internal errors (caught panics), e.g. {:?} (seed {seed})",
        tally.internal.len(),
        tally.internal.first()
    );
}
