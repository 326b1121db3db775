//! The IOR-style probe: library-level bandwidth of one access pattern, written
//! once against [`IoCtx`] (spec: `shared/spec/probes.md`).
//!
//! What it is for: the bandwidth of N ranks writing and reading `segments` blocks
//! of `block` bytes each, in transfers of `transfer` bytes, to one shared file or
//! one file per process, through POSIX or MPI-IO (independent or collective) —
//! IOR's options, names and output, so IOR users feel at home. What it is not: a
//! re-implementation of every IOR option (no stonewalling, no HDF5/NCMPI back
//! ends, no memory-per-node checks).
//!
//! Layout (IOR's): rank `r` of `N` owns, in segment `s`, the block that starts at
//! `s·(N·b) + r·b` of a shared file, or at `s·b` of its own file (`-F`); transfer
//! `j` of a block is at `j·t` inside it. `-z` visits a rank's transfers in a
//! seeded pseudo-random order ([`permute`], key `seed + rank` as IOR's
//! `seed + pretendRank`). `-C` makes rank `r` read back what rank
//! `(r + tasks_per_node) mod N` wrote — IOR's task reordering, which shifts by one
//! node's worth of ranks so that no rank reads from its own node's page cache
//! (`--tasks-per-node`, default 1, says how many ranks share a node).
//!
//! Timing per repetition and access (IOR's `timer[0..5]`): a barrier, then on each
//! rank `t0` open `t1` transfers (+ fsync with `-e`) `t2` close `t3` in
//! [`IoCtx::wtime`]. Bandwidth = aggregate bytes / (max `t3` − min `t0`) over
//! ranks; open, wr/rd and close times are the maxima over ranks; IOPS = all
//! ranks' transfers / total time; latency = the mean over ranks of (wr/rd time /
//! transfers). MiB = 2^20 bytes, KiB = 2^10 bytes.
//!
//! Data: every byte written is a function of (file, file offset, seed) — see
//! [`fill`] — so read-back under `-C` can be checked against the file's contents,
//! not the reader's. Where the back end keeps data (real mode) every byte read is
//! verified ([`verify`]); in the twin [`IoBuf::bytes`] is `None` and filling and
//! verifying are no-ops, without this code knowing the mode.
//!
//! Errors: a rank whose call fails stops its access (still closing what it
//! opened), and all ranks agree after the access (one reduction) to stop the run;
//! the repetitions completed so far are kept. A failed **collective** call is
//! assumed to fail on every rank, as MPI-IO errors on collective calls do.

pub mod cli;

use std::fmt::Write as _;

use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode, OpenOptions,
    RankProgram, ReduceOp, Scope,
};
use crate::report::{Mode, RunReport, Table, headline_among};

use super::common::agree::first_mismatch;
use super::common::options::{OptionError, format_size, opt_err};
use super::common::pattern::{Mismatch, fill, permute, verify};
use super::common::stats::stats;

/// The headline metrics of IOR, most important first.
pub const HEADLINE: &[&str] = &["write_mib_s", "read_mib_s"];

/// 2^20 bytes.
const MIB: f64 = 1_048_576.0;

mod ior_json;
mod output;
mod params;
mod program;
#[cfg(test)]
mod tests;

pub use ior_json::human_readable;
pub use params::*;
pub use program::*;
