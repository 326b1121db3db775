//! Applying a skip: the skipped iterations' effect on the storage state, and
//! the clock moved past them.

use std::collections::{BTreeMap, BTreeSet};

use crate::FfPlan;
use crate::Rank;
use crate::mpi::Wait;
use crate::mpi::mpiio::SharedPtr;
use crate::storage::Storage;
use crate::storage::node_flow;
use piotwin_types::Access;

/// One skip of ranks in step ([`Rank::ff_skip_in_step`]): each rank's node
/// and plan, `None` until it came.
pub(crate) type SkipRound = Vec<Option<(usize, FfPlan)>>;

/// A write stream of a skip, in extent-lock units: (first unit, last unit,
/// node, plan, request).
pub(crate) type WriteSpan = (u64, u64, usize, usize, usize);

/// Strided reads of a skip that a node's ranks make side by side: see [`tiled_reads`].
#[derive(Default)]
pub(crate) struct TiledReads {
    /// (node, file, (offset, length, shift)) of each block's stream.
    pub(crate) blocks: Vec<(usize, usize, (u64, u64, u64))>,
    /// The (plan, request) pairs the blocks stand for.
    pub(crate) members: BTreeSet<(usize, usize)>,
}

/// The reads of `plans` (strided: shift > length) that the ranks of one node
/// make into adjacent ranges of one file with one shift, so that together
/// they read one block per iteration: ranks reading in turn through a
/// shared pointer (b_eff_io's type 1: 32 ranks × 32 KiB of every 32 MiB).
/// Applying each block's `k` pieces costs a node what each of its ranks'
/// `k` pieces cost (1024 ranks × 2000 iterations of 32 KiB reads took 4 s
/// to apply rank by rank); the cache ends holding the same ranges, their
/// LRU order by iteration instead of by rank.
pub(crate) fn tiled_reads(plans: &[(usize, &FfPlan)]) -> TiledReads {
    let mut groups: BTreeMap<(usize, usize, u64), Vec<(u64, u64, usize, usize)>> = BTreeMap::new();
    for (i, &(node, plan)) in plans.iter().enumerate() {
        for (q, r) in plan.reqs.iter().enumerate() {
            if !r.write && plan.shift > r.len {
                groups
                    .entry((node, r.file, plan.shift))
                    .or_default()
                    .push((r.off, r.len, i, q));
            }
        }
    }
    let mut out = TiledReads::default();
    for ((node, file, shift), mut reads) in groups {
        if reads.len() < 2 {
            continue;
        }
        reads.sort_unstable();
        let (first, last) = (reads[0], reads[reads.len() - 1]);
        let adjacent = reads.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0);
        let len = last.0 + last.1 - first.0;
        if adjacent && len <= shift {
            out.blocks.push((node, file, (first.0, len, shift)));
            out.members.extend(reads.iter().map(|&(.., i, q)| (i, q)));
        }
    }
    out
}

