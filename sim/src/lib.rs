//! piotwin's twin: a deterministic virtual-time engine and a flow-level model of
//! a parallel storage system, on which benchmark ranks run as async tasks.
//!
//! # What it is for
//!
//! Predicting what a parallel I/O benchmark would measure on a storage system
//! described by a [`Scenario`] (nodes, network, file server, device, metadata
//! and MPI-IO costs): N simulated ranks call MPI-like operations on a [`Rank`]
//! handle and advance a virtual clock; results are bit-for-bit reproducible.
//!
//! # What it is not for
//!
//! It knows nothing of benchmarks (they live in the `piotwin` package and reach
//! the twin through `IoCtx` in `backend::sim`), holds no data bytes (only
//! lengths), and models transfers as fluid flows, not packets. It is not a
//! general-purpose DES library: the executor only runs this crate's tasks.
//!
//! # How it fits together
//!
//! By layer, each using only the ones below it:
//!
//! ```text
//!   ff/       the fast-forward of repetitions: observe, plan, agree, apply
//!             (README.md there: the rule and its error bound)
//!   mpi/      rank tasks' API (rank.rs), communicators and collectives (comm.rs),
//!             MPI-IO files (mpiio.rs), ROMIO's methods executed (romio.rs),
//!             file-system requests (fsio.rs); plans from romio/
//!   storage/  the machine (engine, platform, storage state), requests through
//!             page caches, servers and devices (requests.rs), file systems
//!             behind one trait (fs/), caches, devices
//!   platform  placement, paths, costs        flow: max–min fair rates
//!   engine    executor (polls woken tasks) + clock + (time, seq) event queue
//! ```
//!
//! A rank awaiting a collective registers with a rendezvous; the last rank to
//! arrive computes the result and schedules every rank's completion at the
//! virtual time the cost model gives. An I/O request becomes a latency and then
//! a flow over [client NIC, switch, server NIC, device]; flow rates are shared
//! max–min fairly ([`flow`]) and recomputed once per virtual instant.
//!
//! ```
//! use piotwin_sim::{Scenario, SimOptions, Twin};
//! use piotwin_types::{Access, Api, Coordination, Op, OpenMode, Position};
//! let scn = Scenario::from_str(include_str!("../../scenarios/default.toml"), "default.toml").unwrap();
//! let twin = Twin::new(&scn, 2, SimOptions::seeded(scn.seed)).unwrap();
//! let ranks: Vec<_> = (0..2).map(|r| twin.rank(r)).collect();
//! let tasks = ranks.iter().map(|r| Box::pin(async move {
//!     let mut f = r.open("/out", OpenMode::Create, true, Api::MpiIo).await.unwrap();
//!     let off = r.rank() as u64 * (1 << 20);
//!     r.xfer(&mut f, Op { access: Access::Write, coord: Coordination::Collective, pos: Position::At(off) }, 1 << 20).await.unwrap();
//!     r.close(f).await;
//! }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>).collect();
//! let stats = twin.run(tasks).unwrap();
//! assert!(stats.end_time > 0.0);
//! ```
//!
//! # Determinism rule
//!
//! Same scenario, rank count, seed and program → bit-identical virtual times.
//! Events are ordered by `(time, sequence number)`; tasks are polled in the
//! order they were woken; flows, resources, rendezvous and mailboxes live in
//! vectors and `BTreeMap`s and are visited in a fixed order; randomness (SSD
//! latency jitter) comes only from one `Pcg64` of the storage model, seeded from
//! the run's seed and drawn in event order, so a run replays only as a whole.
//! Nothing reads the wall clock (clippy's `disallowed-methods` bans it in this crate).
//!
//! # Models and their sources
//!
//! * max–min fair sharing by progressive filling: Bertsekas & Gallager, *Data
//!   Networks* (1992) §6.5; weighted as in SimGrid (Velho et al., ACM TOMACS 2013);
//! * collective costs: Thakur, Rabenseifner & Gropp, IJHPCA 19(1), 2005;
//! * client CPU (per-call software costs, page-cache copies, oversubscribed
//!   cores shared by processor sharing: Kleinrock, *Queueing Systems* vol. 2,
//!   1976, ch. 4), see the platform module;
//! * MPI-IO semantics (views, shared file pointers, collective access): the
//!   MPI 3.1 standard ch. 13; ROMIO's two-phase collective buffering and data
//!   sieving ([`romio`]; Thakur, Gropp & Lusk, *Data Sieving and Collective I/O
//!   in ROMIO*, Frontiers 1999).
#![warn(missing_docs, unreachable_pub)]

mod engine;
mod ff;
pub mod flow;
mod mpi;
mod platform;
pub mod romio;
pub mod scenario;
mod storage;
pub mod units;

pub use ff::{FF_EPSILON, FfObservation, FfOffer, FfPlan, FfPointer};
pub use mpi::{File, Pending, Rank, RunStats, SimOptions, Twin, collective_steps};
pub use romio::FsRequest;
pub use scenario::{Placement, Scenario, ScenarioError};

/// An error that stops a simulation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// Ranks wait for each other and no event is pending.
    #[error("deadlock: {} rank(s) blocked: {}", blocked_ranks.len(), waiting_on.join("; "))]
    Deadlock {
        /// World ranks that have not finished, ascending.
        blocked_ranks: Vec<usize>,
        /// What each of them waits on, in the same order.
        waiting_on: Vec<String>,
    },
    /// The simulation cannot be set up as asked.
    #[error("cannot set up the simulation: {0}")]
    Setup(String),
}
