//! The MPI layer of the twin: simulated ranks, their communicators and
//! collectives ([`comm`]), MPI-IO files ([`mpiio`]) and ROMIO's methods
//! ([`romio`]) over the file-system requests of [`fsio`].
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

pub(crate) mod comm;
pub(crate) mod fsio;
pub(crate) mod mpiio;
mod rank;
pub(crate) mod romio;
mod stop;

pub use comm::ceil_log2 as collective_steps;
pub use mpiio::{File, Pending};
pub use rank::Rank;

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use piotwin_types::Hints;
use rustc_hash::FxHashMap;

use crate::SimError;
use crate::engine::{self, Engine, Executor, Signal, Task};
use crate::ff::FfState;
use crate::flow::FlowNet;
use crate::mpi::comm::Comm;
use crate::mpi::comm::Mailbox;
use crate::mpi::comm::Rendezvous;
use crate::mpi::mpiio::SharedPtr;
use crate::mpi::romio::CollIo;
use crate::mpi::romio::PlanMemo;
use crate::platform::Platform;
use crate::romio::FsRequest;
use crate::romio::hints::Effective;
use crate::scenario::{FileSystem, Metadata, MpiIo, Scenario};
use crate::storage::{self, Load, Machine, Storage};
/// Counters of a finished run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunStats {
    /// Events handled (delays, completions, flow starts and ends, stale ones included).
    pub events: u64,
    /// Virtual time when the last rank finished, in seconds.
    pub end_time: f64,
    /// Iterations of repetitions ([`Rank::repeat`]) the fast-forward skipped,
    /// summed over ranks.
    pub skipped: u64,
}

/// How a simulation runs, besides its scenario and rank count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimOptions {
    /// Seeds the model's one RNG (SSD latency jitter, drawn in event order),
    /// so the same seed replays the run.
    pub seed: u64,
    /// Fast-forward repetitions once they are steady ([`Rank::repeat`]);
    /// `false` runs every iteration (the CLI's `--exact`).
    pub fast_forward: bool,
}

impl SimOptions {
    /// Seed `seed`, fast-forward on.
    pub fn seeded(seed: u64) -> SimOptions {
        SimOptions {
            seed,
            fast_forward: true,
        }
    }
}

/// What a blocked rank waits for (reported on deadlock).
#[derive(Clone, Copy)]
pub(crate) enum Wait {
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
    Send {
        to: usize,
    },
    Recv {
        from: usize,
    },
    Io,
    Delay,
}

pub(crate) struct Model {
    /// The machine's platform (shared: fixed once built).
    pub(crate) platform: Rc<Platform>,
    pub(crate) md: Metadata,
    pub(crate) shared_pointer_cost: f64,
    /// `mpiio.open_steps`: message steps of a collective open beyond its one synchronisation.
    pub(crate) open_steps: f64,
    /// `mpiio.offsets_steps`: message steps of the offsets' exchange opening a
    /// collective data call; where given, calls synchronise as ROMIO's do.
    pub(crate) offsets_steps: Option<f64>,
    /// MPI-IO software costs per call (CPU seconds on the calling rank).
    pub(crate) mpiio: MpiIo,
    pub(crate) md_free_at: f64,
    pub(crate) next_comm: u32,
    pub(crate) rendezvous: FxHashMap<(u32, u64), Rendezvous>,
    pub(crate) mail: FxHashMap<(u32, usize, usize), Mailbox>,
    pub(crate) ptrs: Vec<SharedPtr>,
    pub(crate) waiting: Vec<Wait>,
    /// Per world rank: whether it has made an MPI-IO open, and a close, before
    /// (`mpiio.first_open`, `first_close` are charged on the first).
    pub(crate) mpiio_used: Vec<(bool, bool)>,
    pub(crate) fs: FileSystem,
    /// Collective I/O calls in progress, by (file communicator, call number).
    pub(crate) coll: FxHashMap<(u32, u64), Rc<CollIo>>,
    /// Hints resolved at a collective open, by the file's communicator: (given,
    /// in effect, ranks that have not fetched them yet).
    pub(crate) opened_hints: BTreeMap<u32, (Hints, Rc<Effective>, usize)>,
    /// ROMIO byte-range locks held, by file: `[start, end)` and the signal fired on release.
    pub(crate) range_locks: BTreeMap<usize, Vec<(u64, u64, Signal)>>,
    /// File-system requests made by the MPI-IO layer, when recording.
    pub(crate) trace: Option<Vec<FsRequest>>,
    /// The fast-forward's state.
    pub(crate) ff: FfState,
    /// The last collective calls' two-phase plans, newest first (at most
    /// [`PLAN_MEMOS`]): a call whose extents are an earlier call's moved by
    /// one distance takes that plan moved ([`planned`]).
    pub(crate) plans: VecDeque<PlanMemo>,
    /// Stop-request checkpoints, by communicator.
    pub(crate) checkpoints: FxHashMap<u32, stop::Checkpoints>,
}

