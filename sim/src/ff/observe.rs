//! Observing a repetition: each iteration's requests, time and cache levels.

use crate::File;
use crate::Rank;
use crate::ff::Levels;
use crate::storage::PAGE;
/// Read class of a request that reaches past the end of the file.
pub(crate) const FF_CLASS_EOF: u8 = 255;

/// One file-system request in the fast-forward's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FfReq {
    pub(crate) file: usize,
    pub(crate) write: bool,
    /// Offset and length in bytes.
    pub(crate) off: u64,
    pub(crate) len: u64,
    /// Where the request was served when it was issued (`crate::ff::CLASS_*`).
    pub(crate) class: u8,
    /// Where in its page the request's buffer starts, where the node's
    /// page-cache copies can alias (`nodes.cache.aliased_bw`); else `None`.
    pub(crate) placed: Option<u64>,
}

/// A shared file pointer and its position (etypes).
pub(crate) type PointerAt = (FfPointer, u64);

/// A rank's handle on the shared file pointer of a file it accesses in a
/// repetition (taken with [`Rank::ff_pointer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FfPointer {
    pub(crate) ptr: usize,
    /// True on the file's rank 0, which advances it for everyone.
    pub(crate) lead: bool,
}

/// What the fast-forward saw at the end of one iteration of a repetition.
#[derive(Debug, Clone)]
pub struct FfObservation {
    /// Virtual time at the end of the iteration, in seconds.
    pub(crate) end: f64,
    /// Cache levels and their thresholds as [`Storage::levels`] gives them, bytes.
    pub(crate) levels: Levels,
    /// The rank's flows over shared node resources so far, units by path in
    /// the order of [`Model::ff_work`] (which only appends), and the time it
    /// waited for them ([`Model::ff_busy`]).
    pub(crate) work: Vec<f64>,
    pub(crate) busy: f64,
    /// Bytes put in the node's page cache so far ([`Storage::inserted`]).
    pub(crate) inserted: u64,
    /// How this iteration's requests follow the previous observation's
    /// ([`follows`]), worked out once as it is observed: condition 2. of
    /// [`Rank::ff_plan`] then reads these instead of comparing every pair of
    /// the window again at each decision.
    pub(crate) follow: Option<Follow>,
}

/// How one observation's requests follow the previous one's: whether they are
/// the same requests moved by one shift (and which), and the shared pointer's
/// step (`None`: used in one and not the other, or on different pointers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Follow {
    pub(crate) same: bool,
    pub(crate) shift: Option<u64>,
    pub(crate) step: Option<Option<PointerAt>>,
}

/// [`Follow`] of requests `b` after `a`, with the shared pointers (and
/// positions) `pa` and `pb` used.
pub(crate) fn follows(
    a: &[FfReq],
    b: &[FfReq],
    pa: Option<PointerAt>,
    pb: Option<PointerAt>,
) -> Follow {
    let mut same = a.len() == b.len();
    let mut s = None;
    for (x, y) in a.iter().zip(b) {
        same &= (x.file, x.write, x.len, x.class, x.placed)
            == (y.file, y.write, y.len, y.class, y.placed)
            && y.off >= x.off
            && x.class != crate::ff::CLASS_MIXED
            && x.class != FF_CLASS_EOF;
        if !same {
            break;
        }
        let d = y.off - x.off;
        // a placed copy aliases by where the file offset lies in its page:
        // iterations repeat only where the shift keeps that
        same &= *s.get_or_insert(d) == d && (x.placed.is_none() || d % PAGE == 0);
    }
    let step = match (pa, pb) {
        (Some((pa, xa)), Some((pb, xb))) if pa == pb => Some(Some((pa, xb.wrapping_sub(xa)))),
        (None, None) => Some(None),
        _ => None,
    };
    same &= step.is_some();
    Follow {
        same,
        shift: s,
        step,
    }
}

/// Condition 2. of [`Rank::ff_plan`] on `window`: the per-iteration shift of
/// the requests' offsets and the shared pointer's step where every iteration
/// (but the first observation's) made the same requests; else `Err(i)`, `i`
/// the index of the newest observation from which on they do (the window
/// restarts there: the iterations before it differ from those after it
/// whatever the window's length).
pub(crate) fn repeating(
    window: &[FfObservation],
) -> Result<(u64, Option<(FfPointer, u64)>), usize> {
    let mut last_change = None;
    let mut shift = None;
    let mut step = None;
    for (j, p) in window[1..].windows(2).enumerate() {
        let Follow {
            mut same,
            shift: s,
            step: t,
        } = p[1].follow.unwrap_or(Follow {
            // (observed without the one before it: a window starts there)
            same: false,
            shift: None,
            step: None,
        });
        // a new shift or step also starts a new run
        if same && s.is_some() && shift.is_some_and(|v| Some(v) != s) {
            same = false;
        }
        if same && step.is_some() && step != t {
            same = false;
        }
        if same {
            shift = shift.or(s);
            step = step.or(t);
        } else {
            last_change = Some(j + 1);
            shift = None;
            step = None;
        }
    }
    match last_change {
        Some(i) => Err(i),
        None => Ok((shift.unwrap_or(0), step.flatten())),
    }
}

impl Rank {
    /// Starts logging this rank's file-system requests for the fast-forward.
    pub fn ff_start(&self) {
        self.sim.model.borrow_mut().ff.log[self.world_rank] = Some(Vec::new());
    }

    /// Stops logging (see [`Rank::ff_start`]).
    pub fn ff_stop(&self) {
        self.sim.model.borrow_mut().ff.log[self.world_rank] = None;
    }

    /// The shared file pointer of `file`, for [`Rank::ff_observe`].
    pub fn ff_pointer(&self, file: &File) -> FfPointer {
        FfPointer {
            ptr: file.ptr,
            lead: file.rank == 0,
        }
    }

    /// The end of one iteration: the time, the requests logged since the last
    /// observation, the cache levels seen from this rank's node, and the
    /// position of `pointer` if the iteration used a shared file pointer;
    /// `after_last` where the window holds this rank's last observation (its
    /// requests are then compared with that one's).
    pub fn ff_observe(&self, pointer: Option<FfPointer>, after_last: bool) -> FfObservation {
        let mut guard = self.sim.model.borrow_mut();
        let m = &mut *guard;
        let w = self.world_rank;
        let node = m.platform.node_of(w);
        let pointer = pointer.map(|p| (p, m.ptrs[p.ptr].pos));
        let fresh = m.ff.log[w].as_mut().map(std::mem::take).unwrap_or_default();
        let last = &m.ff.last[w];
        let follow = after_last.then(|| follows(&last.0, &fresh, last.1, pointer));
        let (mut spare, _) = std::mem::replace(&mut m.ff.last[w], (fresh, pointer));
        if let Some(log) = m.ff.log[w].as_mut() {
            // the last requests' buffer becomes the next log
            spare.clear();
            *log = spare;
        }
        let storage = self.sim.storage.borrow();
        let load = self.sim.load.borrow();
        FfObservation {
            end: self.now(),
            levels: storage.levels(node, &mut m.ff.server_levels),
            work: load.work[w].iter().map(|w| w.1).collect(),
            busy: load.busy[w],
            inserted: storage.inserted(node),
            follow,
        }
    }

    /// Where the fast-forward's window should restart after a refusal: the
    /// index of the newest observation after which every iteration made the
    /// same requests, when an older one differs (a longer window would only
    /// hold the change); `None` when they all repeat.
    pub fn ff_restart(window: &[FfObservation]) -> Option<usize> {
        repeating(window).err()
    }
}
