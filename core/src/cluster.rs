//! Where a key belongs in a Redis Cluster, read from `CLUSTER NODES`: pure functions, so
//! that the rules are tested without a cluster.
//!
//! A timer or an event that would create a lock must not do so on a node that no longer
//! serves the key, or whose slot is migrating away while the key is gone (`MIGRATE` moved
//! it): there, the key's waiters are sent where Redis would send a client (`ASK`/`MOVED`).

/// How Redis names a node in `MOVED`/`ASK` (`cluster-preferred-endpoint-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Its IP address (the default).
    Ip,
    /// Its announced hostname (`cluster-announce-hostname`), `?` when it has none.
    Hostname,
    /// Nothing: the client is to reach the node it asked (`:port`).
    Unknown,
}

impl Endpoint {
    /// From the value of `cluster-preferred-endpoint-type` (`None`: unreadable).
    pub fn from_config(value: Option<&str>) -> Endpoint {
        match value {
            Some("hostname") => Endpoint::Hostname,
            Some("unknown-endpoint") => Endpoint::Unknown,
            _ => Endpoint::Ip,
        }
    }
}

/// Where the key of a lock is served, as far as this node can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Here: this node owns or imports the slot, or the key is still here.
    Here,
    /// The slot is migrating to `addr` and the key is not here: `-ASK`.
    Ask { slot: u16, addr: String },
    /// Another node serves the slot: `-MOVED`.
    Moved { slot: u16, addr: String },
    /// The slot has no owner this node knows of.
    Unknown { slot: u16 },
}

impl Route {
    /// The error line (without `-`) that sends a waiter where the key is served, or `None`
    /// when it is served here.
    pub fn redirect(&self) -> Option<String> {
        match self {
            Route::Here => None,
            Route::Ask { slot, addr } => Some(format!("ASK {slot} {addr}")),
            Route::Moved { slot, addr } => Some(format!("MOVED {slot} {addr}")),
            Route::Unknown { slot } => Some(format!(
                "TRYAGAIN rlock: slot {slot} of the lock is changing hands; try again"
            )),
        }
    }
}

/// The hash slot of `key`, with Redis's hash tags (`{...}`).
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) & 0x3FFF
}

/// CRC16-CCITT (XModem), as Redis Cluster hashes keys.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Where `slot` is served, from the text of `CLUSTER NODES`; `key_here`: the key exists on
/// this node; nodes are named as `endpoint` says, as Redis names them in its redirects.
pub fn route(nodes: &str, slot: u16, key_here: bool, endpoint: Endpoint) -> Route {
    let lines: Vec<Vec<&str>> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|f: &Vec<&str>| f.len() >= 8)
        .collect();
    let Some(me) = lines
        .iter()
        .find(|f| f[2].split(',').any(|x| x == "myself"))
    else {
        return Route::Unknown { slot };
    };
    let addr_of = |id: &str| {
        let node = lines.iter().find(|f| f[0] == id);
        node.map(|f| address(f[1], endpoint))
    };
    // Migration entries first: a migrating slot is also listed among the node's own.
    if let Some(target) = me[8..].iter().find_map(|e| migrating(e, slot)) {
        return match (key_here, addr_of(target)) {
            (true, _) => Route::Here,
            (false, Some(addr)) => Route::Ask { slot, addr },
            (false, None) => Route::Unknown { slot },
        };
    }
    if me[8..]
        .iter()
        .any(|e| importing(e, slot) || covers(e, slot))
    {
        return Route::Here;
    }
    match lines
        .iter()
        .find(|f| f[8..].iter().any(|e| covers(e, slot)))
    {
        Some(owner) => Route::Moved {
            slot,
            addr: address(owner[1], endpoint),
        },
        None => Route::Unknown { slot },
    }
}

/// `endpoint:port` of an address field `ip:port@cport[,hostname[,aux=value...]]`.
fn address(field: &str, endpoint: Endpoint) -> String {
    let (ip_port, rest) = field.split_once('@').unwrap_or((field, ""));
    let (ip, port) = ip_port.rsplit_once(':').unwrap_or((ip_port, ""));
    let hostname = rest.split(',').nth(1).filter(|h| !h.contains('='));
    let host = match endpoint {
        Endpoint::Ip => ip,
        Endpoint::Hostname => hostname.filter(|h| !h.is_empty()).unwrap_or("?"),
        Endpoint::Unknown => "",
    };
    format!("{host}:{port}")
}

