//! The twin back end: `IoCtx` over `piotwin-sim`. Every rank is a task of one
//! deterministic virtual-time engine; data buffers carry lengths only.

use crate::ctx::RankProgram;
use piotwin_sim::{Scenario, SimError};

/// Run `program` on `ranks` simulated ranks of `scenario` with RNG seed `seed`;
/// returns every rank's output, indexed by rank. Deterministic: the same
/// scenario, ranks, seed and program give bit-identical outputs.
pub fn launch<P: RankProgram>(
    scenario: &Scenario,
    ranks: usize,
    seed: u64,
    program: &P,
) -> Result<Vec<P::Output>, SimError> {
    let _ = (scenario, ranks, seed, program);
    todo!("backend::sim::launch")
}
