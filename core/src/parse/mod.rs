//! The arguments of each command, parsed from the bytes Redis passed (command name first):
//! one file per command, each with its args struct, its `parse` and its unit tests. The
//! module's command files call these, then the layers below them.
//!
//! May use: `args` (the shared helpers), `error`.

pub mod acquire;
pub mod apply;
pub mod cancel;
pub mod forcerelease;
pub mod grants;
pub mod info;
pub mod latch;
pub mod listen;
pub mod raise;
pub mod release;
pub mod renew;
pub mod rw;
pub mod sem;
pub mod wait;
