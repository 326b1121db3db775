//! The options, checked as the original checks them (and for overflow),
//! and the layout numbers every rank derives from them.

use super::*;

/// `IOMETHOD`: how the matrices reach the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum IoMethod {
    /// `pread`/`pwrite` on the file (the original: `fseeko64` + `fread`/`fwrite`).
    Posix,
    /// Independent MPI-IO (`MPI_File_seek` + `MPI_File_read`/`write`, or `iread`/`iwrite`).
    Mpi,
}

/// `IOMODE`: blocking or nonblocking transfers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum IoMode {
    /// Blocking reads and writes.
    Sync,
    /// Nonblocking MPI-IO, waited for just before the data is needed (MPI only).
    Async,
}

/// `FILETYPE`: one file per process or one shared file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum FileType {
    /// `DIR/madbench2.data_<rank>`, one per process.
    Unique,
    /// `DIR/madbench2.data`, each rank's slots after those of the ranks before it.
    Shared,
}

/// `REMAP`: how the original redistributes a matrix between gangs outside the
/// I/O mode. The I/O mode replaces the remap by busy-work, so it changes
/// nothing here; accepted and reported as the original does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Remap {
    /// MADbench2's own point-to-point remap.
    Custom,
    /// ScaLAPACK's `pdgemr2d`.
    Scalapack,
}

/// Command-line options of `piotwin run madbench2`: the original's seven
/// arguments, and its environment variables as options (the variables are read too).
#[derive(clap::Args, Debug, Clone, serde::Serialize)]
pub struct Madbench2Args {
    /// NO_PIX: the matrices are NO_PIX x NO_PIX doubles (the number of pixels of the sky map).
    #[arg(value_name = "NO_PIX")]
    pub no_pix: u64,
    /// NO_BIN: the number of matrices (bins of the power spectrum), the slots per rank.
    #[arg(value_name = "NO_BIN")]
    pub no_bin: u64,
    /// NO_GANG: the number of gangs W and C run in; a square dividing P and NO_BIN.
    #[arg(value_name = "NO_GANG")]
    pub no_gang: u64,
    /// SBLOCKSIZE: the ScaLAPACK block size of the block-cyclic distribution (and of a busy-work loop).
    #[arg(value_name = "SBLOCKSIZE")]
    pub sblocksize: u64,
    /// FBLOCKSIZE: slots are padded to a multiple of this many bytes (a multiple of 8).
    #[arg(value_name = "FBLOCKSIZE")]
    pub fblocksize: u64,
    /// RMOD: in each group of RMOD consecutive ranks of a gang, reads go one after another (token passing).
    #[arg(value_name = "RMOD")]
    pub rmod: u64,
    /// WMOD: as RMOD, for writes.
    #[arg(value_name = "WMOD")]
    pub wmod: u64,
    /// IOMETHOD: POSIX or MPI (MPI-IO).
    #[arg(
        long,
        env = "IOMETHOD",
        value_enum,
        ignore_case = true,
        default_value = "posix"
    )]
    pub iomethod: IoMethod,
    /// IOMODE: SYNC (blocking) or ASYNC (nonblocking MPI-IO).
    #[arg(
        long,
        env = "IOMODE",
        value_enum,
        ignore_case = true,
        default_value = "sync"
    )]
    pub iomode: IoMode,
    /// FILETYPE: UNIQUE (a file per process) or SHARED (one file).
    #[arg(
        long,
        env = "FILETYPE",
        value_enum,
        ignore_case = true,
        default_value = "unique"
    )]
    pub filetype: FileType,
    /// BWEXP: busy-work exponent; the busy-work then scales as NO_PIX^(2·BWEXP) instead of NO_PIX^2 or NO_PIX^3.
    #[arg(long, env = "BWEXP", value_name = "X")]
    pub bwexp: Option<f64>,
    /// REMAP: CUSTOM or SCALAPACK (no effect in the I/O mode; reported).
    #[arg(
        long,
        env = "REMAP",
        value_enum,
        ignore_case = true,
        default_value = "custom"
    )]
    pub remap: Remap,
    /// Directory of the data files (the original's `files/`).
    #[arg(short = 'p', long = "dir", value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Keep the data files after the run (default: delete them, as the original does).
    #[arg(long)]
    pub keep: bool,
    /// Write zeros, as the original does (its I/O-mode buffers are never filled), instead of
    /// the verification pattern; nothing read back can then be checked. Storage that
    /// compresses or detects zeros writes them faster.
    #[arg(long)]
    pub zero_data: bool,
    /// Write a bar chart (SVG) of each function's busy-work, read, write and other time, mean with min-max whiskers.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Everything that can stop a MADbench2 run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Madbench2Error {
    /// A parameter the original refuses (or that overflows here).
    #[error("madbench2: {0}")]
    Invalid(String),
    /// The plan was made for another process count than the run has.
    #[error("madbench2: planned for {planned} processes but running on {actual}")]
    RankMismatch {
        /// Process count the plan was checked for.
        planned: u64,
        /// Ranks of the context.
        actual: u64,
    },
    /// An I/O call moved fewer bytes than asked.
    #[error("madbench2: {what} moved {got} of {want} bytes")]
    Short {
        /// The call and where.
        what: String,
        /// Bytes asked for.
        want: usize,
        /// Bytes moved.
        got: usize,
    },
    /// A back-end call failed.
    #[error("madbench2: {0}")]
    Io(#[from] IoError),
}

