//! The two per-rank programs, written once against [`IoCtx`]: NPB BT-IO
//! ([`BtioProgram`]) and the PnetCDF BTIO kernel ([`KernelProgram`]).
//!
//! Data exists only where the back end keeps it: filling and checking go through
//! [`IoBuf::bytes_mut`]/[`IoBuf::bytes`] and are no-ops in the twin; filling a
//! dump is costed as a memory copy of the rank's bytes through [`IoCtx::compute`]
//! in both modes.

use piotwin_types::Hints;

use crate::bench::common::agree::{agreed_failure, lowest_rank};
use crate::ctx::{
    Access, Api, Coordination, FortranAccess, IoBuf, IoCtx, IoError, IoResult, Kernel, Op,
    OpenMode, OpenOptions, RankProgram, ReduceOp, Scope,
};

use super::bt::flops::npb_step;
use super::bt::verify::{Norms, rms};
use super::bt::{BtRank, add5};
use super::decomp::Decomposition;
use super::layout::{self, Mismatch, POINT_BYTES, RankLayout};
use super::params::{BtioConfig, KernelConfig, Subtype};
use super::step::Solver;

/// The outcome of verification, the same on every rank.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Verification {
    /// Nothing was written (`--subtype none`).
    NotPerformed,
    /// The data was read back but the back end holds none to compare (the twin).
    NoData,
    /// A signal stopped the run before the read-back.
    Interrupted,
    /// Every check passed.
    Successful,
    /// NPB has no reference values for the grid and step count (the dumps
    /// read back were still compared with the solver's final state).
    NoReference,
    /// The first wrong double in file order: where it is, what was expected and read.
    Failed(String),
}

impl Verification {
    /// NPB's word for it.
    pub fn word(&self) -> &'static str {
        match self {
            Verification::NotPerformed => "NOT PERFORMED",
            Verification::NoData => "NOT PERFORMED (no data)",
            Verification::Interrupted => "NOT PERFORMED (interrupted)",
            Verification::Successful => "SUCCESSFUL",
            Verification::NoReference => "NOT PERFORMED (no reference values)",
            Verification::Failed(_) => "FAILED",
        }
    }
}

/// A rank's first wrong double: canonical element index, bits read, byte offset in its file.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Found {
    element: u64,
    got_bits: u64,
    file_offset: u64,
}

/// All ranks agree on the first wrong double (smallest canonical element index)
/// and describe it; `file_of(rank)` names the file the owner read. `checked` says
/// whether this rank compared any data: where a rank held none to compare (the
/// twin's buffers), nothing was verified and the outcome says so.
async fn agree<C: IoCtx>(
    ctx: &C,
    mine: Option<Found>,
    checked: bool,
    grid: [u64; 3],
    file_of: impl Fn(usize) -> String,
) -> Verification {
    let all_checked = ctx
        .allreduce_f64(if checked { 1.0 } else { 0.0 }, ReduceOp::Min)
        .await;
    if all_checked < 1.0 {
        return Verification::NoData;
    }
    let my_e = mine.map_or(f64::INFINITY, |f| f.element as f64);
    let min_e = ctx.allreduce_f64(my_e, ReduceOp::Min).await;
    if !min_e.is_finite() {
        return Verification::Successful;
    }
    let owner = lowest_rank(ctx, my_e == min_e)
        .await
        .expect("the rank that found the smallest element");
    let got_bits = ctx.bcast_u64(mine.map_or(0, |f| f.got_bits), owner).await;
    let offset = ctx
        .bcast_u64(mine.map_or(0, |f| f.file_offset), owner)
        .await;
    let e = min_e as u64;
    let [nx, ny, nz] = grid;
    let per_dump = 5 * nx * ny * nz;
    let (dump, rem) = (e / per_dump, e % per_dump);
    let (point, m) = (rem / 5, rem % 5);
    let (x, y, z) = (point % nx, point / nx % ny, point / (nx * ny));
    Verification::Failed(format!(
        "record {dump}, component {m}, point ({x}, {y}, {z}) read by rank {owner}: expected {}, read {} \
         (bits {got_bits:#018x}) at byte {offset} of {}",
        layout::value(e),
        f64::from_bits(got_bits),
        file_of(owner)
    ))
}

/// The checkpoint after a step that may have failed on this rank
/// (`failure`): where some rank failed, every rank returns the error agreed
/// (named by `what`); `Ok(true)` where a stop request ends the run before its
/// `last` step.
async fn stop_after<C: IoCtx>(
    ctx: &C,
    what: &str,
    failure: &mut Option<IoError>,
    last: bool,
) -> IoResult<bool> {
    let at = ctx.checkpoint(failure.is_some()).await;
    if at.failed {
        let agreed = agreed_failure(ctx, what, failure.take()).await;
        return Err(IoError::Invalid(agreed.0));
    }
    Ok(at.signal.is_some() && !last)
}

