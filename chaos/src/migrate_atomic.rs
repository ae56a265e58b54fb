//! The `migrate` fault on servers that move a slot whole (Valkey 9 or later): `CLUSTER
//! MIGRATESLOTS` on the master serving the slot, to another master, then a wait until its
//! job ends (`CLUSTER GETSLOTMIGRATIONS`): a success once the target serves the slot and the
//! source has no key left in it; or a failure. On other servers the fault moves the slot
//! key by key (`cluster.rs`).

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use redis::Value;

use crate::cluster::serves;
use crate::machine::server_binary;
use crate::process::Proc;
use crate::topology::{poll, Deployment};

/// How long a migration may take before the fault stops waiting for it.
const MIGRATION_WITHIN: Duration = Duration::from_secs(30);

/// Whether the servers migrate slots atomically: `$RLOCK_SERVER --version` says Valkey 9
/// or later.
pub fn atomic_migration() -> bool {
    static ATOMIC: OnceLock<bool> = OnceLock::new();
    *ATOMIC.get_or_init(|| {
        let version = Command::new(server_binary())
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let major = version
            .strip_prefix("Valkey server v=")
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        major.is_some_and(|m| m >= 9)
    })
}

impl Deployment {
    /// Moves the slot of `key` to another master while the workers use it: whole when the
    /// servers can, key by key otherwise. What was done, for the history.
    pub fn move_slot(&self, key: &str, pick: u64) -> Option<String> {
        if atomic_migration() {
            self.migrate_slot_atomically(key, pick)
        } else {
            self.migrate_slot(key, pick)
        }
    }

    /// `CLUSTER MIGRATESLOTS` of the slot of `key` to another master (`pick` chooses it).
    fn migrate_slot_atomically(&self, key: &str, pick: u64) -> Option<String> {
        let slot: i64 = self.servers[0].cmd(&["CLUSTER", "KEYSLOT", key])?;
        let masters: Vec<&Proc> = self
            .servers
            .iter()
            .filter(|s| crate::sentinel::role(s) == "master")
            .collect();
        let source = *masters.iter().find(|m| serves(m, slot))?;
        let others: Vec<&Proc> = masters
            .into_iter()
            .filter(|m| m.port != source.port)
            .collect();
        let target = *others.get(pick as usize % others.len().max(1))?;
        let to_id: String = target.cmd(&["CLUSTER", "MYID"])?;
        let slot_text = slot.to_string();
        let range = ["SLOTSRANGE", &slot_text, &slot_text, "NODE", &to_id];
        let earlier: Vec<String> = jobs(source)
            .iter()
            .filter_map(|j| field(j, "name"))
            .collect();
        let started = source.cmd::<String>(&[&["CLUSTER", "MIGRATESLOTS"][..], &range].concat());
        let (from, to) = (&source.name, &target.name);
        if started.is_none() {
            return Some(format!(
                "CLUSTER MIGRATESLOTS of slot {slot} of {key} from {from} to {to} refused"
            ));
        }
        // The job passes `failover-granted` (the target serves the slot) before it ends.
        let left = || source.cmd::<i64>(&["CLUSTER", "COUNTKEYSINSLOT", &slot_text]);
        let mut state = String::new();
        poll(MIGRATION_WITHIN, || {
            state = job_state(source, &slot_text, &earlier);
            match state.as_str() {
                "success" => serves(target, slot) && left() == Some(0),
                "failed" | "cancelled" => true,
                _ => false,
            }
        });
        let state = if state.is_empty() {
            "not shown"
        } else {
            &state
        };
        Some(format!(
            "slot {slot} of {key} migrated atomically from {from} to {to} (job {state})"
        ))
    }
}

/// The source's migration jobs (`CLUSTER GETSLOTMIGRATIONS`), each as its words.
fn jobs(source: &Proc) -> Vec<Vec<String>> {
    let jobs: Vec<Value> = source
        .cmd(&["CLUSTER", "GETSLOTMIGRATIONS"])
        .unwrap_or_default();
    jobs.iter().map(words).collect()
}

/// The state of the source's migration job of `slot` not named in `earlier`, or empty when
/// it shows none.
fn job_state(source: &Proc, slot: &str, earlier: &[String]) -> String {
    jobs(source)
        .into_iter()
        .filter(|j| field(j, "name").is_some_and(|n| !earlier.contains(&n)))
        .filter(|j| field(j, "slot_ranges").is_some_and(|r| r.split([' ', '-']).any(|s| s == slot)))
        .find_map(|j| field(&j, "state"))
        .unwrap_or_default()
}

/// The value after `name` in a job's words.
fn field(words: &[String], name: &str) -> Option<String> {
    let at = words.iter().position(|w| w == name)?;
    words.get(at + 1).cloned()
}

/// Every string and integer of a reply, flattened.
fn words(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().flat_map(words).collect(),
        Value::Map(pairs) => pairs
            .iter()
            .flat_map(|(k, v)| words(k).into_iter().chain(words(v)))
            .collect(),
        Value::Int(n) => vec![n.to_string()],
        Value::BulkString(b) => vec![String::from_utf8_lossy(b).into_owned()],
        Value::SimpleString(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}
