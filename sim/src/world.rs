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
//! * metadata (open, create, close, delete) queue at the server one at a time.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use piotwin_types::{Datatype, View};

use crate::SimError;
use crate::engine::{self, Engine, Executor, Signal, Task};
use crate::flow::FlowNet;
use crate::platform::{Access, Compute, Platform};
use crate::scenario::{Metadata, Scenario};
use crate::storage::{self, Storage};

/// Whether all ranks of the file's communicator take part in a data access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coord {
    /// This rank alone.
    Independent,
    /// Every rank of the file's communicator.
    Collective,
}

/// Where a data access starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pos {
    /// An offset in etypes of the view (bytes with the default view).
    At(u64),
    /// The shared file pointer.
    SharedPointer,
}

/// The I/O library a file is opened through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileApi {
    /// POSIX: independent byte-offset access only, no views.
    Posix,
    /// MPI-IO.
    MpiIo,
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenMode {
    /// Create if missing; write only.
    Create,
    /// Create if missing; read and write.
    CreateReadWrite,
    /// Existing file; read only.
    Read,
}

/// Reduction operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// Sum (in rank order, so the result is reproducible).
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// An I/O error reported to the simulated program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// A call failed: the operation, the file, why.
    #[error("{op} on `{path}`: {message}")]
    Call {
        /// The operation.
        op: String,
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A request the program made is not allowed (e.g. a view on a POSIX file).
    #[error("{0}")]
    Invalid(String),
}

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
}

enum Kind<'k> {
    Barrier,
    Bcast(usize),
    Allreduce(Reduce),
    Allgather,
    Split,
    Ordered(usize),
    SetView(usize),
    Open(&'k str, OpenMode),
    Close,
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
            Kind::Open(..) => "open",
            Kind::Close => "close",
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
    Opened(Result<(usize, usize, Rc<Comm>), FileError>),
}

struct Rendezvous {
    what: &'static str,
    arrived: usize,
    contribs: Vec<Contrib>,
    signals: Vec<Option<Signal>>,
    out: Rc<OnceCell<CollOut>>,
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

pub(crate) struct Model {
    pub(crate) platform: Platform,
    pub(crate) storage: Storage,
    md: Metadata,
    shared_pointer_cost: f64,
    files: Vec<FileMeta>,
    by_path: BTreeMap<String, usize>,
    md_free_at: f64,
    next_comm: u32,
    rendezvous: BTreeMap<(u32, u64), Rendezvous>,
    mail: BTreeMap<(u32, usize, usize), Mailbox>,
    ptrs: Vec<SharedPtr>,
    waiting: Vec<Wait>,
}

impl Model {
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
    api: FileApi,
    mode: OpenMode,
    comm: Rc<Comm>,
    rank: usize,
    seq: Cell<u64>,
    view: View,
    ptr: usize,
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

/// File extents of `len` bytes at `offset` etypes through `view`.
fn extents(view: &View, offset: u64, len: u64) -> Vec<(u64, u64)> {
    if len == 0 {
        Vec::new()
    } else if is_byte_view(view) {
        vec![(view.disp + offset, len)]
    } else {
        view.extents(offset, len).collect()
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
        let platform = Platform::build(scenario, ranks, &mut flows).map_err(SimError::Setup)?;
        let storage = Storage::build(scenario, &platform, seed, &mut flows);
        let mut model = Model {
            platform,
            storage,
            md: scenario.metadata.clone(),
            shared_pointer_cost: scenario.mpiio.shared_pointer,
            files: Vec::new(),
            by_path: BTreeMap::new(),
            md_free_at: 0.0,
            next_comm: 0,
            rendezvous: BTreeMap::new(),
            mail: BTreeMap::new(),
            ptrs: Vec::new(),
            waiting: vec![Wait::Running; ranks],
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
    /// node's rate for that kind.
    pub async fn compute(&self, kind: Compute, amount: f64) {
        let t = self
            .core
            .model
            .borrow()
            .platform
            .compute_time(self.world, kind, amount);
        self.sleep(t).await;
    }

    async fn collective(
        &self,
        comm: &Rc<Comm>,
        me: usize,
        seq: &Cell<u64>,
        c: Contrib,
        kind: Kind<'_>,
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
                });
            debug_assert_eq!(z.what, what, "ranks called different collectives");
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
    pub async fn allreduce_f64(&self, value: f64, op: Reduce) -> f64 {
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
        api: FileApi,
    ) -> Result<File, FileError> {
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
        })
    }