/// A checked run: the options and the layout every rank derives from them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Madbench2Plan {
    /// P, the process count.
    pub p: u64,
    /// NO_PIX.
    pub no_pix: u64,
    /// B = NO_BIN.
    pub no_bin: u64,
    /// G = NO_GANG.
    pub no_gang: u64,
    /// SBLOCKSIZE.
    pub sblocksize: u64,
    /// RMOD.
    pub rmod: u64,
    /// WMOD.
    pub wmod: u64,
    /// POSIX or MPI.
    pub iomethod: IoMethod,
    /// SYNC or ASYNC.
    pub iomode: IoMode,
    /// UNIQUE or SHARED.
    pub filetype: FileType,
    /// BWEXP, if given.
    pub bwexp: Option<f64>,
    /// Slot spacing of matrix1, in doubles.
    pub offcount1: u64,
    /// Slot spacing of matrix2 (G · `offcount1`), in doubles.
    pub offcount2: u64,
    /// Directory of the data files.
    pub dir: PathBuf,
    /// Keep the files after the run.
    pub keep: bool,
    /// Write zeros (the original's data) instead of the verification pattern.
    pub zero_data: bool,
    /// MPI-IO hints passed to the open (the command line's `--hint`s).
    pub hints: Hints,
}

fn invalid(text: String) -> Madbench2Error {
    Madbench2Error::Invalid(text)
}

/// The square root of `n` where `n` is a perfect square.
pub fn exact_sqrt(n: u64) -> Option<u64> {
    let r = n.isqrt();
    (r * r == n).then_some(r)
}

