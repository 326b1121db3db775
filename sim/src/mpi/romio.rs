//! ROMIO's methods executed: independent access (contiguous, data sieving
//! under byte-range locks) and two-phase collective buffering, with the plan
//! of a call kept for later calls whose extents are moved by one distance.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use piotwin_types::{Access, View};

use crate::File;
use crate::Rank;
use crate::engine::Signal;
use crate::mpi::Sim;
use crate::mpi::Wait;
use crate::mpi::comm::Contrib;
use crate::mpi::comm::Kind;
use crate::mpi::delay;
use crate::mpi::fsio::fs_io;
use crate::mpi::fsio::readable;
use crate::mpi::fsio::view_extents;
use crate::mpi::mpiio::etype_size;
use crate::mpi::mpiio::is_byte_view;
use crate::romio::hints::Effective;
use crate::romio::sieving::{self, Method};
use crate::romio::two_phase::{self, TwoPhase};
/// A two-phase plan kept for later calls (see [`Model::plans`]).
pub(crate) struct PlanMemo {
    pub(crate) comm: u32,
    pub(crate) inode: usize,
    pub(crate) access: Access,
    /// The hints it was planned with (kept, so the pointer stays unique).
    pub(crate) hints: Rc<Effective>,
    pub(crate) accesses: Vec<Option<(View, u64, u64)>>,
    pub(crate) plan: Option<TwoPhase>,
}

/// Plans kept in [`Model::plans`]: enough for calls whose distance is a
/// multiple of the file-domain alignment only every few calls (b_eff_io's
/// type 0 with l = 32776 B at 1024 ranks: every 4).
pub(crate) const PLAN_MEMOS: usize = 8;

impl Rank {
    /// One collective data access (`MPI_File_{read,write}_at_all`, and the data
    /// part of the ordered calls) as ROMIO does it: every rank's offsets are
    /// gathered; ROMIO's rule picks two-phase collective buffering or
    /// independent I/O; two-phase goes round by round: an all-to-all of sizes,
    /// the exchange between ranks and aggregators (flows over the network), the
    /// aggregators' requests. How the call synchronises: with
    /// `mpiio.offsets_steps` as ROMIO does (`ad_write_coll.c`,
    /// `ad_read_coll.c`): the offsets' exchange takes that many message steps;
    /// a call the interleave test sends down the independent path, and a
    /// two-phase read, end with the rank's own part; a two-phase write ends
    /// with the error codes' collective, so that no rank's independent write
    /// overtakes its read-modify-write. Without it, the generic cost: every
    /// call ends with a barrier.
    pub(crate) async fn collective_io(
        &self,
        file: &File,
        access: Access,
        off: u64,
        len: u64,
        placed: Option<u64>,
    ) -> u64 {
        self.call_cost(|c| c.collective_call).await;
        let n = file.comm.members.len();
        let call = file.cseq.get();
        file.cseq.set(call + 1);
        let key = (file.comm.id, call);
        {
            let mut m = self.sim.model.borrow_mut();
            let c = m.coll.entry(key).or_insert_with(|| {
                Rc::new(CollIo {
                    accesses: RefCell::new(vec![None; n]),
                    fetched: Cell::new(0),
                    plan: OnceCell::new(),
                    inbox: RefCell::new(BTreeMap::new()),
                })
            });
            c.accesses.borrow_mut()[file.rank] = Some((file.view.clone(), off, len));
        }
        self.on_file(file, Contrib::None, Kind::Offsets).await;
        let io = {
            let mut m = self.sim.model.borrow_mut();
            let io = m
                .coll
                .get(&key)
                .expect("deposited before the rendezvous")
                .clone();
            io.fetched.set(io.fetched.get() + 1);
            if io.fetched.get() == n {
                m.coll.remove(&key);
            }
            io
        };
        let plan = io
            .plan
            .get_or_init(|| planned(&self.sim, file, access, io.accesses.take()));
        let moved = match plan {
            None => self.independent(file, access, off, len, placed).await,
            Some(tp) => {
                self.two_phase(file, &io, tp, access).await;
                match access {
                    Access::Write => len,
                    Access::Read => {
                        let s = self.sim.storage.borrow();
                        // the file domains span every rank's data
                        let end = tp.domains.iter().flatten().map(|d| d.1).max();
                        if end.is_some_and(|e| e <= s.size(file.inode)) {
                            len
                        } else {
                            readable(&s, file.inode, &file.view, off, len)
                        }
                    }
                }
            }
        };
        let romio_sync = self.sim.model.borrow().offsets_steps.is_some();
        if !romio_sync || (plan.is_some() && access == Access::Write) {
            self.on_file(file, Contrib::None, Kind::Barrier).await;
        }
        moved
    }

