//! The key's fields as the module's store reads and writes them: each write below is the
//! same `HashSet` of field pairs, in the same order, as its model in `src/store/`, so that
//! an owner named like a layout's field overwrites that field here as it does there. The
//! readers hand the fields to the core's own parsers and glances.

use rlock_core::args::strict_i64;
use rlock_core::lock::{Holding, TOKEN_FIELD};
use rlock_core::rwglance::Glance;
use rlock_core::rwlock::{self, RwHolder, RwState, HOLDER_PREFIX, MODE_FIELD, MODE_VALUE};
use rlock_core::rwlock::{WRITER_FIELD, WRITE_SUFFIX};
use rlock_core::semaphore::{SemHolder, SemState, NEXT_FIELD, TOTAL_FIELD, USED_FIELD};
use rlock_core::semglance::SemGlance;

use super::state::{Fields, Key, Store};

/// The key is of another type than the command's (`WRONGTYPE`).
#[derive(Debug)]
pub struct WrongType;

fn number(fields: &Fields, name: &[u8]) -> Option<i64> {
    fields.get(name).and_then(|v| strict_i64(v))
}

fn meta_name(owner: &[u8]) -> Vec<u8> {
    [HOLDER_PREFIX, owner].concat()
}

/// `RedisModule_HashSet` of several pairs, applied in order; `None` deletes the field.
fn hash_set(fields: &mut Fields, pairs: Vec<(Vec<u8>, Option<Vec<u8>>)>) {
    for (name, value) in pairs {
        match value {
            Some(v) => fields.insert(name, v),
            None => fields.remove(&name),
        };
    }
}

fn count(n: i64) -> Option<Vec<u8>> {
    (n > 0).then(|| n.to_string().into_bytes())
}

impl Store {
    /// The hash, created empty if the key is gone.
    fn hash(&mut self) -> &mut Fields {
        if !matches!(self.key, Key::Hash(_)) {
            self.key = Key::Hash(Fields::new());
        }
        match &mut self.key {
            Key::Hash(fields) => fields,
            _ => unreachable!(),
        }
    }

    pub fn delete(&mut self) {
        self.key = Key::Gone;
        self.expires_at = None;
    }

    /// `store/mod.rs` `read`: a plain lock, `None` when there is no key.
    pub fn read_lock(&self) -> Result<Option<Holding>, WrongType> {
        match &self.key {
            Key::Gone => Ok(None),
            Key::Hash(f) if f.len() <= 2 => {
                let fields: Vec<_> = f.iter().collect();
                Holding::from_fields(&fields)
                    .map(Some)
                    .map_err(|_| WrongType)
            }
            _ => Err(WrongType),
        }
    }

    /// `store/write.rs` `write_holding`: over nothing, over another (deleted first), or
    /// over itself (a reentry: the token field is left as it is).
    pub fn write_holding(
        &mut self,
        owner: &[u8],
        holds: i64,
        token: i64,
        deadline: i64,
        over_itself: bool,
    ) {
        let fields = self.hash();
        let mut pairs = vec![(owner.to_vec(), count(holds))];
        if token > 0 && !over_itself {
            pairs.push((TOKEN_FIELD.to_vec(), Some(token.to_string().into_bytes())));
        }
        hash_set(fields, pairs);
        self.expires_at = Some(deadline);
    }

    /// `store/rw.rs` `read_rw`.
    pub fn read_rw(&self) -> Result<Option<RwState>, WrongType> {
        match &self.key {
            Key::Gone => Ok(None),
            Key::Hash(f) => {
                let fields: Vec<_> = f.iter().collect();
                RwState::from_fields(&fields)
                    .map(Some)
                    .map_err(|_| WrongType)
            }
            Key::Str(_) => Err(WrongType),
        }
    }

    /// `store/rw.rs` `glance`: the `@w` mark, the owner's own fields, the writer's lease.
    pub fn rw_glance(&self, owner: &[u8]) -> Result<Glance, WrongType> {
        let f = match &self.key {
            Key::Gone => return Ok(Glance::default()),
            Key::Hash(f) => f,
            Key::Str(_) => return Err(WrongType),
        };
        let Some(w) = f.get(WRITER_FIELD) else {
            return Ok(Glance {
                fields: f.len(),
                ..Glance::default()
            });
        };
        let counted = |name: &[u8]| number(f, name).unwrap_or(0);
        let mine = f
            .get(&meta_name(owner))
            .and_then(|m| rwlock::parse_meta(m))
            .map(|(token, deadline)| RwHolder {
                owner: owner.to_vec(),
                reads: counted(owner),
                writes: counted(&[owner, WRITE_SUFFIX].concat()),
                token,
                deadline_ms: Some(deadline),
            });
        let writer = (!w.is_empty()).then(|| w.clone());
        let writer_deadline = match &writer {
            Some(writer) if writer != owner => f
                .get(&meta_name(writer))
                .and_then(|m| rwlock::parse_meta(m))
                .map(|(_, d)| d),
            _ => None,
        };
        Ok(Glance {
            fields: f.len(),
            marked: true,
            writer,
            writer_deadline,
            mine,
        })
    }

