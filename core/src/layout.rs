//! The fixed fields of each hash layout, in one place, and the owner names they reserve.
//!
//! Every layout stores an owner as a field of the owner's own name: a plain lock `<owner>`
//! (its reentry count), a read-write lock `<owner>` (read holds) and `<owner>:write` (write
//! holds), a semaphore `<owner>` (permits); the module adds `@h:<owner>` to the last two.
//! An owner named as one of the layout's fixed fields would make two fields one, so every
//! command that takes an owner refuses these names, whatever the key holds now: a key may
//! be a lock today and a semaphore once it is gone, and one rule for every command is one a
//! client can keep without knowing which kind a key is.

/// The first byte of every field the module adds; an owner never starts with it.
pub const MODULE_MARK: u8 = b'@';

/// A plain lock's fencing token.
pub const TOKEN_FIELD: &[u8] = b"@token";

/// The field Redisson reads a read-write lock's mode from.
pub const MODE_FIELD: &[u8] = b"mode";
/// The module's mark on the read-write locks it writes: the writer's owner, or empty.
pub const WRITER_FIELD: &[u8] = b"@w";
/// The prefix of a holder's `@h:<owner>` field (read-write locks and semaphores).
pub const HOLDER_PREFIX: &[u8] = b"@h:";
/// The suffix of a read-write lock's writer's count field, `<owner>:write`.
pub const WRITE_SUFFIX: &[u8] = b":write";

/// A semaphore's total of permits.
pub const TOTAL_FIELD: &[u8] = b"permits";
/// The permits a semaphore's holders hold now.
pub const USED_FIELD: &[u8] = b"@used";
/// The earliest lease end of a semaphore's holders, or an earlier time (Unix ms): while it
/// is in the future, no holder's lease has ended.
pub const NEXT_FIELD: &[u8] = b"@next";

/// The fixed fields of each layout: the plain lock's, the read-write lock's, the
/// semaphore's. A countdown latch is a string and has none.
pub const LAYOUTS: [&[&[u8]]; 3] = [
    &[TOKEN_FIELD],
    &[MODE_FIELD, WRITER_FIELD],
    &[TOTAL_FIELD, USED_FIELD, NEXT_FIELD],
];

/// Whether `owner` is a fixed field of any layout.
pub fn is_fixed_field(owner: &[u8]) -> bool {
    LAYOUTS.iter().any(|fields| fields.contains(&owner))
}

/// The fixed fields an owner could otherwise be named: those not starting with
/// [`MODULE_MARK`] (those are refused by their first byte already).
pub fn reserved_names() -> impl Iterator<Item = &'static [u8]> {
    let all = LAYOUTS.into_iter().flatten().copied();
    all.filter(|f| f.first() != Some(&MODULE_MARK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_names_are_mode_and_permits() {
        let names: Vec<&[u8]> = reserved_names().collect();
        assert_eq!(names, [&b"mode"[..], b"permits"]);
        assert!(is_fixed_field(b"mode") && is_fixed_field(b"@used"));
        assert!(!is_fixed_field(b"Mode") && !is_fixed_field(b"permits:1"));
    }

    #[test]
    fn no_owner_field_can_be_a_fixed_field_but_by_its_name() {
        // `@h:<owner>` starts with the mark, which no owner does.
        assert_eq!(HOLDER_PREFIX.first(), Some(&MODULE_MARK));
        // `<owner>:write` is never a fixed field, whatever the owner.
        for field in LAYOUTS.into_iter().flatten() {
            assert!(!field.ends_with(WRITE_SUFFIX), "{field:?}");
        }
    }
}
