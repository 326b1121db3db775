//! The MPI and I/O vocabulary every layer speaks: what an access is (read or
//! write, independent or collective, at an offset or the shared pointer), how a
//! file is opened, reductions, kernel kinds, a repetition's policy, and the one
//! typed I/O error. Benchmarks (`piotwin`'s `IoCtx`), the twin and the real back
//! end all use these same values: no layer translates one enum into another.

/// Errors a back end reports to a benchmark.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IoError {
    /// An I/O call failed: the operation, the file and the back end's message
    /// (in real mode, MPI's error string).
    #[error("{op} on `{path}`: {message}")]
    Call {
        /// The call, e.g. `MPI_File_open` or `write_at_all`.
        op: String,
        /// The file it was applied to.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A request the benchmark made is not allowed (e.g. a view on a POSIX file).
    #[error("{0}")]
    Invalid(String),
}

/// Result of a back-end call.
pub type IoResult<T> = Result<T, IoError>;

/// Read or write.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Access {
    /// Move data from memory to the file.
    Write,
    /// Move data from the file to memory.
    Read,
}

/// Whether all ranks of the file's communicator take part in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Coordination {
    /// Each rank on its own (`MPI_File_write_at`, `MPI_File_write_shared`).
    Independent,
    /// Every rank of the file's communicator calls (`MPI_File_write_at_all`,
    /// `MPI_File_write_ordered`): collective buffering applies.
    Collective,
}

/// Where in the file an access starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Position {
    /// An explicit offset, in etypes of the current view (bytes with the default view).
    At(u64),
    /// The shared file pointer: `Independent` is `MPI_File_write_shared`,
    /// `Collective` is `MPI_File_write_ordered` (rank order).
    SharedPointer,
}

/// One data-path operation: the whole of a data-path call's "what".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Op {
    /// Read or write.
    pub access: Access,
    /// Independent or collective.
    pub coord: Coordination,
    /// Explicit offset or shared file pointer.
    pub pos: Position,
}

impl Op {
    /// `MPI_File_write_at` / `pwrite`.
    pub fn write_at(offset: u64) -> Op {
        Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(offset),
        }
    }
    /// `MPI_File_read_at` / `pread`.
    pub fn read_at(offset: u64) -> Op {
        Op {
            access: Access::Read,
            coord: Coordination::Independent,
            pos: Position::At(offset),
        }
    }
    /// `MPI_File_write_at_all`.
    pub fn write_at_all(offset: u64) -> Op {
        Op {
            access: Access::Write,
            coord: Coordination::Collective,
            pos: Position::At(offset),
        }
    }
    /// `MPI_File_read_at_all`.
    pub fn read_at_all(offset: u64) -> Op {
        Op {
            access: Access::Read,
            coord: Coordination::Collective,
            pos: Position::At(offset),
        }
    }
    /// `MPI_File_write_ordered`.
    pub fn write_ordered() -> Op {
        Op {
            access: Access::Write,
            coord: Coordination::Collective,
            pos: Position::SharedPointer,
        }
    }
    /// `MPI_File_read_ordered`.
    pub fn read_ordered() -> Op {
        Op {
            access: Access::Read,
            coord: Coordination::Collective,
            pos: Position::SharedPointer,
        }
    }
    /// `MPI_File_write_shared`.
    pub fn write_shared() -> Op {
        Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::SharedPointer,
        }
    }
    /// `MPI_File_read_shared`.
    pub fn read_shared() -> Op {
        Op {
            access: Access::Read,
            coord: Coordination::Independent,
            pos: Position::SharedPointer,
        }
    }
    /// The same operation with `access` and `coord` as given, at `offset`.
    pub fn at(access: Access, coord: Coordination, offset: u64) -> Op {
        Op {
            access,
            coord,
            pos: Position::At(offset),
        }
    }
}

/// The I/O library a file is opened through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Api {
    /// POSIX `open`/`pwrite`/`pread`/`fsync` (IOR `-a POSIX`, IOzone `--api POSIX`):
    /// always independent, byte offsets, no views, no hints.
    Posix,
    /// MPI-IO (ROMIO semantics): views, collective buffering, data sieving, hints.
    MpiIo,
    /// Fortran unformatted I/O through the Fortran runtime (libgfortran), as a
    /// Fortran program's `OPEN`/`WRITE`/`READ`/`CLOSE` do it (BTIO `fortran` and
    /// `epio`): always independent, no views, no hints; every data-transfer statement
    /// costs the runtime's work on top of the system calls it makes.
    Fortran(FortranAccess),
}

/// How a Fortran unit is accessed ([`Api::Fortran`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum FortranAccess {
    /// `ACCESS='DIRECT', RECL=recl` (bytes, a multiple of 8): an access of `len`
    /// bytes at byte offset `o` is `len / recl` statements, records `o / recl + 1`
    /// onwards, each with the record's 8-byte reals as its I/O list. `o` and `len`
    /// are multiples of `recl`; the file holds the records and nothing else.
    Direct {
        /// The record length in bytes.
        recl: u32,
    },
    /// `ACCESS='SEQUENTIAL'`: each access is one record, one statement whose I/O
    /// list is the buffer's 8-byte reals, in file order from the unit's opening.
    /// The access's offset counts record contents only and must be where the
    /// previous record ended; in the file every record has a 4-byte length
    /// marker before and after it ([`SEQUENTIAL_MARKERS`] bytes in all).
    Sequential,
}