    /// This rank's part of a two-phase schedule.
    pub(crate) async fn two_phase(&self, file: &File, io: &CollIo, tp: &TwoPhase, access: Access) {
        let me = file.rank;
        let my_agg = tp.aggregators.iter().position(|&a| a == me);
        for m in 0..tp.rounds {
            // The all-to-all of sizes that opens every round.
            self.on_file(file, Contrib::None, Kind::Sizes).await;
            let moves = &tp.moves[m];
            let lo = moves.partition_point(|x| x.0 < me);
            let hi = moves.partition_point(|x| x.0 <= me);
            let window = my_agg.and_then(|a| tp.windows[a].get(m).copied().filter(|w| w.data > 0));
            match access {
                Access::Write => {
                    let sent: Vec<Signal> = moves[lo..hi]
                        .iter()
                        .map(|&(_, a, bytes)| {
                            self.message(io, m, file, tp.aggregators[a], a, bytes, access)
                        })
                        .collect();
                    if let (Some(a), Some(w)) = (my_agg, window) {
                        io.receive(self, m, a, tp.to_aggregator(m, a).count()).await;
                        if w.has_hole() {
                            fs_io(
                                &self.sim,
                                self.world_rank,
                                file.inode,
                                Access::Read,
                                &[(w.offset, w.len)],
                                None,
                            )
                            .await;
                        }
                        fs_io(
                            &self.sim,
                            self.world_rank,
                            file.inode,
                            Access::Write,
                            &[(w.offset, w.len)],
                            None,
                        )
                        .await;
                    }
                    for s in &sent {
                        self.wait(s, Wait::Io).await;
                    }
                }
                Access::Read => {
                    if let (Some(a), Some(w)) = (my_agg, window) {
                        fs_io(
                            &self.sim,
                            self.world_rank,
                            file.inode,
                            Access::Read,
                            &[(w.offset, w.len)],
                            None,
                        )
                        .await;
                        let n_agg = tp.aggregators.len();
                        let sent: Vec<Signal> = tp
                            .to_aggregator(m, a)
                            .map(|(r, bytes)| {
                                self.message(io, m, file, r, n_agg + r, bytes, access)
                            })
                            .collect();
                        for s in &sent {
                            self.wait(s, Wait::Io).await;
                        }
                    }
                    if hi > lo {
                        io.receive(self, m, tp.aggregators.len() + me, hi - lo)
                            .await;
                    }
                }
            }
        }
    }

    /// Sends `bytes` to rank `to` of the file's communicator in round `m` of a
    /// two-phase schedule, into inbox `target` (aggregator index for writes,
    /// aggregator count + rank for reads); returns the send's completion.
    pub(crate) fn message(
        &self,
        io: &CollIo,
        m: usize,
        file: &File,
        to: usize,
        target: usize,
        bytes: u64,
        access: Access,
    ) -> Signal {
        let s = {
            let mm = self.sim.model.borrow();
            let (lat, path) = mm.platform.exchange(
                self.world_rank,
                file.comm.members[to],
                access,
                &file.comm.wakes,
                bytes,
            );
            self.sim.engine.borrow_mut().send(lat, path, bytes as f64)
        };
        io.post(m, target, s.clone());
        s
    }
}

/// The shared state of one collective call: what each rank asked for, the plan
/// (made by the first rank past the rendezvous), and the inboxes of the exchange.
pub(crate) struct CollIo {
    pub(crate) accesses: RefCell<Vec<Option<(View, u64, u64)>>>,
    pub(crate) fetched: Cell<usize>,
    pub(crate) plan: OnceCell<Option<TwoPhase>>,
    /// (round, target) → messages posted to it and a signal for the next one.
    pub(crate) inbox: RefCell<BTreeMap<(usize, usize), (Vec<Signal>, Option<Signal>)>>,
}

