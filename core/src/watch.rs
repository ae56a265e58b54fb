//! The holdings whose end is announced to their holder (`LOCK.LISTEN`): which owner
//! prefixes have a listening connection, what each listened holding was when the module
//! last wrote or read it, and the message that tells its holder it ended.
//!
//! Tracked only while its owner's prefix has a listener; an end the holder asked for (its
//! own release) removes a holding silently, any other end becomes a [`Loss`].

use std::collections::HashMap;

use crate::idhash::IdMap;
pub use crate::loss::{channel, prefix_of, Cause, Found, Held, Loss, Watch, LOSS_PREFIX};
use crate::registry::Db;

/// The table of one node.
#[derive(Debug, Default)]
pub struct Watched {
    /// Owner prefix → how many connections listen for it.
    prefixes: HashMap<Vec<u8>, usize>,
    /// Connection id → the prefixes it listens for.
    clients: IdMap<u64, Vec<Vec<u8>>>,
    /// Database → key → its listened holdings (looked up by a borrowed key).
    keys: IdMap<Db, HashMap<Vec<u8>, Holders>>,
    /// The prefix last found listened for: a client's holdings share one, compared byte by
    /// byte instead of hashed.
    last_listened: Option<Vec<u8>>,
    /// The buffers of names released with their holdings, for the next holdings' key and
    /// owner names: a holding taken and released again and again allocates nothing.
    spare: Vec<Vec<u8>>,
}

/// Most buffers kept in [`Watched::spare`], and the largest kept.
const SPARE: usize = 64;
const SPARE_BYTES: usize = 256;

/// A buffer holding `bytes`, from `spare` if it has one.
fn buffer(spare: &mut Vec<Vec<u8>>, bytes: &[u8]) -> Vec<u8> {
    let mut b = spare.pop().unwrap_or_default();
    b.clear();
    b.extend_from_slice(bytes);
    b
}

/// Keeps `b` in `spare` for a later [`buffer`], unless enough are kept or it is large.
fn recycle(spare: &mut Vec<Vec<u8>>, b: Vec<u8>) {
    if spare.len() < SPARE && b.capacity() <= SPARE_BYTES {
        spare.push(b);
    }
}

/// The listened holdings of one key: one, kept inline (the usual case: no allocation of
/// its own), or several.
#[derive(Debug, Clone, Default)]
enum Holders {
    #[default]
    Empty,
    One(Watch),
    Many(Vec<Watch>),
}

