//! Redis Sentinel: which server is the master now.
//!
//! A client opened on a Sentinel URL,
//! `redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<master-name>[/db]`,
//! asks the sentinels for the master's address (`SENTINEL get-master-addr-by-name`), checks
//! with `ROLE` that the server there says it is a master, and talks to it. The credentials
//! and db are the data nodes' (the master's and its replicas'); sentinels are asked without
//! credentials, on port 26379 unless a port is given.
//!
//! When a command to the master fails with a connection error or `READONLY` (the master
//! was demoted), the router asks the sentinels again, each in turn and each for at most
//! [`ASK_WITHIN`], and moves to the address they give if it is another server that says it
//! is a master.
//!
//! Why not the `redis` crate's `sentinel` feature: its lookup asks `SENTINEL MASTERS` and
//! builds a `redis::Client` per lookup with no bound on a sentinel that does not answer, it
//! brings two more dependencies, and the client needs only one command and one check, with
//! a time bound it chooses. So it is done here, on the crate's plain connections.

use std::time::Duration;

use redis::{
    AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo,
    RedisError, RedisResult, Value,
};

use crate::pure::commands;
use crate::pure::error::unreachable;

/// The URL scheme of a Sentinel deployment.
const SCHEME: &str = "redis+sentinel://";
/// The port sentinels listen on by default.
const DEFAULT_PORT: u16 = 26379;
/// How long one sentinel (or one candidate master) has to connect and answer.
pub(crate) const ASK_WITHIN: Duration = Duration::from_millis(500);

/// The sentinels of one master, and how its servers are reached.
#[derive(Debug)]
pub(crate) struct Sentinels {
    sentinels: Vec<(String, u16)>,
    master_name: String,
    /// Credentials and db of the data nodes; the address is set per server.
    template: ConnectionInfo,
}

impl Sentinels {
    /// Parses `url` if it is a Sentinel URL (`redis+sentinel://`); `None` for any other.
    pub(crate) fn parse(url: &str) -> RedisResult<Option<Sentinels>> {
        let Some(rest) = url.strip_prefix(SCHEME) else {
            return Ok(None);
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo), hosts),
            None => (None, authority),
        };
        let sentinels = hosts
            .split(',')
            .filter(|host| !host.is_empty())
            .map(parse_host)
            .collect::<RedisResult<Vec<_>>>()?;
        if sentinels.is_empty() {
            return Err(invalid(
                ErrorKind::EmptySentinelList,
                "no sentinel in the URL",
            ));
        }
        let mut path = path.split('/').filter(|part| !part.is_empty());
        let master_name = path
            .next()
            .ok_or_else(|| invalid(ErrorKind::InvalidClientConfig, "no master name in the URL"))?;
        let db = path.next().unwrap_or("0");
        if path.next().is_some() {
            return Err(invalid(
                ErrorKind::InvalidClientConfig,
                "the URL's path is /<master-name>[/db]",
            ));
        }
        // The redis crate reads the credentials and db (percent-decoding them) from an
        // ordinary URL; the address is a placeholder until the master is known.
        let credentials = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
        let template = format!("redis://{credentials}127.0.0.1/{db}").into_connection_info()?;
        Ok(Some(Sentinels {
            sentinels,
            master_name: master_name.to_owned(),
            template,
        }))
    }

    /// A `redis::Client` of the server at `host:port`, with the data nodes' settings.
    pub(crate) fn server(&self, host: &str, port: u16) -> RedisResult<redis::Client> {
        let addr = ConnectionAddr::Tcp(host.to_owned(), port);
        redis::Client::open(self.template.clone().set_addr(addr))
    }

    /// The master's address: the first that a sentinel gives (asked in turn) which is not
    /// `failed` and whose server says it is a master.
    pub(crate) async fn master(&self, failed: Option<&str>) -> RedisResult<(String, u16)> {
        let mut why = Vec::new();
        for (host, port) in &self.sentinels {
            let (master, master_port) = match self.ask(host, *port).await {
                Ok(Some(addr)) => addr,
                Ok(None) => {
                    why.push(format!("{host}:{port} knows no master of that name"));
                    continue;
                }
                Err(err) => {
                    why.push(format!("{host}:{port}: {err}"));
                    continue;
                }
            };
            let addr = format!("{master}:{master_port}");
            if failed == Some(addr.as_str()) {
                why.push(format!("{host}:{port} still names {addr}"));
                continue;
            }
            match self.is_master(&master, master_port).await {
                Ok(true) => return Ok((master, master_port)),
                Ok(false) => why.push(format!("{addr} (from {host}:{port}) is not a master")),
                Err(err) => why.push(format!("{addr} (from {host}:{port}): {err}")),
            }
        }
        Err(RedisError::from((
            ErrorKind::MasterNameNotFoundBySentinel,
            "no sentinel gave a reachable master",
            format!("master '{}': {}", self.master_name, why.join("; ")),
        )))
    }

    /// `SENTINEL get-master-addr-by-name` on one sentinel: `None` if it knows no such master.
    async fn ask(&self, host: &str, port: u16) -> RedisResult<Option<(String, u16)>> {
        let sentinel = redis::Client::open(ConnectionAddr::Tcp(host.to_owned(), port))?;
        let mut conn = sentinel
            .get_multiplexed_async_connection_with_config(&bounded())
            .await
            .map_err(|err| unreachable(&format!("{host}:{port}"), err))?;
        let reply: Option<(String, u16)> = commands::sentinel_master_addr(&self.master_name)
            .query_async(&mut conn)
            .await?;
        Ok(reply)
    }

    /// Whether the server at `host:port` says (`ROLE`) that it is a master.
    async fn is_master(&self, host: &str, port: u16) -> RedisResult<bool> {
        let mut conn = self
            .server(host, port)?
            .get_multiplexed_async_connection_with_config(&bounded())
            .await
            .map_err(|err| unreachable(&format!("{host}:{port}"), err))?;
        let role: Vec<Value> = commands::role().query_async(&mut conn).await?;
        let first = role
            .into_iter()
            .next()
            .map(redis::from_redis_value::<String>);
        Ok(matches!(first, Some(Ok(role)) if role == "master"))
    }
}