impl Madbench2Args {
    /// Checks the options for `ranks` processes, as the original's `error_check`s
    /// do (and every size for overflow), before anything is touched.
    pub fn validate(&self, ranks: u64) -> Result<Madbench2Plan, Madbench2Error> {
        let (p, g) = (ranks, self.no_gang);
        for (name, v) in [
            ("NO_PIX", self.no_pix),
            ("NO_BIN", self.no_bin),
            ("NO_GANG", self.no_gang),
            ("SBLOCKSIZE", self.sblocksize),
            ("FBLOCKSIZE", self.fblocksize),
            ("RMOD", self.rmod),
            ("WMOD", self.wmod),
        ] {
            if v == 0 {
                return Err(invalid(format!("{name} = 0: it must be at least 1")));
            }
        }
        let Some(side) = exact_sqrt(p) else {
            return Err(invalid(format!(
                "the process count P = {p} is not a perfect square (the matrices lie on a \
                 √P x √P process grid); run on 1, 4, 9, 16, 25, … processes"
            )));
        };
        if p % g != 0 {
            return Err(invalid(format!(
                "NO_GANG = {g} does not divide the process count P = {p}"
            )));
        }
        if self.no_bin % g != 0 {
            return Err(invalid(format!(
                "NO_GANG = {g} does not divide NO_BIN = {}",
                self.no_bin
            )));
        }
        if exact_sqrt(g).is_none() {
            return Err(invalid(format!(
                "NO_GANG = {g} is not a perfect square (each gang is a square process grid); \
                 use 1, 4, 9, 16, …"
            )));
        }
        let blocks = self.no_pix.div_ceil(self.sblocksize);
        if blocks < side {
            return Err(invalid(format!(
                "SBLOCKSIZE = {} is too large for NO_PIX = {} on P = {p}: the {side} process \
                 rows need at least {side} blocks, NO_PIX / SBLOCKSIZE gives {blocks}",
                self.sblocksize, self.no_pix
            )));
        }
        if self.fblocksize % ELEM_BYTES != 0 {
            return Err(invalid(format!(
                "FBLOCKSIZE = {} is not a whole number of doubles (a multiple of 8 bytes)",
                self.fblocksize
            )));
        }
        for (name, m) in [("RMOD", self.rmod), ("WMOD", self.wmod)] {
            if (p / g) % m != 0 {
                return Err(invalid(format!(
                    "{name} = {m} does not divide the gang size P / NO_GANG = {p} / {g} = {}",
                    p / g
                )));
            }
        }
        if self.iomode == IoMode::Async && self.iomethod == IoMethod::Posix {
            return Err(invalid(
                "--iomode ASYNC needs --iomethod MPI (nonblocking MPI-IO); the original with \
                 IOMETHOD=POSIX and IOMODE=ASYNC moves no data at all"
                    .into(),
            ));
        }
        if let Some(x) = self.bwexp
            && !(x.is_finite() && x >= 0.0)
        {
            return Err(invalid(format!(
                "BWEXP = {x}: it must be a number ≥ 0 (leave it unset for the original's scaling)"
            )));
        }
        let mut plan = Madbench2Plan {
            p,
            no_pix: self.no_pix,
            no_bin: self.no_bin,
            no_gang: g,
            sblocksize: self.sblocksize,
            rmod: self.rmod,
            wmod: self.wmod,
            iomethod: self.iomethod,
            iomode: self.iomode,
            filetype: self.filetype,
            bwexp: self.bwexp,
            offcount1: 0,
            offcount2: 0,
            dir: self.dir.clone(),
            keep: self.keep,
            zero_data: self.zero_data,
            hints: Hints::new(),
        };
        let overflow = |what: &str| {
            invalid(format!(
                "NO_PIX = {} with NO_BIN = {}, NO_GANG = {g}, FBLOCKSIZE = {} on P = {p}: {what} \
                 overflows 64 bits",
                self.no_pix, self.no_bin, self.fblocksize
            ))
        };
        // Rank 0 holds the most rows and columns (NUMROC gives the extra blocks first).
        let m1 = plan.elements(Matrix::M1, 0).ok_or_else(|| overflow("M1"))?;
        let m2 = plan.elements(Matrix::M2, 0).ok_or_else(|| overflow("M2"))?;
        let fb = self.fblocksize / ELEM_BYTES;
        let mpeak = g.checked_mul(m1).ok_or_else(|| overflow("G·M1"))?.max(m2);
        let gfb = mpeak.div_ceil(g.checked_mul(fb).ok_or_else(|| overflow("G·FBLOCKSIZE"))?);
        plan.offcount1 = gfb.checked_mul(fb).ok_or_else(|| overflow("offcount1"))?;
        plan.offcount2 = plan
            .offcount1
            .checked_mul(g)
            .ok_or_else(|| overflow("offcount2"))?;
        // The shared file's end: P ranks of B slots of offcount1 doubles.
        p.checked_mul(self.no_bin)
            .and_then(|x| x.checked_mul(plan.offcount1))
            .and_then(|x| x.checked_mul(ELEM_BYTES))
            .ok_or_else(|| overflow("the file size P·NO_BIN·offcount1·8"))?;
        usize::try_from(m1.max(m2) * ELEM_BYTES).map_err(|_| overflow("a buffer"))?;
        for sexp in [2, 3] {
            for gang in [Gang::All, Gang::Own] {
                if plan.busy_loops(gang, sexp).is_none() {
                    return Err(invalid(format!(
                        "the busy-work loop count NO_PIX^{} / (gang size · 2 · SBLOCKSIZE) \
                         overflows 64 bits (NO_PIX = {}, BWEXP = {:?})",
                        self.bwexp.map_or(sexp as f64, |x| 2.0 * x),
                        self.no_pix,
                        self.bwexp
                    )));
                }
            }
        }
        Ok(plan)
    }
}

