//! What an acquisition takes: a plain lock (`LOCK.*`), or a read or a write hold of a
//! read-write lock (`RWLOCK.*`). The two families live on different keys (the server refuses
//! one family on the other's key with `WRONGTYPE`), and each has its own commands; the
//! tickets (`LOCK.CANCEL`, `LOCK.GRANTS`, the pushed outcomes) are shared.

use redis::{cmd, Cmd};

/// The kind of hold an acquisition asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum Kind {
    /// A plain, exclusive lock (`LOCK.*`).
    #[default]
    Lock,
    /// A read hold of a read-write lock (`RWLOCK.* ... READ`): shared with other readers.
    Read,
    /// A write hold of a read-write lock (`RWLOCK.* ... WRITE`): exclusive.
    Write,
    /// A wait for a countdown latch to open (`LATCH.*`): it holds nothing, has no owner.
    Latch,
}

impl Kind {
    /// Whether it is a hold of a read-write lock.
    pub(crate) fn is_rw(self) -> bool {
        matches!(self, Kind::Read | Kind::Write)
    }

    /// The mode argument of `RWLOCK.ACQUIRE`, `RWLOCK.WAIT` and `RWLOCK.RELEASE`.
    pub(crate) fn mode(self) -> Option<&'static str> {
        match self {
            Kind::Lock | Kind::Latch => None,
            Kind::Read => Some("READ"),
            Kind::Write => Some("WRITE"),
        }
    }

    /// `LOCK.<verb> key owner`, `RWLOCK.<verb> key owner MODE`, or `LATCH.<verb> key`.
    pub(crate) fn command(self, verb: &str, key: &str, owner: &str) -> Cmd {
        let mut cmd = self.family(verb);
        cmd.arg(key);
        if self != Kind::Latch {
            cmd.arg(owner);
        }
        if let Some(mode) = self.mode() {
            cmd.arg(mode);
        }
        cmd
    }

    /// `LOCK.<verb>`, `RWLOCK.<verb>` or `LATCH.<verb>`, without arguments.
    pub(crate) fn family(self, verb: &str) -> Cmd {
        match self {
            Kind::Lock => cmd(&format!("LOCK.{verb}")),
            Kind::Read | Kind::Write => cmd(&format!("RWLOCK.{verb}")),
            Kind::Latch => cmd(&format!("LATCH.{verb}")),
        }
    }
}