/// A rank's data in memory: one buffer for the whole stream, or one per cell.
enum Storage<B> {
    Whole(B),
    PerCell(Vec<B>),
}

impl<B: IoBuf> Storage<B> {
    /// Whether the buffers hold data to check (not in the twin).
    fn holds_data(&self) -> bool {
        match self {
            Storage::Whole(b) => b.bytes().is_some(),
            Storage::PerCell(bs) => bs.iter().all(|b| b.bytes().is_some()),
        }
    }

    fn whole<C: IoCtx<Buf = B>>(ctx: &C, layout: &RankLayout) -> Storage<B> {
        Storage::Whole(ctx.alloc(layout.bytes() as usize))
    }

    fn per_cell<C: IoCtx<Buf = B>>(ctx: &C, layout: &RankLayout) -> Storage<B> {
        Storage::PerCell(
            layout
                .cells
                .iter()
                .map(|c| ctx.alloc((c.points() * POINT_BYTES) as usize))
                .collect(),
        )
    }

    /// Write dump `dump`'s content (real mode; nothing where there is no data).
    fn fill(&mut self, layout: &RankLayout, dump: u64) {
        match self {
            Storage::Whole(b) => {
                if let Some(bytes) = b.bytes_mut() {
                    layout.fill(bytes, dump, layout.rows());
                }
            }
            Storage::PerCell(bs) => {
                for (c, b) in bs.iter_mut().enumerate() {
                    if let Some(bytes) = b.bytes_mut() {
                        layout.fill(bytes, dump, layout.cell_rows(c));
                    }
                }
            }
        }
    }

    /// The solver's `u` in stream order (real mode).
    fn fill_from(&mut self, state: &BtRank) {
        match self {
            Storage::Whole(b) => {
                if let Some(bytes) = b.bytes_mut() {
                    state.write_u(bytes);
                }
            }
            Storage::PerCell(bs) => {
                for (c, b) in bs.iter_mut().enumerate() {
                    if let Some(bytes) = b.bytes_mut() {
                        state.write_cell_u(c, bytes);
                    }
                }
            }
        }
    }

    /// The rank stream as doubles, where the buffers hold data.
    fn doubles(&self) -> Option<Vec<f64>> {
        let bufs: Vec<&B> = match self {
            Storage::Whole(b) => vec![b],
            Storage::PerCell(bs) => bs.iter().collect(),
        };
        let mut out = Vec::new();
        for b in bufs {
            extend_doubles(&mut out, b.bytes()?);
        }
        Some(out)
    }

    /// Zero every buffer before reading into it, so stale data cannot pass a check.
    fn zero(&mut self) {
        let bufs: Vec<&mut B> = match self {
            Storage::Whole(b) => vec![b],
            Storage::PerCell(bs) => bs.iter_mut().collect(),
        };
        for b in bufs {
            if let Some(bytes) = b.bytes_mut() {
                bytes.fill(0);
            }
        }
    }

    /// The first wrong double of dump `dump` and its byte position in the rank stream.
    fn check(&self, layout: &RankLayout, dump: u64) -> Option<(Mismatch, u64)> {
        match self {
            Storage::Whole(b) => b
                .bytes()
                .and_then(|bytes| layout.check(bytes, dump, layout.rows()))
                .map(|m| (m, m.byte)),
            Storage::PerCell(bs) => bs.iter().enumerate().find_map(|(c, b)| {
                let bytes = b.bytes()?;
                let m = layout.check(bytes, dump, layout.cell_rows(c))?;
                Some((m, layout.cell_start(c) * POINT_BYTES + m.byte))
            }),
        }
    }
}

/// Check that a transfer moved the whole buffer.
fn whole_transfer(moved: usize, len: usize, op: &str, path: &str) -> IoResult<()> {
    if moved == len {
        Ok(())
    } else {
        Err(IoError::Call {
            op: op.into(),
            path: path.into(),
            message: format!("moved {moved} of {len} bytes"),
        })
    }
}

/// Zero a buffer where it holds data.
fn zero<B: IoBuf>(b: &mut B) {
    if let Some(bytes) = b.bytes_mut() {
        bytes.fill(0);
    }
}

/// NPB BT-IO's open file and buffers for one subtype.
struct DumpFile<C: IoCtx> {
    file: C::File,
    path: String,
    subtype: Subtype,
    storage: Storage<C::Buf>,
    /// `simple`/`fortran`: one row buffer per cell (all rows of a cell are equally long).
    rows: Vec<C::Buf>,
}

