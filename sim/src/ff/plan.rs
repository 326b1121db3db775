//! Planning a skip: the conditions on a window of observations.

use crate::FfObservation;
use crate::FfPointer;
use crate::Rank;
use crate::ff::FfReq;
use crate::ff::repeating;
use crate::storage::Path;
use crate::storage::{self};

/// A skip every rank may take: the result of [`Rank::ff_plan`].
#[derive(Debug, Clone)]
pub struct FfPlan {
    /// The most iterations this rank may skip.
    pub max_skip: u64,
    /// The fewest it may skip: device-served requests are skipped only over
    /// a stretch long enough for the head movements it does not simulate to
    /// stay within the error bound (see [`Rank::ff_plan`], 5.); 0 for others.
    pub min_skip: u64,
    /// The steady iteration time Δ, seconds.
    pub delta: f64,
    /// Virtual time of the last observation, seconds.
    pub(crate) end: f64,
    /// The last iteration's requests and the per-iteration shift of their offsets.
    pub(crate) reqs: Vec<FfReq>,
    pub(crate) shift: u64,
    /// The shared pointer and its advance per iteration (etypes).
    pub(crate) pointer: Option<(FfPointer, u64)>,
    /// The rank's mean flows per iteration over its node's shared resources,
    /// and the mean time per iteration it waited for them.
    pub(crate) load: Vec<(Path, f64)>,
    pub(crate) busy: f64,
    /// Bytes per second put in the node's page cache over the window.
    pub(crate) inserted: f64,
    /// Where the node's page cache was writing back over the window, the
    /// share of the bytes put in it that its write-back took out (see
    /// [`Rank::ff_plan`], 3.): the skip writes back that share of its writes.
    pub(crate) written_back: Option<f64>,
}

impl FfPlan {
    /// Whether the iterations of this plan stay on the rank's node: every
    /// request a read served by the node's page cache (and no shared file
    /// pointer), so that skipping them alone touches no other node's state;
    /// see [`Rank::ff_skip_alone`].
    pub fn local(&self) -> bool {
        self.pointer.is_none()
            && self
                .reqs
                .iter()
                .all(|r| !r.write && r.class == crate::ff::CLASS_NODE_HIT)
    }

    /// The plan `m` further iterations on, at virtual time `end`: requests
    /// moved by `m` shifts, `m` fewer iterations to skip (the caller has run
    /// them exactly since the plan was made, in the same steady state).
    pub fn advanced(&self, m: u64, end: f64) -> FfPlan {
        let mut p = self.clone();
        p.max_skip = p.max_skip.saturating_sub(m);
        p.end = end;
        for r in &mut p.reqs {
            r.off += m * p.shift;
        }
        // (a shared pointer is advanced from where it is at the skip)
        p
    }
}

/// Bytes put in the node's page cache over a window, in write-back chunks,
/// below which its write-back share is not taken as known (see
/// [`Rank::ff_plan`], 3.): the level drops by a whole chunk as each one
/// completes, so the share is known to one chunk of what the window put in.
pub(crate) const FF_WRITE_BACK_CHUNKS: u64 = 32;

/// The share of the bytes put in the node's page cache from observation
/// `first` to `last` that its write-back took out (what the dirty level did
/// not keep), where it wrote back all along (above the background threshold
/// at `first`) and the window put in [`FF_WRITE_BACK_CHUNKS`] chunks or more;
/// `None` otherwise.
pub(crate) fn written_back_share(first: &FfObservation, last: &FfObservation) -> Option<f64> {
    let put = last.inserted - first.inserted;
    let ((l0, [background, _]), (l1, _)) = (first.levels.node_dirty()?, last.levels.node_dirty()?);
    if l0 <= background || put < FF_WRITE_BACK_CHUNKS * storage::FLUSH_CHUNK {
        return None;
    }
    Some((1.0 - (l1 as f64 - l0 as f64) / put as f64).clamp(0.0, 1.0))
}

/// How many times over a lone skip's reads must stay cached at the rate the
/// node's page cache fills ([`Rank::ff_alone_bound`]).
pub(crate) const FF_EVICTION_MARGIN: f64 = 2.0;

/// Relative difference of the mean iteration times of a window's two halves that counts as steady.
pub const FF_EPSILON: f64 = 1e-2;

/// How far the count of head crossings of a stream over some bytes can be
/// from their mean: ±1 per grid of boundaries (RAID stripe units and file
/// stripes), which need not be aligned with each other.
pub(crate) const FF_CROSSING_SPREAD: f64 = 2.0;