/// A connection that gives up after [`ASK_WITHIN`], to connect and to answer.
fn bounded() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(ASK_WITHIN))
        .set_response_timeout(Some(ASK_WITHIN))
}

/// `host`, `host:port`, or `[v6 address]:port`.
fn parse_host(text: &str) -> RedisResult<(String, u16)> {
    let bad = || {
        invalid(
            ErrorKind::InvalidClientConfig,
            "a sentinel is host or host:port",
        )
    };
    let (host, port) = match text.strip_prefix('[') {
        Some(v6) => {
            let (host, rest) = v6.split_once(']').ok_or_else(bad)?;
            (host, rest.strip_prefix(':'))
        }
        None => match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let port = match port {
        Some(port) => port.parse().map_err(|_| bad())?,
        None => DEFAULT_PORT,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

fn invalid(kind: ErrorKind, what: &'static str) -> RedisError {
    RedisError::from((kind, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_urls_are_not_sentinel_urls() {
        assert!(Sentinels::parse("redis://127.0.0.1:6379/")
            .unwrap()
            .is_none());
        assert!(Sentinels::parse("unix:///tmp/redis.sock")
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_sentinel_url_lists_sentinels_master_and_db() {
        let url = "redis+sentinel://:s%40cret@10.0.0.1:5000,10.0.0.2,[::1]:5002/mymaster/3";
        let s = Sentinels::parse(url).unwrap().unwrap();
        assert_eq!(
            s.sentinels,
            [
                ("10.0.0.1".to_owned(), 5000),
                ("10.0.0.2".to_owned(), DEFAULT_PORT),
                ("::1".to_owned(), 5002)
            ]
        );
        assert_eq!(s.master_name, "mymaster");
        let settings = s.template.redis_settings();
        assert_eq!(settings.db(), 3);
        assert_eq!(settings.password(), Some("s@cret"));
        let server = s.server("10.0.0.9", 6380).unwrap();
        let info = server.get_connection_info();
        assert_eq!(info.addr(), &ConnectionAddr::Tcp("10.0.0.9".into(), 6380));
        assert_eq!(info.redis_settings().db(), 3);
    }

    #[test]
    fn db_defaults_to_zero() {
        let s = Sentinels::parse("redis+sentinel://h:1/m").unwrap().unwrap();
        assert_eq!(s.template.redis_settings().db(), 0);
        assert_eq!(s.template.redis_settings().password(), None);
    }

    #[test]
    fn malformed_sentinel_urls_are_refused() {
        let err = |url| Sentinels::parse(url).unwrap_err();
        assert_eq!(
            err("redis+sentinel:///m").kind(),
            ErrorKind::EmptySentinelList
        );
        let no_name = err("redis+sentinel://h:1");
        assert!(no_name.to_string().contains("no master name"), "{no_name}");
        let bad_port = err("redis+sentinel://h:x/m");
        assert!(bad_port.to_string().contains("host:port"), "{bad_port}");
        let long = err("redis+sentinel://h/m/0/x");
        assert!(long.to_string().contains("/<master-name>[/db]"), "{long}");
    }
}