impl<C: IoCtx> DumpFile<C> {
    /// Open the dump file(s) for writing (fresh: the old file is deleted first) or
    /// reading, set NPB `full`'s view, and allocate the buffers.
    async fn open(
        ctx: &C,
        cfg: &BtioConfig,
        layout: &RankLayout,
        hints: &Hints,
        write: bool,
    ) -> IoResult<Self> {
        let subtype = cfg.subtype;
        let (path, scope) = match subtype {
            Subtype::Epio => (cfg.epio_path(ctx.rank()), Scope::Private),
            _ => (cfg.file_path(), Scope::Shared),
        };
        // NPB's Fortran subtypes: `OPEN(…, FORM='UNFORMATTED', ACCESS='DIRECT',
        // RECL=40)` (one record per point) and a sequential unit of one record per cell.
        let api = match subtype {
            Subtype::Fortran => Api::Fortran(FortranAccess::Direct {
                recl: POINT_BYTES as u32,
            }),
            Subtype::Epio => Api::Fortran(FortranAccess::Sequential),
            _ => Api::MpiIo,
        };
        if write {
            if scope == Scope::Private || ctx.rank() == 0 {
                ctx.delete(&path).await?;
            }
            ctx.barrier().await;
        }
        let mode = if write {
            OpenMode::Create
        } else {
            OpenMode::Read
        };
        let mut file = ctx
            .open(
                &path,
                &OpenOptions {
                    mode,
                    scope,
                    api,
                    hints: hints.clone(),
                    unique_open: false,
                },
            )
            .await?;
        if subtype == Subtype::Full {
            ctx.set_view(&mut file, &layout::full_view(layout.grid, &layout.cells))
                .await?;
        }
        let storage = match subtype {
            Subtype::Epio => Storage::per_cell(ctx, layout),
            _ => Storage::whole(ctx, layout),
        };
        let rows = match subtype {
            Subtype::Simple | Subtype::Fortran => layout
                .cells
                .iter()
                .map(|c| ctx.alloc((c.size[0] * POINT_BYTES) as usize))
                .collect(),
            _ => Vec::new(),
        };
        Ok(DumpFile {
            file,
            path,
            subtype,
            storage,
            rows,
        })
    }

    /// Write dump `dump` from the storage.
    async fn write(&mut self, ctx: &C, layout: &RankLayout, dump: u64) -> IoResult<()> {
        match (self.subtype, &mut self.storage) {
            (Subtype::Full, Storage::Whole(b)) => {
                let n = ctx
                    .xfer(&mut self.file, Op::write_at_all(dump * layout.points()), b)
                    .await?;
                whole_transfer(n, b.len(), "write_at_all", &self.path)
            }
            (Subtype::Simple | Subtype::Fortran, Storage::Whole(field)) => {
                for row in layout.rows() {
                    let buf = &mut self.rows[row.cell];
                    if let (Some(src), Some(dst)) = (field.bytes(), buf.bytes_mut()) {
                        let at = (row.stream * POINT_BYTES) as usize;
                        dst.copy_from_slice(&src[at..at + dst.len()]);
                    }
                    let off = layout::canonical_offset(layout.grid, dump, row.x, row.y, row.z);
                    let n = ctx.xfer(&mut self.file, Op::write_at(off), buf).await?;
                    whole_transfer(n, buf.len(), "write_at", &self.path)?;
                }
                Ok(())
            }
            (Subtype::Epio, Storage::PerCell(bs)) => {
                for (c, b) in bs.iter_mut().enumerate() {
                    let off = (dump * layout.points() + layout.cell_start(c)) * POINT_BYTES;
                    let n = ctx.xfer(&mut self.file, Op::write_at(off), b).await?;
                    whole_transfer(n, b.len(), "write", &self.path)?;
                }
                Ok(())
            }
            _ => unreachable!("DumpFile::open pairs each subtype with its storage"),
        }
    }

    /// Read dump `dump` back the way it was written, into the storage.
    async fn read(&mut self, ctx: &C, layout: &RankLayout, dump: u64) -> IoResult<()> {
        let points = layout.points();
        self.storage.zero();
        match (self.subtype, &mut self.storage) {
            (Subtype::Full, Storage::Whole(b)) => {
                ctx.xfer(&mut self.file, Op::read_at_all(dump * points), b)
                    .await?;
            }
            (Subtype::Simple | Subtype::Fortran, Storage::Whole(field)) => {
                for row in layout.rows() {
                    let buf = &mut self.rows[row.cell];
                    zero(buf);
                    let off = layout::canonical_offset(layout.grid, dump, row.x, row.y, row.z);
                    ctx.xfer(&mut self.file, Op::read_at(off), buf).await?;
                    if let (Some(src), Some(dst)) = (buf.bytes(), field.bytes_mut()) {
                        let at = (row.stream * POINT_BYTES) as usize;
                        dst[at..at + src.len()].copy_from_slice(src);
                    }
                }
            }
            (Subtype::Epio, Storage::PerCell(bs)) => {
                for (c, b) in bs.iter_mut().enumerate() {
                    let off = (dump * points + layout.cell_start(c)) * POINT_BYTES;
                    ctx.xfer(&mut self.file, Op::read_at(off), b).await?;
                }
            }
            _ => unreachable!("DumpFile::open pairs each subtype with its storage"),
        }
        Ok(())
    }

