//! Names of the release channel (SPEC.md §4), compatible with Redisson's `RLock`, and of a
//! push receiver's channel (`LOCK.WAIT`).

/// `<prefix>:{<key>}`, or `<prefix>:<key>` when the key already holds a `{`, so the channel
/// hashes to the same cluster slot as the lock.
pub fn release_channel(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    let mut channel = Vec::with_capacity(prefix.len() + key.len() + 3);
    write_release_channel(&mut channel, prefix, key);
    channel
}

/// [`release_channel`], written into `channel` (cleared first) to reuse its memory.
pub fn write_release_channel(channel: &mut Vec<u8>, prefix: &[u8], key: &[u8]) {
    channel.clear();
    channel.extend_from_slice(prefix);
    channel.push(b':');
    if key.contains(&b'{') {
        channel.extend_from_slice(key);
    } else {
        channel.push(b'{');
        channel.extend_from_slice(key);
        channel.push(b'}');
    }
}

/// The channel of a push receiver's tickets is this prefix and its client id
/// (`__rlock__:42`).
pub const GRANTS_PREFIX: &str = "__rlock__:";

/// Redisson's unlock message.
pub const RELEASE_MESSAGE: &[u8] = b"0";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_key_is_wrapped_in_a_hash_tag() {
        assert_eq!(
            release_channel(b"redisson_lock__channel", b"lock:1"),
            b"redisson_lock__channel:{lock:1}"
        );
    }

    #[test]
    fn key_with_a_brace_is_used_as_is() {
        assert_eq!(release_channel(b"p", b"{order}:42"), b"p:{order}:42");
    }
}
