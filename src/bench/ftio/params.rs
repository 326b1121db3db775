//! The options, checked.

use super::*;

/// Command-line options of `piotwin run ftio`.
#[derive(clap::Args, Debug, Clone, serde::Serialize)]
pub struct FtioArgs {
    /// Mini-Square side I: the matrix is N×N with N = I²·c for c processes
    /// (c must divide I²).
    #[arg(short = 'i', long = "mini-side", value_name = "I")]
    pub i: u64,
    /// One shared file with a region per process instead of a file per process.
    #[arg(long)]
    pub shared_file: bool,
    /// Directory of the data files (`ftio.NNNN`, or `ftio.shared`).
    #[arg(short = 'p', long = "dir", value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Sync the file (`MPI_File_sync`) at the end of every phase that wrote.
    #[arg(long)]
    pub fsync: bool,
    /// Keep the data files after the run (default: delete them).
    #[arg(long)]
    pub keep: bool,
}

/// A validated FTIO run: what the rank program executes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FtioPlan {
    /// I and c.
    pub geo: Geometry,
    /// One shared file instead of a file per process.
    pub shared_file: bool,
    /// Directory of the data files.
    pub dir: PathBuf,
    /// Sync after every writing phase.
    pub fsync: bool,
    /// Keep the files after the run.
    pub keep: bool,
    /// MPI-IO hints passed to every open (empty from [`FtioArgs::validate`]; the
    /// command line adds its `--hint`s).
    pub hints: Hints,
}

/// Everything that can stop an FTIO run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FtioError {
    /// A stop request (Ctrl-C, SIGTERM) ended an independent phase on this rank early.
    #[error("ftio: interrupted")]
    Interrupted,
    /// I is not valid for the process count.
    #[error(
        "ftio: -i {i} is not valid for {c} processes: {reason}; \
         valid I are the multiples of {step} that are at least 2, \
         the smallest valid I for {c} processes is {smallest} \
         (the FTIO report suggests the lowest valid I ≥ √c + 1: {recommended})"
    )]
    InvalidSize {
        /// The I given.
        i: u64,
        /// The process count.
        c: u64,
        /// What is wrong.
        reason: String,
        /// Every valid I is a multiple of this.
        step: u64,
        /// Smallest valid I for c.
        smallest: u64,
        /// The report's suggestion: the lowest valid I ≥ √c + 1.
        recommended: u64,
    },
    /// The matrix would not fit the byte offsets (or this machine's memory model).
    #[error("ftio: -i {i} with {c} processes gives N = I²·c too large for 64-bit byte offsets")]
    TooLarge {
        /// The I given.
        i: u64,
        /// The process count.
        c: u64,
    },
    /// The plan was made for another process count than the run has.
    #[error("ftio: planned for {planned} processes but running on {actual}")]
    RankMismatch {
        /// Process count the plan was validated for.
        planned: u64,
        /// Ranks of the context.
        actual: u64,
    },
    /// An I/O call moved fewer bytes than asked.
    #[error("ftio: {what} moved {got} of {want} bytes")]
    Short {
        /// The call and offset.
        what: String,
        /// Bytes asked for.
        want: usize,
        /// Bytes moved.
        got: usize,
    },
    /// A back-end call failed.
    #[error("ftio: {0}")]
    Io(#[from] IoError),
}

/// The step of valid I for c processes: c | I² exactly when I is a multiple of
/// `∏ p^⌈e/2⌉` over c's prime factorisation `∏ p^e`.
pub fn valid_i_step(c: u64) -> u64 {
    let (mut rest, mut f, mut p) = (c.max(1), 1u64, 2u64);
    while p * p <= rest {
        let mut e = 0u32;
        while rest % p == 0 {
            rest /= p;
            e += 1;
        }
        f *= p.pow(e.div_ceil(2));
        p += 1;
    }
    f * rest // a remaining prime factor has exponent 1
}

/// The smallest valid I (≥ 2, with c | I²) for c processes.
pub fn smallest_valid_i(c: u64) -> u64 {
    valid_i_step(c).max(2)
}

/// The FTIO report's suggested input: the lowest valid I with I ≥ √c + 1.
pub fn recommended_i(c: u64) -> u64 {
    let f = smallest_valid_i(c);
    let mut i = f;
    // I ≥ √c + 1  ⇔  (I − 1)² ≥ c for integers I ≥ 1.
    while (i - 1).saturating_mul(i - 1) < c {
        i += f;
    }
    i
}

impl FtioArgs {
    /// Check I against the process count `ranks` (= c) before anything is touched.
    pub fn validate(&self, ranks: usize) -> Result<FtioPlan, FtioError> {
        let (i, c) = (self.i, ranks as u64);
        let invalid = |reason: String| FtioError::InvalidSize {
            i,
            c,
            reason,
            step: valid_i_step(c),
            smallest: smallest_valid_i(c),
            recommended: recommended_i(c),
        };
        if c == 0 {
            return Err(invalid("there must be at least one process".into()));
        }
        if i < 2 {
            return Err(invalid("I must be at least 2".into()));
        }
        let sq = i.checked_mul(i).ok_or(FtioError::TooLarge { i, c })?;
        if sq % c != 0 {
            return Err(invalid(format!("c = {c} does not divide I² = {sq}")));
        }
        // The whole file (N²·16 bytes) must be addressable with u64 offsets, and one
        // Square (I⁴·16 bytes) with usize lengths.
        let n = sq.checked_mul(c).ok_or(FtioError::TooLarge { i, c })?;
        let total = n.checked_mul(n).and_then(|x| x.checked_mul(ELEM_BYTES));
        let square = sq.checked_mul(sq).and_then(|x| x.checked_mul(ELEM_BYTES));
        match (total, square.and_then(|b| usize::try_from(b).ok())) {
            (Some(_), Some(_)) => {}
            _ => return Err(FtioError::TooLarge { i, c }),
        }
        Ok(FtioPlan {
            geo: Geometry { i, c },
            shared_file: self.shared_file,
            dir: self.dir.clone(),
            fsync: self.fsync,
            keep: self.keep,
            hints: Hints::new(),
        })
    }
}

impl FtioPlan {
    /// Path of the data file rank `p` uses.
    pub fn path(&self, p: u64) -> String {
        let name = if self.shared_file {
            "ftio.shared".to_string()
        } else {
            format!("ftio.{p:04}")
        };
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// Byte offset of rank `p`'s region in its file.
    pub fn region_base(&self, p: u64) -> u64 {
        if self.shared_file {
            p * self.geo.region_bytes()
        } else {
            0
        }
    }
}
