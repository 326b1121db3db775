//! FTIO: the out-of-core 2-D FFT I/O benchmark and its **I/O fraction**.
//!
//! Source: R. Fagerstrom and B. C. Kuszmaul, "FTIO", NAS technical report,
//! NASA Ames Research Center, 1999 (no public code of FTIO exists: the report is
//! the specification; piotwin's reading of it is `shared/spec/ftio.md`).
//!
//! FTIO measures I/O *relative to* computation and communication while c
//! processes compute the 2-D DFT of an N×N complex matrix that lives on disk
//! and is read, transformed and written back in pieces. Its headline is the
//! **I/O fraction** = time spent in I/O / total time; it also reports Mflop/s
//! with the standard count 5·N²·log2(N²) for an N×N complex FFT.
//!
//! # The report's terms
//!
//! * **N = I²·c**, for an input parameter I (here `-i`) and c processes; valid
//!   only when c divides I² (c = 1 is allowed here; the original needs c > 1).
//!   The report suggests the lowest valid I ≥ √c + 1.
//! * **Square**: the matrix is cut into c×c Squares of I²×I² elements; process
//!   p owns **Square column p**, the Squares `(q, p)`, `q = 0..c`.
//! * **Mini-Square**: each Square is tiled by I×I Mini-Squares of I×I elements,
//!   the unit of I/O of the local transpose. Per process the transpose touches
//!   c·I² Mini-Squares.
//! * **Diagonals**: the schedule of the Square exchange. On diagonal d
//!   (`0..c`) the Square pairs `(p, q)` with `p + q ≡ d (mod c)` are swapped
//!   with `MPI_Sendrecv_replace`; a Square on its own diagonal stays. Every
//!   off-diagonal pair is swapped exactly once ([`diagonal_partner`]).
//!
//! # The algorithm as implemented
//!
//! The 2-D DFT is separable: a 1-D DFT along one index, a transposition, and a
//! 1-D DFT along the (new) same index gives the 2-D DFT **transposed** (the
//! output convention of FFTW's `FFTW_MPI_TRANSPOSED_OUT`; verification checks
//! it). Because process p owns whole matrix columns (its Square column), every
//! length-N line a DFT series transforms lies inside one process: no 1-D FFT
//! spans processes and no distributed-FFT communication is needed; all the
//! communication is the Square exchange. Phases, timed with [`IoCtx::wtime`]
//! into I/O, compute and communication buckets, each ended by a collective
//! agreement on success (an `allreduce`, which synchronises like a barrier):
//!
//! 1. **init** — open the file, compute the input ([`Signal`]) band by band
//!    and write it; charged as a memory-bound fill (`Kernel::memcpy`).
//! 2. **dft1** — for each band b (`0..I`): read band `(q, b)` of every Square
//!    (c reads of I³ elements), FFT the I columns of length N (rustfft;
//!    `Kernel::fft(N, I)`), write the c bands back.
//! 3. **transpose_local** — every Square transposed in place, Mini-Square by
//!    Mini-Square: read a Mini-Square and its conjugate, transpose both, write
//!    them swapped; diagonal Mini-Squares in place.
//! 4. **transpose_exchange** — for each diagonal d: read Square `(q, p)`,
//!    `sendrecv_replace` with q, write what arrived in the same place.
//! 5. **dft2** — as dft1, on the transposed matrix; then close the file.
//! 6. Verification (not timed): reopen, read every band back and compare every
//!    element with the closed form; report the maximum relative error and the
//!    first mismatch. In the twin buffers hold no data, so nothing is compared.
//!
//! Out of core: a rank holds at most one band set (I·N elements) or one Square
//! (I⁴ elements, only when c > 1) in memory, never its whole Square column.
//! The file layout is in [`layout`].
//!
//! Errors: a rank whose call fails stops touching the file for the rest of the
//! phase (in the Square exchange it keeps calling `sendrecv_replace`, so its
//! partners do not wait forever); at the phase's end all ranks agree, every rank
//! learns the lowest failing rank's message ([`FtioOutcome::failure`]), closes
//! the file and removes it (unless `--keep`). A failed **collective** call (the
//! open of the shared file) is assumed to fail on every rank, as MPI-IO's do.
//!
//! What it is not: a fast 2-D FFT (the I/O pattern is the point), and not a
//! reproduction of the original's start-up effects.

pub mod cli;
pub mod layout;
mod output;
mod signal;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use piotwin_types::Hints;

use crate::bench::common::agree::first_failure;

use crate::ctx::{
    Access, Api, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode, OpenOptions, RankProgram, Scope,
};

pub use layout::{
    ELEM_BYTES, Geometry, LineFft, diagonal_partner, fft_band, mini_square_pairs, transpose_mini,
};
pub use output::{build_report, flop_count, nas_block};
pub use signal::{Mismatch, Signal, Verification, WAVE, check_band, fill_band};

mod params;
mod program;

pub use params::*;
pub use program::*;
