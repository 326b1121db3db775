//! Simulated ranks: MPI communication and MPI-IO semantics over the platform.
//!
//! A [`Twin`] is one simulation; [`Rank`] is one rank's handle on a communicator,
//! with async methods a back end awaits. Models (simple for now; the ROMIO
//! two-phase and data-sieving models replace the collective-I/O part later):
//!
//! * collectives by the standard cost models of Thakur, Rabenseifner & Gropp,
//!   *Optimization of Collective Communication Operations in MPICH*, IJHPCA 19(1),
//!   2005: barrier, bcast, allreduce ⌈log2 p⌉·(α + n·β) (binomial tree, recursive
//!   doubling); allgather ⌈log2 p⌉·α + (p−1)·n·β. The last rank to arrive computes
//!   the result and schedules everyone's completion;
//! * point-to-point as a latency plus a flow over the network (or memory bus),
//!   matched FIFO per (communicator, source, destination) as MPI's non-overtaking rule says;
//! * collective data access (`*_at_all`): all ranks synchronise, each rank's
//!   extents go to the server as requests, all synchronise again;
//! * shared file pointer: `write_shared` takes the pointer under a lock (one
//!   update at a time, `mpiio.shared_pointer` each); `write_ordered` gives offsets
//!   by rank order (prefix sum) after one update;
//! * metadata (open, create, close, delete) queue at the server one at a time;
//! * software costs on the rank's core (CPU work, shared by processor sharing on
//!   an oversubscribed node, see [`crate::platform`]): `mpiio.independent_call`
//!   per independent MPI-IO data call, `mpiio.collective_call` per collective
//!   one (on top of its modelled messages), `mpiio.open`/`close` per rank of an
//!   MPI-IO open and close, and `nodes.syscall` per file-system request (each
//!   `pread`/`pwrite`, whether the program's POSIX call or one ROMIO issues).
//!   They are what small requests on one node cost (IOR at 1-64 KiB is bound
//!   by them, not by the devices); all default to 0. Being part of an
//!   iteration's virtual time, they are in the fast-forward's Δ.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use piotwin_types::{
    Access, Api, Coordination, Datatype, Hints, IoError, KernelKind, Op, OpenMode, Position,
    ReduceOp, View,
};
use rustc_hash::FxHashMap;

use crate::SimError;
use crate::engine::{self, Engine, Executor, Signal, Task};
use crate::flow::{FlowNet, ResourceId};
use crate::platform::Platform;
use crate::romio::FsRequest;
use crate::romio::hints::Effective;
use crate::romio::sieving::{self, Method};
use crate::romio::two_phase::{self, TwoPhase};
use crate::scenario::{FileSystem, Metadata, MpiIo, Scenario};
use crate::storage::{self, Levels, Storage};

/// Counters of a finished run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunStats {
    /// Events handled (delays, completions, flow starts and ends, stale ones included).
    pub events: u64,
    /// Virtual time when the last rank finished, in seconds.
    pub end_time: f64,
}

struct Comm {
    id: u32,
    /// World ranks, indexed by rank in this communicator.
    members: Vec<usize>,
    /// Message latency (s) and bandwidth (B/s) for the collective cost models.
    lat: f64,
    bw: f64,
}

#[derive(Clone, Copy)]
enum Contrib {
    None,
    F64(f64),
    U64(u64),
    Split(Option<usize>, usize),
    /// A fast-forward agreement: (most iterations, fewest iterations) to skip.
    Skip(u64, u64),
}

enum Kind<'k> {
    Barrier,
    Bcast(usize),
    Allreduce(ReduceOp),
    Allgather,
    Split,
    Ordered(usize),
    SetView(usize),
    /// An all-gather of two offsets per rank (ROMIO's start/end offsets, the
    /// all-to-all of sizes opening each two-phase round).
    Offsets,
    Open(&'k str, OpenMode),
    Close,
    /// The fast-forward's agreement on a skip: the minimum of every rank's
    /// value, at no cost in virtual time (it is not part of the modelled program).
    Agree,
    /// A barrier, then a broadcast of the value the root's function (given
    /// by the root only, kept as [`Rendezvous::decide`]) gives at the time it
    /// leaves the barrier.
    BarrierBcast(Option<Box<dyn FnOnce(f64) -> u64>>),
}

impl Kind<'_> {
    fn name(&self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Bcast(_) => "bcast",
            Kind::Allreduce(_) => "allreduce",
            Kind::Allgather => "allgather",
            Kind::Split => "split",
            Kind::Ordered(_) => "ordered access",
            Kind::SetView(_) => "set_view",
            Kind::Offsets => "collective I/O",
            Kind::Open(..) => "open",
            Kind::Close => "close",
            Kind::Agree => "fast-forward agreement",
            Kind::BarrierBcast(_) => "barrier and bcast",
        }
    }
}

enum CollOut {
    Unit,
    F64(f64),
    U64(u64),
    F64s(Vec<f64>),
    Split(Vec<Option<(Rc<Comm>, usize)>>),
    Offsets(Vec<u64>),
    /// (inode, shared pointer, the file's own duplicate of the communicator).
    Opened(Result<(usize, usize, Rc<Comm>), IoError>),
}

struct Rendezvous {
    what: &'static str,
    arrived: usize,
    contribs: Vec<Contrib>,
    signals: Vec<Option<Signal>>,
    out: Rc<OnceCell<CollOut>>,
    /// The root's value of a [`Kind::BarrierBcast`] as a function of the
    /// time it leaves the barrier.
    decide: Option<Box<dyn FnOnce(f64) -> u64>>,
}

#[derive(Default)]
struct Mailbox {
    sends: VecDeque<(Signal, u64)>,
    recvs: VecDeque<Signal>,
}

/// What a blocked rank waits for (reported on deadlock).
#[derive(Clone, Copy)]
enum Wait {
    Running,
    Collective {
        what: &'static str,
        comm: u32,
        seq: u64,
        size: usize,
    },
    Message {
        send_to: usize,
        recv_from: usize,
    },
    Io,
    Delay,
}

struct FileMeta {
    size: u64,
}

struct SharedPtr {
    /// Position in etypes.
    pos: u64,
    /// Virtual time the pointer's lock is free again.
    free_at: f64,
}

/// One skip of ranks in step ([`Rank::ff_skip_in_step`]): each rank's node
/// and plan, `None` until it came.
type SkipRound = Vec<Option<(usize, FfPlan)>>;

/// A write stream of a skip, in extent-lock units: (first unit, last unit,
/// node, plan, request).
type WriteSpan = (u64, u64, usize, usize, usize);

/// One round of [`Rank::ff_offer`].
#[derive(Default)]
struct Offers {
    /// Each rank's offer, `None` until it offered.
    offers: Vec<Option<FfOffer>>,
    /// How many ranks have offered.
    offered: usize,
    /// The outcome, once every rank has offered.
    outcome: Option<FfOffer>,
    /// How many ranks have read the outcome.
    read: usize,
}

pub(crate) struct Model {
    pub(crate) platform: Platform,
    pub(crate) storage: Storage,
    md: Metadata,
    shared_pointer_cost: f64,
    /// MPI-IO software costs per call (CPU seconds on the calling rank).
    mpiio: MpiIo,
    files: Vec<FileMeta>,
    by_path: BTreeMap<String, usize>,
    md_free_at: f64,
    next_comm: u32,
    rendezvous: FxHashMap<(u32, u64), Rendezvous>,
    mail: FxHashMap<(u32, usize, usize), Mailbox>,
    ptrs: Vec<SharedPtr>,
    waiting: Vec<Wait>,
    fs: FileSystem,
    /// Collective I/O calls in progress, by (file communicator, call number).
    coll: FxHashMap<(u32, u64), Rc<CollIo>>,
    /// Hints resolved at a collective open, by the file's communicator: (given,
    /// in effect, ranks that have not fetched them yet).
    opened_hints: BTreeMap<u32, (Hints, Rc<Effective>, usize)>,
    /// ROMIO byte-range locks held, by file: `[start, end)` and the signal fired on release.
    range_locks: BTreeMap<usize, Vec<(u64, u64, Signal)>>,
    /// File-system requests made by the MPI-IO layer, when recording.
    trace: Option<Vec<FsRequest>>,
    /// Per world rank: its file-system requests since the fast-forward last
    /// looked, while it observes a repetition ([`Rank::ff_start`]).
    ff_log: Vec<Option<Vec<FfReq>>>,
    /// Per world rank, the requests and the shared pointer (and position) of
    /// its last observation ([`Rank::ff_observe`]): what the next one's are
    /// compared with, and the requests a plan repeats. Kept here, where the
    /// next observation finds them without reaching back into the window (a
    /// cache miss per rank and iteration at 1024 ranks), and the requests'
    /// buffer reused as the next log.
    ff_last: Vec<(Vec<FfReq>, Option<PointerAt>)>,
    /// Per world rank: its flows over its node's shared resources (CPU work
    /// on a core it shares, page-cache reads over the memory bus) summed from
    /// the start, by path: units moved; for [`Rank::ff_skip_alone`].
    ff_work: Vec<Vec<(Path, f64)>>,
    /// Per world rank: virtual time it spent waiting for those flows, summed.
    ff_busy: Vec<f64>,
    /// Offers of ranks that skip on their own ([`Rank::ff_offer`]), by
    /// (communicator, key): every rank's offer, and how many have read the result.
    ff_offers: FxHashMap<(u32, u64), Offers>,
    /// Skips of ranks in step ([`Rank::ff_skip_in_step`]), by (communicator,
    /// key): each rank's node and plan, applied together once all have come.
    ff_skips: FxHashMap<(u32, u64), SkipRound>,
    /// The last collective calls' two-phase plans, newest first (at most
    /// [`PLAN_MEMOS`]): a call whose extents are an earlier call's moved by
    /// one distance takes that plan moved ([`planned`]).
    plans: VecDeque<PlanMemo>,
}