impl CollIo {
    /// Posts a message (its completion signal) to inbox `(m, target)`.
    pub(crate) fn post(&self, m: usize, target: usize, s: Signal) {
        let mut ib = self.inbox.borrow_mut();
        let e = ib.entry((m, target)).or_default();
        e.0.push(s);
        if let Some(k) = e.1.take() {
            k.fire();
        }
    }

    /// Waits until `expected` messages were posted to `(m, target)` and all arrived.
    pub(crate) async fn receive(&self, rank: &Rank, m: usize, target: usize, expected: usize) {
        loop {
            let next = {
                let mut ib = self.inbox.borrow_mut();
                let e = ib.entry((m, target)).or_default();
                if e.0.len() >= expected {
                    None
                } else {
                    let k = Signal::new();
                    e.1 = Some(k.clone());
                    Some(k)
                }
            };
            match next {
                Some(k) => rank.wait(&k, Wait::Io).await,
                None => break,
            }
        }
        let got = self
            .inbox
            .borrow_mut()
            .remove(&(m, target))
            .map(|e| e.0)
            .unwrap_or_default();
        for s in &got {
            rank.wait(s, Wait::Io).await;
        }
    }
}

/// The two-phase plan of a collective call on `file` whose ranks access
/// `accesses` (view, offset, length). ROMIO plans every call anew; the plan
/// depends on the extents only through their differences and the file
/// domains' alignment, so a call whose extents all lie one distance `d` past
/// a kept call's, `d` a multiple of the alignment, takes that plan moved by
/// `d` (the same plan as planning anew: see the two-phase tests). A repeated
/// access of 1 Ki extents on each of 1024 ranks is planned once, not per call.
pub(crate) fn planned(
    sim: &Sim,
    file: &File,
    access: Access,
    accesses: Vec<Option<(View, u64, u64)>>,
) -> Option<TwoPhase> {
    let unit = file.hints.striping_unit;
    let m = sim.model.borrow();
    let kept = m.plans.iter().find_map(|k| {
        let same = k.comm == file.comm.id
            && k.inode == file.inode
            && k.access == access
            && Rc::ptr_eq(&k.hints, &file.hints);
        if !same {
            return None;
        }
        let d = common_shift(&k.accesses, &accesses, unit)?;
        Some(k.plan.as_ref().map(|p| p.shifted(d)))
    });
    if let Some(plan) = kept {
        return plan;
    }
    drop(m);
    let source = |r: usize| -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
        let (v, o, l) = accesses[r].as_ref().expect("every rank deposited");
        Box::new(view_extents(v, *o, *l))
    };
    let plan = two_phase::plan(access, &file.hints, accesses.len(), &source);
    let mut m = sim.model.borrow_mut();
    m.plans.push_front(PlanMemo {
        comm: file.comm.id,
        inode: file.inode,
        access,
        hints: Rc::clone(&file.hints),
        accesses,
        plan: plan.clone(),
    });
    m.plans.truncate(PLAN_MEMOS);
    plan
}

/// The distance in bytes by which every rank's extents of `new` lie past
/// those of `old` (the same views and lengths, offsets further on by whole
/// filetypes), where it is one distance for all and a multiple of `unit`
/// (0: any).
pub(crate) fn common_shift(
    old: &[Option<(View, u64, u64)>],
    new: &[Option<(View, u64, u64)>],
    unit: u64,
) -> Option<u64> {
    if old.len() != new.len() {
        return None;
    }
    let mut d = None;
    for (o, n) in old.iter().zip(new) {
        match (o, n) {
            (None, None) => {}
            (Some((vo, oo, lo)), Some((vn, on, ln))) if lo == ln && vo == vn => {
                if *ln == 0 {
                    continue;
                }
                let s = view_shift(vn, *oo, *on)?;
                if unit > 0 && s % unit != 0 || *d.get_or_insert(s) != s {
                    return None;
                }
            }
            _ => return None,
        }
    }
    d
}

