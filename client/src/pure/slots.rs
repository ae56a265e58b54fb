//! Redis Cluster's key slots, pure: the slot of a key, the client's map of slot owners, and
//! the parsing of `CLUSTER SLOTS`. No connections in here.

use redis::{ErrorKind, RedisError, RedisResult, Value};

/// The number of hash slots of a Redis Cluster.
pub(crate) const SLOTS: usize = 16384;

/// The slot of `key`: CRC16 (XMODEM) of the key, or of its hash tag (the part between the
/// first `{` and the next `}`, when not empty), modulo 16384, as the server computes it.
pub(crate) fn slot(key: &[u8]) -> u16 {
    let hashed = hash_tag(key).unwrap_or(key);
    let crc = hashed.iter().fold(0u16, |crc, &byte| {
        (0..8).fold(crc ^ (u16::from(byte) << 8), |crc, _| {
            if crc & 0x8000 == 0 {
                crc << 1
            } else {
                (crc << 1) ^ 0x1021
            }
        })
    });
    crc % SLOTS as u16
}

fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// Which node serves each slot, as far as the client knows. Empty (nothing known) until
/// something is learned.
#[derive(Debug)]
pub(crate) struct SlotMap<N> {
    owners: Vec<Option<N>>,
}

impl<N: Clone> SlotMap<N> {
    pub(crate) fn new() -> SlotMap<N> {
        SlotMap { owners: Vec::new() }
    }

    /// Whether nothing is known (not a cluster, or not told yet).
    pub(crate) fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The node known to serve `slot`.
    pub(crate) fn owner(&self, slot: u16) -> Option<&N> {
        self.owners.get(usize::from(slot))?.as_ref()
    }

    /// Records that `node` serves the slots `first..=last` (those that exist).
    pub(crate) fn assign(&mut self, first: u16, last: u16, node: &N) {
        if self.owners.is_empty() {
            self.owners.resize(SLOTS, None);
        }
        let last = usize::from(last).min(SLOTS - 1);
        for owner in self.owners.iter_mut().take(last + 1).skip(first.into()) {
            *owner = Some(node.clone());
        }
    }
}

/// One range of `CLUSTER SLOTS`: its slots and its master's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlotRange {
    pub(crate) first: u16,
    pub(crate) last: u16,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Parses a `CLUSTER SLOTS` reply. A master shown without a host (an empty one, or `?`)
/// is on `asked_host`, the host of the node that answered.
pub(crate) fn parse_cluster_slots(reply: Value, asked_host: &str) -> RedisResult<Vec<SlotRange>> {
    let entries: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
    entries
        .into_iter()
        .map(|entry| {
            let mut fields = entry.into_iter();
            let mut next = || fields.next().ok_or_else(|| malformed("short range entry"));
            let first: u16 = redis::from_redis_value(next()?)?;
            let last: u16 = redis::from_redis_value(next()?)?;
            let master: Vec<Value> = redis::from_redis_value(next()?)?;
            let mut master = master.into_iter();
            let host: String = match master.next() {
                Some(host) => redis::from_redis_value(host)?,
                None => return Err(malformed("a range without its master")),
            };
            let port: u16 = match master.next() {
                Some(port) => redis::from_redis_value(port)?,
                None => return Err(malformed("a master without its port")),
            };
            let host = match host.as_str() {
                "" | "?" => asked_host.to_owned(),
                _ => host,
            };
            Ok(SlotRange {
                first,
                last,
                host,
                port,
            })
        })
        .collect()
}

/// `host:port` (the host may be an IPv6 address, itself full of colons) split in two.
pub(crate) fn split_addr(addr: &str) -> Option<(&str, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

fn malformed(what: &'static str) -> RedisError {
    RedisError::from((
        ErrorKind::Parse,
        "unexpected CLUSTER SLOTS reply",
        what.into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_matches_the_servers_keyslot() {
        // The check value of CRC16/XMODEM (under 16384), and keys whose `CLUSTER KEYSLOT` is known.
        assert_eq!(slot(b"123456789"), 0x31C3);
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b""), 0);
    }

    #[test]
    fn hash_tags_put_keys_in_one_slot() {
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"{user1000}.followers"), slot(b"user1000"));
        // An empty tag is no tag; only the first `{` counts.
        assert_eq!(slot(b"foo{}{bar}"), 8363);
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b"foo{bar}{zap}"), slot(b"bar"));
    }

    #[test]
    fn slot_map_knows_nothing_until_told() {
        let mut map = SlotMap::new();
        assert_eq!(map.owner(0), None);
        assert!(map.is_empty());
        map.assign(10, 20, &"a");
        assert!(!map.is_empty());
        map.assign(15, 15, &"b");
        assert_eq!(map.owner(9), None);
        assert_eq!(map.owner(10), Some(&"a"));
        assert_eq!(map.owner(15), Some(&"b"));
        assert_eq!(map.owner(20), Some(&"a"));
        assert_eq!(map.owner(21), None);
        map.assign(16000, u16::MAX, &"c");
        assert_eq!(map.owner(16383), Some(&"c"));
        assert_eq!(map.owner(16384), None);
    }

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn cluster_slots_reply_gives_each_range_its_master() {
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(0),
                Value::Int(5460),
                Value::Array(vec![bulk("10.0.0.1"), Value::Int(7000), bulk("id1")]),
                Value::Array(vec![bulk("10.0.0.4"), Value::Int(7003), bulk("id4")]),
            ]),
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(16383),
                Value::Array(vec![bulk(""), Value::Int(7001), bulk("id2")]),
            ]),
        ]);
        let ranges = parse_cluster_slots(reply, "seed").unwrap();
        let range = |first, last, host: &str, port| SlotRange {
            first,
            last,
            host: host.into(),
            port,
        };
        assert_eq!(
            ranges,
            [
                range(0, 5460, "10.0.0.1", 7000),
                range(5461, 16383, "seed", 7001)
            ]
        );
    }

    #[test]
    fn malformed_cluster_slots_reply_is_an_error() {
        let short = Value::Array(vec![Value::Array(vec![Value::Int(0), Value::Int(1)])]);
        let err = parse_cluster_slots(short, "seed").unwrap_err();
        assert!(err.to_string().contains("short range entry"), "{err}");
        assert!(parse_cluster_slots(Value::Int(3), "seed").is_err());
    }

    #[test]
    fn addresses_split_at_the_last_colon() {
        assert_eq!(split_addr("127.0.0.1:7000"), Some(("127.0.0.1", 7000)));
        assert_eq!(split_addr("::1:7000"), Some(("::1", 7000)));
        assert_eq!(split_addr("host"), None);
        assert_eq!(split_addr("host:port"), None);
    }
}