impl Holders {
    fn as_slice(&self) -> &[Watch] {
        match self {
            Holders::Empty => &[],
            Holders::One(w) => std::slice::from_ref(w),
            Holders::Many(v) => v,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [Watch] {
        match self {
            Holders::Empty => &mut [],
            Holders::One(w) => std::slice::from_mut(w),
            Holders::Many(v) => v,
        }
    }

    fn push(&mut self, watch: Watch) {
        *self = match std::mem::take(self) {
            Holders::Empty => Holders::One(watch),
            Holders::One(first) => Holders::Many(vec![first, watch]),
            Holders::Many(mut all) => {
                all.push(watch);
                Holders::Many(all)
            }
        };
    }

    fn retain(&mut self, keep: impl Fn(&Watch) -> bool) {
        match self {
            Holders::One(w) if !keep(w) => *self = Holders::Empty,
            Holders::Many(all) => all.retain(keep),
            _ => {}
        }
    }

    fn into_vec(self) -> Vec<Watch> {
        match self {
            Holders::Empty => Vec::new(),
            Holders::One(w) => vec![w],
            Holders::Many(all) => all,
        }
    }
}

impl Watched {
    /// Whether anything is listened for or tracked (the fast path of every hook).
    pub fn active(&self) -> bool {
        !self.prefixes.is_empty() || self.keys.values().any(|k| !k.is_empty())
    }

    /// Connection `client` listens for owners with `prefix`; false if it already did.
    pub fn listen(&mut self, client: u64, prefix: &[u8]) -> bool {
        let mine = self.clients.entry(client).or_default();
        if mine.iter().any(|p| p == prefix) {
            return false;
        }
        mine.push(prefix.to_vec());
        *self.prefixes.entry(prefix.to_vec()).or_default() += 1;
        true
    }

    /// Connection `client` closed.
    pub fn client_gone(&mut self, client: u64) {
        self.last_listened = None;
        for prefix in self.clients.remove(&client).unwrap_or_default() {
            if let Some(n) = self.prefixes.get_mut(&prefix) {
                *n -= 1;
                if *n == 0 {
                    self.prefixes.remove(&prefix);
                }
            }
        }
    }

    /// Whether `owner`'s holdings are listened for.
    pub fn listened(&self, owner: &[u8]) -> bool {
        !self.prefixes.is_empty() && self.prefixes.contains_key(prefix_of(owner))
    }

    pub fn tracked(&self) -> usize {
        self.keys
            .values()
            .flat_map(HashMap::values)
            .map(|h| h.as_slice().len())
            .sum()
    }

    /// Whether `key` has tracked holdings.
    pub fn has(&self, db: Db, key: &[u8]) -> bool {
        self.keys.get(&db).is_some_and(|k| k.contains_key(key))
    }

    /// The tracked holdings of `key`.
    pub fn of(&self, db: Db, key: &[u8]) -> Vec<Watch> {
        let watches = self.keys.get(&db).and_then(|k| k.get(key));
        watches.map(|h| h.as_slice().to_vec()).unwrap_or_default()
    }

    /// `owner` holds `key` as `held` with `token`, `count` times: tracked if listened,
    /// replacing what was tracked.
    pub fn holds(
        &mut self,
        (db, key): (Db, &[u8]),
        owner: &[u8],
        (held, token, count): (Held, i64, i64),
    ) {
        let prefix = prefix_of(owner);
        if self.last_listened.as_deref() != Some(prefix) {
            if !self.listened(owner) {
                return;
            }
            self.last_listened = Some(prefix.to_vec());
        }
        let watch = Watch {
            owner: buffer(&mut self.spare, owner),
            held,
            token,
            count,
        };
        let name = buffer(&mut self.spare, key);
        let watches = self.keys.entry(db).or_default().entry(name).or_default();
        match watches
            .as_mut_slice()
            .iter_mut()
            .find(|w| w.owner == owner && w.held == held)
        {
            Some(w) => {
                let old = std::mem::replace(w, watch);
                recycle(&mut self.spare, old.owner);
            }
            None => watches.push(watch),
        }
    }

    /// `owner` released `held` of `key` itself, `left` remaining (0: none): no loss.
    pub fn released(&mut self, db: Db, key: &[u8], (owner, held): (&[u8], Held), left: i64) {
        let Some(keys) = self.keys.get_mut(&db) else {
            return;
        };
        let mine = |w: &Watch| w.owner == owner && w.held == held;
        if left > 0 {
            let watches = keys.get_mut(key).into_iter();
            let watches = watches.flat_map(|h| h.as_mut_slice().iter_mut());
            watches.filter(|w| mine(w)).for_each(|w| w.count = left);
            return;
        }
        // One lookup in the usual case, a key with one holding; its buffers are kept.
        let Some((name, watches)) = keys.remove_entry(key) else {
            return;
        };
        match watches {
            Holders::One(w) if mine(&w) => {
                recycle(&mut self.spare, name);
                recycle(&mut self.spare, w.owner);
            }
            mut watches => {
                watches.retain(|w| !mine(w));
                if watches.as_slice().is_empty() {
                    recycle(&mut self.spare, name);
                } else {
                    keys.insert(name, watches);
                }
            }
        }
    }

    /// Every tracked holding of `key` ended, for `cause`.
    pub fn key_gone(&mut self, db: Db, key: &[u8], cause: Cause) -> Vec<Loss> {
        let watches = self.take(db, key).unwrap_or_default();
        losses(key, watches, cause)
    }

    /// Every tracked holding of database `db` (every database: -1) ended, for `cause`.
    pub fn db_gone(&mut self, db: Db, cause: Cause) -> Vec<Loss> {
        let dbs: Vec<Db> = self
            .keys
            .keys()
            .filter(|d| db < 0 || **d == db)
            .copied()
            .collect();
        let mut out = Vec::new();
        for d in dbs {
            for (key, watches) in self.keys.remove(&d).unwrap_or_default() {
                out.extend(losses(&key, watches.into_vec(), cause));
            }
        }
        out
    }

    /// Forgets every tracked holding, announcing none (the node became a replica).
    pub fn forget_holdings(&mut self) {
        self.keys.clear();
    }

    /// Compares each tracked holding of `key` with what a reread `found`: one held with
    /// the same token and at least its count stays (with the count found); any other has
    /// ended, for `cause`, unless its owner is `asker` (whose own command ended it).
    pub fn settle(
        &mut self,
        (db, key): (Db, &[u8]),
        found: &[(Watch, Found)],
        (cause, asker): (Cause, Option<&[u8]>),
    ) -> Vec<Loss> {
        let Some(watches) = self.take(db, key) else {
            return Vec::new();
        };
        let (mut kept, mut ended) = (Vec::new(), Vec::new());
        for mut w in watches {
            let now = found
                .iter()
                .find(|(f, _)| f.owner == w.owner && f.held == w.held)
                .map_or(Found::Gone, |(_, now)| *now);
            match now {
                Found::Holds { token, count } if token == w.token && count >= w.count => {
                    w.count = count;
                    kept.push(w);
                }
                // The asker's own holding, changed by its own command: tracked as it is.
                Found::Holds { token, count } if Some(&w.owner[..]) == asker => {
                    (w.token, w.count) = (token, count);
                    kept.push(w);
                }
                _ if Some(&w.owner[..]) == asker => {}
                _ => ended.push(w),
            }
        }
        if !kept.is_empty() {
            let kept = match kept.len() {
                1 => Holders::One(kept.remove(0)),
                _ => Holders::Many(kept),
            };
            self.keys.entry(db).or_default().insert(key.to_vec(), kept);
        }
        losses(key, ended, cause)
    }
}

impl Watched {
    /// Takes `key`'s holdings out of the table (a database's map stays, with its memory).
    fn take(&mut self, db: Db, key: &[u8]) -> Option<Vec<Watch>> {
        self.keys.get_mut(&db)?.remove(key).map(Holders::into_vec)
    }
}

fn losses(key: &[u8], watches: Vec<Watch>, cause: Cause) -> Vec<Loss> {
    let loss = |watch| Loss {
        key: key.to_vec(),
        watch,
        cause,
    };
    watches.into_iter().map(loss).collect()
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
