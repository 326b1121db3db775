//! The data layout and the call sequence of MADbench2's I/O mode, as data:
//! which slots each rank reads and writes, in which order, with which
//! busy-work between, for S, W and C. The program only walks these steps.

use crate::ctx::Access;

/// Bytes of one matrix element (a double).
pub const ELEM_BYTES: u64 = 8;

/// ScaLAPACK's `NUMROC` with the first block on process 0 (MADbench2's I/O-mode
/// definition): how many of `n` rows (or columns), dealt in blocks of `nb` to
/// `nprocs` processes round robin, process `iproc` holds.
pub fn numroc(n: u64, nb: u64, iproc: u64, nprocs: u64) -> u64 {
    let blocks = n / nb;
    let (whole, extra) = (blocks / nprocs, blocks % nprocs);
    let mut count = whole * nb;
    if iproc < extra {
        count += nb;
    } else if iproc == extra {
        count += n % nb;
    }
    count
}

/// The two gangs of the original: gang 1 is every process; gang 2 is one of
/// `NO_GANG` equal groups of consecutive ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gang {
    /// All P processes (`gang1`, `MPI_COMM_WORLD`).
    All,
    /// This rank's group of P/G processes (`gang2`).
    Own,
}

/// The two distributed matrices: `matrix1` is spread over all P processes (the
/// dSdC matrices S writes and W reads), `matrix2` over one gang (the W
/// matrices W writes and C reads). With G = 1 they have the same shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Matrix {
    /// `pp_matrix1`: M1 doubles per rank, slots of `offcount1`.
    M1,
    /// `pp_matrix2`: M2 doubles per rank, slots of `offcount2` = G · `offcount1`.
    M2,
}

/// One step of a function, in the original's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `busy_work(&no_pix, sexp, gang)`: a barrier of the gang, the multiply-add
    /// loops, a barrier.
    BusyWork {
        /// The scaling exponent the replaced call had (2, or 3 for `pdgemm`).
        sexp: u32,
        /// The gang it runs on.
        gang: Gang,
    },
    /// `io_distmatrix`: this rank's piece of `matrix` read from or written to
    /// `slot`, with the gang's barriers and RMOD/WMOD token around it;
    /// blocking (SYNC) or posted (ASYNC). A write first fills its buffer (the
    /// original's `memcpy` into `wbuffer`); a blocking read is checked after.
    Io {
        /// Read or write.
        access: Access,
        /// Which matrix (its size and slot spacing).
        matrix: Matrix,
        /// The slot, in units of the matrix's `offcount`.
        slot: u64,
        /// The gang whose barriers and token order it.
        gang: Gang,
    },
    /// `io_resync`: wait for the posted read or write (ASYNC only); a read is
    /// then checked.
    Resync(Access),
}

/// S, W and C, the three functions of the I/O mode (D is skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum Function {
    /// `build_S`: B busy-works, each followed by the write of a dSdC matrix.
    S,
    /// `calc_W`: reads the dSdC matrices, multiplies (busy-work), writes W.
    W,
    /// `calc_dC`: reads the W matrices back with busy-work between.
    C,
}

impl Function {
    /// S, W, C in the order they run.
    pub const ALL: [Function; 3] = [Function::S, Function::W, Function::C];

    /// The name the original prints (`S`, `W`, `C`).
    pub fn name(self) -> &'static str {
        match self {
            Function::S => "S",
            Function::W => "W",
            Function::C => "C",
        }
    }

    /// The matrix the function reads, if any.
    pub fn reads(self) -> Option<Matrix> {
        match self {
            Function::S => None,
            Function::W => Some(Matrix::M1),
            Function::C => Some(Matrix::M2),
        }
    }

    /// The matrix the function writes, if any.
    pub fn writes(self) -> Option<Matrix> {
        match self {
            Function::S => Some(Matrix::M1),
            Function::W => Some(Matrix::M2),
            Function::C => None,
        }
    }

    /// The function's steps for B = `no_bin`, G = `no_gang`, and nonblocking
    /// I/O (`asynchronous`, IOMODE = ASYNC) or not.
    pub fn steps(self, no_bin: u64, no_gang: u64, asynchronous: bool) -> Vec<Step> {
        match self {
            Function::S => s_steps(no_bin, asynchronous),
            Function::W => w_steps(no_bin, no_gang, asynchronous),
            Function::C => c_steps(no_bin, no_gang, asynchronous),
        }
    }
}