/// The fast-forward's state-only effect of skipping `k` iterations of
/// `plans` (each with its rank's node; see [`Rank::ff_skip`]). Writes that
/// ranks of several nodes make into the same extent-lock units are applied
/// iteration by iteration, ranks in order; the others stream by stream,
/// the strided reads of a node's ranks that tile one block per iteration
/// (ordered reads through a shared pointer) as that block's stream.
pub(crate) fn apply_skip(
    storage: &mut Storage,
    ptrs: &mut [SharedPtr],
    plans: &[(usize, &FfPlan)],
    k: u64,
) {
    let contended = contended(storage, plans, k);
    let tiled = tiled_reads(plans);
    for &(node, file, block) in &tiled.blocks {
        storage.apply_strided(node, Access::Read, file, block, k);
    }
    for (i, &(node, plan)) in plans.iter().enumerate() {
        for (q, r) in plan.reqs.iter().enumerate() {
            let access = if r.write { Access::Write } else { Access::Read };
            if !contended.contains(&(i, q)) && !tiled.members.contains(&(i, q)) {
                storage.apply_strided(node, access, r.file, (r.off, r.len, plan.shift), k);
            }
            if r.write {
                let end = r.off + k * plan.shift + r.len;
                storage.grow(r.file, end);
            }
        }
        if let Some((p, step)) = plan.pointer
            && p.lead
        {
            ptrs[p.ptr].pos += k * step;
        }
    }
    // Nodes that write none of a file's contended stretch and hold none
    // of it lose nothing to its writes: leave them out of each write's
    // invalidation (k writes times every node that ever cached the file).
    let mut stretch: BTreeMap<usize, (u64, u64, BTreeSet<usize>)> = BTreeMap::new();
    for &(i, q) in &contended {
        let (node, plan) = plans[i];
        let r = plan.reqs[q];
        let e = stretch
            .entry(r.file)
            .or_insert((u64::MAX, 0, BTreeSet::new()));
        e.0 = e.0.min(r.off + plan.shift);
        e.1 = e.1.max(r.off + k * plan.shift + r.len);
        e.2.insert(node);
    }
    let idle: Vec<(usize, Vec<usize>)> = stretch
        .iter()
        .map(|(&f, (lo, hi, writers))| (f, storage.take_idle(f, *lo, *hi, writers)))
        .collect();
    for j in 1..=k {
        for &(i, q) in &contended {
            let (node, plan) = plans[i];
            let r = plan.reqs[q];
            let a = r.off + j * plan.shift;
            storage.apply(node, Access::Write, r.file, (a, a + r.len), r.len);
        }
    }
    for (f, nodes) in idle {
        storage.restore_idle(f, nodes);
    }
    for &(node, plan) in plans {
        if let Some(share) = plan.written_back {
            let bytes: u64 = plan.reqs.iter().filter(|r| r.write).map(|r| r.len).sum();
            let until = plan.end + k as f64 * plan.delta;
            let out = (share * (k * bytes) as f64) as u64;
            storage.write_back_at_once(node, out, until);
        }
    }
}

/// The (plan, request) pairs of `plans` writing files where the skipped
/// writes of ranks of different nodes share extent-lock units.
pub(crate) fn contended(
    storage: &Storage,
    plans: &[(usize, &FfPlan)],
    k: u64,
) -> BTreeSet<(usize, usize)> {
    let mut out = BTreeSet::new();
    let Some(g) = storage.lock_granularity() else {
        return out;
    };
    // per file: every write stream
    let mut spans: BTreeMap<usize, Vec<WriteSpan>> = BTreeMap::new();
    for (i, &(node, plan)) in plans.iter().enumerate() {
        for (q, r) in plan.reqs.iter().enumerate().filter(|(_, r)| r.write) {
            let (a, b) = (r.off + plan.shift, r.off + k * plan.shift + r.len);
            spans
                .entry(r.file)
                .or_default()
                .push((a / g, (b - 1) / g, node, i, q));
        }
    }
    for list in spans.values_mut() {
        list.sort_unstable();
        // the furthest unit each node's streams reach so far
        let mut reach: BTreeMap<usize, u64> = BTreeMap::new();
        let shared = list.iter().any(|&(lo, hi, node, ..)| {
            let met = reach
                .iter()
                .any(|(&other, &end)| other != node && end >= lo);
            let e = reach.entry(node).or_insert(hi);
            *e = (*e).max(hi);
            met
        });
        if shared {
            out.extend(list.iter().map(|&(.., i, q)| (i, q)));
        }
    }
    out
}

impl Rank {
    /// Skips `k` iterations of `plan`: applies the skipped requests' effect on
    /// the storage state (their offsets moved by the plan's shift per
    /// iteration; files grow to the end of the skipped writes), advances the
    /// shared pointer, then sleeps until `k·Δ` after the last observation.
    pub async fn ff_skip(&self, plan: &FfPlan, k: u64) {
        {
            let node = self.sim.platform.node_of(self.world_rank);
            let mut m = self.sim.model.borrow_mut();
            apply_skip(
                &mut self.sim.storage.borrow_mut(),
                &mut m.ptrs,
                &[(node, plan)],
                k,
            );
        }
        self.ff_advance_reads(plan, k);
        self.ff_sleep(plan, k).await;
    }