    /// `store/rw.rs` `set_holder`: `mode`, `@w`, the owner's count fields and its `@h:`
    /// field in one `HashSet`; a hash left with `mode` and `@w` alone is deleted. Returns
    /// whether the key still exists.
    pub fn set_rw_holder(&mut self, h: &RwHolder) -> bool {
        let owner = &h.owner;
        let gone = h.reads == 0 && h.writes == 0;
        let deadline = h.deadline_ms.unwrap_or(0);
        let fields = self.hash();
        let current = fields.get(WRITER_FIELD).cloned().unwrap_or_default();
        let writer = match (h.writes > 0, current == *owner) {
            (true, _) => owner.clone(),
            (false, true) => Vec::new(),
            (false, false) => current,
        };
        let meta = (!gone).then(|| rwlock::meta_value(h.token, deadline));
        hash_set(
            fields,
            vec![
                (MODE_FIELD.to_vec(), Some(MODE_VALUE.to_vec())),
                (WRITER_FIELD.to_vec(), Some(writer)),
                (owner.clone(), count(h.reads)),
                ([owner, WRITE_SUFFIX].concat(), count(h.writes)),
                (meta_name(owner), meta),
            ],
        );
        if fields.len() <= 2 {
            self.delete();
            return false;
        }
        if !gone && self.expires_at.is_none_or(|at| at < deadline) {
            self.expires_at = Some(deadline);
        }
        true
    }

    /// `store/sem.rs` `read_sem`.
    pub fn read_sem(&self) -> Result<Option<SemState>, WrongType> {
        match &self.key {
            Key::Gone => Ok(None),
            Key::Hash(f) => {
                let fields: Vec<_> = f.iter().collect();
                SemState::from_fields(&fields)
                    .map(Some)
                    .map_err(|_| WrongType)
            }
            Key::Str(_) => Err(WrongType),
        }
    }

    /// `store/sem.rs` `sem_glance`: the total, `@used`, `@next` and the owner's two fields.
    pub fn sem_glance(&self, owner: &[u8]) -> Result<SemGlance, WrongType> {
        let f = match &self.key {
            Key::Gone => return Ok(SemGlance::default()),
            Key::Hash(f) => f,
            Key::Str(_) => return Err(WrongType),
        };
        let meta = f.get(&meta_name(owner)).and_then(|m| rwlock::parse_meta(m));
        let mine = match (number(f, owner), meta) {
            (Some(permits), Some((token, deadline_ms))) => Some(SemHolder {
                owner: owner.to_vec(),
                permits,
                token,
                deadline_ms,
            }),
            _ => None,
        };
        Ok(SemGlance {
            fields: f.len(),
            total: number(f, TOTAL_FIELD).filter(|n| *n >= 0),
            used: number(f, USED_FIELD).unwrap_or(0),
            next: number(f, NEXT_FIELD),
            mine,
        })
    }

    /// `store/sem.rs` `set_sem_holder`: the total, `@used` moved by the change, the
    /// owner's two fields and `@next`, in one `HashSet`.
    pub fn set_sem_holder(&mut self, h: &SemHolder) {
        let fields = self.hash();
        let before = number(fields, &h.owner).unwrap_or(0);
        let used = number(fields, USED_FIELD)
            .unwrap_or(0)
            .saturating_sub(before)
            .saturating_add(h.permits)
            .max(0);
        let gone = h.permits <= 0;
        let next = match (used, number(fields, NEXT_FIELD).unwrap_or(0)) {
            (0, _) => None,
            (_, 0) if gone => None,
            (_, next) if gone => Some(next),
            (_, 0) => Some(h.deadline_ms),
            (_, next) => Some(next.min(h.deadline_ms)),
        };
        let total = fields
            .get(TOTAL_FIELD)
            .cloned()
            .unwrap_or_else(|| b"0".to_vec());
        let (count, meta) = match gone {
            true => (None, None),
            false => (
                Some(h.permits.to_string().into_bytes()),
                Some(rwlock::meta_value(h.token, h.deadline_ms)),
            ),
        };
        hash_set(
            fields,
            vec![
                (TOTAL_FIELD.to_vec(), Some(total)),
                (USED_FIELD.to_vec(), Some(used.to_string().into_bytes())),
                (h.owner.clone(), count),
                (meta_name(&h.owner), meta),
                (
                    NEXT_FIELD.to_vec(),
                    next.map(|n| n.to_string().into_bytes()),
                ),
            ],
        );
    }

    /// `store/sem.rs` `settle_sem_next`: `@next` made the earliest lease end.
    pub fn settle_sem_next(&mut self, state: &SemState) {
        let fields = self.hash();
        let value = state.next_deadline().map(|n| n.to_string().into_bytes());
        hash_set(fields, vec![(NEXT_FIELD.to_vec(), value)]);
    }

    /// `store/sem.rs` `set_sem_total`: `HSET permits n`, `HSETNX @used 0`.
    pub fn set_sem_total(&mut self, total: i64) {
        let fields = self.hash();
        fields.insert(TOTAL_FIELD.to_vec(), total.to_string().into_bytes());
        fields
            .entry(USED_FIELD.to_vec())
            .or_insert_with(|| b"0".to_vec());
    }

    /// `store/latch.rs` `read_latch`: the count, `None` when there is no key.
    pub fn read_latch(&self) -> Result<Option<i64>, WrongType> {
        match &self.key {
            Key::Gone => Ok(None),
            Key::Str(s) => strict_i64(s).map(Some).ok_or(WrongType),
            Key::Hash(_) => Err(WrongType),
        }
    }
}
