//! Agreeing on a skip: ranks in step take the least of their skips; ranks of
//! an independent loop offer a stretch of virtual time without waiting; ranks
//! of an in-step message loop propose a skip without waiting and take it a
//! few iterations later.

use crate::Rank;
use crate::mpi::comm::CollOut;
use crate::mpi::comm::Contrib;
use crate::mpi::comm::Kind;

/// One round of [`Rank::ff_offer`].
#[derive(Default)]
pub(crate) struct Offers {
    /// Each rank's offer, `None` until it offered.
    pub(crate) offers: Vec<Option<FfOffer>>,
    /// How many ranks have offered.
    pub(crate) offered: usize,
    /// The outcome, once every rank has offered.
    pub(crate) outcome: Option<FfOffer>,
    /// How many ranks have read the outcome.
    pub(crate) read: usize,
}

/// One round of [`Rank::ff_propose`]: an in-step message loop's skip,
/// proposed at one iteration and taken [`crate::ff::FF_LAG`] iterations later.
pub(crate) struct Proposals {
    /// The least skip and the most fewest proposed so far, and by how many ranks.
    least: u64,
    fewest: u64,
    proposed: usize,
    /// The outcome, decided by the first rank to ask for it.
    outcome: Option<u64>,
    /// How many ranks have read the outcome.
    read: usize,
}

/// A rank's offer in an independent loop's skip round ([`Rank::ff_offer`]),
/// or the round's outcome ([`Rank::ff_offered`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FfOffer {
    /// Virtual time of the offer, seconds (outcome: the latest).
    pub at: f64,
    /// Virtual time the rank could skip to, seconds; 0 for none (outcome: the earliest).
    pub until: f64,
    /// The rank's steady iteration time Δ, seconds (outcome: the longest).
    pub delta: f64,
}

impl Rank {
    /// The fast-forward's agreement, on every rank of the communicator at no
    /// cost in virtual time: the minimum of every rank's `skip` where that is
    /// at least every rank's `fewest` (its plan's [`FfPlan::min_skip`]), else 0.
    pub async fn ff_agree(&self, skip: u64, fewest: u64) -> u64 {
        let out = self.on_comm(Contrib::Skip(skip, fewest), Kind::Agree).await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("an agreement yields a u64"),
        }
    }

    /// Proposes, without waiting, to skip `skip` iterations (at least `fewest`)
    /// in round `key` of an in-step message loop on its communicator.
    pub(crate) fn ff_propose(&self, key: u64, skip: u64, fewest: u64) {
        let mut m = self.sim.model.borrow_mut();
        let p =
            m.ff.proposals
                .entry((self.comm.id, key))
                .or_insert(Proposals {
                    least: u64::MAX,
                    fewest: 0,
                    proposed: 0,
                    outcome: None,
                    read: 0,
                });
        p.least = p.least.min(skip);
        p.fewest = p.fewest.max(fewest);
        p.proposed += 1;
    }

    /// The outcome of round `key`, asked `lag` iterations after proposing: the
    /// least skip proposed less `lag`, where every rank had proposed when the
    /// first of them asked and that leaves at least every rank's fewest; else
    /// 0. The first rank to ask decides, so that no rank waits for another
    /// (a wait would put the ranks in step where the exact run does not) and
    /// every rank gets the same answer.
    pub(crate) fn ff_proposed(&self, key: u64, lag: u64) -> u64 {
        let n = self.size();
        let mut m = self.sim.model.borrow_mut();
        let id = (self.comm.id, key);
        let p = m.ff.proposals.get_mut(&id).expect("this rank proposed");
        let all = p.proposed == n && p.least != u64::MAX && p.least >= p.fewest + lag;
        let out = *p.outcome.get_or_insert(if all { p.least - lag } else { 0 });
        p.read += 1;
        if p.read == n {
            m.ff.proposals.remove(&id);
        }
        out
    }

    /// Offers, without waiting, a skip in the round `key` of its communicator.
    /// For ranks that are not in step (an independent loop): they skip the same
    /// stretch of virtual time, each as many of its own iterations as fit, so
    /// that they stop loading the storage system and resume together.
    pub fn ff_offer(&self, key: u64, offer: FfOffer) {
        let n = self.size();
        let mut m = self.sim.model.borrow_mut();
        let e = m.ff.offers.entry((self.comm.id, key)).or_default();
        e.offers.resize(n, None);
        if e.offers[self.rank].replace(offer).is_none() {
            e.offered += 1;
        }
        if e.offered == n {
            let start = FfOffer {
                at: f64::NEG_INFINITY,
                until: f64::INFINITY,
                delta: 0.0,
            };
            e.outcome = Some(e.offers.iter().flatten().fold(start, |a, o| FfOffer {
                at: a.at.max(o.at),
                until: a.until.min(o.until),
                delta: a.delta.max(o.delta),
            }));
        }
    }

    /// The outcome of round `key` once every rank has offered (each rank reads
    /// it once): the earliest `until`, the latest offer time and the longest
    /// iteration time.
    pub fn ff_offered(&self, key: u64) -> Option<FfOffer> {
        let n = self.size();
        let mut m = self.sim.model.borrow_mut();
        let id = (self.comm.id, key);
        let e = m.ff.offers.get_mut(&id)?;
        let out = e.outcome?;
        e.read += 1;
        if e.read == n {
            m.ff.offers.remove(&id);
        }
        Some(out)
    }
}