/// How far the file extents of an access through `view` at offset `to`
/// (etypes) lie past those of the same length at `from`, where they are
/// the same extents moved (whole filetypes further on, or a byte view).
pub(crate) fn view_shift(view: &View, from: u64, to: u64) -> Option<u64> {
    let skip = to.checked_sub(from)?.checked_mul(etype_size(view))?;
    if is_byte_view(view) {
        return Some(skip);
    }
    let size = view.filetype.size();
    (size > 0 && skip.is_multiple_of(size)).then(|| skip / size * view.filetype.extent())
}

/// ROMIO's byte-range lock (`ADIOI_WRITE_LOCK`, an `fcntl` lock) on `[a, b)` of
/// `inode` for world rank `world_rank`: waits for overlapping holders, then one round
/// trip to the lock manager. Returns the signal [`unlock`] fires.
pub(crate) async fn lock(sim: &Sim, world_rank: usize, inode: usize, a: u64, b: u64) -> Signal {
    let mine = Signal::new();
    loop {
        let busy = {
            let mut m = sim.model.borrow_mut();
            let held = m.range_locks.entry(inode).or_default();
            match held.iter().find(|(x, y, _)| *x < b && a < *y) {
                Some((_, _, s)) => Some(s.clone()),
                None => {
                    held.push((a, b, mine.clone()));
                    None
                }
            }
        };
        match busy {
            Some(s) => s.wait().await,
            None => break,
        }
    }
    let rtt = {
        let m = sim.model.borrow();
        m.platform.server_rtt(m.platform.node_of(world_rank))
    };
    delay(sim, rtt).await;
    mine
}

/// Releases a lock [`lock`] took (one more round trip).
pub(crate) async fn unlock(sim: &Sim, world_rank: usize, inode: usize, held: Signal) {
    let rtt = {
        let m = sim.model.borrow();
        m.platform.server_rtt(m.platform.node_of(world_rank))
    };
    delay(sim, rtt).await;
    let mut m = sim.model.borrow_mut();
    if let Some(v) = m.range_locks.get_mut(&inode) {
        v.retain(|(_, _, s)| !s.same(&held));
        if v.is_empty() {
            m.range_locks.remove(&inode);
        }
    }
    held.fire();
}

/// An independent MPI-IO access as ROMIO's generic driver does it: one request
/// for a contiguous access; data sieving for a noncontiguous one (reads: read each
/// window; writes: lock, read, write back, unlock each window); one request per
/// extent with sieving disabled. Returns the bytes moved. `placed`: where the
/// user's buffer starts past a page boundary (direct requests copy into or out
/// of it, one extent after the other; sieving copies through ROMIO's own
/// buffer, whose placement is not modelled).
pub(crate) async fn independent_io(
    sim: &Sim,
    world_rank: usize,
    inode: usize,
    view: &View,
    hints: &Effective,
    (access, off, len): (Access, u64, u64),
    placed: Option<u64>,
) -> u64 {
    let pieces = view_extents(view, off, len).take(2).count();
    match sieving::method(access, hints, pieces) {
        Method::Direct => {
            let mut moved = 0;
            let mut at = placed;
            for x in view_extents(view, off, len) {
                moved += fs_io(sim, world_rank, inode, access, &[x], at).await;
                at = at.map(|p| p + x.1);
            }
            moved
        }
        Method::Sieve(buffer) => {
            let end = view_extents(view, off, len)
                .map(|(o, l)| o + l)
                .max()
                .unwrap_or(0);
            let mut wins = sieving::windows(view_extents(view, off, len), buffer, end);
            while let Some((o, l)) = wins.next() {
                match access {
                    Access::Read => {
                        fs_io(sim, world_rank, inode, Access::Read, &[(o, l)], None).await;
                    }
                    Access::Write => {
                        let held = lock(sim, world_rank, inode, o, o + l).await;
                        fs_io(sim, world_rank, inode, Access::Read, &[(o, l)], None).await;
                        fs_io(sim, world_rank, inode, Access::Write, &[(o, l)], None).await;
                        unlock(sim, world_rank, inode, held).await;
                    }
                }
            }
            match access {
                Access::Write => len,
                Access::Read => readable(&sim.storage.borrow(), inode, view, off, len),
            }
        }
    }
}
