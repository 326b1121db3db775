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
//! into I/O, compute and communication buckets with a barrier after each:
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
//! What it is not: a fast 2-D FFT (the I/O pattern is the point), and not a
//! reproduction of the original's start-up effects.

pub mod layout;
mod output;
mod signal;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use piotwin_types::Hints;

use crate::ctx::{
    Access, Api, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode, OpenOptions, RankProgram, Scope,
};

pub use layout::{
    ELEM_BYTES, Geometry, LineFft, diagonal_partner, fft_band, mini_square_pairs, transpose_mini,
};
pub use output::{build_report, flop_count, nas_block};
pub use signal::{Mismatch, Signal, Verification, WAVE, check_band, fill_band};

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
}

/// Everything that can stop an FTIO run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FtioError {
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

/// FTIO's timed phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Open, compute the input and write it.
    Init,
    /// DFT series 1.
    Dft1,
    /// Local transpose of every Square, Mini-Square by Mini-Square.
    TransposeLocal,
    /// Square exchange along the Diagonals.
    TransposeExchange,
    /// DFT series 2, then close.
    Dft2,
}

impl Phase {
    /// All phases in order.
    pub const ALL: [Phase; 5] = [
        Phase::Init,
        Phase::Dft1,
        Phase::TransposeLocal,
        Phase::TransposeExchange,
        Phase::Dft2,
    ];

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Init => "init",
            Phase::Dft1 => "dft1",
            Phase::TransposeLocal => "transpose_local",
            Phase::TransposeExchange => "transpose_exchange",
            Phase::Dft2 => "dft2",
        }
    }
}

/// One rank's accounting of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct PhaseStats {
    /// Seconds from the phase's start to the barrier after it.
    pub wall_s: f64,
    /// Seconds in I/O calls (open, xfer, sync, close).
    pub io_s: f64,
    /// Seconds in computation (`IoCtx::compute`).
    pub compute_s: f64,
    /// Seconds in the Square exchange (`sendrecv_replace`).
    pub comm_s: f64,
    /// Bytes read from the file.
    pub bytes_read: u64,
    /// Bytes written to the file.
    pub bytes_written: u64,
    /// Bytes sent to other ranks.
    pub comm_bytes: u64,
}

/// One rank's measurements.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FtioRankOutput {
    /// The rank.
    pub rank: usize,
    /// Per phase, in [`Phase::ALL`] order.
    pub phases: Vec<PhaseStats>,
    /// Seconds from the start barrier to the end barrier.
    pub total_s: f64,
    /// This rank's verification (nothing checked in the twin).
    pub verification: Verification,
}

/// What the program returns on **every** rank: all ranks' measurements (gathered
/// with `allgather_f64`, so real mode, where a process sees only its own rank,
/// can build the same report as the twin) and the hints in effect on this rank's file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FtioOutcome {
    /// Every rank's measurements, indexed by rank.
    pub ranks: Vec<FtioRankOutput>,
    /// Hints in effect on the data file (real mode: read back from MPI).
    pub hints: Hints,
}

impl FtioRankOutput {
    /// Number of values [`FtioRankOutput::to_fields`] gives.
    const FIELDS: usize = 7 * Phase::ALL.len() + 12;

    /// Every measurement as one `f64` each, in a fixed order, for `allgather_f64`.
    /// Byte and element counts are exact up to 2⁵³.
    fn to_fields(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(Self::FIELDS);
        for s in &self.phases {
            v.extend([s.wall_s, s.io_s, s.compute_s, s.comm_s]);
            v.extend([s.bytes_read, s.bytes_written, s.comm_bytes].map(|x| x as f64));
        }
        let ver = &self.verification;
        v.extend([
            self.total_s,
            ver.checked as f64,
            ver.failed as f64,
            ver.max_rel_error,
        ]);
        match &ver.first_failure {
            Some(f) => v.extend([1.0, f.row as f64, f.col as f64, f.got[0], f.got[1]]),
            None => v.extend([0.0; 5]),
        }
        match &ver.first_failure {
            Some(f) => v.extend([f.expected[0], f.expected[1], f.rel_error]),
            None => v.extend([0.0; 3]),
        }
        debug_assert_eq!(v.len(), Self::FIELDS);
        v
    }