    async fn close(self, ctx: &C) -> IoResult<()> {
        ctx.close(self.file).await
    }
}

/// What a BTIO run measured, reduced over all ranks (the same on every rank).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BtioOutcome {
    /// Number of processes.
    pub nprocs: usize,
    /// Time steps done: all of them, unless a signal stopped the run.
    pub steps: u64,
    /// Dumps written.
    pub dumps: u64,
    /// Bytes written by all ranks (`40·N³·dumps`).
    pub bytes_written: u64,
    /// Timed region (time steps, dumps, close), maximum over ranks, seconds.
    pub total_time_s: f64,
    /// NPB's I/O time: total MB over the sum of per-rank rates (rank MB / rank I/O
    /// time) — the harmonic mean of the per-rank I/O times where ranks write equal
    /// shares. Seconds.
    pub io_time_s: f64,
    /// Largest per-rank I/O time, seconds.
    pub io_time_max_s: f64,
    /// NPB's I/O data rate: the sum of per-rank rates, 10^6 B/s.
    pub io_rate_mb_s: f64,
    /// The same as `io_time_s` for the verification reads, seconds.
    pub verify_io_time_s: f64,
    /// From the first time step to the end of verification, maximum over ranks, seconds.
    pub wall_to_verified_s: f64,
    /// Bytes written / `wall_to_verified_s`, 10^6 B/s.
    pub effective_output_mb_s: f64,
    /// NPB's Mop/s total over `total_time_s`.
    pub mops: f64,
    /// Every rank's I/O time, seconds, by rank.
    pub io_times_s: Vec<f64>,
    /// Verification.
    pub verification: Verification,
    /// NPB's residual and error norms and their comparison (real mode).
    pub norms: Option<Norms>,
    /// Hints in effect on this rank's file (rank 0's go into the report).
    pub hints: Hints,
}

/// NPB BT-IO as a per-rank program.
#[derive(Debug, Clone)]
pub struct BtioProgram {
    cfg: BtioConfig,
    hints: Hints,
}

impl BtioProgram {
    /// The program for `cfg`, with the configuration's own hints (inputbt.data's
    /// collective buffering) under the command line's `cli_hints`.
    pub fn new(cfg: BtioConfig, cli_hints: &Hints) -> BtioProgram {
        let hints = cfg.hints().merged(cli_hints);
        BtioProgram { cfg, hints }
    }

    /// The configuration.
    pub fn config(&self) -> &BtioConfig {
        &self.cfg
    }

    /// The hints files are opened with.
    pub fn hints(&self) -> &Hints {
        &self.hints
    }
}

impl RankProgram for BtioProgram {
    type Output = IoResult<BtioOutcome>;

    async fn run<C: IoCtx>(&self, ctx: &C) -> IoResult<BtioOutcome> {
        let out = self.measure(ctx).await;
        let stopped = out
            .as_ref()
            .is_ok_and(|o| o.verification == Verification::Interrupted);
        if out.is_err() || stopped {
            // A failed or interrupted run leaves no dump file behind (best effort,
            // each owner its own).
            match self.cfg.subtype {
                Subtype::None => {}
                Subtype::Epio => {
                    let _ = ctx.delete(&self.cfg.epio_path(ctx.rank())).await;
                }
                _ if ctx.rank() == 0 => {
                    let _ = ctx.delete(&self.cfg.file_path()).await;
                }
                _ => {}
            }
        }
        out
    }
}

