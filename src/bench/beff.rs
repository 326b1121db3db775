//! b_eff, the effective communication bandwidth (Rabenseifner & Koniges): every
//! process sends to its neighbours at the same time, over 21 message sizes, six
//! ring patterns and six random ones, by three methods (`MPI_Sendrecv`,
//! `MPI_Alltoallv`, `MPI_Irecv`/`MPI_Isend`/`MPI_Waitall`), each measurement
//! repeated; one number averages it all:
//!
//! ```text
//! b(pat, L, mthd, rep) = L · 2·n · looplength / (max over processes of the loop's time)
//! b_pat               = Σ_L max_mthd max_rep b(pat, L, mthd, rep) / 21
//! b_eff               = logavg( logavg_rings(b_pat), logavg_random(b_pat) )
//! ```
//!
//! Written once against [`IoCtx`]: real runs measure the MPI library and the
//! network, the twin its network model (its flows share links max–min fairly).
//!
//! What it is for: characterising the network the I/O model rests on, and
//! comparing twin and machine under many simultaneous messages. What it is not:
//! b_eff 3.x's analysis patterns (bisections, Cartesian exchanges, the worst
//! cycle), its gnuplot and LaTeX files, nor its shortened two largest sizes.
//!
//! Modules: [`params`] (the options, the 21 sizes, the loop-length rule),
//! [`patterns`] (rings and random rings), `program` (the measurement),
//! `output` (the original's table, the report, the plot).

pub mod cli;
pub mod params;
pub mod patterns;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::common::options::{OptionError, opt_err};
use crate::ctx::{IoBuf, IoCtx, RankProgram, ReduceOp, Repeat};
use crate::report::{Mode, RunReport, Table};

mod output;
mod program;
#[cfg(test)]
mod tests;

pub use params::*;
pub use patterns::*;
pub use program::*;
