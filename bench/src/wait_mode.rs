//! How a scenario-9 client process waits, and the locks its waits queue on.

/// How a client process waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Tickets,
    Block,
    /// The client crate's `acquire`, one future per wait.
    Client,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tickets => "tickets",
            Mode::Block => "block",
            Mode::Client => "client",
        }
    }
}

/// The lock of wait `i` among `keys` locks.
pub fn key(mode: Mode, keys: usize, i: usize) -> String {
    format!("q:{}:{keys}:{}", mode.name(), i % keys)
}