impl Model {
    pub(crate) fn new_comm(&mut self, members: Vec<usize>) -> Rc<Comm> {
        let wakes = self.platform.wakes(&members);
        let (lat, bw) = self.platform.message_params(&members, &wakes);
        let (allreduce_lat, _) = self
            .platform
            .message_params(&members, &self.platform.allreduce_wakes(&wakes));
        let advance = self.platform.release_advance(&members);
        self.next_comm += 1;
        Rc::new(Comm {
            id: self.next_comm - 1,
            members,
            wakes,
            lat,
            allreduce_lat,
            bw,
            advance,
        })
    }

    /// A metadata operation of `cost` s issued from `node` at `now`: queued at the
    /// server behind earlier ones; returns when its reply is back.
    pub(crate) fn md_op(&mut self, now: f64, node: usize, cost: f64) -> f64 {
        let half = self.platform.server_rtt(node) / 2.0;
        let start = (now + half).max(self.md_free_at);
        self.md_free_at = start + cost;
        self.md_free_at + half
    }
}

/// One simulation's state, by layer: the machine (engine, platform, storage)
/// and the MPI layer's model; rank tasks reach both through it.
pub(crate) struct Sim {
    pub(crate) machine: Machine,
    pub(crate) model: RefCell<Model>,
    /// Tasks started by tasks (nonblocking I/O), picked up by the executor.
    pub(crate) spawned: RefCell<Vec<Task<'static>>>,
    /// Whether repetitions fast-forward ([`SimOptions::fast_forward`]).
    pub(crate) fast_forward: bool,
}

impl std::ops::Deref for Sim {
    type Target = Machine;
    fn deref(&self) -> &Machine {
        &self.machine
    }
}

/// One simulation of a scenario with a fixed number of ranks.
pub struct Twin {
    pub(crate) sim: Rc<Sim>,
    pub(crate) world_comm: Rc<Comm>,
}