const fn io(access: Access, matrix: Matrix, slot: u64, gang: Gang) -> Step {
    Step::Io {
        access,
        matrix,
        slot,
        gang,
    }
}

/// `build_S`: for b = 0..=B, busy-work (b < B), wait for the last write
/// (ASYNC, b > 0), write dSdC_b to slot b (b < B).
fn s_steps(no_bin: u64, asynchronous: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    for b in 0..=no_bin {
        if b < no_bin {
            steps.push(Step::BusyWork {
                sexp: 2,
                gang: Gang::All,
            });
        }
        if b > 0 && asynchronous {
            steps.push(Step::Resync(Access::Write));
        }
        if b < no_bin {
            steps.push(io(Access::Write, Matrix::M1, b, Gang::All));
        }
    }
    steps
}

/// `calc_W`, b = 0, G, 2G, …, B + G: read dSdC_b (G = 1), or the G matrices
/// b..b+G each followed by the busy-work of their remap (G > 1); then, for
/// b = G..=B, the `pdgemm` busy-work on the gang and the write of W to the
/// gang's slot (b − G)/G, which overwrites dSdC matrices already read.
fn w_steps(no_bin: u64, no_gang: u64, asynchronous: bool) -> Vec<Step> {
    let (b_max, g_max) = (no_bin, no_gang);
    let mut steps = Vec::new();
    let mut b = 0;
    while b <= b_max + g_max {
        if b > 0 && b <= b_max && g_max == 1 && asynchronous {
            steps.push(Step::Resync(Access::Read));
        }
        if b < b_max {
            if g_max == 1 {
                steps.push(io(Access::Read, Matrix::M1, b, Gang::All));
            } else {
                for g in 0..=g_max {
                    if g > 0 && asynchronous {
                        steps.push(Step::Resync(Access::Read));
                    }
                    if g < g_max {
                        steps.push(io(Access::Read, Matrix::M1, b + g, Gang::All));
                    }
                    if g > 0 {
                        steps.push(Step::BusyWork {
                            sexp: 2,
                            gang: Gang::All,
                        });
                    }
                }
            }
        }
        if b > 0 && b <= b_max {
            steps.push(Step::BusyWork {
                sexp: 3,
                gang: Gang::Own,
            });
        }
        if b > g_max && asynchronous {
            steps.push(Step::Resync(Access::Write));
        }
        if b > 0 && b <= b_max {
            steps.push(io(
                Access::Write,
                Matrix::M2,
                (b - g_max) / g_max,
                Gang::Own,
            ));
        }
        b += g_max;
    }
    steps
}

/// `calc_dC` in I/O mode: of its B²/G + 1 iterations only those on the
/// diagonal (b = q·B + G·q, q = 0..B/G) and the last do anything: read the
/// gang's W matrix q, and busy-work on the previous one (the read of q + 1 is
/// issued before the busy-work on q, so ASYNC overlaps them).
fn c_steps(no_bin: u64, no_gang: u64, asynchronous: bool) -> Vec<Step> {
    let reads = no_bin / no_gang;
    let mut steps = Vec::new();
    for q in 0..=reads {
        if q > 0 && asynchronous {
            steps.push(Step::Resync(Access::Read));
        }
        if q < reads {
            steps.push(io(Access::Read, Matrix::M2, q, Gang::Own));
        }
        if q > 0 {
            steps.push(Step::BusyWork {
                sexp: 2,
                gang: Gang::All,
            });
        }
    }
    steps
}