impl BtioProgram {
    /// The run itself: time steps, dumps, verification.
    async fn measure<C: IoCtx>(&self, ctx: &C) -> IoResult<BtioOutcome> {
        let cfg = &self.cfg;
        let decomp = Decomposition::new(cfg.grid, ctx.size())
            .map_err(|e| IoError::Invalid(e.to_string()))?;
        let layout = RankLayout::new(cfg.grid, decomp.cells(ctx.rank()));
        let mut solver = Solver::new(ctx, &decomp, cfg.dt);
        solver.setup(ctx).await;
        // NPB runs one untimed step "to touch all code", then initialises again.
        solver.adi(ctx).await;
        solver.initialize(ctx).await;
        let mut out = match cfg.subtype {
            Subtype::None => None,
            _ => Some(DumpFile::open(ctx, cfg, &layout, &self.hints, true).await?),
        };
        let hints = out
            .as_ref()
            .map(|f| ctx.hints_in_effect(&f.file))
            .unwrap_or_default();

        ctx.barrier().await;
        let t0 = ctx.wtime();
        let mut t_io = 0.0;
        let mut dump = 0;
        let mut steps = 0;
        let mut interrupted = false;
        let mut failure = None;
        for step in 1..=cfg.niter {
            solver.adi(ctx).await;
            // A rank whose dump failed still takes part in the next ones (they may
            // be collective) until the checkpoint that stops every rank.
            if let (true, Some(f)) = (cfg.dumps_after(step), out.as_mut()) {
                ctx.compute(Kernel::memcpy(layout.bytes()), || {
                    if let Some(state) = solver.state().as_ref() {
                        f.storage.fill_from(state);
                    }
                })
                .await;
                let t = ctx.wtime();
                match f.write(ctx, &layout, dump).await {
                    Ok(()) => dump += 1,
                    Err(e) => failure = failure.or(Some(e)),
                }
                t_io += ctx.wtime() - t;
            }
            steps = step;
            // A checkpoint after every step (one all-reduce in real mode, outside
            // the I/O timing): a failed dump on any rank, or a stop request,
            // ends the steps on every rank together.
            if stop_after(ctx, "writing the dumps", &mut failure, step == cfg.niter).await? {
                interrupted = true;
                break;
            }
        }
        if let Some(f) = out {
            let t = ctx.wtime();
            f.close(ctx).await?;
            t_io += ctx.wtime() - t;
        }
        let t_total = ctx.wtime() - t0;

        // Verification, after the timed region, as NPB's `verify`: the error
        // norm of every dump read back the same way (BT-IO) or of the final `u`,
        // and the residual norm of the final `u`.
        let have_data = ctx
            .allreduce_f64(f64::from(u8::from(solver.state().is_some())), ReduceOp::Min)
            .await
            >= 1.0;
        let mut xce = [0.0; 5];
        let mut last_dump_differs = None;
        let mut t_verify = 0.0;
        if cfg.subtype != Subtype::None && !interrupted {
            let t = ctx.wtime();
            let mut f = DumpFile::open(ctx, cfg, &layout, &self.hints, false).await?;
            // Each dump's sums, reduced after the reads: NPB reduces in between,
            // which would split the read phase (the paper counts one).
            let mut dump_sums = Vec::with_capacity(dump as usize);
            for d in 0..dump {
                f.read(ctx, &layout, d).await?;
                let sums = ctx
                    .compute(Kernel::error_norm(layout.bytes()), || {
                        let state = solver.state();
                        let state = state.as_ref()?;
                        let stream = f.storage.doubles()?;
                        if d + 1 == dump {
                            last_dump_differs = first_difference(state, &stream);
                        }
                        Some(state.dump_error_sums(&stream))
                    })
                    .await
                    .flatten()
                    .unwrap_or([0.0; 5]);
                dump_sums.push(sums);
            }
            f.close(ctx).await?;
            for sums in dump_sums {
                add5(&mut xce, rms(allreduce5(ctx, sums).await, cfg.grid));
            }
            if dump > 0 {
                xce = xce.map(|v| v / dump as f64);
            }
            t_verify = ctx.wtime() - t;
        } else if !interrupted {
            let sums = solver.state().as_ref().map_or([0.0; 5], BtRank::error_sums);
            xce = rms(allreduce5(ctx, sums).await, cfg.grid);
        }
        let xcr = if interrupted {
            [0.0; 5]
        } else {
            solver.copy_faces(ctx).await;
            let sums = solver.state().as_ref().map_or([0.0; 5], BtRank::rhs_sums);
            rms(allreduce5(ctx, sums).await, cfg.grid).map(|v| v / cfg.dt)
        };
        let t_wall = ctx.wtime() - t0;
        let norms = (have_data && !interrupted).then(|| {
            Norms::check(
                cfg.grid,
                cfg.niter,
                cfg.dt,
                xcr,
                xce,
                cfg.subtype != Subtype::None,
            )
        });
        let differs = last_dump_differs.map(|(e, v)| {
            let (x, y, z, m) = layout.stream_point(e);
            let last = dump - 1;
            let offset = match cfg.subtype {
                Subtype::Epio => layout.epio_file_offset(last, 8 * e),
                _ => layout::canonical_offset(cfg.grid, last, x, y, z) + 8 * m,
            };
            format!(
                "the last dump read back differs from the solver's final u: component {m} of point \
                 ({x}, {y}, {z}) is {v:e}, at byte {offset}"
            )
        });
        let verification = match (&norms, cfg.subtype) {
            _ if interrupted => Verification::Interrupted,
            (None, _) => Verification::NoData,
            (Some(n), subtype) => {
                agree_verification(ctx, n, differs, subtype == Subtype::Epio, cfg).await
            }
        };

        let my_mb = (layout.bytes() * dump) as f64 * 1e-6;
        let rate = |t: f64| if t > 0.0 { my_mb / t } else { 0.0 };
        let io_times_s = ctx.allgather_f64(t_io).await;
        let io_rate_mb_s = ctx.allreduce_f64(rate(t_io), ReduceOp::Sum).await;
        let verify_rate = ctx.allreduce_f64(rate(t_verify), ReduceOp::Sum).await;
        let total_time_s = ctx.allreduce_f64(t_total, ReduceOp::Max).await;
        let wall_to_verified_s = ctx.allreduce_f64(t_wall, ReduceOp::Max).await;
        let bytes_written = POINT_BYTES * decomp.total_points() * dump;
        let total_mb = bytes_written as f64 * 1e-6;
        let per = |mb: f64, rate: f64| if rate > 0.0 { mb / rate } else { 0.0 };
        Ok(BtioOutcome {
            nprocs: ctx.size(),
            steps,
            dumps: dump,
            bytes_written,
            total_time_s,
            io_time_s: per(total_mb, io_rate_mb_s),
            io_time_max_s: io_times_s.iter().cloned().fold(0.0, f64::max),
            io_rate_mb_s,
            verify_io_time_s: per(total_mb, verify_rate),
            wall_to_verified_s,
            effective_output_mb_s: if wall_to_verified_s > 0.0 {
                total_mb / wall_to_verified_s
            } else {
                0.0
            },
            mops: if total_time_s > 0.0 {
                1e-6 * steps as f64 * npb_step(cfg.grid) / total_time_s
            } else {
                0.0
            },
            io_times_s,
            verification,
            norms,
            hints,
        })
    }
}

