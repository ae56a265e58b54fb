//! What an acquisition takes: a plain lock (`LOCK.*`), a read or a write hold of a
//! read-write lock (`RWLOCK.*`), or permits of a semaphore (`SEM.*`). The two families live on different keys (the server refuses
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
    /// That many permits of a semaphore (`SEM.* key owner permits`); 0 in a release gives
    /// back all the owner's permits (`SEM.RELEASE key owner`).
    Sem(u32),
}

/// An owner's holding as the server counts it: a lock's holds, a semaphore's permits or a
/// read-write lock's read holds (`[0]`), and a read-write lock's write holds (`[1]`).
pub(crate) type Units = [u64; 2];

impl Kind {
    /// What one acquisition of this kind adds to its owner's holding (a release takes the
    /// same away).
    pub(crate) fn units(self) -> Units {
        match self {
            Kind::Lock | Kind::Read => [1, 0],
            Kind::Write => [0, 1],
            Kind::Sem(permits) => [u64::from(permits), 0],
            Kind::Latch => [0, 0],
        }
    }

    /// Which count of [`Units`] an acquisition of this kind changes.
    pub(crate) fn column(self) -> usize {
        usize::from(self == Kind::Write)
    }

    /// Whether it is a hold of a read-write lock.
    pub(crate) fn is_rw(self) -> bool {
        matches!(self, Kind::Read | Kind::Write)
    }

    /// The mode argument of `RWLOCK.ACQUIRE`, `RWLOCK.WAIT` and `RWLOCK.RELEASE`.
    pub(crate) fn mode(self) -> Option<&'static str> {
        match self {
            Kind::Lock | Kind::Latch | Kind::Sem(_) => None,
            Kind::Read => Some("READ"),
            Kind::Write => Some("WRITE"),
        }
    }

    /// `LOCK.<verb> key owner`, `RWLOCK.<verb> key owner MODE`, `SEM.<verb> key owner
    /// permits`, or `LATCH.<verb> key`.
    pub(crate) fn command(self, verb: &str, key: &str, owner: &str) -> Cmd {
        let mut cmd = self.family(verb);
        cmd.arg(key);
        if self != Kind::Latch {
            cmd.arg(owner);
        }
        if let Some(mode) = self.mode() {
            cmd.arg(mode);
        }
        if let Kind::Sem(permits @ 1..) = self {
            cmd.arg(permits);
        }
        cmd
    }

    /// `LOCK.<verb>`, `RWLOCK.<verb>`, `LATCH.<verb>` or `SEM.<verb>`, without arguments.
    pub(crate) fn family(self, verb: &str) -> Cmd {
        match self {
            Kind::Lock => cmd(&format!("LOCK.{verb}")),
            Kind::Read | Kind::Write => cmd(&format!("RWLOCK.{verb}")),
            Kind::Latch => cmd(&format!("LATCH.{verb}")),
            Kind::Sem(_) => cmd(&format!("SEM.{verb}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &Cmd) -> Vec<String> {
        let simple = cmd.args_iter().filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        });
        simple.collect()
    }

    #[test]
    fn semaphore_commands_carry_their_permits_third() {
        let acquire = Kind::Sem(2).command("ACQUIRE", "k", "o");
        assert_eq!(words(&acquire), ["SEM.ACQUIRE", "k", "o", "2"]);
        let all = Kind::Sem(0).command("RELEASE", "k", "o");
        assert_eq!(words(&all), ["SEM.RELEASE", "k", "o"]);
        assert_eq!(words(&Kind::Sem(3).family("RENEW")), ["SEM.RENEW"]);
    }
}
