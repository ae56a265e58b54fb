//! What a wait waits for: a plain lock, or a read or a write hold of a read-write lock.

/// A read or a write hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RwMode {
    Read,
    Write,
}

impl RwMode {
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
        }
    }
}

/// What a queued wait waits for: a plain lock, or one mode of a read-write lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    #[default]
    Lock,
    Rw(RwMode),
    /// A countdown latch's wait: released, with every other, when the count reaches zero.
    Latch,
    /// A semaphore wait for that many permits.
    Permits(u32),
}

/// The four families of waits. A key's waits of one family are served in their order of
/// arrival by that family's rules alone; an event of one family (a latch at zero, a lock
/// released) never ends a wait of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// A plain lock's waits.
    Lock,
    /// A read-write lock's waits, reads and writes in one line.
    Rw,
    /// A semaphore's waits.
    Sem,
    /// A countdown latch's waits.
    Latch,
}

impl Family {
    /// Every family, in the order of [`Family::index`].
    pub const ALL: [Family; 4] = [Family::Lock, Family::Rw, Family::Sem, Family::Latch];

    /// Its place in [`Family::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Kind {
    /// The family of waits this kind belongs to.
    pub fn family(self) -> Family {
        match self {
            Kind::Lock => Family::Lock,
            Kind::Rw(_) => Family::Rw,
            Kind::Permits(_) => Family::Sem,
            Kind::Latch => Family::Latch,
        }
    }

    /// Whether a wait of this kind, first in its queue, may keep the waits behind it out
    /// of a lock that would take them: a write wait keeps later reads out of a read-held
    /// lock, a semaphore wait keeps smaller asks out. When such a wait leaves without the
    /// lock, the queue is served again.
    pub fn holds_back_others(self) -> bool {
        matches!(self, Kind::Rw(RwMode::Write) | Kind::Permits(_))
    }
}
