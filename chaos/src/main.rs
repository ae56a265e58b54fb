//! `rlock-chaos`: runs rlock under random faults chosen by a seed, records what every
//! client saw, and judges the history (see docs/chaos.md).

mod check;
mod history;
mod process;
mod proxy;
mod rng;

fn main() {}
