//! Stop requests at a benchmark's checkpoints ([`Rank::stop_requested`]):
//! the same answer on every rank of a communicator, at no cost in virtual time
//! and without synchronising, so an uninterrupted run is unchanged.
//!
//! Ranks reach a checkpoint at different virtual times, and the request
//! (`piotwin_types::stop`) comes from outside at any moment: the first
//! checkpoint call that sees it fixes the checkpoint from which the answer is
//! "stop" — the first one no member has reached yet. Checkpoints some member
//! already passed keep their answer ("go on") for every member.

use piotwin_types::stop;

use crate::Rank;

/// A communicator's checkpoints.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    /// How many checkpoints the furthest member has reached.
    reached: u64,
    /// The first checkpoint that answers "stop", and the signal.
    from: Option<(u64, i32)>,
}

impl Rank {
    /// The stop request (a signal number) in force at this rank's next
    /// checkpoint; every member of the communicator gets the same answer at
    /// the same checkpoint. All members call it the same number of times.
    pub fn stop_requested(&self) -> Option<i32> {
        let k = self.checks.get();
        self.checks.set(k + 1);
        let mut m = self.sim.model.borrow_mut();
        let c = m.checkpoints.entry(self.comm.id).or_default();
        if c.from.is_none()
            && let Some(signal) = stop::requested()
        {
            c.from = Some((c.reached, signal));
        }
        c.reached = c.reached.max(k + 1);
        c.from.filter(|&(from, _)| k >= from).map(|(_, s)| s)
    }
}