    /// [`Rank::ff_skip`] for ranks in step, which all skip the same `k` at
    /// the same instant (round `key` of the communicator): the last to come
    /// applies every rank's skipped requests, iteration by iteration where
    /// ranks of several nodes write the same extent-lock units (so that the
    /// locks and dirty bytes end as the exact run's alternation leaves them,
    /// not as one rank's whole stretch after another's would).
    pub async fn ff_skip_in_step(&self, key: u64, plan: &FfPlan, k: u64) {
        {
            let n = self.size();
            let mut m = self.sim.model.borrow_mut();
            let node = m.platform.node_of(self.world_rank);
            let id = (self.comm.id, key);
            let round = m.ff.skips.entry(id).or_insert_with(|| vec![None; n]);
            round[self.rank] = Some((node, plan.clone()));
            if round.iter().all(Option::is_some) {
                let round = m.ff.skips.remove(&id).expect("entered above");
                let plans: Vec<(usize, &FfPlan)> =
                    round.iter().flatten().map(|(node, p)| (*node, p)).collect();
                apply_skip(&mut self.sim.storage.borrow_mut(), &mut m.ptrs, &plans, k);
            }
        }
        self.ff_advance_reads(plan, k);
        self.ff_sleep(plan, k).await;
    }

    /// [`Rank::ff_skip`] for a [local](FfPlan::local) plan, without the other
    /// ranks: the skipped iterations' reads change no state but this rank's
    /// read-ahead streams. Their flows over the node's shared resources (CPU
    /// work on a core it shares, page-cache copies over the memory bus) run
    /// as `k` iterations' worth in one flow per path, one after another as
    /// the iterations ran them, taking their max–min fair share; then the rank
    /// sleeps for the rest of `k·Δ` (the window's time outside those flows).
    /// So the node's other ranks see the load the skipped iterations would
    /// have put there, and the skip takes `k·Δ` under the window's contention
    /// and follows contention that changes during it as the iterations would
    /// have (work-conserving: a fixed `k·Δ` put a 2-rank run's segmented
    /// reads 16 % off `--exact` when the other rank's read-ahead fetches
    /// freed the memory bus).
    pub async fn ff_skip_alone(&self, plan: &FfPlan, k: u64) {
        self.ff_advance_reads(plan, k);
        for (path, units) in &plan.load {
            self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Delay;
            node_flow(&self.sim, self.world_rank, path.clone(), k as f64 * units).await;
            self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Running;
        }
        self.sleep(k as f64 * (plan.delta - plan.busy).max(0.0))
            .await;
    }

    /// This rank's read-ahead streams go on after the `k` skipped iterations of `plan`.
    pub(crate) fn ff_advance_reads(&self, plan: &FfPlan, k: u64) {
        let mut storage = self.sim.storage.borrow_mut();
        for r in plan.reqs.iter().filter(|r| !r.write) {
            let next = r.off + k * plan.shift + r.len;
            storage.advance_stream(self.world_rank, r.file, next);
        }
    }

    pub(crate) async fn ff_sleep(&self, plan: &FfPlan, k: u64) {
        let until = plan.end + k as f64 * plan.delta;
        if until > self.now() {
            self.until(until, Wait::Delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ff::FfReq;

    fn read_plan(off: u64, len: u64, shift: u64) -> FfPlan {
        FfPlan {
            max_skip: 10,
            min_skip: 0,
            delta: 1.0,
            end: 0.0,
            reqs: vec![FfReq {
                file: 0,
                write: false,
                off,
                len,
                class: crate::ff::CLASS_NODE_HIT,
                placed: None,
            }],
            shift,
            pointer: None,
            load: Vec::new(),
            busy: 0.0,
            inserted: 0.0,
            written_back: None,
        }
    }

    #[test]
    fn side_by_side_reads_of_a_node_apply_as_one_block() {
        let (a, b, c) = (
            read_plan(0, 32, 128),
            read_plan(32, 32, 128),
            read_plan(64, 32, 128),
        );
        let alone = read_plan(96, 32, 128);
        // ranks 0-2 on node 0 read [0, 96) of every 128 bytes between them
        // (in any order); rank 3, on node 1, reads the rest alone
        let t = tiled_reads(&[(0, &a), (0, &c), (0, &b), (1, &alone)]);
        assert_eq!(t.blocks, vec![(0, 0, (0, 96, 128))]);
        assert_eq!(t.members, BTreeSet::from([(0, 0), (1, 0), (2, 0)]));
        // a gap between two ranks' ranges: each stays a stream of its own
        let gap = read_plan(40, 32, 128);
        let t = tiled_reads(&[(0, &a), (0, &gap)]);
        assert!(t.blocks.is_empty() && t.members.is_empty());
        // writes are left to the lock-aware streams
        let mut w = read_plan(32, 32, 128);
        w.reqs[0].write = true;
        assert!(tiled_reads(&[(0, &a), (0, &w)]).blocks.is_empty());
    }
}
