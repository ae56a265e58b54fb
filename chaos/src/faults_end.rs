//! The fault that ends holdings on the server: `end-holding` reads a loss worker's key and
//! ends every holding on it in one transaction — `MULTI; HGETALL k; DEL k; EXEC`, or the
//! kind's force release instead of `DEL` — and records whose holdings ended, and when
//! (`Event::Ended`). The checker counts a holder not told within 250 ms
//! (`check_late.rs`). Only the loss workers' keys are touched: no other worker's section
//! is ended behind its back.

use std::time::Duration;

use redis::Value;

use crate::faults::Injector;
use crate::faults_conn::slow_conn;
use crate::history::{now_us, Event};
use crate::workers::loss::LOSS_KEYS;

/// The owners a lock hash of the loss workers holds: a plain lock's owner field, a
/// read-write lock's or a semaphore's `@h:<owner>` fields.
fn owners_of(key: &str, fields: &[(String, String)]) -> Vec<String> {
    let plain = key == LOSS_KEYS[0];
    fields
        .iter()
        .filter_map(|(f, _)| match f.strip_prefix("@h:") {
            Some(owner) if !plain => Some(owner.to_owned()),
            None if plain && !f.starts_with('@') => Some(f.clone()),
            _ => None,
        })
        .collect()
}

impl Injector<'_> {
    /// Ends every holding of one loss worker's key on its server.
    pub(crate) fn end_holding(&mut self) -> Option<String> {
        let key = *self.rng.pick(&LOSS_KEYS);
        let i = self.server_of(key)?;
        let server = &self.deployment.servers[i];
        let mut conn = slow_conn(server, Duration::from_secs(5))?;
        let force = match key {
            k if k == LOSS_KEYS[0] => "LOCK.FORCERELEASE",
            k if k == LOSS_KEYS[1] => "RWLOCK.FORCERELEASE",
            _ => "SEM.FORCERELEASE",
        };
        let how = if self.rng.chance(50) { "DEL" } else { force };
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("HGETALL").arg(key).cmd(how).arg(key);
        let replies: Vec<Value> = pipe.query(&mut conn).ok()?;
        let t_us = now_us();
        let fields: Vec<(String, String)> = replies
            .first()
            .and_then(|v| redis::from_redis_value(v.clone()).ok())
            .unwrap_or_default();
        let owners = owners_of(key, &fields);
        let what = self.record(format!(
            "end-holding: {how} {key} on {} (held by {} owners)",
            server.name,
            owners.len()
        ));
        if key == LOSS_KEYS[2] && how == "DEL" {
            // The semaphore's total went with the key: set it again for the workers.
            let total = crate::workers::loss::LOSS_PERMITS;
            let _ = redis::cmd("SEM.PERMITS")
                .arg(key)
                .arg(total)
                .query::<Value>(&mut conn);
        }
        let ended = Event::Ended {
            t_us,
            key: key.to_owned(),
            owners,
        };
        self.history.push(ended);
        what
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "1".into())).collect()
    }

    #[test]
    fn the_owners_are_read_from_each_layout() {
        let plain = fields(&["c:1", "@token"]);
        assert_eq!(owners_of(LOSS_KEYS[0], &plain), vec!["c:1"]);
        let rw = fields(&["mode", "@w", "c:1", "@h:c:1", "c:2", "@h:c:2"]);
        assert_eq!(owners_of(LOSS_KEYS[1], &rw), vec!["c:1", "c:2"]);
        let sem = fields(&["permits", "@used", "c:3", "@h:c:3"]);
        assert_eq!(owners_of(LOSS_KEYS[2], &sem), vec!["c:3"]);
    }
}
