//! How a documented reply line matches the server's, and how a documented command is split
//! into arguments.
//!
//! Two kinds of values vary from run to run, and a transcript marks them so:
//! - a **fencing token** is any number of 16 digits or more (tokens are the wall clock in
//!   microseconds). The first time a transcript's reply shows one, it stands for the token
//!   the server gave there; every later appearance of the same digits, in a reply or in a
//!   command (`TOKEN 1795297040397997`), means that same token. Digits a command shows
//!   before any reply did stay as written there and after (a made-up stale token, a floor);
//! - any other varying number is written with a `~` before it (`(integer) ~29972`, a TTL):
//!   it matches any integer.

use std::collections::HashMap;

/// The documented tokens met so far (as written → as the server gave them).
pub type Tokens = HashMap<String, String>;

/// Shortest digit run read as a fencing token.
const TOKEN_DIGITS: usize = 16;

/// Whether `actual` matches the documented `expected` line; binds new tokens.
pub fn matches(expected: &str, actual: &str, tokens: &mut Tokens) -> bool {
    let (exp, act) = (expected.as_bytes(), actual.as_bytes());
    let (mut i, mut j) = (0, 0);
    let mut bound = Vec::new();
    while i < exp.len() {
        if exp[i] == b'~' && exp.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = digits_end(exp, i + 1);
            j = digits_end(act, j + usize::from(act.get(j) == Some(&b'-')));
            continue;
        }
        let run = digits_end(exp, i) - i;
        let starts_number = i == 0 || !exp[i - 1].is_ascii_digit();
        if run >= TOKEN_DIGITS && starts_number {
            let written = &expected[i..i + run];
            let end = digits_end(act, j);
            let given = &actual[j..end];
            match tokens.get(written) {
                Some(known) if known != given => return false,
                Some(_) => {}
                None if given.len() >= TOKEN_DIGITS => bound.push((written, given)),
                None => return false,
            }
            i += run;
            j = end;
            continue;
        }
        if act.get(j) != Some(&exp[i]) {
            return false;
        }
        i += 1;
        j += 1;
    }
    let whole = j == act.len();
    if whole {
        for (written, given) in bound {
            tokens.insert(written.to_owned(), given.to_owned());
        }
    }
    whole
}

fn digits_end(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// A command line split as `redis-cli` splits it: on spaces, `"..."` with `\"`, `\\`,
/// `\n`, `\r`, `\t` and `\xHH` escapes, `'...'` with `\'`; documented tokens replaced by
/// the server's (a token not met yet is taken as written, from then on).
pub fn split(line: &str, tokens: &mut Tokens) -> Result<Vec<Vec<u8>>, String> {
    let mut args = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let Some(&first) = chars.peek() else {
            return Ok(args);
        };
        let mut arg = Vec::new();
        if first == '"' || first == '\'' {
            chars.next();
            quoted(&mut chars, first, &mut arg)
                .ok_or_else(|| format!("unbalanced quotes: {line}"))?;
        } else {
            while let Some(c) = chars.next_if(|&c| c != ' ') {
                arg.extend_from_slice(c.to_string().as_bytes());
            }
        }
        let text = String::from_utf8_lossy(&arg).into_owned();
        if text.len() >= TOKEN_DIGITS && text.bytes().all(|b| b.is_ascii_digit()) {
            let token = tokens.entry(text.clone()).or_insert(text);
            arg = token.clone().into_bytes();
        }
        args.push(arg);
    }
}

fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    quote: char,
    arg: &mut Vec<u8>,
) -> Option<()> {
    loop {
        let c = chars.next()?;
        if c == quote {
            return Some(());
        }
        if c != '\\' {
            arg.extend_from_slice(c.to_string().as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        match (quote, escaped) {
            ('"', 'n') => arg.push(b'\n'),
            ('"', 'r') => arg.push(b'\r'),
            ('"', 't') => arg.push(b'\t'),
            ('"', 'x') => {
                let hex: String = [chars.next()?, chars.next()?].iter().collect();
                arg.push(u8::from_str_radix(&hex, 16).ok()?);
            }
            (_, c) if c == quote || c == '\\' => arg.push(c as u8),
            (_, c) => arg.extend_from_slice(format!("\\{c}").as_bytes()),
        }
    }
}
