//! The fast-forward of repeated accesses: observe each iteration of a
//! repetition, plan a skip once the twin is in a steady state, agree on it
//! between ranks, apply the skipped iterations' effect on the storage state.
//! The rule and its error bound: `README.md` beside this file.

mod agree;
mod apply;
mod observe;
mod plan;
mod repeat;
mod storage;

pub use agree::FfOffer;
pub(crate) use agree::*;
pub(crate) use apply::*;
pub(crate) use observe::*;
pub use observe::{FfObservation, FfPointer};
pub use plan::{FF_EPSILON, FfPlan};
pub(crate) use repeat::Repetitions;
pub(crate) use storage::{CLASS_DEVICE, CLASS_MIXED, CLASS_NODE_HIT, Level, Levels};

use rustc_hash::FxHashMap;

/// The fast-forward's state in the model: per world rank, its request log and
/// last observation; the rounds of
/// offers and skips under way; the iterations skipped so far.
pub(crate) struct FfState {
    /// Per world rank: its file-system requests since the fast-forward last
    /// looked, while it observes a repetition ([`Rank::ff_start`]).
    pub(crate) log: Vec<Option<Vec<FfReq>>>,
    /// Per world rank, the requests and the shared pointer (and position) of
    /// its last observation ([`Rank::ff_observe`]): what the next one's are
    /// compared with, and the requests a plan repeats. Kept here, where the
    /// next observation finds them without reaching back into the window (a
    /// cache miss per rank and iteration at 1024 ranks), and the requests'
    /// buffer reused as the next log.
    pub(crate) last: Vec<(Vec<FfReq>, Option<PointerAt>)>,
    /// Offers of ranks that skip on their own ([`Rank::ff_offer`]), by
    /// (communicator, key): every rank's offer, and how many have read the result.
    pub(crate) offers: FxHashMap<(u32, u64), Offers>,
    /// Proposals of ranks of an in-step message loop ([`Rank::ff_propose`]),
    /// by (communicator, key).
    pub(crate) proposals: FxHashMap<(u32, u64), Proposals>,
    /// Skips of ranks in step ([`Rank::ff_skip_in_step`]), by (communicator,
    /// key): each rank's node and plan, applied together once all have come.
    pub(crate) skips: FxHashMap<(u32, u64), SkipRound>,
    /// Iterations skipped so far, summed over ranks.
    pub(crate) skipped: u64,
    /// The servers' cache levels of the last observation, shared by the
    /// observations that see them unchanged.
    pub(crate) server_levels: std::rc::Rc<[Level]>,
}

impl FfState {
    pub(crate) fn new(ranks: usize) -> FfState {
        FfState {
            log: vec![None; ranks],
            last: vec![(Vec::new(), None); ranks],
            offers: FxHashMap::default(),
            proposals: FxHashMap::default(),
            skips: FxHashMap::default(),
            skipped: 0,
            server_levels: std::rc::Rc::from([]),
        }
    }
}
