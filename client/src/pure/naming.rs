//! An error names what it concerns: the node a connection error came from (the node that
//! failed, in a cluster or after a failover), and the key of the command.

use crate::pure::error::{io_kind, Error};

/// `err`, an I/O error of a command sent to the node at `addr`, naming that node
/// (`ADDR: ...`) and keeping its sort (refused, timed out, dropped). Other errors, and one
/// that names the node already, are left as they are.
pub(crate) fn at_node(addr: &str, err: redis::RedisError) -> redis::RedisError {
    if !err.is_io_error() || err.to_string().contains(addr) {
        return err;
    }
    let text = format!("{addr}: {err}");
    std::io::Error::new(io_kind(&err), text).into()
}

impl Error {
    /// This error of a command on `key`, naming its node and the key where it did not yet:
    /// a reply not in time ([`Error::Unresponsive`]) and an I/O error (of the same sort).
    /// The node is the one the error names (see [`at_node`]), else `server`.
    pub(crate) fn concerning(self, server: &str, key: &str) -> Error {
        match self {
            Error::Unresponsive { detail } => Error::Unresponsive {
                detail: named(&detail, server, key),
            },
            Error::Redis(err) if err.is_io_error() => {
                let text = named(&err.to_string(), server, key);
                Error::Redis(std::io::Error::new(io_kind(&err), text).into())
            }
            other => other,
        }
    }
}

/// `text`, naming its node and `key`: `NODE, key 'KEY': ...`.
fn named(text: &str, server: &str, key: &str) -> String {
    let about = format!("key '{key}'");
    if text.contains(&about) {
        return text.to_owned();
    }
    if let Some((node, rest)) = leading_node(text) {
        return format!("{node}, {about}: {rest}");
    }
    if text.contains(server) || text.contains("cannot reach ") {
        return format!("{about}: {text}");
    }
    format!("{server}, {about}: {text}")
}

/// The node a text begins with (`host:port: ...`), and the rest.
fn leading_node(text: &str) -> Option<(&str, &str)> {
    let (node, rest) = text.split_once(": ")?;
    let (host, port) = node.rsplit_once(':')?;
    let is_node = !host.is_empty() && !host.contains(' ') && port.parse::<u16>().is_ok();
    is_node.then_some((node, rest))
}

#[cfg(test)]
#[path = "naming_tests.rs"]
mod tests;