/// Bytes of record markers around each record of a Fortran sequential
/// unformatted file (gfortran's default: a 4-byte length before and after).
pub const SEQUENTIAL_MARKERS: u64 = 8;

/// Where a sequential Fortran unit stands: the record contents and the records
/// moved since it was opened (each record has its markers in the file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SequentialPosition {
    contents: u64,
    records: u64,
}

impl SequentialPosition {
    /// Why the next record cannot have its contents begin at `offset`: records
    /// go in order, each where the previous one's contents ended.
    pub fn refuses(&self, offset: u64) -> Option<String> {
        (offset != self.contents).then(|| {
            format!(
                "a sequential Fortran unit moves records in order: the next record's contents \
                 begin at {}, not {offset}",
                self.contents
            )
        })
    }

    /// Moves past a record of `len` bytes of contents; returns where the record
    /// (its leading marker) starts in the file.
    pub fn advance(&mut self, len: u64) -> u64 {
        let start = self.file_bytes();
        self.contents += len;
        self.records += 1;
        start
    }

    /// Bytes of the file so far: contents and markers.
    pub fn file_bytes(&self) -> u64 {
        self.contents + self.records * SEQUENTIAL_MARKERS
    }
}

impl FortranAccess {
    /// The data-transfer statements an access of `len` bytes takes.
    pub fn statements(self, len: u64) -> u64 {
        match self {
            FortranAccess::Direct { recl } => len / u64::from(recl).max(1),
            FortranAccess::Sequential => 1,
        }
    }

    /// Why an access of `len` bytes at offset `offset` is not one this unit can
    /// make (a direct access off record boundaries, a record of no whole reals).
    pub fn refuses(self, offset: u64, len: u64) -> Option<String> {
        match self {
            FortranAccess::Direct { recl } => {
                let recl = u64::from(recl);
                (recl == 0
                    || !recl.is_multiple_of(8)
                    || !offset.is_multiple_of(recl)
                    || !len.is_multiple_of(recl)).then(|| {
                    format!(
                        "a direct-access Fortran unit of RECL={recl} moves whole records of 8-byte reals: \
                         offset {offset} and length {len} must be multiples of {recl}, itself a multiple of 8"
                    )
                })
            }
            FortranAccess::Sequential => (!len.is_multiple_of(8)).then(|| {
                format!("a Fortran sequential record here is 8-byte reals: {len} bytes is not a multiple of 8")
            }),
        }
    }
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum OpenMode {
    /// Create if missing, write only (`MPI_MODE_CREATE | MPI_MODE_WRONLY`).
    /// An existing file is not truncated: delete it first for a fresh file.
    Create,
    /// Create if missing, read and write.
    CreateReadWrite,
    /// Existing file, read only.
    Read,
}

/// Who opens the file together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Scope {
    /// All ranks of this context open the one file (a collective open).
    Shared,
    /// This rank alone opens its own file (`MPI_COMM_SELF`): file per process.
    Private,
}

/// Reduction operators for an all-reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// The class of a compute kernel: the twin costs each at its own calibrated rate.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum KernelKind {
    /// Memory copy; `amount` in bytes.
    Memcpy,
    /// Complex 1-D FFTs (rustfft); `amount` in flops (5·n·log2 n per transform).
    Fft,
    /// Computing FTIO's input, the closed-form signal (a table look-up and a
    /// complex store per element); `amount` in bytes of output.
    Signal,
    /// A part of an NPB BT time step; `amount` in flops (counted: see `bench::btio::bt::flops`).
    BtStep,
    /// Anything else; `amount` in flops.
    Flops,
    /// Generating a benchmark's data pattern (IOR's per-byte pattern filled
    /// before each write); `amount` in bytes. Real runs do it inside the timed
    /// region, so the twin charges it too.
    Pattern,
    /// Checking data read against its pattern (IOR's compare after each read);
    /// `amount` in bytes. It reads where filling writes, so it runs at its own
    /// rate.
    PatternCheck,
    /// BTIO's verification of a dump read back: NPB's error norm against BT's
    /// exact solution (a polynomial per point); `amount` in bytes of the dump.
    /// Where no rate of its own is given, the twin charges it as a
    /// [`KernelKind::PatternCheck`].
    ErrorNorm,
}

/// How often a repetition (`IoCtx::repeat`) runs its body.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repeat {
    /// Exactly this many times.
    Count(u64),
    /// Exactly this many times, the ranks in step: each iteration exchanges
    /// messages among them (a ring, a halo), the same ones every time, so
    /// that none runs far ahead of its partners; the twin's fast-forward then
    /// agrees one skip for all of them.
    InStep(u64),
    /// b_eff_io's time-driven rule: at least once, a barrier after each run, and go on while
    /// `elapsed·(r+1)/r ≤ budget` (seconds since the call began, `r` repetitions
    /// done), decided on rank 0 and broadcast so every rank stops together.
    TimeBudget {
        /// The pattern's time budget Tp in seconds.
        budget: f64,
    },
}

/// [`Repeat::TimeBudget`]'s rule on rank 0: one more run after `done` runs
/// that took `elapsed` seconds would still end within `budget`, and no stop
/// request ([`crate::stop`]) came.
pub fn within_budget(elapsed: f64, done: u64, budget: f64) -> bool {
    elapsed * (done + 1) as f64 / done as f64 <= budget && crate::stop::requested().is_none()
}