/// `bytes` of a dump read back, as the doubles they hold, appended to `out`.
pub(crate) fn extend_doubles(out: &mut Vec<f64>, bytes: &[u8]) {
    out.extend(
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes"))),
    );
}

/// A 5-vector summed over all ranks.
async fn allreduce5<C: IoCtx>(ctx: &C, v: [f64; 5]) -> [f64; 5] {
    let mut out = [0.0; 5];
    for m in 0..5 {
        out[m] = ctx.allreduce_f64(v[m], ReduceOp::Sum).await;
    }
    out
}

/// The first double of `stream` (a dump read back) that differs from the
/// solver's `u`: its index in the rank stream and the value read.
fn first_difference(state: &BtRank, stream: &[f64]) -> Option<(u64, f64)> {
    let mut mine = vec![0u8; 8 * stream.len()];
    state.write_u(&mut mine);
    mine.chunks_exact(8)
        .zip(stream)
        .position(|(w, r)| w != r.to_ne_bytes())
        .map(|e| (e as u64, stream[e]))
}

/// The verification every rank agrees on: a last dump that differs from the
/// final `u` on some rank (the lowest such rank's description), else NPB's
/// comparison of the norms.
async fn agree_verification<C: IoCtx>(
    ctx: &C,
    norms: &Norms,
    differs: Option<String>,
    epio: bool,
    cfg: &BtioConfig,
) -> Verification {
    if let Some(owner) = lowest_rank(ctx, differs.is_some()).await {
        let text = differs.unwrap_or_default();
        let text = crate::bench::common::agree::bcast_text(ctx, &text, owner).await;
        let file = if epio {
            cfg.epio_path(owner)
        } else {
            cfg.file_path()
        };
        return Verification::Failed(format!("{text} (read by rank {owner} from {file})"));
    }
    match (&norms.class, norms.verified) {
        (None, _) => Verification::NoReference,
        (Some(_), true) => Verification::Successful,
        (Some(class), false) => Verification::Failed(format!(
            "norms outside {:e} of NPB's class {class} reference values{}",
            super::bt::verify::EPSILON,
            if norms.dt_matches {
                ""
            } else {
                " (dt is not the class's)"
            }
        )),
    }
}

