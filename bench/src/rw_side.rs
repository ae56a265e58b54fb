//! The read-mostly scenario's shape (contenders, processes, share of reads) and its two
//! sides.

pub const CONTENDERS: usize = 64;
pub const PROCESSES: usize = 4;
pub const READ_PERCENT: u64 = 90;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwSide {
    Redisson,
    Rlock,
}

impl RwSide {
    pub fn name(self) -> &'static str {
        match self {
            RwSide::Redisson => "redisson",
            RwSide::Rlock => "rlock",
        }
    }

    pub fn parse(name: &str) -> Option<RwSide> {
        [RwSide::Redisson, RwSide::Rlock]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// The commands whose `INFO commandstats` time is this side's server time.
    pub fn top_level_commands(self) -> &'static [&'static str] {
        match self {
            RwSide::Redisson => &["evalsha"],
            RwSide::Rlock => &["rwlock.acquire", "rwlock.release"],
        }
    }
}
