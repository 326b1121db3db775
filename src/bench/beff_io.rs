//! b_eff_io — the effective I/O bandwidth benchmark (Rabenseifner & Koniges,
//! "Effective File-I/O Bandwidth Benchmark", Euro-Par 2000; public release 2.1),
//! written once against [`IoCtx`] for both modes.
//!
//! What it is: one time-driven schedule of 43 access patterns in 5 types (scatter,
//! shared pointer, separate files, segmented, segmented collective), run for
//! write, rewrite and read on each partition of the processes; one number, the
//! system's b_eff_io, plus the release's summary table. What it is not: a tuning
//! tool for one pattern (use `ior`), or a metadata benchmark.
//!
//! Layout:
//! * [`schedule`] — the pattern table as data, Lmax, partitions, Tn/ΣU/Tp, rep3/Lseg;
//! * [`formulas`] — per-pattern/type/access/partition bandwidths, both b_eff_io
//!   definitions, validity;
//! * [`hintfile`] — the `-i` per-pattern hints file;
//! * [`output`] — analysis, the summary table, the protocol, the [`RunReport`], plots;
//! * this file — options, the resolved [`Config`], and the per-rank program [`BeffIo`].
//!
//! Time-driven repetition goes through [`IoCtx::repeat`]: real mode runs it
//! literally; the twin may fast-forward it. Each repetition body issues exactly
//! one `xfer` (fill before and verify after are no-ops in the twin) at an offset
//! that is an affine function of the repetition number, and calls nothing else on
//! the context — no clock, no collective — so its steady state is visible to the
//! back end.
//!
//! Buffers and failures follow the release where it says something, and keep
//! results where it does not. The two buffers are release 2.1's (`wr_buf`,
//! `rd_buf`: Lmax each, allocated once, placed where glibc puts them; see
//! `program::Buffers`). A pattern whose calls fail counts its errors and shows no
//! bandwidth. The shared file pointer is tried on a small file before type 1, because
//! ROMIO aborts when it cannot create its hidden file. An error outside the
//! repetitions stops the run: every rank agrees through the world's split, keeps
//! what finished (`Measurements::stopped`), and removes its scratch files.
//!
//! [`RunReport`]: crate::report::RunReport

pub mod cli;
pub mod formulas;
pub mod hintfile;
pub mod output;
pub mod schedule;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Hints, Order, View};
use serde::Serialize;

use crate::ctx::{
    Access, Api, Coordination, IoBuf, IoCtx, IoError, Op, OpenMode, OpenOptions, RankProgram,
    ReduceOp, Repeat, Scope,
};
use hintfile::PatternHints;
use schedule::{ETYPE_BYTES, Pass, PatternDef, PatternType, SegmentPlan};

mod params;
mod program;
#[cfg(test)]
mod tests;

pub use params::*;
pub use program::*;
