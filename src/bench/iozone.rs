//! The IOzone-style probe: file-system level throughput of one process (or one
//! per rank, IOzone's throughput mode) over file sizes × record sizes × access
//! orders, written once against [`IoCtx`] (spec: `shared/spec/probes.md`).
//!
//! What it is for: IOzone's table — kB/s per (file size, record size, test) for
//! write, rewrite, read, re-read, random read, random write and strided read —
//! with IOzone's option names, in both modes; and the calibration inputs it
//! yields: bandwidth against file size across the page cache (the cache knee and
//! the memory and device plateaus), per-record cost per access order, and the
//! **sync cost**: every write pass ends with an `fsync` whose time is reported
//! with the bytes dirtied since the last one ([`Row::fsync_s`],
//! [`Row::dirty_bytes`]). What it is not: all of IOzone (no mmap, `fwrite`/
//! `fread`, backward or record-rewrite tests, no O_DIRECT, no Excel output).
//!
//! Tests (IOzone's `-i` numbers), each pass over a file of `s` bytes in records
//! of `r` bytes (`n = s / r` records):
//!
//! | `-i` | passes | record order |
//! |---|---|---|
//! | 0 | write (new file), rewrite | `0, 1, …, n−1` |
//! | 1 | read, re-read | `0, 1, …, n−1` |
//! | 2 | random read, random write | a seeded permutation of `0..n` ([`permute`]) |
//! | 5 | strided read (`-j k`) | `0, k, 2k, …`, then `1, k+1, …`: every record once |
//!
//! Test 0 always runs first: it creates the file the others read.
//!
//! Timing per pass (IOzone's: open and close are outside the time): open, with
//! `-I` drop the file's cached pages ([`IoCtx::drop_cache`]), barrier, `t0`, the
//! records, with `-e` the `fsync`, `t1`; a write pass without `-e` then times its
//! `fsync` on its own. Under N ranks each rank has its own file (`path.rank`) and
//! a pass's time is latest `t1` − earliest `t0`: kB/s are aggregate, as IOzone's
//! "Children see throughput". kB = 1024 bytes, as in IOzone.
//!
//! Data ([`Pattern`]): every [`BLOCK`]-byte block of rank `k`'s file is an 8-byte
//! stamp (a key of (`seed`, `k`) XOR the block number) then a pseudo-random body
//! of (`seed`, `k`) that is the same in every block. A write pass fills its record
//! buffer's bodies once, before the clock starts, and stamps each record (one
//! store per block); a read checks every stamp of every record (a wrong offset,
//! rank, seed or stale data shows) and compares every [`FULL_CHECK`]-th record
//! byte for byte. Checking so costs about 2 % of a memory copy and keeps the
//! timed I/O back to back — full inline verification would give the kernel's
//! read-ahead idle time to fill and overstate cold reads. Where the back end
//! keeps no data (the twin) [`IoBuf::bytes`] is `None` and all of this does
//! nothing, without this code knowing the mode.

pub mod cli;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::common::agree::{first_failure, first_mismatch};
use crate::bench::common::options::{OptionError, SizeError, format_size, parse_size};
use crate::bench::common::pattern::{Mismatch, fill, permute};
use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, Op, OpenMode, OpenOptions, RankProgram,
    ReduceOp, Scope,
};
use crate::report::{Mode, RunReport, Table, default_headline};

mod output;
mod params;
mod program;
#[cfg(test)]
mod tests;

pub use params::*;
pub use program::*;