impl Madbench2Plan {
    /// The size of a gang: P for gang 1, P/G for gang 2.
    pub fn gang_size(&self, gang: Gang) -> u64 {
        match gang {
            Gang::All => self.p,
            Gang::Own => self.p / self.no_gang,
        }
    }

    /// Doubles of `matrix` that world rank `rank` holds: NUMROC rows times NUMROC
    /// columns on its gang's square grid (row = gang rank mod side, column = gang
    /// rank / side). `None` on overflow.
    pub fn elements(&self, matrix: Matrix, rank: u64) -> Option<u64> {
        let gang = match matrix {
            Matrix::M1 => Gang::All,
            Matrix::M2 => Gang::Own,
        };
        let size = self.gang_size(gang);
        let side = exact_sqrt(size).expect("checked: gangs are square");
        let me = rank % size;
        let rows = numroc(self.no_pix, self.sblocksize, me % side, side);
        let cols = numroc(self.no_pix, self.sblocksize, me / side, side);
        rows.checked_mul(cols)
    }

    /// Bytes of `matrix` that rank `rank` reads or writes per call.
    pub fn call_bytes(&self, matrix: Matrix, rank: u64) -> usize {
        (self.elements(matrix, rank).expect("checked") * ELEM_BYTES) as usize
    }

    /// Byte offset of `slot` of `matrix` of rank `rank` in its file:
    /// `slot · offcount · 8`, plus `rank · NO_BIN · offcount1 · 8` in the shared file.
    pub fn offset(&self, matrix: Matrix, rank: u64, slot: u64) -> u64 {
        let offcount = match matrix {
            Matrix::M1 => self.offcount1,
            Matrix::M2 => self.offcount2,
        };
        let region = match self.filetype {
            FileType::Unique => 0,
            FileType::Shared => rank * self.no_bin * self.offcount1 * ELEM_BYTES,
        };
        region + slot * offcount * ELEM_BYTES
    }

    /// Path of rank `rank`'s data file.
    pub fn path(&self, rank: u64) -> String {
        let name = match self.filetype {
            FileType::Unique => format!("madbench2.data_{rank}"),
            FileType::Shared => "madbench2.data".to_string(),
        };
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// Multiply-add loops of one busy-work on `gang` with scaling exponent
    /// `sexp`: `dcount^sexp / (gang size · 2 · SBLOCKSIZE)`, dcount = NO_PIX,
    /// or NO_PIX² with the exponent BWEXP when BWEXP is given; each loop is
    /// SBLOCKSIZE multiply-adds. `None` where it overflows.
    pub fn busy_loops(&self, gang: Gang, sexp: u32) -> Option<u64> {
        let n = self.no_pix as f64;
        let (dcount, exp) = match self.bwexp {
            None => (n, sexp as f64),
            Some(x) => (n * n, x),
        };
        let per = (self.gang_size(gang) * 2 * self.sblocksize) as f64;
        let loops = (dcount.powf(exp) / per).floor();
        (loops.is_finite() && loops < 2f64.powi(63)).then_some(loops as u64)
    }

    /// Flops of one busy-work: two (a multiply and an add) per element per loop.
    pub fn busy_flops(&self, gang: Gang, sexp: u32) -> f64 {
        2.0 * self.busy_loops(gang, sexp).expect("checked") as f64 * self.sblocksize as f64
    }

    /// The steps of `function` for this plan.
    pub fn steps(&self, function: Function) -> Vec<Step> {
        function.steps(self.no_bin, self.no_gang, self.iomode == IoMode::Async)
    }
}