/// What a BTIO-kernel run measured, reduced over all ranks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelOutcome {
    /// Number of processes.
    pub nprocs: usize,
    /// Records written or read.
    pub records: u64,
    /// Bytes moved by all ranks in the timed region (`40·X·Y·Z·records`).
    pub bytes: u64,
    /// From before the open to after the close, maximum over ranks, seconds.
    pub total_time_s: f64,
    /// Open (create) and view set-up, maximum over ranks, seconds.
    pub open_time_s: f64,
    /// Time in the posting (or blocking) calls, maximum over ranks, seconds.
    pub post_time_s: f64,
    /// Time in `wait_all` (method 3), maximum over ranks, seconds.
    pub wait_time_s: f64,
    /// From before the open to the end of verification, maximum over ranks, seconds.
    pub wall_to_verified_s: f64,
    /// Verification.
    pub verification: Verification,
    /// Hints in effect on this rank's file.
    pub hints: Hints,
    /// A read run found no file and wrote the records first, untimed (the twin).
    pub staged: bool,
}

/// The PnetCDF BTIO kernel as a per-rank program.
#[derive(Debug, Clone)]
pub struct KernelProgram {
    cfg: KernelConfig,
    hints: Hints,
}

impl KernelProgram {
    /// The program for `cfg`, with the kernel's own hints under `cli_hints`.
    pub fn new(cfg: KernelConfig, cli_hints: &Hints) -> KernelProgram {
        let hints = cfg.hints().merged(cli_hints);
        KernelProgram { cfg, hints }
    }

    /// The configuration.
    pub fn config(&self) -> &KernelConfig {
        &self.cfg
    }

    /// The hints the file is opened with.
    pub fn hints(&self) -> &Hints {
        &self.hints
    }
}

/// Move record `r` between `storage` and the file by `method`; returns the seconds
/// spent posting (or in the blocking calls) and waiting.
async fn kernel_record<C: IoCtx>(
    ctx: &C,
    file: &mut C::File,
    storage: &mut Storage<C::Buf>,
    method: u8,
    access: Access,
    layout: &RankLayout,
    r: u64,
) -> IoResult<(f64, f64)> {
    let base = r * layout.bytes();
    let cell_off = |c: usize| base + layout.cell_start(c) * POINT_BYTES;
    let t = ctx.wtime();
    match (method, storage) {
        (0 | 1, Storage::Whole(b)) => {
            let coord = if method == 0 {
                Coordination::Collective
            } else {
                Coordination::Independent
            };
            ctx.xfer(file, Op::at(access, coord, base), b).await?;
        }
        (2, Storage::PerCell(bs)) => {
            for (c, b) in bs.iter_mut().enumerate() {
                ctx.xfer(
                    file,
                    Op::at(access, Coordination::Collective, cell_off(c)),
                    b,
                )
                .await?;
            }
        }
        (3, Storage::PerCell(bs)) => {
            let mut reqs = Vec::with_capacity(bs.len());
            for (c, b) in std::mem::take(bs).into_iter().enumerate() {
                reqs.push(
                    ctx.post(
                        file,
                        Op::at(access, Coordination::Collective, cell_off(c)),
                        b,
                    )
                    .await?,
                );
            }
            let t_post = ctx.wtime() - t;
            let tw = ctx.wtime();
            *bs = ctx.wait_all(file, reqs).await?;
            return Ok((t_post, ctx.wtime() - tw));
        }
        _ => unreachable!("KernelProgram pairs each method with its storage"),
    }
    Ok((ctx.wtime() - t, 0.0))
}

impl RankProgram for KernelProgram {
    type Output = IoResult<KernelOutcome>;

    async fn run<C: IoCtx>(&self, ctx: &C) -> IoResult<KernelOutcome> {
        let out = self.measure(ctx).await;
        let stopped = out
            .as_ref()
            .is_ok_and(|o| o.verification == Verification::Interrupted);
        if (out.is_err() || stopped) && self.cfg.write && ctx.rank() == 0 {
            // A failed or interrupted write leaves no half-written record file
            // behind (best effort; a file given to read is the user's and stays).
            let _ = ctx.delete(&self.cfg.file_path()).await;
        }
        out
    }
}

