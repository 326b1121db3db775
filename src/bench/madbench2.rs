//! MADbench2 in I/O mode: the out-of-core matrix workload of a cosmic
//! microwave background power-spectrum code, with its computation replaced by
//! busy-work.
//!
//! Source: J. Borrill, L. Oliker, J. Shalf, H. Shan, "Investigation of leading
//! HPC I/O performance using a scientific-application derived benchmark", SC07,
//! and MADbench2.c (Oct 2006). piotwin's reading of it is
//! `shared/spec/madbench2.md`; the original's code stays outside the repository.
//!
//! # The original's terms
//!
//! * **NO_PIX**, **NO_BIN** (B), **NO_GANG** (G), **SBLOCKSIZE**, **FBLOCKSIZE**,
//!   **RMOD**, **WMOD**: the seven arguments; **IOMETHOD**, **IOMODE**,
//!   **FILETYPE**, **BWEXP**, **REMAP**: its environment (options here).
//! * **gang 1** is all P processes on a √P × √P grid; **gang 2** is one of G
//!   groups of P/G consecutive ranks on its own square grid.
//! * **matrix1** (M1 doubles per rank: NUMROC rows × NUMROC columns of the
//!   NO_PIX × NO_PIX matrix, block-cyclic in SBLOCKSIZE blocks over gang 1) and
//!   **matrix2** (M2, the same over gang 2).
//! * **offcount1** = ⌈max(G·M1, M2) / (G·fb)⌉ · fb doubles (fb = FBLOCKSIZE/8,
//!   M1 and M2 of rank 0), **offcount2** = G · offcount1: the slot spacing.
//!   Slot k of a matrix lies at `k · offcount · 8`; in the SHARED file rank r's
//!   slots start at `r · NO_BIN · offcount1 · 8` ([`Madbench2Plan::offset`]).
//!
//! # What runs ([`layout`])
//!
//! * **S** (`build_S`): B × (busy-work, write of M1 to slot b).
//! * **W** (`calc_W`): G = 1: r0, r1, w0, r2, w1, …, r(B−1), w(B−2), w(B−1),
//!   each write overwriting a slot already read, with the `pdgemm` busy-work
//!   (exponent 3, on the gang) before each write; G > 1: each outer step
//!   reads G slots of M1 (a remap busy-work after each) and the gang writes one
//!   M2 at byte `(b − G) · offcount1 · 8`.
//! * **C** (`calc_dC`): B/G reads of M2 from W's slots, the busy-work on each
//!   after the next read is issued.
//! * **busy-work**: `dcount^sexp / (gang size · 2 · SBLOCKSIZE)` loops of
//!   SBLOCKSIZE multiply-adds (dcount = NO_PIX and sexp the replaced call's
//!   exponent, or dcount = NO_PIX² and sexp = BWEXP); real runs execute the
//!   loop, the twin charges its flops at the scenario's `flops` rate.
//! * **RMOD/WMOD**: inside a gang, each group of `mod` consecutive ranks passes
//!   a token (`MPI_Recv` from the rank before, the transfer, `MPI_Send` to the
//!   next): gang size / mod ranks transfer at once.
//! * **ASYNC**: `MPI_File_iread`/`iwrite`, waited for (`io_resync`, between two
//!   barriers of all ranks) just before the buffer is needed again.
//!
//! Timers, as the original's `myt`: `_cc` the time outside busy-work and I/O,
//! `_bw` busy-work, `_r` and `_w` I/O (each ends at the gang's barrier after the
//! call, so they include waiting for the slowest rank and the token), `_total`
//! their sum per rank; reported as mean [min:max] over ranks.
//!
//! # Verification
//!
//! Where the original copies a matrix into its write buffer, piotwin fills the
//! buffer with words unique to the matrix, rank, slot and element
//! ([`pattern_word`]); where it copies a read buffer out, piotwin compares every
//! word with what was written there. Both take the original copy's place in
//! `_cc` (the twin charges them at the `pattern` rate). In the twin buffers hold
//! no data: nothing is compared, and the report says "not performed".
//!
//! Errors: a rank whose call fails skips its later I/O and busy-work in the
//! function but keeps every barrier and token; at the function's end all ranks
//! agree on the first failure and stop. A stop request (SIGINT, SIGTERM) does
//! the same; the functions every rank completed are reported.
//!
//! What it is not: MADbench2's non-I/O mode (ScaLAPACK's computation, D) or
//! IOMODE = NONE.

pub mod cli;
pub mod layout;
mod output;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use piotwin_types::Hints;

use crate::bench::common::agree::{first_failure, lowest_rank};
use crate::ctx::{
    Access, Api, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode, OpenOptions, RankProgram, Scope,
};

pub use layout::{ELEM_BYTES, Function, Gang, Matrix, Step, numroc};
pub use output::{HEADLINE, build_report, chart, original_text, summary_text};

mod params;
mod program;

pub use params::*;
pub use program::*;
