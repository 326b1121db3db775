//! Point-to-point probe: the time of an `MPI_Sendrecv_replace` exchange between
//! paired ranks over message sizes, and the time of a barrier — written once
//! against [`IoCtx`], so the twin's network model and the real MPI library are
//! measured by the same code.
//!
//! What it is for: calibrating the twin's message latency and bandwidth
//! (`time = latency + bytes / bandwidth`, fitted by `piotwin calibrate`) and the
//! cost of synchronising ranks, which grows sharply once there are more ranks
//! than cores (MPICH busy-polls, so a rank waiting in a barrier must be scheduled
//! before it sees its partner's message); with `--two-phase`, the time of
//! ROMIO's two-phase collective I/O over call sizes (the exchange between ranks
//! and aggregators, which an oversubscribed node slows far more than it slows
//! point-to-point messages). What it is not: a full IMB/OSU suite (no one-sided,
//! no collectives besides the barrier, no non-blocking overlap).
//!
//! Method: ranks are paired `r ↔ r xor 1` (with an odd count the last rank only
//! takes part in the barriers). For each size, after a barrier and one untimed
//! warm-up exchange, every paired rank does `k` exchanges of its buffer with its
//! partner; one exchange's time is `elapsed / k` on that rank, and the row
//! reports the maximum over ranks. Both directions move at once, so an exchange
//! costs one one-way message time, not a round trip. `k` is
//! `clamp(bytes_per_size / size, 4, iterations)`, so that small messages repeat
//! often and large ones move about `bytes_per_size` bytes. The barrier row is
//! `barriers` barriers timed the same way. Where the back end keeps data (real
//! mode) each rank fills its buffer with its own pattern and checks after the
//! exchanges that it holds its own (even `k`) or its partner's (odd `k`) pattern.
//! The `barrier_exit` rows: every rank's exit time of each timed barrier (one clock
//! on one node; the first 100 barriers), sorted per barrier; row k is the mean time after the first
//! rank out at which the (k + 1)-th left. With more ranks than cores the
//! ranks polling on a core see the last message at once and the others at
//! their next time slice (`nodes.release_stagger`). The `allreduce` row is
//! `barriers` all-reduces of one value (the sum of the rank numbers, checked),
//! timed as the barriers: MPI's all-reduce is a collective of its own, and
//! with more ranks than cores it waits on fewer wake-ups than the barrier
//! (`nodes.allreduce_wake`).
//!
//! The polled test (after the barriers, with `polled` = A > 0): the first A
//! ranks, in a communicator of their own, time per copy size copies of a
//! buffer, then steps of a copy and a barrier among them, while the others
//! wait in the world's barrier; with more ranks than cores it shows whether
//! waiting ranks take their share of the cores and what a barrier among no
//! more ranks than cores costs meanwhile (`nodes.waiting_ranks`,
//! `nodes.polled_wakeup`). The steps come in episodes of 5, each after the
//! taking part slept in a sync of a small file of their own (untimed): a rank
//! that never sleeps keeps the core it was given, and two stepping ranks that
//! share one core wait a time slice at every barrier (8 ms here) where two on
//! cores of their own do not, so one job would measure one placement; the
//! episodes sample the placements an application whose ranks sleep in I/O
//! goes through. Real runs check the last copy.
//!
//! The two-phase test (after the polled one): one shared file seen by every rank
//! through an interleaved view (rank r's blocks of `two_phase_block` bytes at
//! `(r + k·ranks)·block`), so that ROMIO's interleave test picks collective
//! buffering; per size, 3 to 10 `write_at_all` calls of that many bytes per
//! rank, then `read_at_all` of the same bytes, each call after a barrier. A
//! row's time is the mean call time, maximum over ranks; its bytes those of one
//! call over all ranks. Real runs check the data read back.

pub mod cli;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::common::options::{OptionError, opt_err};
use crate::ctx::{IoBuf, IoCtx, Kernel, OpenOptions, RankProgram, ReduceOp};
use crate::report::{Mode, RunReport, Table, default_headline};
use piotwin_types::{Access, Api, Coordination, Datatype, Op, OpenMode, Position, Scope, View};

mod output;
mod params;
mod program;
#[cfg(test)]
mod tests;

pub use params::*;
pub use program::*;