impl Rank {
    /// How many iterations after `window` (this rank's last `2B + 1`
    /// observations, oldest first, `B ≥ 2`, the last one its latest: the
    /// first one is where timing starts, its requests are not looked at) may
    /// be skipped; `None` when the
    /// twin is not in a steady state. The conditions, all on virtual-time state only:
    ///
    /// 1. **steady time**: the mean iteration time of the window's first `B`
    ///    iterations and of its last `B` agree within [`FF_EPSILON`]
    ///    (relative); Δ is the mean over all `2B`. Iteration times that vary
    ///    periodically (a request crossing a RAID chunk every so many
    ///    iterations) pass only once `B` is long enough for the variation to
    ///    average out to ε (the caller doubles `B` after each refusal), so Δ
    ///    then carries them at their mean;
    /// 2. **repeating requests**: every iteration issued the same file-system
    ///    requests (file, read/write, length, where reads were served from),
    ///    each offset moved by one common shift per iteration, and the shared
    ///    pointer (if used) by one common step;
    /// 3. **no regime change**: every cache level (node dirty + writeback bytes
    ///    against the background and dirty limits, bytes held against capacity,
    ///    the same on each server cache) moves at its window's mean rate per
    ///    iteration; the skip ends before any of them reaches a threshold.
    ///    Where the node's page cache writes back (dirty bytes above its
    ///    background threshold, or a write-back in flight), it must have
    ///    done so all along (above the threshold at the window's start), and
    ///    the window must have put [`FF_WRITE_BACK_CHUNKS`] write-back chunks
    ///    or more in the cache: the share of the bytes put in that the
    ///    write-back took out (what the dirty level did not keep) is then
    ///    known to one chunk in 32, and the skip writes that share of its
    ///    writes back at once, the oldest dirty data first, with the flusher
    ///    held until the skip's end ([`Storage::write_back_at_once`]), so
    ///    the dirty level leaves the skip where the window's rate takes it.
    ///    Left to the flusher, a skip's dirty bytes would not interleave with
    ///    its chunks and the throttled writers as they do call by call
    ///    (skipping so put a 16-rank run's rep count 17 % off `--exact`); a
    ///    window of fewer chunks (16 ranks on one node, 16 chunks: 20 of 95
    ///    patterns more than 1 % off `--exact`, against 1 without such
    ///    skips) or one that starts below the threshold (the flusher idle in
    ///    part of it: its share far too low) measures the share too coarsely;
    /// 4. **reads served alike**: the ranges the skipped reads will cover are
    ///    served from where the last ones were (node cache, server cache or
    ///    devices, all of them, none past the end of file), checked on the
    ///    current caches without touching them: the span from the first to the
    ///    last, and where that differs for a strided read (the span holds
    ///    other ranks' data) its pieces one by one, up to `most` (the most
    ///    the caller would skip);
    /// 5. **head movements bounded**: requests the devices serve pay a
    ///    positioning each time their stream reaches another disk head (a RAID
    ///    stripe unit, a stripe on another server; `Storage::crossing`), every
    ///    so many iterations, at a cost the window sees only as often as it
    ///    crossed. A stream crosses the boundaries of each of the two grids
    ///    within ±1 of its mean count, in the window's `2B` iterations as in
    ///    the skip's `k`, so taking Δ (the window's rate of crossings) for the
    ///    skip errs by at most `c·2·(1 + k/2B)` s, `c` the worst cost of one
    ///    crossing of each of the iteration's device requests summed. The plan
    ///    requires that to be within ε·k·Δ: `B > c/(εΔ)` and a skip of at least
    ///    [`FfPlan::min_skip`] `= ⌈2c / (εΔ − c/B)⌉` iterations. Device
    ///    requests of other ranks on the same disks are counted in Δ as the
    ///    window saw them; the bound is per rank.
    ///
    /// The error left: a skip of `k` adds `k·Δ` where the exact run would add
    /// `Σ Δ_j`; with 1.–4. the mean of the Δ_j stays within ε of Δ, so the time of the
    /// skipped stretch is within ε·k·Δ (relative ε = 1e-2), and within 2ε·k·Δ
    /// where the devices serve requests (5.). Not reproduced: the
    /// device head position and queue (the first exact access after a skip
    /// seeks from where the last simulated one ended: at most one full seek per
    /// device per skip), the interleaving of the flusher daemons' write-back
    /// with the skipped writes (they see the skipped dirty bytes at once and
    /// write them back while the ranks sleep through the skip; where the
    /// node's cache was writing back, its share is written back at once and
    /// loads no server, and the chunk in flight completes during the skip),
    /// and LRU order among the skipped extents.
    pub fn ff_plan(&self, window: &[FfObservation], most: u64) -> Option<FfPlan> {
        let w = window.len();
        if w < 5 || w.is_multiple_of(2) {
            return None;
        }
        // 1. the two halves of the window take the same time.
        let half = (w - 1) / 2;
        let (t0, t1, t2) = (window[0].end, window[half].end, window[w - 1].end);
        let (m1, m2) = ((t1 - t0) / half as f64, (t2 - t1) / half as f64);
        if m2 <= 0.0 || (m1 - m2).abs() > FF_EPSILON * m2 {
            return None;
        }
        let last = (t2 - t0) / (w - 1) as f64;
        // 2. the same requests, shifted by one amount per iteration.
        let Ok((shift, pointer)) = repeating(window) else {
            return None;
        };
        // 3. no cache threshold within the skip.
        let mut k = u64::MAX;
        let (first, now) = (&window[0].levels, &window[w - 1].levels);
        if first.len() != now.len() {
            return None;
        }
        for (&(l0, _), &(l1, th)) in first.iter().zip(now.iter()) {
            let rate = (l1 as f64 - l0 as f64) / (w - 1) as f64;
            for t in th {
                let gap = t as f64 - l1 as f64;
                if rate != 0.0 && gap != 0.0 && gap.signum() == rate.signum() {
                    k = k.min((gap / rate).floor() as u64);
                }
            }
        }
        let mut written_back = None;
        // 4. the skipped reads are served from where the last ones were.
        let reqs = self.sim.model.borrow().ff.last[self.world_rank].0.clone();
        {
            let m = self.sim.storage.borrow();
            let node = self.sim.platform.node_of(self.world_rank);
            // 3. (the node's page cache writing back all along, at a known share)
            if m.writing_back(node) {
                written_back = Some(written_back_share(&window[0], &window[w - 1])?);
            }
            for r in reqs.iter().filter(|r| !r.write) {
                let size = m.size(r.file);
                let alike = |j: u64| -> bool {
                    let a = r.off + shift;
                    let b = r.off + j * shift + r.len;
                    b <= size && m.read_class(node, r.file, a, b, r.len) == r.class
                };
                let mut hi = k.min(size / shift.max(1) + 1);
                if !alike(1) {
                    return None;
                }
                let mut lo = 1;
                while lo < hi {
                    let mid = lo + (hi - lo).div_ceil(2);
                    if alike(mid) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                // A strided request's span also holds other ranks' data (an
                // aggregator's window among the others' file domains): where
                // the span is not alike, look at its own pieces, up to `most`.
                if shift > r.len {
                    let piece = |j: u64| -> bool {
                        let a = r.off + j * shift;
                        a + r.len <= size
                            && m.read_class(node, r.file, a, a + r.len, r.len) == r.class
                    };
                    while lo < k.min(most) && piece(lo + 1) {
                        lo += 1;
                    }
                }
                k = k.min(lo);
            }
        }
        // 5. head movements of device-served requests within the bound.
        let mut min_skip = 0;
        let device = reqs.iter().filter(|r| r.class == crate::ff::CLASS_DEVICE);
        let crossing = self.sim.storage.borrow().crossing();
        if let Some(cost) = crossing
            && shift > 0
        {
            let c: f64 = device.map(|r| cost[usize::from(r.write)]).sum();
            if c > 0.0 {
                let slack = FF_EPSILON * last - c * FF_CROSSING_SPREAD / (2 * half) as f64;
                if slack <= 0.0 {
                    return None;
                }
                min_skip = (c * FF_CROSSING_SPREAD / slack).ceil() as u64;
                if min_skip > k {
                    return None;
                }
            }
        }
        let (first, now) = (&window[0], &window[w - 1]);
        let paths = &self.sim.load.borrow().work[self.world_rank];
        let load = now
            .work
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let u0 = first.work.get(i).copied().unwrap_or(0.0);
                (paths[i].0.clone(), (u - u0) / (w - 1) as f64)
            })
            .filter(|x| x.1 > 0.0)
            .collect();
        let busy = (now.busy - first.busy) / (w - 1) as f64;
        Some(FfPlan {
            max_skip: k,
            min_skip,
            delta: last,
            end: window[w - 1].end,
            reqs,
            shift,
            pointer,
            load,
            busy,
            inserted: (now.inserted - first.inserted) as f64 / (t2 - t0),
            written_back,
        })
    }

    /// The most iterations of the [local](FfPlan::local) `plan` (at most `k`)
    /// this rank may skip alone: its skipped reads, checked on the cache as it
    /// is, must stay cached while the node's other ranks go on filling it
    /// ([`FF_EVICTION_MARGIN`] times over) at the window's rate or at the
    /// node's network bandwidth, whichever is higher: a window of cache hits
    /// may span microseconds and see no fetch at all. On nodes whose cache is
    /// full the others' fetches evict the data ahead of a reader in the exact
    /// run, which then fetches it again (16 ranks on 1 GiB nodes, `-T 600`:
    /// b_eff_io 4.4 % above `--exact` without the bound, 3.1 % with the
    /// window's rate alone, 0.4 % with this one).
    pub fn ff_alone_bound(&self, plan: &FfPlan, k: u64) -> u64 {
        let m = self.sim.storage.borrow();
        let node = self.sim.platform.node_of(self.world_rank);
        let rate = plan.inserted.max(self.sim.platform.nic_bw(node));
        let per_iteration = FF_EVICTION_MARGIN * rate * plan.delta;
        if per_iteration <= 0.0 {
            return k;
        }
        let enough = (per_iteration * k as f64).ceil() as u64;
        let mut bound = k;
        for r in plan.reqs.iter().filter(|r| !r.write) {
            let (a, b) = (r.off + plan.shift, r.off + k * plan.shift + r.len);
            let room = m.room_before_evicting(node, r.file, a, b, enough);
            bound = bound.min((room as f64 / per_iteration).floor() as u64);
        }
        bound
    }
}