    /// The inverse of [`FtioRankOutput::to_fields`].
    fn from_fields(rank: usize, v: &[f64]) -> FtioRankOutput {
        let phases = v
            .chunks_exact(7)
            .take(Phase::ALL.len())
            .map(|c| PhaseStats {
                wall_s: c[0],
                io_s: c[1],
                compute_s: c[2],
                comm_s: c[3],
                bytes_read: c[4] as u64,
                bytes_written: c[5] as u64,
                comm_bytes: c[6] as u64,
            })
            .collect();
        let t = &v[7 * Phase::ALL.len()..];
        let first_failure = (t[4] != 0.0).then(|| Mismatch {
            row: t[5] as u64,
            col: t[6] as u64,
            got: [t[7], t[8]],
            expected: [t[9], t[10]],
            rel_error: t[11],
        });
        FtioRankOutput {
            rank,
            phases,
            total_s: t[0],
            verification: Verification {
                checked: t[1] as u64,
                failed: t[2] as u64,
                max_rel_error: t[3],
                first_failure,
            },
        }
    }
}

/// Every rank's measurements on every rank, in rank order.
async fn gather<C: IoCtx>(ctx: &C, mine: &FtioRankOutput) -> Vec<FtioRankOutput> {
    let mut columns = Vec::with_capacity(FtioRankOutput::FIELDS);
    for x in mine.to_fields() {
        columns.push(ctx.allgather_f64(x).await);
    }
    (0..ctx.size())
        .map(|r| {
            let fields: Vec<f64> = columns.iter().map(|col| col[r]).collect();
            FtioRankOutput::from_fields(r, &fields)
        })
        .collect()
}

/// The FTIO benchmark as one per-rank program.
#[derive(Debug, Clone)]
pub struct FtioProgram {
    plan: FtioPlan,
}

impl FtioProgram {
    /// The program for a validated plan.
    pub fn new(plan: FtioPlan) -> FtioProgram {
        FtioProgram { plan }
    }
}

impl RankProgram for FtioProgram {
    type Output = Result<FtioOutcome, FtioError>;

    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
        let (mine, hints) = run_rank(&self.plan, ctx).await?;
        Ok(FtioOutcome {
            ranks: gather(ctx, &mine).await,
            hints,
        })
    }
}

/// Timed wrappers around the context's calls, accumulating into one phase.
struct Meter<'a, C: IoCtx> {
    ctx: &'a C,
    st: PhaseStats,
}

impl<'a, C: IoCtx> Meter<'a, C> {
    fn new(ctx: &'a C) -> Self {
        Meter {
            ctx,
            st: PhaseStats::default(),
        }
    }

    async fn xfer(
        &mut self,
        file: &mut C::File,
        op: Op,
        buf: &mut C::Buf,
    ) -> Result<(), FtioError> {
        let t0 = self.ctx.wtime();
        let got = self.ctx.xfer(file, op, buf).await?;
        self.st.io_s += self.ctx.wtime() - t0;
        if got != buf.len() {
            return Err(FtioError::Short {
                what: format!("{op:?}"),
                want: buf.len(),
                got,
            });
        }
        match op.access {
            Access::Read => self.st.bytes_read += got as u64,
            Access::Write => self.st.bytes_written += got as u64,
        }
        Ok(())
    }

    async fn compute<R>(&mut self, kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        let t0 = self.ctx.wtime();
        let r = self.ctx.compute(kernel, work).await;
        self.st.compute_s += self.ctx.wtime() - t0;
        r
    }

    async fn exchange(&mut self, buf: &mut C::Buf, peer: usize) {
        let t0 = self.ctx.wtime();
        self.ctx.sendrecv_replace(buf, peer, peer).await;
        self.st.comm_s += self.ctx.wtime() - t0;
        self.st.comm_bytes += buf.len() as u64;
    }

    async fn sync(&mut self, file: &mut C::File) -> Result<(), FtioError> {
        let t0 = self.ctx.wtime();
        self.ctx.sync(file).await?;
        self.st.io_s += self.ctx.wtime() - t0;
        Ok(())
    }

    /// Barrier, then the phase's statistics with its wall time since `start`.
    async fn finish(self, start: f64) -> PhaseStats {
        self.ctx.barrier().await;
        PhaseStats {
            wall_s: self.ctx.wtime() - start,
            ..self.st
        }
    }
}

