//! What `rlock` says when it fails: an error of a server names the server (`host:port`) and
//! says what happened to the connection.
//!
//! A server that drops a connection at once (Redis at `maxclients`) writes its reason first,
//! which the client may never read ("broken pipe"): when a server closed the connection,
//! `rlock` connects to it once more and reads what it says unasked, if anything.

use std::io;
use std::time::Duration;

use rlock_client::Error;
use tokio::net::TcpStream;
use tokio::time::timeout;

/// The longest `rlock` waits for what a server says unasked.
const PROBE_WITHIN: Duration = Duration::from_millis(500);

/// An error, with the server it came from when it came from one.
pub struct Failure {
    error: Error,
    server: Option<String>,
    /// What to say instead of the error's text, when `rlock` knows better.
    told: Option<String>,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            error,
            server: None,
            told: None,
        }
    }
}

/// Ties an error to the server it came from.
pub trait At<T> {
    fn at(self, server: &str) -> Result<T, Failure>;
}

impl<T> At<T> for Result<T, Error> {
    fn at(self, server: &str) -> Result<T, Failure> {
        self.map_err(|error| Failure {
            error,
            server: Some(server.to_owned()),
            told: None,
        })
    }
}

impl Failure {
    /// The same failure, told as `text` (after the server's name) instead of its error.
    pub fn told(self, text: String) -> Failure {
        Failure {
            told: Some(text),
            ..self
        }
    }

    /// The text to print after `rlock: `; `within` bounds a look at the server.
    pub async fn describe(&self, within: Duration) -> String {
        match (&self.server, &self.told) {
            (Some(server), Some(told)) => format!("server {server}: {told}"),
            (None, Some(told)) => told.clone(),
            (Some(server), None) => describe(&self.error, server, within).await,
            (None, None) => self.error.to_string(),
        }
    }
}

/// What happened, naming `server`.
pub async fn describe(error: &Error, server: &str, within: Duration) -> String {
    let redis = match error {
        Error::Unresponsive { detail } => {
            return format!("server {server} did not answer in time ({detail})")
        }
        Error::Redis(redis) => redis,
        other => return format!("server {server}: {other}"),
    };
    if redis.is_connection_refusal() {
        return format!("cannot reach {server}: connection refused");
    }
    if !redis.is_connection_dropped() {
        return match redis.is_io_error() {
            true => format!("cannot reach {server}: {error}"),
            false => format!("server {server}: {error}"),
        };
    }
    match probe(server, within.min(PROBE_WITHIN)).await {
        Probe::Said(reason) => format!("server {server} refused the connection: {reason}"),
        Probe::Refused => format!(
            "lost the connection to server {server} ({error}); connecting again: connection \
             refused"
        ),
        Probe::Nothing => format!("lost the connection to server {server} ({error})"),
    }
}

/// What a new connection to a server showed.
enum Probe {
    /// The server sent an error unasked (`-ERR max number of clients reached`): its text.
    Said(String),
    Refused,
    /// Connected and nothing said, or no connection for another reason.
    Nothing,
}

/// Connects to `server` (`host:port`) and reads what it says unasked, within `within`.
async fn probe(server: &str, within: Duration) -> Probe {
    let stream = match timeout(within, TcpStream::connect(server)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => return Probe::Refused,
        _ => return Probe::Nothing,
    };
    let mut said = [0u8; 256];
    let read = async {
        loop {
            stream.readable().await?;
            match stream.try_read(&mut said) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                result => return result,
            }
        }
    };
    match timeout(within, read).await {
        Ok(Ok(n)) => server_error(&said[..n]).map_or(Probe::Nothing, Probe::Said),
        _ => Probe::Nothing,
    }
}

/// The text of a RESP error line (`-ERR text\r\n`), without its code when that is `ERR`.
fn server_error(line: &[u8]) -> Option<String> {
    let line = line.strip_prefix(b"-")?;
    let end = line.iter().position(|&b| b == b'\r' || b == b'\n');
    let text = String::from_utf8_lossy(&line[..end.unwrap_or(line.len())]);
    let text = text.strip_prefix("ERR ").unwrap_or(&text).trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The server a URL names, as `rlock` names it: `host:port` (the port 6379 when the URL has
/// none), a socket's path, or a Sentinel URL without its credentials.
pub fn server_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    if scheme.contains("sentinel") {
        return format!("{scheme}://{rest}");
    }
    if scheme.contains("unix") {
        return rest.split('?').next().unwrap_or(rest).to_owned();
    }
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let bracket = authority.rfind(']').unwrap_or(0);
    match authority[bracket..].contains(':') {
        true => authority.to_owned(),
        false => format!("{authority}:6379"),
    }
}

#[cfg(test)]
mod tests {
    use super::{server_error, server_of};

    #[test]
    fn a_url_names_its_server() {
        assert_eq!(server_of("redis://127.0.0.1:6379/"), "127.0.0.1:6379");
        assert_eq!(
            server_of("redis://u:p@db.example:7000/2"),
            "db.example:7000"
        );
        assert_eq!(server_of("rediss://db.example"), "db.example:6379");
        assert_eq!(server_of("redis://[::1]:6380"), "[::1]:6380");
        assert_eq!(server_of("redis://[::1]/"), "[::1]:6379");
        assert_eq!(server_of("redis+unix:///run/redis.sock"), "/run/redis.sock");
        assert_eq!(
            server_of("redis+sentinel://u:p@s1:26379,s2:26379/main"),
            "redis+sentinel://s1:26379,s2:26379/main"
        );
    }

    #[test]
    fn a_server_error_line_gives_its_text() {
        let said = b"-ERR max number of clients reached\r\n";
        assert_eq!(
            server_error(said).as_deref(),
            Some("max number of clients reached")
        );
        assert_eq!(
            server_error(b"-LOADING loading\r\n").as_deref(),
            Some("LOADING loading")
        );
        assert_eq!(server_error(b"+PONG\r\n"), None);
        assert_eq!(server_error(b""), None);
    }
}