    /// Sets `file`'s view (collective over the file's ranks). MPI-IO files only;
    /// resets the shared file pointer.
    pub async fn set_view(&self, file: &mut File, view: &View) -> Result<(), FileError> {
        if file.api == FileApi::Posix {
            return Err(FileError::Invalid(format!(
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

    fn check(&self, file: &File, access: Access, coord: Coord, pos: Pos) -> Result<(), FileError> {
        if file.api == FileApi::Posix && (coord == Coord::Collective || pos == Pos::SharedPointer) {
            return Err(FileError::Invalid(format!(
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
            return Err(FileError::Call {
                op: op.into(),
                path: file.path.clone(),
                message: why.into(),
            });
        }
        Ok(())
    }

    /// The requests `ext` of `file` as the file-system layer takes them:
    /// (node, requests (inode, offset, bytes), bytes moved). Reads stop at the end of the file.
    fn requests(
        &self,
        file: &File,
        access: Access,
        ext: &[(u64, u64)],
    ) -> (usize, Vec<(usize, u64, u64)>, u64) {
        let m = self.core.model.borrow();
        let size = m.files[file.inode].size;
        let reqs: Vec<(usize, u64, u64)> = ext
            .iter()
            .map(|&(off, len)| {
                let n = match access {
                    Access::Write => len,
                    Access::Read => len.min(size.saturating_sub(off)),
                };
                (file.inode, off, n)
            })
            .collect();
        let moved = reqs.iter().map(|r| r.2).sum();
        (m.platform.node_of(self.world), reqs, moved)
    }

    /// Does this rank's accesses `ext` of `file` through the file-system layer; returns the bytes moved.
    async fn do_io(&self, file: &File, access: Access, ext: &[(u64, u64)]) -> u64 {
        let (node, reqs, moved) = self.requests(file, access, ext);
        self.core.model.borrow_mut().waiting[self.world] = Wait::Io;
        storage::io(&self.core, node, access, &reqs).await;
        let mut m = self.core.model.borrow_mut();
        m.waiting[self.world] = Wait::Running;
        if access == Access::Write {
            grow(&mut m, &reqs);
        }
        moved
    }

    /// Starts `ext` of `file` as a task of its own; the signal fires when it is done.
    fn spawn_io(&self, file: &File, access: Access, ext: &[(u64, u64)]) -> (Signal, u64) {
        let (node, reqs, moved) = self.requests(file, access, ext);
        let done = Signal::new();
        let (core, fired) = (self.core.clone(), done.clone());
        self.core.spawned.borrow_mut().push(Box::pin(async move {
            storage::io(&core, node, access, &reqs).await;
            if access == Access::Write {
                grow(&mut core.model.borrow_mut(), &reqs);
            }
            fired.fire();
        }));
        (done, moved)
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
    /// (short at end of file for reads).
    pub async fn xfer(
        &self,
        file: &mut File,
        access: Access,
        coord: Coord,
        pos: Pos,
        len: u64,
    ) -> Result<u64, FileError> {
        self.check(file, access, coord, pos)?;
        let esize = etype_size(&file.view);
        match (coord, pos) {
            (Coord::Independent, Pos::At(off)) => {
                let mut moved = 0;
                for x in extents(&file.view, off, len) {
                    moved += self.do_io(file, access, &[x]).await;
                }
                Ok(moved)
            }
            (Coord::Collective, Pos::At(off)) => {
                self.collective(
                    &file.comm,
                    file.rank,
                    &file.seq,
                    Contrib::None,
                    Kind::Barrier,
                )
                .await;
                let n = self
                    .do_io(file, access, &extents(&file.view, off, len))
                    .await;
                self.collective(
                    &file.comm,
                    file.rank,
                    &file.seq,
                    Contrib::None,
                    Kind::Barrier,
                )
                .await;
                Ok(n)
            }
            (Coord::Independent, Pos::SharedPointer) => {
                let off = self.take_shared_pointer(file, len).await;
                let n = self
                    .do_io(file, access, &extents(&file.view, off, len))
                    .await;
                Ok(n)
            }
            (Coord::Collective, Pos::SharedPointer) => {
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
                let n = self
                    .do_io(file, access, &extents(&file.view, off, len))
                    .await;
                self.collective(
                    &file.comm,
                    file.rank,
                    &file.seq,
                    Contrib::None,
                    Kind::Barrier,
                )
                .await;
                Ok(n)
            }
        }
    }

    /// Starts a nonblocking access. Independent ones start now; collective ones
    /// are deferred and completed together as one collective by [`Rank::wait_all`].
    pub async fn post(
        &self,
        file: &mut File,
        access: Access,
        coord: Coord,
        pos: Pos,
        len: u64,
    ) -> Result<Pending, FileError> {
        self.check(file, access, coord, pos)?;
        match (coord, pos) {
            (Coord::Independent, Pos::At(off)) => {
                let (started, bytes) = self.spawn_io(file, access, &extents(&file.view, off, len));
                Ok(Pending { access, started: Some(started), deferred: None, bytes })
            }
            (Coord::Collective, Pos::At(off)) => Ok(Pending { access, started: None, deferred: Some((off, len)), bytes: 0 }),
            (Coord::Independent, Pos::SharedPointer) => {
                let off = self.take_shared_pointer(file, len).await;
                let (started, bytes) = self.spawn_io(file, access, &extents(&file.view, off, len));
                Ok(Pending { access, started: Some(started), deferred: None, bytes })
            }
            (Coord::Collective, Pos::SharedPointer) => Err(FileError::Invalid(
                "nonblocking ordered (collective shared-pointer) access does not exist in MPI; use the blocking call".into(),
            )),
        }
    }

    /// Completes `reqs`; returns the bytes each moved. If any was posted as
    /// collective, every rank of the file must call this: the collective ones are
    /// done as one collective access.
    pub async fn wait_all(&self, file: &mut File, reqs: Vec<Pending>) -> Vec<u64> {
        let mut out: Vec<u64> = reqs.iter().map(|r| r.bytes).collect();
        let any_collective = reqs.iter().any(|r| r.deferred.is_some());
        for r in &reqs {
            if let Some(s) = &r.started {
                self.wait(s, Wait::Io).await;
            }
        }
        if any_collective {
            self.collective(
                &file.comm,
                file.rank,
                &file.seq,
                Contrib::None,
                Kind::Barrier,
            )
            .await;
            let mut started = Vec::new();
            for (i, r) in reqs.iter().enumerate() {
                if let Some((off, len)) = r.deferred {
                    let (s, n) = self.spawn_io(file, r.access, &extents(&file.view, off, len));
                    started.push(s);
                    out[i] = n;
                }
            }
            for s in &started {
                self.wait(s, Wait::Io).await;
            }
            self.collective(
                &file.comm,
                file.rank,
                &file.seq,
                Contrib::None,
                Kind::Barrier,
            )
            .await;
        }
        out
    }

    /// Flushes `file` to stable storage: a server round trip plus the scenario's
    /// sync cost (collective over the file's ranks for MPI-IO).
    pub async fn sync(&self, file: &mut File) {
        if file.api == FileApi::MpiIo {
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
        let node = self.core.model.borrow().platform.node_of(self.world);
        self.core.model.borrow_mut().waiting[self.world] = Wait::Io;
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
            if let Some(inode) = m.by_path.remove(path) {
                storage::delete(&mut m.storage, inode);
            }
            let node = m.platform.node_of(self.world);
            let cost = m.md.delete;
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
    pub fn api(&self) -> FileApi {
        self.api
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
fn open_inode(
    m: &mut Model,
    path: &str,
    mode: OpenMode,
) -> (f64, Result<(usize, usize), FileError>) {
    let (cost, inode) = match (m.by_path.get(path), mode) {
        (Some(&i), _) => (m.md.open, Ok(i)),
        (None, OpenMode::Read) => (
            m.md.open,
            Err(FileError::Call {
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
fn complete(m: &mut Model, e: &mut Engine, comm: &Comm, kind: Kind<'_>, z: Rendezvous) {
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
        Kind::Allreduce(op) => {
            let vals = z.contribs.iter().map(|c| match c {
                Contrib::F64(v) => *v,
                _ => 0.0,
            });
            let v = match op {
                Reduce::Sum => vals.fold(0.0, |a, b| a + b),
                Reduce::Min => vals.fold(f64::INFINITY, f64::min),
                Reduce::Max => vals.fold(f64::NEG_INFINITY, f64::max),
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
    for (i, s) in z.signals.into_iter().enumerate() {
        let at = per_rank.as_ref().map_or(t, |v| v[i]);
        e.fire_at(at, s.expect("every rank arrived"));
    }
}