fn open_options(plan: &FtioPlan, mode: OpenMode) -> OpenOptions {
    OpenOptions {
        mode,
        scope: if plan.shared_file {
            Scope::Shared
        } else {
            Scope::Private
        },
        api: Api::MpiIo,
        hints: Hints::new(),
    }
}

/// Delete the data file(s): each rank its own, or rank 0 the shared one.
async fn delete_files<C: IoCtx>(ctx: &C, plan: &FtioPlan, p: u64) -> Result<(), FtioError> {
    if plan.shared_file {
        ctx.barrier().await;
        if p == 0 {
            ctx.delete(&plan.path(0)).await?;
        }
        ctx.barrier().await;
    } else {
        ctx.delete(&plan.path(p)).await?;
    }
    Ok(())
}

/// One DFT series over this rank's Square column: I steps of (read c bands,
/// FFT I columns of length N, write c bands).
async fn dft_series<C: IoCtx>(
    m: &mut Meter<'_, C>,
    file: &mut C::File,
    plan: &FtioPlan,
    base: u64,
    line_fft: &mut Option<LineFft>,
) -> Result<(), FtioError> {
    let geo = plan.geo;
    let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
    let mut bands: Vec<C::Buf> = (0..geo.c).map(|_| m.ctx.alloc(band_bytes)).collect();
    for b in 0..geo.i {
        for (q, buf) in bands.iter_mut().enumerate() {
            m.xfer(file, Op::read_at(base + geo.band_offset(q as u64, b)), buf)
                .await?;
        }
        m.compute(Kernel::fft(geo.n(), geo.i), || {
            let mut slices: Vec<&mut [u8]> =
                bands.iter_mut().filter_map(|buf| buf.bytes_mut()).collect();
            if slices.len() == geo.c as usize {
                let fft = line_fft.get_or_insert_with(|| LineFft::new(geo.n() as usize));
                fft_band(&mut slices, geo, fft);
            }
        })
        .await;
        for (q, buf) in bands.iter_mut().enumerate() {
            m.xfer(file, Op::write_at(base + geo.band_offset(q as u64, b)), buf)
                .await?;
        }
    }
    Ok(())
}