/// Whether a slot entry (`5` or `0-5460`) covers `slot`.
fn covers(entry: &str, slot: u16) -> bool {
    let mut bounds = entry.splitn(2, '-').map(str::parse::<u16>);
    match (bounds.next(), bounds.next()) {
        (Some(Ok(first)), None) => first == slot,
        (Some(Ok(first)), Some(Ok(last))) => (first..=last).contains(&slot),
        _ => false,
    }
}

/// The target node id of a `[slot->-id]` entry for `slot`.
fn migrating(entry: &str, slot: u16) -> Option<&str> {
    let inner = entry.strip_prefix('[')?.strip_suffix(']')?;
    let (s, target) = inner.split_once("->-")?;
    (s.parse::<u16>().ok()? == slot).then_some(target)
}

/// Whether an entry is `[slot-<-id]` for `slot`.
fn importing(entry: &str, slot: u16) -> bool {
    let inner = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']'));
    inner
        .and_then(|i| i.split_once("-<-"))
        .is_some_and(|(s, _)| s.parse::<u16>().ok() == Some(slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaa";
    const IP: Endpoint = Endpoint::Ip;
    const B: &str = "bbbb";

    fn nodes(mine: &str, theirs: &str) -> String {
        format!(
            "{A} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected {mine}\n\
             {B} 127.0.0.1:7001@17001,host-b master - 0 0 2 connected {theirs}\n"
        )
    }

    #[test]
    fn slots_follow_redis_hash_tags() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 0x3FFF);
        assert_eq!(key_slot(b"{}x"), crc16(b"{}x") & 0x3FFF);
        assert_eq!(key_slot(b"a{b"), crc16(b"a{b") & 0x3FFF);
    }

    #[test]
    fn an_owned_slot_is_served_here() {
        assert_eq!(
            route(&nodes("0-8191", "8192-16383"), 100, false, IP),
            Route::Here
        );
        assert_eq!(route(&nodes("100", "0-99"), 100, false, IP), Route::Here);
    }

    #[test]
    fn a_slot_of_another_node_is_moved_there() {
        let route = route(&nodes("0-8191", "8192-16383"), 9000, true, IP);
        assert_eq!(
            route.redirect().as_deref(),
            Some("MOVED 9000 127.0.0.1:7001")
        );
    }

    #[test]
    fn a_migrating_slot_asks_only_for_a_key_that_left() {
        let text = nodes(&format!("0-8191 [42->-{B}]"), "8192-16383");
        assert_eq!(route(&text, 42, true, IP), Route::Here);
        assert_eq!(
            route(&text, 42, false, IP).redirect().as_deref(),
            Some("ASK 42 127.0.0.1:7001")
        );
    }

    #[test]
    fn an_importing_slot_is_served_here() {
        let text = nodes(&format!("0-8191 [9000-<-{B}]"), "8192-16383");
        assert_eq!(route(&text, 9000, false, IP), Route::Here);
    }

    #[test]
    fn unreadable_or_unowned_slots_say_try_again() {
        assert_eq!(route("", 7, false, IP), Route::Unknown { slot: 7 });
        let text = nodes("0-10", "11-20");
        assert!(route(&text, 500, false, IP)
            .redirect()
            .is_some_and(|e| e.starts_with("TRYAGAIN ")));
    }

    #[test]
    fn redirects_name_nodes_as_the_preferred_endpoint_type_says() {
        let text = nodes("0-8191", "8192-16383");
        let moved = |endpoint| route(&text, 9000, false, endpoint).redirect();
        assert_eq!(
            moved(Endpoint::Hostname).as_deref(),
            Some("MOVED 9000 host-b:7001")
        );
        assert_eq!(
            moved(Endpoint::Unknown).as_deref(),
            Some("MOVED 9000 :7001")
        );
        let no_name = format!(
            "{A} 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0\n\
             {B} ::1:7001@17001,,shard-id=ff master - 0 0 2 connected 9000\n"
        );
        let route = route(&no_name, 9000, false, Endpoint::Hostname).redirect();
        assert_eq!(route.as_deref(), Some("MOVED 9000 ?:7001"));
        assert_eq!(address("::1:7001@17001", IP), "::1:7001");
        assert_eq!(Endpoint::from_config(Some("hostname")), Endpoint::Hostname);
        assert_eq!(Endpoint::from_config(None), Endpoint::Ip);
    }
}