impl Twin {
    /// A simulation of `ranks` ranks on `scenario`, run as `options` say.
    pub fn new(scenario: &Scenario, ranks: usize, options: SimOptions) -> Result<Twin, SimError> {
        if ranks == 0 {
            return Err(SimError::Setup(
                "a simulation needs at least one rank".into(),
            ));
        }
        let mut flows = FlowNet::new();
        let mut platform = Platform::build(scenario, ranks, &mut flows).map_err(SimError::Setup)?;
        let storage = Storage::build(scenario, &platform, options.seed, &mut flows);
        platform.add_cpus(&mut flows);
        let platform = Rc::new(platform);
        let mut model = Model {
            platform: platform.clone(),
            md: scenario.metadata.clone(),
            shared_pointer_cost: scenario.mpiio.shared_pointer,
            open_steps: scenario.mpiio.open_steps,
            offsets_steps: scenario.mpiio.offsets_steps,
            mpiio: scenario.mpiio.clone(),
            md_free_at: 0.0,
            next_comm: 0,
            rendezvous: FxHashMap::default(),
            mail: FxHashMap::default(),
            ptrs: Vec::new(),
            waiting: vec![Wait::Running; ranks],
            mpiio_used: vec![(false, false); ranks],
            fs: scenario.filesystem.clone(),
            coll: FxHashMap::default(),
            opened_hints: BTreeMap::new(),
            range_locks: BTreeMap::new(),
            trace: None,
            ff: FfState::new(ranks),
            plans: VecDeque::new(),
            checkpoints: FxHashMap::default(),
        };
        let world = model.new_comm((0..ranks).collect());
        let nodes = platform.node_count();
        let sim = Rc::new(Sim {
            machine: Machine {
                engine: RefCell::new(Engine::new(flows)),
                platform,
                storage: RefCell::new(storage),
                load: RefCell::new(Load::new(ranks)),
                slice_kicks: RefCell::new(vec![None; nodes]),
            },
            model: RefCell::new(model),
            spawned: RefCell::new(Vec::new()),
            fast_forward: options.fast_forward,
        });
        Ok(Twin {
            sim,
            world_comm: world,
        })
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.world_comm.members.len()
    }

    /// Records every file-system request the MPI-IO layer makes from now on
    /// (see [`Twin::trace`]); for tests and request-stream studies.
    pub fn record_requests(&self) {
        self.sim
            .model
            .borrow_mut()
            .trace
            .get_or_insert_with(Vec::new);
    }

    /// The requests recorded since [`Twin::record_requests`], in the order they
    /// were issued (virtual time, then the order ranks ran).
    pub fn trace(&self) -> Vec<FsRequest> {
        self.sim.model.borrow().trace.clone().unwrap_or_default()
    }

    /// Rank `rank`'s handle on the world communicator.
    pub fn rank(&self, rank: usize) -> Rank {
        assert!(rank < self.size(), "rank {rank} out of range");
        Rank::new(self.sim.clone(), rank, self.world_comm.clone(), rank)
    }

    /// Runs one task per rank (index = world rank) until all finish.
    /// Errors with [`SimError::Deadlock`] when ranks wait and nothing can happen.
    pub fn run<'a>(
        &self,
        tasks: Vec<Pin<Box<dyn Future<Output = ()> + 'a>>>,
    ) -> Result<RunStats, SimError> {
        assert_eq!(tasks.len(), self.size(), "one task per rank");
        let mut exec = Executor::new(tasks);
        let sim = &*self.sim;
        let (nodes, servers) = {
            let s = sim.storage.borrow();
            (s.cached_nodes(), s.write_back_servers())
        };
        for n in nodes {
            exec.add(Box::pin(storage::node_flusher(sim, n)), true);
        }
        for s in servers {
            exec.add(Box::pin(storage::server_flusher(sim, s)), true);
        }
        for n in sim.platform.sliced_nodes() {
            exec.add(Box::pin(storage::slice_daemon(sim, n)), true);
        }
        match engine::run(&sim.engine, &mut exec, &sim.spawned) {
            Ok(()) => {
                let e = self.sim.engine.borrow();
                Ok(RunStats {
                    events: e.events,
                    end_time: e.now(),
                    skipped: self.sim.model.borrow().ff.skipped,
                })
            }
            Err(blocked) => {
                Err(self.deadlock(blocked.into_iter().filter(|&r| r < self.size()).collect()))
            }
        }
    }

    pub(crate) fn deadlock(&self, blocked_ranks: Vec<usize>) -> SimError {
        let m = self.sim.model.borrow();
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
                Wait::Send { to } => {
                    format!("rank {r}: send to world rank {to}, no matching receive")
                }
                Wait::Recv { from } => {
                    format!("rank {r}: receive from world rank {from}, no matching send")
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

pub(crate) use crate::storage::{cpu, delay};