/// One rank's whole run: its measurements and the hints in effect on its file.
async fn run_rank<C: IoCtx>(
    plan: &FtioPlan,
    ctx: &C,
) -> Result<(FtioRankOutput, Hints), FtioError> {
    let geo = plan.geo;
    if ctx.size() as u64 != geo.c {
        return Err(FtioError::RankMismatch {
            planned: geo.c,
            actual: ctx.size() as u64,
        });
    }
    let p = ctx.rank() as u64;
    let path = plan.path(p);
    let base = plan.region_base(p);
    let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
    let mini_bytes = (geo.mini_elems() * ELEM_BYTES) as usize;
    let square_bytes = (geo.square_elems() * ELEM_BYTES) as usize;
    // Built on first use inside `compute`/verification: only where data exists.
    let mut signal: Option<Signal> = None;
    let mut line_fft: Option<LineFft> = None;

    // A leftover file from an earlier run is removed before the clock starts.
    delete_files(ctx, plan, p).await?;
    let mut phases = Vec::with_capacity(Phase::ALL.len());
    ctx.barrier().await;
    let t_start = ctx.wtime();

    // 1. Initialization.
    let mut m = Meter::new(ctx);
    let t0 = ctx.wtime();
    let mut file = ctx
        .open(&path, &open_options(plan, OpenMode::CreateReadWrite))
        .await?;
    m.st.io_s += ctx.wtime() - t0;
    let hints = ctx.hints_in_effect(&file);
    let mut buf = ctx.alloc(band_bytes);
    for b in 0..geo.i {
        for q in 0..geo.c {
            m.compute(Kernel::memcpy(2 * band_bytes as u64), || {
                if let Some(bytes) = buf.bytes_mut() {
                    let sig = signal.get_or_insert_with(|| Signal::new(geo.n()));
                    fill_band(bytes, geo, sig, p, q, b);
                }
            })
            .await;
            m.xfer(
                &mut file,
                Op::write_at(base + geo.band_offset(q, b)),
                &mut buf,
            )
            .await?;
        }
    }
    if plan.fsync {
        m.sync(&mut file).await?;
    }
    phases.push(m.finish(t0).await);

    // 2. DFT series 1.
    let mut m = Meter::new(ctx);
    let t0 = ctx.wtime();
    dft_series(&mut m, &mut file, plan, base, &mut line_fft).await?;
    if plan.fsync {
        m.sync(&mut file).await?;
    }
    phases.push(m.finish(t0).await);

    // 3. Local transpose of every Square, Mini-Square by Mini-Square.
    let mut m = Meter::new(ctx);
    let t0 = ctx.wtime();
    let (mut x, mut y) = (ctx.alloc(mini_bytes), ctx.alloc(mini_bytes));
    let i = geo.i as usize;
    for q in 0..geo.c {
        for (a, b) in mini_square_pairs(geo.i) {
            let at = |a, b| base + geo.mini_offset(q, a, b);
            if a == b {
                m.xfer(&mut file, Op::read_at(at(a, a)), &mut x).await?;
                m.compute(Kernel::memcpy(mini_bytes as u64), || {
                    if let Some(d) = x.bytes_mut() {
                        transpose_mini(d, i);
                    }
                })
                .await;
                m.xfer(&mut file, Op::write_at(at(a, a)), &mut x).await?;
            } else {
                m.xfer(&mut file, Op::read_at(at(a, b)), &mut x).await?;
                m.xfer(&mut file, Op::read_at(at(b, a)), &mut y).await?;
                m.compute(Kernel::memcpy(2 * mini_bytes as u64), || {
                    for d in [x.bytes_mut(), y.bytes_mut()].into_iter().flatten() {
                        transpose_mini(d, i);
                    }
                })
                .await;
                m.xfer(&mut file, Op::write_at(at(b, a)), &mut x).await?;
                m.xfer(&mut file, Op::write_at(at(a, b)), &mut y).await?;
            }
        }
    }
    if plan.fsync {
        m.sync(&mut file).await?;
    }
    phases.push(m.finish(t0).await);

    // 4. Square exchange along the Diagonals.
    let mut m = Meter::new(ctx);
    let t0 = ctx.wtime();
    let mut square: Option<C::Buf> = None; // allocated only if this rank exchanges (c > 1)
    for d in 0..geo.c {
        if let Some(q) = diagonal_partner(p, d, geo.c) {
            let sq = square.get_or_insert_with(|| ctx.alloc(square_bytes));
            let at = base + geo.square_offset(q);
            m.xfer(&mut file, Op::read_at(at), sq).await?;
            m.exchange(sq, q as usize).await;
            m.xfer(&mut file, Op::write_at(at), sq).await?;
        }
    }
    drop(square);
    if plan.fsync {
        m.sync(&mut file).await?;
    }
    phases.push(m.finish(t0).await);

    // 5. DFT series 2, then close.
    let mut m = Meter::new(ctx);
    let t0 = ctx.wtime();
    dft_series(&mut m, &mut file, plan, base, &mut line_fft).await?;
    if plan.fsync {
        m.sync(&mut file).await?;
    }
    let tc = ctx.wtime();
    ctx.close(file).await?;
    m.st.io_s += ctx.wtime() - tc;
    phases.push(m.finish(t0).await);
    let total_s = ctx.wtime() - t_start;

    // 6. Verification, not timed: every element read back and compared.
    let mut verification = Verification::default();
    let mut file = ctx.open(&path, &open_options(plan, OpenMode::Read)).await?;
    for q in 0..geo.c {
        for b in 0..geo.i {
            let at = base + geo.band_offset(q, b);
            let got = ctx.xfer(&mut file, Op::read_at(at), &mut buf).await?;
            if got != band_bytes {
                return Err(FtioError::Short {
                    what: format!("verification read at {at}"),
                    want: band_bytes,
                    got,
                });
            }
            if let Some(bytes) = buf.bytes() {
                let sig = signal.get_or_insert_with(|| Signal::new(geo.n()));
                check_band(bytes, geo, sig, p, q, b, &mut verification);
            }
        }
    }
    ctx.close(file).await?;
    if !plan.keep {
        delete_files(ctx, plan, p).await?;
    }
    let mine = FtioRankOutput {
        rank: p as usize,
        phases,
        total_s,
        verification,
    };
    Ok((mine, hints))
}