impl KernelProgram {
    /// The run itself: the records written or read, then verified.
    async fn measure<C: IoCtx>(&self, ctx: &C) -> IoResult<KernelOutcome> {
        let cfg = &self.cfg;
        let decomp = Decomposition::new(cfg.grid, ctx.size())
            .map_err(|e| IoError::Invalid(e.to_string()))?;
        let layout = RankLayout::new(cfg.grid, decomp.cells(ctx.rank()));
        let path = cfg.file_path();
        let view = layout::kernel_view(cfg.grid, &layout.cells);
        let record_bytes = POINT_BYTES * decomp.total_points();
        let mut storage = match cfg.method {
            0 | 1 => Storage::whole(ctx, &layout),
            _ => Storage::per_cell(ctx, &layout),
        };
        let open = |mode| OpenOptions {
            mode,
            scope: Scope::Shared,
            api: Api::MpiIo,
            hints: self.hints.clone(),
            unique_open: false,
        };
        if cfg.write {
            if ctx.rank() == 0 {
                ctx.delete(&path).await?;
            }
            ctx.barrier().await;
        }
        // Reading a file that does not exist: write the records first, untimed, by
        // the same method. A real run never gets here (the CLI refuses a missing
        // file before launching); the twin's file system starts empty, so this is
        // how its read runs get a file to read.
        let staged = !cfg.write
            && match ctx.open(&path, &open(OpenMode::Read)).await {
                Ok(f) => {
                    ctx.close(f).await?;
                    false
                }
                Err(_) => true,
            };
        if staged {
            let mut file = ctx.open(&path, &open(OpenMode::Create)).await?;
            ctx.set_view(&mut file, &view).await?;
            for r in 0..cfg.records {
                storage.fill(&layout, r);
                kernel_record(
                    ctx,
                    &mut file,
                    &mut storage,
                    cfg.method,
                    Access::Write,
                    &layout,
                    r,
                )
                .await?;
            }
            ctx.close(file).await?;
        }

        ctx.barrier().await;
        let t0 = ctx.wtime();
        let mut file = ctx
            .open(
                &path,
                &open(if cfg.write {
                    OpenMode::Create
                } else {
                    OpenMode::Read
                }),
            )
            .await?;
        ctx.set_view(&mut file, &view).await?;
        let t_open = ctx.wtime() - t0;
        let hints = ctx.hints_in_effect(&file);
        if !cfg.write {
            let size = ctx.file_size(&mut file).await?;
            if size < cfg.records * record_bytes {
                return Err(IoError::Invalid(format!(
                    "{path} holds {size} bytes, fewer than {} records of {record_bytes} bytes: write them first \
                     with --mode w, the same grid and at least as many records",
                    cfg.records
                )));
            }
        }
        let access = if cfg.write {
            Access::Write
        } else {
            Access::Read
        };
        let (mut t_post, mut t_wait) = (0.0, 0.0);
        let mut records = 0;
        let mut interrupted = false;
        let mut failure = None;
        for r in 0..cfg.records {
            if cfg.write {
                ctx.compute(Kernel::memcpy(layout.bytes()), || storage.fill(&layout, r))
                    .await;
            }
            let moved =
                kernel_record(ctx, &mut file, &mut storage, cfg.method, access, &layout, r).await;
            match moved {
                Ok((p, w)) => {
                    t_post += p;
                    t_wait += w;
                    records = r + 1;
                }
                Err(e) => failure = failure.or(Some(e)),
            }
            // A failed record on any rank, or a stop request, ends the records
            // on every rank together (a failed rank takes part in the records
            // until then: they are collective).
            if stop_after(
                ctx,
                "moving the records",
                &mut failure,
                r + 1 == cfg.records,
            )
            .await?
            {
                interrupted = true;
                break;
            }
        }
        ctx.close(file).await?;
        let t_total = ctx.wtime() - t0;

        // Verification: every record read back the same way and checked. Not after an interrupt.
        let mut found = None;
        if !interrupted {
            let mut file = ctx.open(&path, &open(OpenMode::Read)).await?;
            ctx.set_view(&mut file, &view).await?;
            for r in 0..cfg.records {
                storage.zero();
                kernel_record(
                    ctx,
                    &mut file,
                    &mut storage,
                    cfg.method,
                    Access::Read,
                    &layout,
                    r,
                )
                .await?;
                found = found.or(storage.check(&layout, r).map(|(m, _)| Found {
                    element: m.element,
                    got_bits: m.got_bits,
                    file_offset: m.element * 8,
                }));
            }
            ctx.close(file).await?;
        }
        let t_wall = ctx.wtime() - t0;

        let max = |v: f64| ctx.allreduce_f64(v, ReduceOp::Max);
        let total_time_s = max(t_total).await;
        let open_time_s = max(t_open).await;
        let post_time_s = max(t_post).await;
        let wait_time_s = max(t_wait).await;
        let wall_to_verified_s = max(t_wall).await;
        let verification = match interrupted {
            true => Verification::Interrupted,
            false => agree(ctx, found, storage.holds_data(), cfg.grid, |_| path.clone()).await,
        };
        Ok(KernelOutcome {
            nprocs: ctx.size(),
            records,
            bytes: record_bytes * records,
            total_time_s,
            open_time_s,
            post_time_s,
            wait_time_s,
            wall_to_verified_s,
            verification,
            hints,
            staged,
        })
    }
}