/// Strided reads of a skip that a node's ranks make side by side: see [`ff_tiled_reads`].
#[derive(Default)]
struct TiledReads {
    /// (node, file, (offset, length, shift)) of each block's stream.
    blocks: Vec<(usize, usize, (u64, u64, u64))>,
    /// The (plan, request) pairs the blocks stand for.
    members: BTreeSet<(usize, usize)>,
}

/// The reads of `plans` (strided: shift > length) that the ranks of one node
/// make into adjacent ranges of one file with one shift, so that together
/// they read one block per iteration: ranks reading in turn through a
/// shared pointer (b_eff_io's type 1: 32 ranks × 32 KiB of every 32 MiB).
/// Applying each block's `k` pieces costs a node what each of its ranks'
/// `k` pieces cost (1024 ranks × 2000 iterations of 32 KiB reads took 4 s
/// to apply rank by rank); the cache ends holding the same ranges, their
/// LRU order by iteration instead of by rank.
fn ff_tiled_reads(plans: &[(usize, &FfPlan)]) -> TiledReads {
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

/// A two-phase plan kept for later calls (see [`Model::plans`]).
struct PlanMemo {
    comm: u32,
    inode: usize,
    access: Access,
    /// The hints it was planned with (kept, so the pointer stays unique).
    hints: Rc<Effective>,
    accesses: Vec<Option<(View, u64, u64)>>,
    plan: Option<TwoPhase>,
}

/// Plans kept in [`Model::plans`]: enough for calls whose distance is a
/// multiple of the file-domain alignment only every few calls (b_eff_io's
/// type 0 with l = 32776 B at 1024 ranks: every 4).
const PLAN_MEMOS: usize = 8;

impl Model {
    /// The size of file `inode` in bytes.
    pub(crate) fn file_size(&self, inode: usize) -> u64 {
        self.files[inode].size
    }

    /// The fast-forward's state-only effect of skipping `k` iterations of
    /// `plans` (each with its rank's node; see [`Rank::ff_skip`]). Writes that
    /// ranks of several nodes make into the same extent-lock units are applied
    /// iteration by iteration, ranks in order; the others stream by stream,
    /// the strided reads of a node's ranks that tile one block per iteration
    /// (ordered reads through a shared pointer) as that block's stream.
    fn ff_apply(&mut self, plans: &[(usize, &FfPlan)], k: u64) {
        let contended = self.ff_contended(plans, k);
        let tiled = ff_tiled_reads(plans);
        for &(node, file, block) in &tiled.blocks {
            self.storage
                .apply_strided(node, Access::Read, file, block, k);
        }
        for (i, &(node, plan)) in plans.iter().enumerate() {
            for (q, r) in plan.reqs.iter().enumerate() {
                let access = if r.write { Access::Write } else { Access::Read };
                if !contended.contains(&(i, q)) && !tiled.members.contains(&(i, q)) {
                    self.storage
                        .apply_strided(node, access, r.file, (r.off, r.len, plan.shift), k);
                }
                if r.write {
                    let end = r.off + k * plan.shift + r.len;
                    let f = &mut self.files[r.file];
                    f.size = f.size.max(end);
                }
            }
            if let Some((p, step)) = plan.pointer
                && p.lead
            {
                self.ptrs[p.ptr].pos += k * step;
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
            .map(|(&f, (lo, hi, writers))| (f, self.storage.take_idle(f, *lo, *hi, writers)))
            .collect();
        for j in 1..=k {
            for &(i, q) in &contended {
                let (node, plan) = plans[i];
                let r = plan.reqs[q];
                let a = r.off + j * plan.shift;
                self.storage
                    .apply(node, Access::Write, r.file, a, a + r.len);
            }
        }
        for (f, nodes) in idle {
            self.storage.restore_idle(f, nodes);
        }
        for &(node, plan) in plans {
            if let Some(share) = plan.written_back {
                let bytes: u64 = plan.reqs.iter().filter(|r| r.write).map(|r| r.len).sum();
                let until = plan.end + k as f64 * plan.delta;
                let out = (share * (k * bytes) as f64) as u64;
                self.storage.write_back_at_once(node, out, until);
            }
        }
    }

    /// The (plan, request) pairs of `plans` writing files where the skipped
    /// writes of ranks of different nodes share extent-lock units.
    fn ff_contended(&self, plans: &[(usize, &FfPlan)], k: u64) -> BTreeSet<(usize, usize)> {
        let mut out = BTreeSet::new();
        let Some(g) = self.storage.lock_granularity() else {
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

    fn new_comm(&mut self, members: Vec<usize>) -> Rc<Comm> {
        let (lat, bw) = self.platform.message_params(&members);
        self.next_comm += 1;
        Rc::new(Comm {
            id: self.next_comm - 1,
            members,
            lat,
            bw,
        })
    }

    /// A metadata operation of `cost` s issued from `node` at `now`: queued at the
    /// server behind earlier ones; returns when its reply is back.
    fn md_op(&mut self, now: f64, node: usize, cost: f64) -> f64 {
        let half = self.platform.server_rtt(node) / 2.0;
        let start = (now + half).max(self.md_free_at);
        self.md_free_at = start + cost;
        self.md_free_at + half
    }
}

/// The engine and the model of one simulation; tasks reach both through it.
pub(crate) struct Core {
    pub(crate) engine: RefCell<Engine>,
    pub(crate) model: RefCell<Model>,
    /// Tasks started by tasks (nonblocking I/O), picked up by the executor.
    pub(crate) spawned: RefCell<Vec<Task<'static>>>,
}

/// One simulation of a scenario with a fixed number of ranks.
pub struct Twin {
    core: Rc<Core>,
    world: Rc<Comm>,
}

/// A rank's handle on a communicator (`MPI_COMM_WORLD` from [`Twin::rank`], others from [`Rank::split`]).
pub struct Rank {
    core: Rc<Core>,
    world: usize,
    comm: Rc<Comm>,
    rank: usize,
    seq: Cell<u64>,
}

/// An open file of one rank.
pub struct File {
    inode: usize,
    path: String,
    api: Api,
    mode: OpenMode,
    comm: Rc<Comm>,
    rank: usize,
    seq: Cell<u64>,
    view: View,
    ptr: usize,
    /// The MPI-IO hints in effect.
    hints: Rc<Effective>,
    /// The hints given at open and by later `set_info` calls.
    given: Hints,
    /// Collective data accesses made so far (numbers the calls).
    cseq: Cell<u64>,
}

/// A started nonblocking access, completed by [`Rank::wait_all`].
pub struct Pending {
    started: Option<Signal>,
    access: Access,
    deferred: Option<(u64, u64)>,
    bytes: u64,
}

fn ceil_log2(n: usize) -> f64 {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as f64
}

fn is_byte_view(v: &View) -> bool {
    v.etype == Datatype::Byte && v.filetype == Datatype::Byte
}

/// Size of the view's etype in bytes (the default byte view needs no flattening).
fn etype_size(v: &View) -> u64 {
    if v.etype == Datatype::Byte {
        1
    } else {
        v.etype.size().max(1)
    }
}

impl Twin {
    /// A simulation of `ranks` ranks on `scenario`; `seed` seeds the model's one
    /// RNG (SSD latency jitter, drawn in event order), so the same seed replays the run.
    pub fn new(scenario: &Scenario, ranks: usize, seed: u64) -> Result<Twin, SimError> {
        if ranks == 0 {
            return Err(SimError::Setup(
                "a simulation needs at least one rank".into(),
            ));
        }
        let mut flows = FlowNet::new();
        let mut platform = Platform::build(scenario, ranks, &mut flows).map_err(SimError::Setup)?;
        let storage = Storage::build(scenario, &platform, seed, &mut flows);
        platform.add_cpus(&mut flows);
        let mut model = Model {
            platform,
            storage,
            md: scenario.metadata.clone(),
            shared_pointer_cost: scenario.mpiio.shared_pointer,
            mpiio: scenario.mpiio.clone(),
            files: Vec::new(),
            by_path: BTreeMap::new(),
            md_free_at: 0.0,
            next_comm: 0,
            rendezvous: FxHashMap::default(),
            mail: FxHashMap::default(),
            ptrs: Vec::new(),
            waiting: vec![Wait::Running; ranks],
            fs: scenario.filesystem.clone(),
            coll: FxHashMap::default(),
            opened_hints: BTreeMap::new(),
            range_locks: BTreeMap::new(),
            trace: None,
            ff_log: vec![None; ranks],
            ff_last: vec![(Vec::new(), None); ranks],
            ff_work: vec![Vec::new(); ranks],
            ff_busy: vec![0.0; ranks],
            ff_offers: FxHashMap::default(),
            ff_skips: FxHashMap::default(),
            plans: VecDeque::new(),
        };
        let world = model.new_comm((0..ranks).collect());
        let core = Rc::new(Core {
            engine: RefCell::new(Engine::new(flows)),
            model: RefCell::new(model),
            spawned: RefCell::new(Vec::new()),
        });
        Ok(Twin { core, world })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.world.members.len()
    }

    /// Records every file-system request the MPI-IO layer makes from now on
    /// (see [`Twin::trace`]); for tests and request-stream studies.
    pub fn record_requests(&self) {
        self.core
            .model
            .borrow_mut()
            .trace
            .get_or_insert_with(Vec::new);
    }

    /// The requests recorded since [`Twin::record_requests`], in the order they
    /// were issued (virtual time, then the order ranks ran).
    pub fn trace(&self) -> Vec<FsRequest> {
        self.core.model.borrow().trace.clone().unwrap_or_default()
    }

    /// Rank `rank`'s handle on the world communicator.
    pub fn rank(&self, rank: usize) -> Rank {
        assert!(rank < self.size(), "rank {rank} out of range");
        Rank {
            core: self.core.clone(),
            world: rank,
            comm: self.world.clone(),
            rank,
            seq: Cell::new(0),
        }
    }

    /// Runs one task per rank (index = world rank) until all finish.
    /// Errors with [`SimError::Deadlock`] when ranks wait and nothing can happen.
    pub fn run<'a>(
        &self,
        tasks: Vec<Pin<Box<dyn Future<Output = ()> + 'a>>>,
    ) -> Result<RunStats, SimError> {
        assert_eq!(tasks.len(), self.size(), "one task per rank");
        let mut exec = Executor::new(tasks);
        let core = &*self.core;
        let (nodes, servers) = {
            let m = core.model.borrow();
            (m.storage.cached_nodes(), m.storage.write_back_servers())
        };
        for n in nodes {
            exec.add(Box::pin(storage::node_flusher(core, n)), true);
        }
        for s in servers {
            exec.add(Box::pin(storage::server_flusher(core, s)), true);
        }
        match engine::run(&core.engine, &mut exec, &core.spawned) {
            Ok(()) => {
                let e = self.core.engine.borrow();
                Ok(RunStats {
                    events: e.events,
                    end_time: e.now(),
                })
            }
            Err(blocked) => {
                Err(self.deadlock(blocked.into_iter().filter(|&r| r < self.size()).collect()))
            }
        }
    }

    fn deadlock(&self, blocked_ranks: Vec<usize>) -> SimError {
        let m = self.core.model.borrow();
        let waiting_on = blocked_ranks
            .iter()
            .map(|&r| match m.waiting[r] {
                Wait::Collective { what, comm, seq, size } => {
                    let arrived = m.rendezvous.get(&(comm, seq)).map_or(0, |z| z.arrived);
                    format!("rank {r}: {what} #{seq} on communicator {comm}, {arrived} of {size} ranks arrived")
                }
                Wait::Message { send_to, recv_from } => {
                    format!("rank {r}: sendrecv to world rank {send_to} / from world rank {recv_from}, no matching partner")
                }
                Wait::Io => format!("rank {r}: an I/O request"),
                Wait::Delay => format!("rank {r}: a delay"),
                Wait::Running => format!("rank {r}: a future outside the simulation (never woken)"),
            })
            .collect();
        SimError::Deadlock {
            blocked_ranks,
            waiting_on,
        }
    }
}

impl Rank {
    /// This rank's number in its communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Size of the communicator.
    pub fn size(&self) -> usize {
        self.comm.members.len()
    }

    /// This rank's number in the world.
    pub fn world_rank(&self) -> usize {
        self.world
    }

    /// Virtual time in seconds.
    pub fn now(&self) -> f64 {
        self.core.engine.borrow().now()
    }

    async fn wait(&self, s: &Signal, why: Wait) {
        if s.is_fired() {
            return;
        }
        self.core.model.borrow_mut().waiting[self.world] = why;
        s.wait().await;
        self.core.model.borrow_mut().waiting[self.world] = Wait::Running;
    }

    async fn until(&self, at: f64, why: Wait) {
        let s = Signal::new();
        self.core.engine.borrow_mut().fire_at(at, s.clone());
        self.wait(&s, why).await;
    }

    /// Waits `seconds` of virtual time.
    pub async fn sleep(&self, seconds: f64) {
        let at = self.now() + seconds.max(0.0);
        self.until(at, Wait::Delay).await;
    }

    /// Computes `amount` of `kind` work (bytes for memcpy, flops otherwise) at the
    /// node's per-core rate for that kind (sharing the cores on an oversubscribed node).
    pub async fn compute(&self, kind: KernelKind, amount: f64) {
        let (t, shared) = {
            let m = self.core.model.borrow();
            (
                m.platform.compute_time(self.world, kind, amount),
                m.platform.cpu_path(self.world),
            )
        };
        if t == 0.0 {
            // Free work (a kind the scenario gives no rate for) takes no turn.
            return;
        }
        match shared {
            None => self.sleep(t).await,
            Some(path) => {
                self.core.model.borrow_mut().waiting[self.world] = Wait::Delay;
                node_flow(&self.core, self.world, path, t.max(0.0)).await;
                self.core.model.borrow_mut().waiting[self.world] = Wait::Running;
            }
        }
    }

    /// Charges `cost(mpiio costs)` seconds of CPU work to this rank (nothing when 0).
    async fn call_cost(&self, cost: impl Fn(&MpiIo) -> f64) {
        let t = cost(&self.core.model.borrow().mpiio);
        if t > 0.0 {
            self.core.model.borrow_mut().waiting[self.world] = Wait::Delay;
            cpu(&self.core, self.world, t).await;
            self.core.model.borrow_mut().waiting[self.world] = Wait::Running;
        }
    }

    async fn collective(
        &self,
        comm: &Rc<Comm>,
        me: usize,
        seq: &Cell<u64>,
        c: Contrib,
        mut kind: Kind<'_>,
    ) -> Rc<OnceCell<CollOut>> {
        let n = comm.members.len();
        let s = seq.get();
        seq.set(s + 1);
        let sig = Signal::new();
        let what = kind.name();
        let out;
        {
            let mut m = self.core.model.borrow_mut();
            let z = m
                .rendezvous
                .entry((comm.id, s))
                .or_insert_with(|| Rendezvous {
                    what,
                    arrived: 0,
                    contribs: vec![Contrib::None; n],
                    signals: vec![None; n],
                    out: Rc::new(OnceCell::new()),
                    decide: None,
                });
            debug_assert_eq!(z.what, what, "ranks called different collectives");
            if let Kind::BarrierBcast(decide @ Some(_)) = &mut kind {
                z.decide = decide.take();
            }
            z.contribs[me] = c;
            z.signals[me] = Some(sig.clone());
            z.arrived += 1;
            out = z.out.clone();
            if z.arrived == n {
                let z = m.rendezvous.remove(&(comm.id, s)).expect("present");
                let mut e = self.core.engine.borrow_mut();
                complete(&mut m, &mut e, comm, kind, z);
            }
        }
        self.wait(
            &sig,
            Wait::Collective {
                what,
                comm: comm.id,
                seq: s,
                size: n,
            },
        )
        .await;
        out
    }

    /// Synchronises all ranks of the communicator.
    pub async fn barrier(&self) {
        self.collective(
            &self.comm,
            self.rank,
            &self.seq,
            Contrib::None,
            Kind::Barrier,
        )
        .await;
    }

    /// A barrier, then `root`'s `decide(t)` on every rank, `t` the time
    /// `root` leaves the barrier: [`Rank::barrier`] and then
    /// [`Rank::bcast_u64`] of a value `root` works out in between, in one
    /// rendezvous with the same virtual times (every rank leaves the barrier
    /// at one instant and enters the broadcast then). A time-driven loop
    /// does this after every iteration; one rendezvous wakes every rank
    /// once instead of twice.
    pub async fn barrier_bcast_u64(
        &self,
        root: usize,
        decide: impl FnOnce(f64) -> u64 + 'static,
    ) -> u64 {
        let decide: Option<Box<dyn FnOnce(f64) -> u64>> =
            (self.rank == root).then(|| Box::new(decide) as _);
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::None,
                Kind::BarrierBcast(decide),
            )
            .await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("barrier and bcast yield a u64"),
        }
    }

    /// `root`'s value on every rank.
    pub async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::U64(value),
                Kind::Bcast(root),
            )
            .await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("bcast yields a u64"),
        }
    }

    /// The reduction of every rank's value, in rank order.
    pub async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::F64(value),
                Kind::Allreduce(op),
            )
            .await;
        match out.get() {
            Some(CollOut::F64(v)) => *v,
            _ => unreachable!("allreduce yields an f64"),
        }
    }

    /// Every rank's value, indexed by rank.
    pub async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::F64(value),
                Kind::Allgather,
            )
            .await;
        match out.get() {
            Some(CollOut::F64s(v)) => v.clone(),
            _ => unreachable!("allgather yields values"),
        }
    }

    /// `MPI_Comm_split`: ranks with the same `Some(color)` form a communicator,
    /// ordered by `key` then old rank; `None` gets no communicator.
    pub async fn split(&self, color: Option<usize>, key: usize) -> Option<Rank> {
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::Split(color, key),
                Kind::Split,
            )
            .await;
        match out.get() {
            Some(CollOut::Split(v)) => v[self.rank].as_ref().map(|(comm, r)| Rank {
                core: self.core.clone(),
                world: self.world,
                comm: comm.clone(),
                rank: *r,
                seq: Cell::new(0),
            }),
            _ => unreachable!("split yields communicators"),
        }
    }

    /// Sends `bytes` to `dest` and receives the same amount from `source`
    /// (`MPI_Sendrecv_replace`; ranks of this communicator).
    pub async fn sendrecv(&self, bytes: u64, dest: usize, source: usize) {
        let (me, to, from) = (
            self.world,
            self.comm.members[dest],
            self.comm.members[source],
        );
        let (s, r) = {
            let mut m = self.core.model.borrow_mut();
            let mut e = self.core.engine.borrow_mut();
            let s = post_message(&mut m, &mut e, self.comm.id, me, to, Some(bytes));
            let r = post_message(&mut m, &mut e, self.comm.id, from, me, None);
            (s, r)
        };
        let why = Wait::Message {
            send_to: to,
            recv_from: from,
        };
        self.wait(&s, why).await;
        self.wait(&r, why).await;
    }

    /// Opens `path`: all ranks of this communicator together when `shared`
    /// (create once, then one open per rank at the metadata server), else this rank alone.
    pub async fn open(
        &self,
        path: &str,
        mode: OpenMode,
        shared: bool,
        api: Api,
    ) -> Result<File, IoError> {
        self.open_with_hints(path, mode, shared, api, &Hints::new())
            .await
    }

    /// [`Rank::open`] with MPI-IO hints (`MPI_Info`), resolved as ROMIO does
    /// (see [`File::hints_in_effect`]); a hint value ROMIO would not take is an
    /// error naming it. Every rank of a shared open must give the same hints.
    pub async fn open_with_hints(
        &self,
        path: &str,
        mode: OpenMode,
        shared: bool,
        api: Api,
        hints: &Hints,
    ) -> Result<File, IoError> {
        let hints_given = hints;
        if api == Api::MpiIo {
            self.call_cost(|c| c.open).await;
        }
        let (rank, opened) = if shared && self.size() > 1 {
            let out = self
                .collective(
                    &self.comm,
                    self.rank,
                    &self.seq,
                    Contrib::None,
                    Kind::Open(path, mode),
                )
                .await;
            let opened = match out.get() {
                Some(CollOut::Opened(r)) => r.clone(),
                _ => unreachable!("open yields a file"),
            };
            (self.rank, opened)
        } else {
            let (done, opened) = {
                let mut m = self.core.model.borrow_mut();
                let now = self.now();
                let node = m.platform.node_of(self.world);
                let (cost, opened) = open_inode(&mut m, path, mode);
                let opened = opened.map(|(i, p)| (i, p, m.new_comm(vec![self.world])));
                (m.md_op(now, node, cost), opened)
            };
            self.until(done, Wait::Io).await;
            (0, opened)
        };
        let (inode, ptr, comm) = opened?;
        let hints = self
            .resolve_hints(&comm, hints)
            .map_err(|e| IoError::Call {
                op: "open".into(),
                path: path.into(),
                message: e,
            })?;
        Ok(File {
            inode,
            path: path.to_string(),
            api,
            mode,
            comm,
            rank,
            seq: Cell::new(0),
            view: View::bytes(),
            ptr,
            hints,
            given: hints_given.clone(),
            cseq: Cell::new(0),
        })
    }

    /// `MPI_File_set_info` (collective over the file's ranks): lays `hints` over
    /// those given so far. As in ROMIO, the aggregator list and the striping are
    /// fixed when the file is opened; buffer sizes and the collective-buffering
    /// and data-sieving switches take effect for the following calls.
    pub fn set_info(&self, file: &mut File, hints: &Hints) -> Result<(), IoError> {
        if file.api == Api::Posix {
            return Err(IoError::Invalid(format!(
                "set_info on `{}`: POSIX files take no hints",
                file.path
            )));
        }
        let given = file.given.merged(hints);
        let mut eff = (*self
            .resolve_hints(&file.comm, &given)
            .map_err(|e| IoError::Call {
                op: "set_info".into(),
                path: file.path.clone(),
                message: e,
            })?)
        .clone();
        eff.aggregators = file.hints.aggregators.clone();
        eff.striping_unit = file.hints.striping_unit;
        eff.striping_factor = file.hints.striping_factor;
        file.hints = Rc::new(eff);
        file.given = given;
        Ok(())
    }

    /// The hints in effect on a file of communicator `comm` (resolved once per
    /// collective open and shared by its ranks).
    fn resolve_hints(&self, comm: &Comm, given: &Hints) -> Result<Rc<Effective>, String> {
        let mut m = self.core.model.borrow_mut();
        let n = comm.members.len();
        if let Some((h, eff, left)) = m.opened_hints.get_mut(&comm.id)
            && h == given
        {
            let eff = eff.clone();
            *left -= 1;
            if *left == 0 {
                m.opened_hints.remove(&comm.id);
            }
            return Ok(eff);
        }
        let nodes: Vec<usize> = comm
            .members
            .iter()
            .map(|&w| m.platform.node_of(w))
            .collect();
        let eff = Rc::new(Effective::resolve(given, &nodes, &m.fs)?);
        if n > 1 && !m.opened_hints.contains_key(&comm.id) {
            m.opened_hints
                .insert(comm.id, (given.clone(), eff.clone(), n - 1));
        }
        Ok(eff)
    }

    /// Sets `file`'s view (collective over the file's ranks). MPI-IO files only;
    /// resets the shared file pointer.
    pub async fn set_view(&self, file: &mut File, view: &View) -> Result<(), IoError> {
        if file.api == Api::Posix {
            return Err(IoError::Invalid(format!(
                "set_view on `{}`: POSIX files have no views",
                file.path
            )));
        }
        self.collective(
            &file.comm,
            file.rank,
            &file.seq,
            Contrib::None,
            Kind::SetView(file.ptr),
        )
        .await;
        file.view = view.clone();
        Ok(())
    }

    fn check(
        &self,
        file: &File,
        access: Access,
        coord: Coordination,
        pos: Position,
    ) -> Result<(), IoError> {
        if file.api == Api::MpiIo && file.hints.no_indep_rw && coord == Coordination::Independent {
            return Err(IoError::Invalid(format!(
                "`{}` was opened with romio_no_indep_rw=true: only collective accesses are allowed",
                file.path
            )));
        }
        if file.api == Api::Posix
            && (coord == Coordination::Collective || pos == Position::SharedPointer)
        {
            return Err(IoError::Invalid(format!(
                "`{}` is a POSIX file: only independent accesses at explicit offsets are possible",
                file.path
            )));
        }
        let denied = match access {
            Access::Write => file.mode == OpenMode::Read,
            Access::Read => file.mode == OpenMode::Create,
        };
        if denied {
            let (op, why) = match access {
                Access::Write => ("write", "the file is open read-only"),
                Access::Read => ("read", "the file is open write-only"),
            };
            return Err(IoError::Call {
                op: op.into(),
                path: file.path.clone(),
                message: why.into(),
            });
        }
        Ok(())
    }

    /// `MPI_File_*_shared`: takes the shared pointer under its lock (one update at a
    /// time, `mpiio.shared_pointer` each) and advances it by `len` bytes; returns
    /// the offset (in etypes) this access starts at.
    async fn take_shared_pointer(&self, file: &File, len: u64) -> u64 {
        let (ready, off) = {
            let mut m = self.core.model.borrow_mut();
            let cost = m.shared_pointer_cost;
            let now = self.now();
            let p = &mut m.ptrs[file.ptr];
            let begin = now.max(p.free_at);
            p.free_at = begin + cost;
            let off = p.pos;
            p.pos += len / etype_size(&file.view);
            (begin + cost, off)
        };
        self.until(ready, Wait::Io).await;
        off
    }

    /// Moves `len` bytes as `access`/`coord`/`pos` say; returns the bytes moved
    /// (short at end of file for reads). MPI-IO accesses go through ROMIO's
    /// methods (see [`crate::romio`]); POSIX ones are one request per call.
    pub async fn xfer(&self, file: &mut File, op: Op, len: u64) -> Result<u64, IoError> {
        let Op { access, coord, pos } = op;
        self.check(file, access, coord, pos)?;
        if file.api == Api::MpiIo && coord == Coordination::Independent {
            self.call_cost(|c| c.independent_call).await;
        }
        let esize = etype_size(&file.view);
        match (coord, pos) {
            (Coordination::Independent, Position::At(off)) => {
                Ok(self.independent(file, access, off, len).await)
            }
            (Coordination::Collective, Position::At(off)) => {
                Ok(self.collective_io(file, access, off, len).await)
            }
            (Coordination::Independent, Position::SharedPointer) => {
                let off = self.take_shared_pointer(file, len).await;
                Ok(self.independent(file, access, off, len).await)
            }
            (Coordination::Collective, Position::SharedPointer) => {
                // ROMIO's ordered calls: offsets by rank order after one update of
                // the shared pointer, then a collective access at those offsets.
                let out = self
                    .collective(
                        &file.comm,
                        file.rank,
                        &file.seq,
                        Contrib::U64(len / esize),
                        Kind::Ordered(file.ptr),
                    )
                    .await;
                let off = match out.get() {
                    Some(CollOut::Offsets(o)) => o[file.rank],
                    _ => unreachable!("ordered access yields offsets"),
                };
                Ok(self.collective_io(file, access, off, len).await)
            }
        }
    }

    /// Starts a nonblocking access. Independent ones start now; collective ones
    /// are deferred and completed together by [`Rank::wait_all`].
    pub async fn post(&self, file: &mut File, op: Op, len: u64) -> Result<Pending, IoError> {
        let Op { access, coord, pos } = op;
        self.check(file, access, coord, pos)?;
        if file.api == Api::MpiIo && coord == Coordination::Independent {
            self.call_cost(|c| c.independent_call).await;
        }
        match (coord, pos) {
            (Coordination::Independent, Position::At(off)) => {
                let (started, bytes) = self.spawn_independent(file, access, off, len);
                Ok(Pending { access, started: Some(started), deferred: None, bytes })
            }
            (Coordination::Collective, Position::At(off)) => Ok(Pending { access, started: None, deferred: Some((off, len)), bytes: 0 }),
            (Coordination::Independent, Position::SharedPointer) => {
                let off = self.take_shared_pointer(file, len).await;
                let (started, bytes) = self.spawn_independent(file, access, off, len);
                Ok(Pending { access, started: Some(started), deferred: None, bytes })
            }
            (Coordination::Collective, Position::SharedPointer) => Err(IoError::Invalid(
                "nonblocking ordered (collective shared-pointer) access does not exist in MPI; use the blocking call".into(),
            )),
        }
    }

    /// Completes `reqs`; returns the bytes each moved. If any was posted as
    /// collective, every rank of the file must call this with the same
    /// collective requests in the same order: each is then done as one
    /// collective access (ROMIO's nonblocking collectives run the same two-phase
    /// schedule), in the order posted, after the independent ones completed.
    pub async fn wait_all(&self, file: &mut File, reqs: Vec<Pending>) -> Vec<u64> {
        let mut out: Vec<u64> = reqs.iter().map(|r| r.bytes).collect();
        for r in &reqs {
            if let Some(s) = &r.started {
                self.wait(s, Wait::Io).await;
            }
        }
        for (i, r) in reqs.iter().enumerate() {
            if let Some((off, len)) = r.deferred {
                out[i] = self.collective_io(file, r.access, off, len).await;
            }
        }
        out
    }

    /// This rank's MPI-IO access of `len` bytes at `off` etypes of `file`'s view,
    /// done independently as ROMIO does it (contiguous, data sieving or one
    /// request per extent); returns the bytes moved.
    async fn independent(&self, file: &File, access: Access, off: u64, len: u64) -> u64 {
        independent_io(
            &self.core,
            self.world,
            file.inode,
            &file.view,
            &file.hints,
            access,
            off,
            len,
        )
        .await
    }

    /// Starts an independent access as a task of its own; the signal fires when it is done.
    fn spawn_independent(&self, file: &File, access: Access, off: u64, len: u64) -> (Signal, u64) {
        let done = Signal::new();
        let (core, fired, world) = (self.core.clone(), done.clone(), self.world);
        let (inode, view, hints) = (file.inode, file.view.clone(), file.hints.clone());
        let bytes = match access {
            Access::Write => len,
            Access::Read => readable(&self.core.model.borrow(), inode, &view, off, len),
        };
        self.core.spawned.borrow_mut().push(Box::pin(async move {
            independent_io(&core, world, inode, &view, &hints, access, off, len).await;
            fired.fire();
        }));
        (done, bytes)
    }

    /// One collective data access (`MPI_File_{read,write}_at_all`, and the data
    /// part of the ordered calls) as ROMIO does it: every rank's offsets are
    /// gathered; ROMIO's rule picks two-phase collective buffering or
    /// independent I/O; two-phase goes round by round: an all-to-all of sizes,
    /// the exchange between ranks and aggregators (flows over the network), the
    /// aggregators' requests; a final reduction of error codes ends the call.
    async fn collective_io(&self, file: &File, access: Access, off: u64, len: u64) -> u64 {
        self.call_cost(|c| c.collective_call).await;
        let n = file.comm.members.len();
        let call = file.cseq.get();
        file.cseq.set(call + 1);
        let key = (file.comm.id, call);
        {
            let mut m = self.core.model.borrow_mut();
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
        self.collective(
            &file.comm,
            file.rank,
            &file.seq,
            Contrib::None,
            Kind::Offsets,
        )
        .await;
        let io = {
            let mut m = self.core.model.borrow_mut();
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
            .get_or_init(|| planned(&self.core, file, access, io.accesses.take()));
        let moved = match plan {
            None => self.independent(file, access, off, len).await,
            Some(tp) => {
                self.two_phase(file, &io, tp, access).await;
                match access {
                    Access::Write => len,
                    Access::Read => {
                        let m = self.core.model.borrow();
                        // the file domains span every rank's data
                        let end = tp.domains.iter().flatten().map(|d| d.1).max();
                        if end.is_some_and(|e| e <= m.files[file.inode].size) {
                            len
                        } else {
                            readable(&m, file.inode, &file.view, off, len)
                        }
                    }
                }
            }
        };
        self.collective(
            &file.comm,
            file.rank,
            &file.seq,
            Contrib::None,
            Kind::Barrier,
        )
        .await;
        moved
    }

    /// This rank's part of a two-phase schedule.
    async fn two_phase(&self, file: &File, io: &CollIo, tp: &TwoPhase, access: Access) {
        let me = file.rank;
        let my_agg = tp.aggregators.iter().position(|&a| a == me);
        for m in 0..tp.rounds {
            // The all-to-all of sizes that opens every round.
            self.collective(
                &file.comm,
                file.rank,
                &file.seq,
                Contrib::None,
                Kind::Offsets,
            )
            .await;
            let moves = &tp.moves[m];
            let lo = moves.partition_point(|x| x.0 < me);
            let hi = moves.partition_point(|x| x.0 <= me);
            let window = my_agg.and_then(|a| tp.windows[a].get(m).copied().filter(|w| w.data > 0));
            match access {
                Access::Write => {
                    let sent: Vec<Signal> = moves[lo..hi]
                        .iter()
                        .map(|&(_, a, bytes)| {
                            self.message(io, m, file, tp.aggregators[a], a, bytes)
                        })
                        .collect();
                    if let (Some(a), Some(w)) = (my_agg, window) {
                        io.receive(self, m, a, tp.to_aggregator(m, a).count()).await;
                        if w.has_hole() {
                            fs_io(
                                &self.core,
                                self.world,
                                file.inode,
                                Access::Read,
                                &[(w.offset, w.len)],
                            )
                            .await;
                        }
                        fs_io(
                            &self.core,
                            self.world,
                            file.inode,
                            Access::Write,
                            &[(w.offset, w.len)],
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
                            &self.core,
                            self.world,
                            file.inode,
                            Access::Read,
                            &[(w.offset, w.len)],
                        )
                        .await;
                        let n_agg = tp.aggregators.len();
                        let sent: Vec<Signal> = tp
                            .to_aggregator(m, a)
                            .map(|(r, bytes)| self.message(io, m, file, r, n_agg + r, bytes))
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
    fn message(
        &self,
        io: &CollIo,
        m: usize,
        file: &File,
        to: usize,
        target: usize,
        bytes: u64,
    ) -> Signal {
        let s = {
            let mm = self.core.model.borrow();
            let (lat, path) = mm.platform.p2p(self.world, file.comm.members[to]);
            self.core.engine.borrow_mut().send(lat, path, bytes as f64)
        };
        io.post(m, target, s.clone());
        s
    }
}

/// The shared state of one collective call: what each rank asked for, the plan
/// (made by the first rank past the rendezvous), and the inboxes of the exchange.
struct CollIo {
    accesses: RefCell<Vec<Option<(View, u64, u64)>>>,
    fetched: Cell<usize>,
    plan: OnceCell<Option<TwoPhase>>,
    /// (round, target) → messages posted to it and a signal for the next one.
    inbox: RefCell<BTreeMap<(usize, usize), (Vec<Signal>, Option<Signal>)>>,
}

impl CollIo {
    /// Posts a message (its completion signal) to inbox `(m, target)`.
    fn post(&self, m: usize, target: usize, s: Signal) {
        let mut ib = self.inbox.borrow_mut();
        let e = ib.entry((m, target)).or_default();
        e.0.push(s);
        if let Some(k) = e.1.take() {
            k.fire();
        }
    }

    /// Waits until `expected` messages were posted to `(m, target)` and all arrived.
    async fn receive(&self, rank: &Rank, m: usize, target: usize, expected: usize) {
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

/// The extents of `len` bytes at `offset` etypes through `view`, lazily.
fn view_extents(view: &View, offset: u64, len: u64) -> ViewRuns<'_> {
    if len == 0 {
        ViewRuns::One(None)
    } else if let Some(unit) = basic_view(view) {
        ViewRuns::One(Some((view.disp + offset * unit, len)))
    } else {
        ViewRuns::Walk(view.extents(offset, len))
    }
}

/// The etype size of a view whose filetype is its etype, a basic type (the
/// default byte view, b_eff_io's view of doubles): its data lie contiguous
/// from `disp`, with no filetype to flatten.
fn basic_view(v: &View) -> Option<u64> {
    (matches!(v.etype, Datatype::Byte | Datatype::Double) && v.filetype == v.etype)
        .then(|| v.etype.size())
}

/// The extents of [`view_extents`]: one run of a contiguous view without a
/// walk (or an allocation) per call, else the view's flattened walk.
enum ViewRuns<'v> {
    One(Option<(u64, u64)>),
    Walk(piotwin_types::ViewExtents<'v>),
}

impl Iterator for ViewRuns<'_> {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        match self {
            ViewRuns::One(run) => run.take(),
            ViewRuns::Walk(walk) => walk.next(),
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
fn planned(
    core: &Core,
    file: &File,
    access: Access,
    accesses: Vec<Option<(View, u64, u64)>>,
) -> Option<TwoPhase> {
    let unit = file.hints.striping_unit;
    let m = core.model.borrow();
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
    let mut m = core.model.borrow_mut();
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
fn common_shift(
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
fn view_shift(view: &View, from: u64, to: u64) -> Option<u64> {
    let skip = to.checked_sub(from)?.checked_mul(etype_size(view))?;
    if is_byte_view(view) {
        return Some(skip);
    }
    let size = view.filetype.size();
    (size > 0 && skip.is_multiple_of(size)).then(|| skip / size * view.filetype.extent())
}

/// Bytes of an access that lie before the end of file `inode` (what a read returns).
fn readable(m: &Model, inode: usize, view: &View, offset: u64, len: u64) -> u64 {
    let size = m.files[inode].size;
    view_extents(view, offset, len)
        .map(|(o, l)| l.min(size.saturating_sub(o)))
        .sum()
}

/// File-system requests `ext` = (offset, bytes) of file `inode` by world rank
/// `world`, one after the other (reads stop at the end of the file; writes grow
/// it); recorded in the trace when it is on. Returns the bytes moved.
async fn fs_io(core: &Core, world: usize, inode: usize, access: Access, ext: &[(u64, u64)]) -> u64 {
    // one system call per request (reads at the end of file included), on the rank's core
    let syscalls = {
        let m = core.model.borrow();
        let calls = ext.iter().filter(|e| e.1 > 0).count();
        calls as f64 * m.platform.syscall(m.platform.node_of(world))
    };
    if syscalls > 0.0 {
        cpu(core, world, syscalls).await;
    }
    let (node, reqs) = {
        let mut m = core.model.borrow_mut();
        let size = m.files[inode].size;
        let reqs: Vec<(usize, u64, u64)> = ext
            .iter()
            .map(|&(off, len)| {
                let n = match access {
                    Access::Write => len,
                    Access::Read => len.min(size.saturating_sub(off)),
                };
                (inode, off, n)
            })
            .filter(|r| r.2 > 0)
            .collect();
        if let Some(t) = m.trace.as_mut() {
            t.extend(reqs.iter().map(|&(file, offset, len)| FsRequest {
                rank: world,
                file,
                access,
                offset,
                len,
            }));
        }
        let node = m.platform.node_of(world);
        let Model {
            ff_log, storage, ..
        } = &mut *m;
        if let Some(log) = ff_log[world].as_mut() {
            log.extend(ext.iter().filter(|e| e.1 > 0).map(|&(off, len)| FfReq {
                file: inode,
                write: access == Access::Write,
                off,
                len,
                class: match access {
                    Access::Write => storage.write_class(node, len),
                    Access::Read if off + len > size => FF_CLASS_EOF,
                    Access::Read => storage.read_class(node, inode, off, off + len),
                },
            }));
        }
        m.waiting[world] = Wait::Io;
        (node, reqs)
    };
    storage::io(core, world, node, access, &reqs).await;
    let mut m = core.model.borrow_mut();
    m.waiting[world] = Wait::Running;
    if access == Access::Write {
        grow(&mut m, &reqs);
    }
    reqs.iter().map(|r| r.2).sum()
}

/// `seconds` of CPU work of world rank `world`: a delay where it has a core of
/// its own, else shared with its node's other ranks ([`crate::platform::Platform::cpu_path`]).
async fn cpu(core: &Core, world: usize, seconds: f64) {
    let path = core.model.borrow().platform.cpu_path(world);
    match path {
        None => delay(core, seconds).await,
        Some(path) => node_flow(core, world, path, seconds.max(0.0)).await,
    }
}

/// A flow path: resources and the units each carries per unit of the flow.
type Path = Vec<(ResourceId, f64)>;

/// `units` over `path`, a flow of world rank `world` over its node's shared
/// resources, counted for the fast-forward ([`Model::ff_work`], [`Model::ff_busy`]).
pub(crate) async fn node_flow(core: &Core, world: usize, path: Path, units: f64) {
    let start = {
        let mut m = core.model.borrow_mut();
        let work = &mut m.ff_work[world];
        match work.iter_mut().find(|(p, _)| *p == path) {
            Some((_, u)) => *u += units,
            None => work.push((path.clone(), units)),
        }
        core.engine.borrow().now()
    };
    let s = core.engine.borrow_mut().send(0.0, path, units);
    s.wait().await;
    let now = core.engine.borrow().now();
    core.model.borrow_mut().ff_busy[world] += now - start;
}

/// Waits `seconds` of virtual time.
async fn delay(core: &Core, seconds: f64) {
    let s = Signal::new();
    {
        let mut e = core.engine.borrow_mut();
        let at = e.now() + seconds;
        e.fire_at(at, s.clone());
    }
    s.wait().await;
}

/// ROMIO's byte-range lock (`ADIOI_WRITE_LOCK`, an `fcntl` lock) on `[a, b)` of
/// `inode` for world rank `world`: waits for overlapping holders, then one round
/// trip to the lock manager. Returns the signal [`unlock`] fires.
async fn lock(core: &Core, world: usize, inode: usize, a: u64, b: u64) -> Signal {
    let mine = Signal::new();
    loop {
        let busy = {
            let mut m = core.model.borrow_mut();
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
        let m = core.model.borrow();
        m.platform.server_rtt(m.platform.node_of(world))
    };
    delay(core, rtt).await;
    mine
}

/// Releases a lock [`lock`] took (one more round trip).
async fn unlock(core: &Core, world: usize, inode: usize, held: Signal) {
    let rtt = {
        let m = core.model.borrow();
        m.platform.server_rtt(m.platform.node_of(world))
    };
    delay(core, rtt).await;
    let mut m = core.model.borrow_mut();
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
/// extent with sieving disabled. Returns the bytes moved.
#[allow(clippy::too_many_arguments)]
async fn independent_io(
    core: &Core,
    world: usize,
    inode: usize,
    view: &View,
    hints: &Effective,
    access: Access,
    off: u64,
    len: u64,
) -> u64 {
    let pieces = view_extents(view, off, len).take(2).count();
    match sieving::method(access, hints, pieces) {
        Method::Direct => {
            let mut moved = 0;
            for x in view_extents(view, off, len) {
                moved += fs_io(core, world, inode, access, &[x]).await;
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
                        fs_io(core, world, inode, Access::Read, &[(o, l)]).await;
                    }
                    Access::Write => {
                        let held = lock(core, world, inode, o, o + l).await;
                        fs_io(core, world, inode, Access::Read, &[(o, l)]).await;
                        fs_io(core, world, inode, Access::Write, &[(o, l)]).await;
                        unlock(core, world, inode, held).await;
                    }
                }
            }
            match access {
                Access::Write => len,
                Access::Read => readable(&core.model.borrow(), inode, view, off, len),
            }
        }
    }
}

impl Rank {
    /// Flushes `file` to stable storage: a server round trip plus the scenario's
    /// sync cost (collective over the file's ranks for MPI-IO).
    pub async fn sync(&self, file: &mut File) {
        if file.api == Api::MpiIo {
            self.collective(
                &file.comm,
                file.rank,
                &file.seq,
                Contrib::None,
                Kind::Barrier,
            )
            .await;
        }
        let node = self.core.model.borrow().platform.node_of(self.world);
        self.core.model.borrow_mut().waiting[self.world] = Wait::Io;
        storage::sync(&self.core, node, file.inode).await;
        let t = {
            let m = self.core.model.borrow();
            self.now() + m.platform.server_rtt(node) + m.md.sync
        };
        self.until(t, Wait::Io).await;
    }

    /// Makes the next read of `file` from this rank's node cold: [`Rank::sync`]
    /// (dirty pages written back, costing device time), then the file's clean
    /// pages evicted from the node's page cache (`fsync` + `posix_fadvise(DONTNEED)`).
    pub async fn drop_cache(&self, file: &mut File) {
        self.sync(file).await;
        let mut m = self.core.model.borrow_mut();
        let node = m.platform.node_of(self.world);
        storage::drop_clean(&mut m.storage, node, file.inode);
    }

    /// Current size of `file` in bytes (one server round trip).
    pub async fn file_size(&self, file: &File) -> u64 {
        let t = {
            let m = self.core.model.borrow();
            self.now() + m.platform.server_rtt(m.platform.node_of(self.world))
        };
        self.until(t, Wait::Io).await;
        self.core.model.borrow().files[file.inode].size
    }

    /// Closes `file` (collective over the file's ranks when it was opened shared).
    pub async fn close(&self, file: File) {
        if file.api == Api::MpiIo {
            self.call_cost(|c| c.close).await;
        }
        let node = self.core.model.borrow().platform.node_of(self.world);
        self.core.model.borrow_mut().waiting[self.world] = Wait::Io;
        self.core
            .model
            .borrow_mut()
            .storage
            .forget_stream(self.world, file.inode);
        storage::close(&self.core, node, file.inode).await;
        if file.comm.members.len() > 1 {
            self.collective(&file.comm, file.rank, &file.seq, Contrib::None, Kind::Close)
                .await;
        } else {
            let t = {
                let mut m = self.core.model.borrow_mut();
                let node = m.platform.node_of(self.world);
                let cost = m.md.close;
                m.md_op(self.now(), node, cost)
            };
            self.until(t, Wait::Io).await;
        }
    }

    /// Deletes `path` if it exists (a metadata operation; open handles keep their data).
    pub async fn delete(&self, path: &str) {
        let t = {
            let mut m = self.core.model.borrow_mut();
            let mut size = 0;
            if let Some(inode) = m.by_path.remove(path) {
                size = m.files[inode].size;
                storage::delete(&mut m.storage, inode);
            }
            let node = m.platform.node_of(self.world);
            let cost = match m.md.delete_bw.is_finite() {
                true => m.md.delete + size as f64 / m.md.delete_bw,
                false => m.md.delete,
            };
            m.md_op(self.now(), node, cost)
        };
        self.until(t, Wait::Io).await;
    }
}

impl File {
    /// The path it was opened as.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The I/O library it was opened through.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The MPI-IO hints in effect, with the keys MPICH's `MPI_File_get_info`
    /// reports (none for POSIX files).
    pub fn hints_in_effect(&self) -> Hints {
        match self.api {
            Api::MpiIo => self.hints.to_hints(),
            Api::Posix => Hints::new(),
        }
    }
}

/// Files grow to the end of the writes `reqs` = (inode, offset, bytes).
fn grow(m: &mut Model, reqs: &[(usize, u64, u64)]) {
    for &(inode, off, len) in reqs {
        let f = &mut m.files[inode];
        f.size = f.size.max(off + len);
    }
}

/// Looks up or creates `path`'s inode as `mode` says; returns (metadata cost, result).
fn open_inode(m: &mut Model, path: &str, mode: OpenMode) -> (f64, Result<(usize, usize), IoError>) {
    let (cost, inode) = match (m.by_path.get(path), mode) {
        (Some(&i), _) => (m.md.open, Ok(i)),
        (None, OpenMode::Read) => (
            m.md.open,
            Err(IoError::Call {
                op: "open".into(),
                path: path.into(),
                message: "No such file or directory".into(),
            }),
        ),
        (None, _) => {
            m.files.push(FileMeta { size: 0 });
            let i = m.files.len() - 1;
            m.by_path.insert(path.to_string(), i);
            (m.md.create, Ok(i))
        }
    };
    let r = inode.map(|i| {
        m.ptrs.push(SharedPtr {
            pos: 0,
            free_at: 0.0,
        });
        (i, m.ptrs.len() - 1)
    });
    (cost, r)
}

/// Posts a send (`bytes` = Some) or a receive on the mailbox `from → to`; when it
/// meets its partner the message starts. Returns the signal both sides await.
fn post_message(
    m: &mut Model,
    e: &mut Engine,
    comm: u32,
    from: usize,
    to: usize,
    bytes: Option<u64>,
) -> Signal {
    let key = (comm, from, to);
    let mb = m.mail.entry(key).or_default();
    let matched = match bytes {
        Some(b) => mb.recvs.pop_front().map(|s| (s, b)),
        None => mb.sends.pop_front(),
    };
    let sig = match matched {
        Some((s, b)) => {
            let (lat, path) = m.platform.p2p(from, to);
            e.transfer(lat, path, b as f64, s.clone());
            s
        }
        None => {
            let s = Signal::new();
            match bytes {
                Some(b) => mb.sends.push_back((s.clone(), b)),
                None => mb.recvs.push_back(s.clone()),
            }
            s
        }
    };
    if m.mail
        .get(&key)
        .is_some_and(|mb| mb.sends.is_empty() && mb.recvs.is_empty())
    {
        m.mail.remove(&key);
    }
    sig
}

/// The last rank arrived at a collective: compute its result and schedule every
/// rank's completion.
fn complete(m: &mut Model, e: &mut Engine, comm: &Comm, kind: Kind<'_>, mut z: Rendezvous) {
    let n = comm.members.len();
    let now = e.now();
    let steps = ceil_log2(n);
    let word = 8.0 / comm.bw;
    let barrier_t = now + steps * comm.lat;
    let mut per_rank: Option<Vec<f64>> = None;
    let (t, out) = match kind {
        Kind::Barrier => (barrier_t, CollOut::Unit),
        Kind::Bcast(root) => {
            let v = match z.contribs[root] {
                Contrib::U64(v) => v,
                _ => 0,
            };
            (now + steps * (comm.lat + word), CollOut::U64(v))
        }
        Kind::BarrierBcast(_) => {
            let v = z.decide.take().map_or(0, |decide| decide(barrier_t));
            (barrier_t + steps * (comm.lat + word), CollOut::U64(v))
        }
        Kind::Allreduce(op) => {
            let vals = z.contribs.iter().map(|c| match c {
                Contrib::F64(v) => *v,
                _ => 0.0,
            });
            let v = match op {
                ReduceOp::Sum => vals.fold(0.0, |a, b| a + b),
                ReduceOp::Min => vals.fold(f64::INFINITY, f64::min),
                ReduceOp::Max => vals.fold(f64::NEG_INFINITY, f64::max),
            };
            (now + steps * (comm.lat + word), CollOut::F64(v))
        }
        Kind::Allgather => {
            let vals = z
                .contribs
                .iter()
                .map(|c| match c {
                    Contrib::F64(v) => *v,
                    _ => 0.0,
                })
                .collect();
            (
                now + steps * comm.lat + (n - 1) as f64 * word,
                CollOut::F64s(vals),
            )
        }
        Kind::Split => {
            let mut groups: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
            for (r, c) in z.contribs.iter().enumerate() {
                if let Contrib::Split(Some(color), key) = c {
                    groups.entry(*color).or_default().push((*key, r));
                }
            }
            let mut out = vec![None; n];
            for (_, mut g) in groups {
                g.sort_unstable();
                let sub = m.new_comm(g.iter().map(|&(_, r)| comm.members[r]).collect());
                for (new_rank, &(_, r)) in g.iter().enumerate() {
                    out[r] = Some((sub.clone(), new_rank));
                }
            }
            (
                now + steps * comm.lat + (n - 1) as f64 * 2.0 * word,
                CollOut::Split(out),
            )
        }
        Kind::Ordered(ptr) => {
            let p = &mut m.ptrs[ptr];
            let mut offs = Vec::with_capacity(n);
            for c in &z.contribs {
                offs.push(p.pos);
                if let Contrib::U64(len) = c {
                    p.pos += len;
                }
            }
            let begin = (now + steps * comm.lat + (n - 1) as f64 * word).max(p.free_at);
            p.free_at = begin + m.shared_pointer_cost;
            (p.free_at, CollOut::Offsets(offs))
        }
        Kind::Offsets => (
            now + steps * comm.lat + (n - 1) as f64 * 2.0 * word,
            CollOut::Unit,
        ),
        Kind::Agree => {
            let (most, fewest) =
                z.contribs
                    .iter()
                    .fold((u64::MAX, 0), |(most, fewest), c| match c {
                        Contrib::Skip(m, f) => (most.min(*m), fewest.max(*f)),
                        _ => (0, fewest),
                    });
            (now, CollOut::U64(if most >= fewest { most } else { 0 }))
        }
        Kind::SetView(ptr) => {
            m.ptrs[ptr].pos = 0;
            (barrier_t, CollOut::Unit)
        }
        Kind::Open(path, mode) => {
            let (cost, opened) = open_inode(m, path, mode);
            // The first rank's call creates (or opens); the others then open the existing file.
            let mut times = Vec::with_capacity(n);
            for (i, &w) in comm.members.iter().enumerate() {
                let node = m.platform.node_of(w);
                let c = if i == 0 { cost } else { m.md.open };
                times.push(m.md_op(barrier_t, node, c));
            }
            per_rank = Some(times);
            let opened = opened.map(|(inode, ptr)| (inode, ptr, m.new_comm(comm.members.clone())));
            (barrier_t, CollOut::Opened(opened))
        }
        Kind::Close => {
            let mut times = Vec::with_capacity(n);
            for &w in &comm.members {
                let node = m.platform.node_of(w);
                let c = m.md.close;
                times.push(m.md_op(barrier_t, node, c));
            }
            per_rank = Some(times);
            (barrier_t, CollOut::Unit)
        }
    };
    let _ = z.out.set(out);
    let signals = z
        .signals
        .into_iter()
        .map(|s| s.expect("every rank arrived"));
    match per_rank {
        Some(at) => signals.zip(at).for_each(|(s, at)| e.fire_at(at, s)),
        None => e.fire_all_at(t, signals.collect()),
    }
}

// ---------------------------------------------------------------------------
// Fast-forward of repeated accesses.
//
// A back end's repetition primitive (b_eff_io repeats one access per pattern
// thousands of times) observes each iteration here and, once the twin is in a
// steady state, skips iterations: the clock advances by the observed
// iteration time and the skipped requests' effect on the storage state is
// applied without simulating their time. What is checked before a skip of `k`
// iterations, and the error it leaves, is documented on [`Rank::ff_plan`].
// ---------------------------------------------------------------------------

/// Read class of a request that reaches past the end of the file.
const FF_CLASS_EOF: u8 = 255;

/// One file-system request in the fast-forward's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FfReq {
    file: usize,
    write: bool,
    /// Offset and length in bytes.
    off: u64,
    len: u64,
    /// Where the request was served when it was issued (`storage::CLASS_*`).
    class: u8,
}

/// A shared file pointer and its position (etypes).
type PointerAt = (FfPointer, u64);

/// A rank's handle on the shared file pointer of a file it accesses in a
/// repetition (taken with [`Rank::ff_pointer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FfPointer {
    ptr: usize,
    /// True on the file's rank 0, which advances it for everyone.
    lead: bool,
}

/// What the fast-forward saw at the end of one iteration of a repetition.
#[derive(Debug, Clone)]
pub struct FfObservation {
    /// Virtual time at the end of the iteration, in seconds.
    end: f64,
    /// Cache levels and their thresholds as [`Storage::levels`] gives them, bytes.
    levels: Levels,
    /// The rank's flows over shared node resources so far, units by path in
    /// the order of [`Model::ff_work`] (which only appends), and the time it
    /// waited for them ([`Model::ff_busy`]).
    work: Vec<f64>,
    busy: f64,
    /// Bytes put in the node's page cache so far ([`Storage::inserted`]).
    inserted: u64,
    /// How this iteration's requests follow the previous observation's
    /// ([`follows`]), worked out once as it is observed: condition 2. of
    /// [`Rank::ff_plan`] then reads these instead of comparing every pair of
    /// the window again at each decision.
    follow: Option<Follow>,
}

/// How one observation's requests follow the previous one's: whether they are
/// the same requests moved by one shift (and which), and the shared pointer's
/// step (`None`: used in one and not the other, or on different pointers).
#[derive(Debug, Clone, Copy)]
struct Follow {
    same: bool,
    shift: Option<u64>,
    step: Option<Option<PointerAt>>,
}

/// [`Follow`] of requests `b` after `a`, with the shared pointers (and
/// positions) `pa` and `pb` used.
fn follows(a: &[FfReq], b: &[FfReq], pa: Option<PointerAt>, pb: Option<PointerAt>) -> Follow {
    let mut same = a.len() == b.len();
    let mut s = None;
    for (x, y) in a.iter().zip(b) {
        same &= (x.file, x.write, x.len, x.class) == (y.file, y.write, y.len, y.class)
            && y.off >= x.off
            && x.class != storage::CLASS_MIXED
            && x.class != FF_CLASS_EOF;
        if !same {
            break;
        }
        let d = y.off - x.off;
        same &= *s.get_or_insert(d) == d;
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
    end: f64,
    /// The last iteration's requests and the per-iteration shift of their offsets.
    reqs: Vec<FfReq>,
    shift: u64,
    /// The shared pointer and its advance per iteration (etypes).
    pointer: Option<(FfPointer, u64)>,
    /// The rank's mean flows per iteration over its node's shared resources,
    /// and the mean time per iteration it waited for them.
    load: Vec<(Path, f64)>,
    busy: f64,
    /// Bytes per second put in the node's page cache over the window.
    inserted: f64,
    /// Where the node's page cache was writing back over the window, the
    /// share of the bytes put in it that its write-back took out (see
    /// [`Rank::ff_plan`], 3.): the skip writes back that share of its writes.
    written_back: Option<f64>,
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
                .all(|r| !r.write && r.class == storage::CLASS_NODE_HIT)
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
const FF_WRITE_BACK_CHUNKS: u64 = 32;

/// The share of the bytes put in the node's page cache from observation
/// `first` to `last` that its write-back took out (what the dirty level did
/// not keep), where it wrote back all along (above the background threshold
/// at `first`) and the window put in [`FF_WRITE_BACK_CHUNKS`] chunks or more;
/// `None` otherwise.
fn written_back_share(first: &FfObservation, last: &FfObservation) -> Option<f64> {
    let put = last.inserted - first.inserted;
    let ((l0, [background, _]), (l1, _)) = (first.levels.node_dirty()?, last.levels.node_dirty()?);
    if l0 <= background || put < FF_WRITE_BACK_CHUNKS * storage::FLUSH_CHUNK {
        return None;
    }
    Some((1.0 - (l1 as f64 - l0 as f64) / put as f64).clamp(0.0, 1.0))
}

/// How many times over a lone skip's reads must stay cached at the rate the
/// node's page cache fills ([`Rank::ff_alone_bound`]).
const FF_EVICTION_MARGIN: f64 = 2.0;

/// Relative difference of the mean iteration times of a window's two halves that counts as steady.
pub const FF_EPSILON: f64 = 1e-2;

/// How far the count of head crossings of a stream over some bytes can be
/// from their mean: ±1 per grid of boundaries (RAID stripe units and file
/// stripes), which need not be aligned with each other.
const FF_CROSSING_SPREAD: f64 = 2.0;

/// Condition 2. of [`Rank::ff_plan`] on `window`: the per-iteration shift of
/// the requests' offsets and the shared pointer's step where every iteration
/// (but the first observation's) made the same requests; else `Err(i)`, `i`
/// the index of the newest observation from which on they do (the window
/// restarts there: the iterations before it differ from those after it
/// whatever the window's length).
fn repeating(window: &[FfObservation]) -> Result<(u64, Option<(FfPointer, u64)>), usize> {
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
        self.core.model.borrow_mut().ff_log[self.world] = Some(Vec::new());
    }

    /// Stops logging (see [`Rank::ff_start`]).
    pub fn ff_stop(&self) {
        self.core.model.borrow_mut().ff_log[self.world] = None;
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
        let mut guard = self.core.model.borrow_mut();
        let m = &mut *guard;
        let w = self.world;
        let node = m.platform.node_of(w);
        let pointer = pointer.map(|p| (p, m.ptrs[p.ptr].pos));
        let fresh = m.ff_log[w].as_mut().map(std::mem::take).unwrap_or_default();
        let last = &m.ff_last[w];
        let follow = after_last.then(|| follows(&last.0, &fresh, last.1, pointer));
        let (mut spare, _) = std::mem::replace(&mut m.ff_last[w], (fresh, pointer));
        if let Some(log) = m.ff_log[w].as_mut() {
            // the last requests' buffer becomes the next log
            spare.clear();
            *log = spare;
        }
        FfObservation {
            end: self.now(),
            levels: m.storage.levels(node),
            work: m.ff_work[w].iter().map(|w| w.1).collect(),
            busy: m.ff_busy[w],
            inserted: m.storage.inserted(node),
            follow,
        }
    }

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
        let reqs = self.core.model.borrow().ff_last[self.world].0.clone();
        {
            let m = self.core.model.borrow();
            let node = m.platform.node_of(self.world);
            // 3. (the node's page cache writing back all along, at a known share)
            if m.storage.writing_back(node) {
                written_back = Some(written_back_share(&window[0], &window[w - 1])?);
            }
            for r in reqs.iter().filter(|r| !r.write) {
                let size = m.files[r.file].size;
                let alike = |j: u64| -> bool {
                    let a = r.off + shift;
                    let b = r.off + j * shift + r.len;
                    b <= size && m.storage.read_class(node, r.file, a, b) == r.class
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
                            && m.storage.read_class(node, r.file, a, a + r.len) == r.class
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
        let device = reqs.iter().filter(|r| r.class == storage::CLASS_DEVICE);
        let crossing = self.core.model.borrow().storage.crossing();
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
        let paths = &self.core.model.borrow().ff_work[self.world];
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

    /// Where the fast-forward's window should restart after a refusal: the
    /// index of the newest observation after which every iteration made the
    /// same requests, when an older one differs (a longer window would only
    /// hold the change); `None` when they all repeat.
    pub fn ff_restart(window: &[FfObservation]) -> Option<usize> {
        repeating(window).err()
    }

    /// The fast-forward's agreement, on every rank of the communicator at no
    /// cost in virtual time: the minimum of every rank's `skip` where that is
    /// at least every rank's `fewest` (its plan's [`FfPlan::min_skip`]), else 0.
    pub async fn ff_agree(&self, skip: u64, fewest: u64) -> u64 {
        let out = self
            .collective(
                &self.comm,
                self.rank,
                &self.seq,
                Contrib::Skip(skip, fewest),
                Kind::Agree,
            )
            .await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("an agreement yields a u64"),
        }
    }

    /// Offers, without waiting, a skip in the round `key` of its communicator.
    /// For ranks that are not in step (an independent loop): they skip the same
    /// stretch of virtual time, each as many of its own iterations as fit, so
    /// that they stop loading the storage system and resume together.
    pub fn ff_offer(&self, key: u64, offer: FfOffer) {
        let n = self.size();
        let mut m = self.core.model.borrow_mut();
        let e = m.ff_offers.entry((self.comm.id, key)).or_default();
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
        let mut m = self.core.model.borrow_mut();
        let id = (self.comm.id, key);
        let e = m.ff_offers.get_mut(&id)?;
        let out = e.outcome?;
        e.read += 1;
        if e.read == n {
            m.ff_offers.remove(&id);
        }
        Some(out)
    }

    /// Skips `k` iterations of `plan`: applies the skipped requests' effect on
    /// the storage state (their offsets moved by the plan's shift per
    /// iteration; files grow to the end of the skipped writes), advances the
    /// shared pointer, then sleeps until `k·Δ` after the last observation.
    pub async fn ff_skip(&self, plan: &FfPlan, k: u64) {
        {
            let mut m = self.core.model.borrow_mut();
            let node = m.platform.node_of(self.world);
            m.ff_apply(&[(node, plan)], k);
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
            let mut m = self.core.model.borrow_mut();
            let node = m.platform.node_of(self.world);
            let id = (self.comm.id, key);
            let round = m.ff_skips.entry(id).or_insert_with(|| vec![None; n]);
            round[self.rank] = Some((node, plan.clone()));
            if round.iter().all(Option::is_some) {
                let round = m.ff_skips.remove(&id).expect("entered above");
                let plans: Vec<(usize, &FfPlan)> =
                    round.iter().flatten().map(|(node, p)| (*node, p)).collect();
                m.ff_apply(&plans, k);
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
            self.core.model.borrow_mut().waiting[self.world] = Wait::Delay;
            node_flow(&self.core, self.world, path.clone(), k as f64 * units).await;
            self.core.model.borrow_mut().waiting[self.world] = Wait::Running;
        }
        self.sleep(k as f64 * (plan.delta - plan.busy).max(0.0))
            .await;
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
        let m = self.core.model.borrow();
        let node = m.platform.node_of(self.world);
        let rate = plan.inserted.max(m.platform.nic_bw(node));
        let per_iteration = FF_EVICTION_MARGIN * rate * plan.delta;
        if per_iteration <= 0.0 {
            return k;
        }
        let enough = (per_iteration * k as f64).ceil() as u64;
        let mut bound = k;
        for r in plan.reqs.iter().filter(|r| !r.write) {
            let (a, b) = (r.off + plan.shift, r.off + k * plan.shift + r.len);
            let room = m.storage.room_before_evicting(node, r.file, a, b, enough);
            bound = bound.min((room as f64 / per_iteration).floor() as u64);
        }
        bound
    }

    /// This rank's read-ahead streams go on after the `k` skipped iterations of `plan`.
    fn ff_advance_reads(&self, plan: &FfPlan, k: u64) {
        let mut m = self.core.model.borrow_mut();
        for r in plan.reqs.iter().filter(|r| !r.write) {
            let next = r.off + k * plan.shift + r.len;
            m.storage.advance_stream(self.world, r.file, next);
        }
    }

    async fn ff_sleep(&self, plan: &FfPlan, k: u64) {
        let until = plan.end + k as f64 * plan.delta;
        if until > self.now() {
            self.until(until, Wait::Delay).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                class: storage::CLASS_NODE_HIT,
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
        let t = ff_tiled_reads(&[(0, &a), (0, &c), (0, &b), (1, &alone)]);
        assert_eq!(t.blocks, vec![(0, 0, (0, 96, 128))]);
        assert_eq!(t.members, BTreeSet::from([(0, 0), (1, 0), (2, 0)]));
        // a gap between two ranks' ranges: each stays a stream of its own
        let gap = read_plan(40, 32, 128);
        let t = ff_tiled_reads(&[(0, &a), (0, &gap)]);
        assert!(t.blocks.is_empty() && t.members.is_empty());
        // writes are left to the lock-aware streams
        let mut w = read_plan(32, 32, 128);
        w.reqs[0].write = true;
        assert!(ff_tiled_reads(&[(0, &a), (0, &w)]).blocks.is_empty());
    }
}
