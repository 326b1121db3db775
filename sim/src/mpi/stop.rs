//! Stop requests and failures at a benchmark's checkpoints ([`Rank::checkpoint`]):
//! the same answer on every rank of a communicator, at no cost in virtual time
//! and without synchronising, so an uninterrupted run is unchanged.
//!
//! Ranks reach a checkpoint at different virtual times, and the request
//! (`piotwin_types::stop`) comes from outside at any moment, a failure from
//! any member: the first checkpoint call that sees either fixes the
//! checkpoint from which the answer is "stop" — the first one no member has
//! reached yet. Checkpoints some member
//! already passed keep their answer ("go on") for every member.

use piotwin_types::stop::{self, Checkpoint};

use crate::Rank;

/// A communicator's checkpoints.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// How many checkpoints the furthest member has reached.
    reached: u64,
    /// The first checkpoint that answers "stop", and its answer.
    from: Option<(u64, Checkpoint)>,
}

impl Rank {
    /// The answer at this rank's next checkpoint, `failed` saying whether this
    /// rank failed: every member of the communicator gets the same answer at
    /// the same checkpoint. All members call it the same number of times.
    pub fn checkpoint(&self, failed: bool) -> Checkpoint {
        let k = self.checks.get();
        self.checks.set(k + 1);
        let mut m = self.sim.model.borrow_mut();
        let c = m.checkpoints.entry(self.comm.id).or_default();
        let signal = stop::requested();
        if c.from.is_none() && (signal.is_some() || failed) {
            c.from = Some((c.reached, Checkpoint { signal, failed }));
        }
        c.reached = c.reached.max(k + 1);
        c.from
            .filter(|&(from, _)| k >= from)
            .map_or_else(Checkpoint::default, |(_, answer)| answer)
    }
}
