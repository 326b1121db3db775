//! The per-rank program.

use super::*;

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
    /// Seconds from the phase's start to the agreement (collective) that ends it.
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
    /// Seconds from the start barrier to the end of the last phase.
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
    /// Why the run stopped early (the same on every rank: failures are agreed
    /// collectively), naming the step, the lowest failing rank and its error.
    /// The phases every rank completed before it are still in `ranks`.
    pub failure: Option<String>,
}

impl FtioRankOutput {
    /// Number of values [`FtioRankOutput::to_fields`] gives.
    pub(super) const FIELDS: usize = 1 + 7 * Phase::ALL.len() + 12;

    /// Every measurement as one `f64` each, in a fixed order, for `allgather_f64`:
    /// the number of phases completed, every phase (zeros past those completed),
    /// then totals and verification. Byte and element counts are exact up to 2⁵³.
    pub(super) fn to_fields(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(Self::FIELDS);
        v.push(self.phases.len() as f64);
        for k in 0..Phase::ALL.len() {
            let s = self.phases.get(k).copied().unwrap_or_default();
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
    pub(super) fn from_fields(rank: usize, v: &[f64]) -> FtioRankOutput {
        let (completed, v) = (v[0] as usize, &v[1..]);
        let phases = v
            .chunks_exact(7)
            .take(completed.min(Phase::ALL.len()))
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
pub(super) async fn gather<C: IoCtx>(ctx: &C, mine: &FtioRankOutput) -> Vec<FtioRankOutput> {
    crate::bench::common::agree::gather_fields(ctx, mine.to_fields())
        .await
        .iter()
        .enumerate()
        .map(|(r, fields)| FtioRankOutput::from_fields(r, fields))
        .collect()
}

/// The FTIO benchmark as one per-rank program.
#[derive(Debug, Clone)]
pub struct FtioProgram {
    pub(super) plan: FtioPlan,
}

impl FtioProgram {
    /// The program for a validated plan.
    pub fn new(plan: FtioPlan) -> FtioProgram {
        FtioProgram { plan }
    }
}

impl RankProgram for FtioProgram {
    type Output = FtioOutcome;

    async fn run<C: IoCtx>(&self, ctx: &C) -> FtioOutcome {
        let (planned, actual) = (self.plan.geo.c, ctx.size() as u64);
        if planned != actual {
            // Every rank sees the same sizes: all stop here, before any collective.
            return FtioOutcome {
                ranks: Vec::new(),
                hints: Hints::new(),
                failure: Some(FtioError::RankMismatch { planned, actual }.to_string()),
            };
        }
        let (mine, hints, failure) = run_rank(&self.plan, ctx).await;
        FtioOutcome {
            ranks: gather(ctx, &mine).await,
            hints,
            failure,
        }
    }
}

/// Timed wrappers around the context's calls, accumulating into one phase.
pub(super) struct Meter<'a, C: IoCtx> {
    pub(super) ctx: &'a C,
    pub(super) st: PhaseStats,
}

impl<'a, C: IoCtx> Meter<'a, C> {
    pub(super) fn new(ctx: &'a C) -> Self {
        Meter {
            ctx,
            st: PhaseStats::default(),
        }
    }

    pub(super) async fn xfer(
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

    pub(super) async fn compute<R>(
        &mut self,
        kernel: Kernel,
        work: impl FnOnce() -> R,
    ) -> Option<R> {
        let t0 = self.ctx.wtime();
        let r = self.ctx.compute(kernel, work).await;
        self.st.compute_s += self.ctx.wtime() - t0;
        r
    }

    pub(super) async fn exchange(&mut self, buf: &mut C::Buf, peer: usize) {
        let t0 = self.ctx.wtime();
        self.ctx.sendrecv_replace(buf, peer, peer).await;
        self.st.comm_s += self.ctx.wtime() - t0;
        self.st.comm_bytes += buf.len() as u64;
    }

    pub(super) async fn sync(&mut self, file: &mut C::File) -> Result<(), FtioError> {
        let t0 = self.ctx.wtime();
        self.ctx.sync(file).await?;
        self.st.io_s += self.ctx.wtime() - t0;
        Ok(())
    }
}

pub(super) fn open_options(plan: &FtioPlan, mode: OpenMode) -> OpenOptions {
    OpenOptions {
        mode,
        scope: if plan.shared_file {
            Scope::Shared
        } else {
            Scope::Private
        },
        api: Api::MpiIo,
        hints: plan.hints.clone(),
        unique_open: false,
    }
}

/// Delete the data file(s): each rank its own, or rank 0 the shared one.
pub(super) async fn delete_files<C: IoCtx>(
    ctx: &C,
    plan: &FtioPlan,
    p: u64,
) -> Result<(), FtioError> {
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

/// In a phase of independent I/O only, a rank that has seen a stop request
/// leaves it at once; the agreement that ends every phase stops the others.
fn stop_if_seen<C: IoCtx>(ctx: &C) -> Result<(), FtioError> {
    match ctx.stop_seen() {
        true => Err(FtioError::Interrupted),
        false => Ok(()),
    }
}

/// One rank's state through the run.
pub(super) struct RankRun<'a, C: IoCtx> {
    pub(super) ctx: &'a C,
    pub(super) plan: &'a FtioPlan,
    /// This rank, p.
    pub(super) p: u64,
    /// Byte offset of this rank's region in its file.
    pub(super) base: u64,
    /// The data file while it is open.
    pub(super) file: Option<C::File>,
    /// Hints in effect on the data file.
    pub(super) hints: Hints,
    /// Statistics of the phases every rank completed.
    pub(super) phases: Vec<PhaseStats>,
    /// The input and its transform, built on first use where data exists.
    pub(super) signal: Option<Signal>,
    /// The 1-D FFT, planned on first use where data exists.
    pub(super) line_fft: Option<LineFft>,
}

impl<'a, C: IoCtx> RankRun<'a, C> {
    pub(super) fn file(&mut self) -> &mut C::File {
        self.file
            .as_mut()
            .expect("the data file is open during the timed phases")
    }

    /// Run one timed phase: `body` accumulates into a fresh [`Meter`]; then all
    /// ranks agree on success, which ends the phase for everyone at once.
    pub(super) async fn phase(&mut self, phase: Phase) -> Result<(), String> {
        let ctx = self.ctx;
        let mut m = Meter::new(ctx);
        let t0 = ctx.wtime();
        let result = match phase {
            Phase::Init => self.init(&mut m).await,
            Phase::Dft1 => self.dft_series(&mut m).await,
            Phase::TransposeLocal => self.transpose_local(&mut m).await,
            Phase::TransposeExchange => self.transpose_exchange(&mut m).await,
            Phase::Dft2 => self.dft_series_and_close(&mut m).await,
        };
        first_failure(ctx, phase.name(), result).await?;
        self.phases.push(PhaseStats {
            wall_s: ctx.wtime() - t0,
            ..m.st
        });
        match ctx.stop_requested().await {
            Some(signal) => Err(format!(
                "interrupted by {} after the {} phase",
                piotwin_types::stop::signal_name(signal),
                phase.name()
            )),
            None => Ok(()),
        }
    }

    /// Phase 1, initialization: open (create) the file, compute the input
    /// band by band and write it.
    pub(super) async fn init(&mut self, m: &mut Meter<'_, C>) -> Result<(), FtioError> {
        let (ctx, geo, p) = (self.ctx, self.plan.geo, self.p);
        let t0 = ctx.wtime();
        let file = ctx
            .open(
                &self.plan.path(p),
                &open_options(self.plan, OpenMode::CreateReadWrite),
            )
            .await?;
        m.st.io_s += ctx.wtime() - t0;
        self.hints = ctx.hints_in_effect(&file);
        self.file = Some(file);
        let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
        let mut buf = ctx.alloc(band_bytes);
        for q in 0..geo.c {
            for b in 0..geo.i {
                stop_if_seen(ctx)?;
                let signal = &mut self.signal;
                m.compute(Kernel::signal(band_bytes as u64), || {
                    if let Some(bytes) = buf.bytes_mut() {
                        let sig = signal.get_or_insert_with(|| Signal::new(geo.n()));
                        fill_band(bytes, geo, sig, p, q, b);
                    }
                })
                .await;
                let at = self.base + geo.band_offset(q, b);
                m.xfer(self.file(), Op::write_at(at), &mut buf).await?;
            }
        }
        self.sync_if_asked(m).await
    }

    pub(super) async fn sync_if_asked(&mut self, m: &mut Meter<'_, C>) -> Result<(), FtioError> {
        if self.plan.fsync {
            let file = self.file.as_mut().expect("the data file is open");
            m.sync(file).await?;
        }
        Ok(())
    }

    /// Phases 2 and 5, a DFT series over this rank's Square column: I steps of
    /// (read c bands, FFT I columns of length N, write c bands).
    pub(super) async fn dft_series(&mut self, m: &mut Meter<'_, C>) -> Result<(), FtioError> {
        let (ctx, geo) = (self.ctx, self.plan.geo);
        let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
        let mut bands: Vec<C::Buf> = (0..geo.c).map(|_| ctx.alloc(band_bytes)).collect();
        for b in 0..geo.i {
            stop_if_seen(ctx)?;
            for (q, buf) in bands.iter_mut().enumerate() {
                let at = self.base + geo.band_offset(q as u64, b);
                m.xfer(self.file(), Op::read_at(at), buf).await?;
            }
            let line_fft = &mut self.line_fft;
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
                let at = self.base + geo.band_offset(q as u64, b);
                m.xfer(self.file(), Op::write_at(at), buf).await?;
            }
        }
        self.sync_if_asked(m).await
    }

    /// Phase 3, the local transpose of every Square, Mini-Square by
    /// Mini-Square: read a Mini-Square and its conjugate, transpose both, write
    /// them swapped; diagonal Mini-Squares in place.
    pub(super) async fn transpose_local(&mut self, m: &mut Meter<'_, C>) -> Result<(), FtioError> {
        let (ctx, geo) = (self.ctx, self.plan.geo);
        let mini_bytes = (geo.mini_elems() * ELEM_BYTES) as usize;
        let (mut x, mut y) = (ctx.alloc(mini_bytes), ctx.alloc(mini_bytes));
        let i = geo.i as usize;
        for q in 0..geo.c {
            for (a, b) in mini_square_pairs(geo.i) {
                stop_if_seen(ctx)?;
                let at = |a, b| self.base + geo.mini_offset(q, a, b);
                let (ab, ba) = (at(a, b), at(b, a));
                let file = self.file.as_mut().expect("the data file is open");
                if a == b {
                    m.xfer(file, Op::read_at(ab), &mut x).await?;
                    m.compute(Kernel::memcpy(mini_bytes as u64), || {
                        if let Some(d) = x.bytes_mut() {
                            transpose_mini(d, i);
                        }
                    })
                    .await;
                    m.xfer(file, Op::write_at(ab), &mut x).await?;
                } else {
                    m.xfer(file, Op::read_at(ab), &mut x).await?;
                    m.xfer(file, Op::read_at(ba), &mut y).await?;
                    m.compute(Kernel::memcpy(2 * mini_bytes as u64), || {
                        for d in [x.bytes_mut(), y.bytes_mut()].into_iter().flatten() {
                            transpose_mini(d, i);
                        }
                    })
                    .await;
                    m.xfer(file, Op::write_at(ba), &mut x).await?;
                    m.xfer(file, Op::write_at(ab), &mut y).await?;
                }
            }
        }
        self.sync_if_asked(m).await
    }

    /// Phase 4, the Square exchange along the Diagonals: on diagonal d read Square
    /// `(q, p)`, `sendrecv_replace` it with q, write what arrived in its place.
    /// A rank whose I/O failed keeps exchanging (its partners would otherwise
    /// wait forever) but stops touching the file.
    pub(super) async fn transpose_exchange(
        &mut self,
        m: &mut Meter<'_, C>,
    ) -> Result<(), FtioError> {
        let (ctx, geo, p) = (self.ctx, self.plan.geo, self.p);
        let square_bytes = (geo.square_elems() * ELEM_BYTES) as usize;
        let mut square: Option<C::Buf> = None; // allocated only if this rank exchanges (c > 1)
        let mut error = None;
        for d in 0..geo.c {
            let Some(q) = diagonal_partner(p, d, geo.c) else {
                continue;
            };
            let sq = square.get_or_insert_with(|| ctx.alloc(square_bytes));
            let at = self.base + geo.square_offset(q);
            let file = self.file.as_mut().expect("the data file is open");
            if error.is_none() {
                error = m.xfer(file, Op::read_at(at), sq).await.err();
            }
            m.exchange(sq, q as usize).await;
            if error.is_none() {
                error = m.xfer(file, Op::write_at(at), sq).await.err();
            }
        }
        match error {
            Some(e) => Err(e),
            None => self.sync_if_asked(m).await,
        }
    }

    /// Phase 5, DFT series 2, then close the file.
    pub(super) async fn dft_series_and_close(
        &mut self,
        m: &mut Meter<'_, C>,
    ) -> Result<(), FtioError> {
        self.dft_series(m).await?;
        let ctx = self.ctx;
        let t0 = ctx.wtime();
        let file = self.file.take().expect("the data file is open");
        ctx.close(file).await?;
        m.st.io_s += ctx.wtime() - t0;
        Ok(())
    }

    /// Verification, not timed: reopen, read every band back and compare
    /// every element with the closed form.
    pub(super) async fn verify(&mut self) -> Result<Verification, FtioError> {
        let (ctx, geo, p) = (self.ctx, self.plan.geo, self.p);
        let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
        let mut verification = Verification::default();
        let mut buf = ctx.alloc(band_bytes);
        let file = ctx
            .open(&self.plan.path(p), &open_options(self.plan, OpenMode::Read))
            .await?;
        let file = self.file.insert(file);
        for q in 0..geo.c {
            for b in 0..geo.i {
                let at = self.base + geo.band_offset(q, b);
                let got = ctx.xfer(file, Op::read_at(at), &mut buf).await?;
                if got != band_bytes {
                    return Err(FtioError::Short {
                        what: format!("verification read at byte {at}"),
                        want: band_bytes,
                        got,
                    });
                }
                if let Some(bytes) = buf.bytes() {
                    let sig = self.signal.get_or_insert_with(|| Signal::new(geo.n()));
                    check_band(bytes, geo, sig, p, q, b, &mut verification);
                }
            }
        }
        let file = self.file.take().expect("just opened");
        ctx.close(file).await?;
        Ok(verification)
    }

    /// The whole run after the start barrier; `Err` (the same on every rank)
    /// stops it where the first rank failed.
    pub(super) async fn run(&mut self, verification: &mut Verification) -> Result<f64, String> {
        let ctx = self.ctx;
        ctx.barrier().await;
        let t_start = ctx.wtime();
        for phase in Phase::ALL {
            self.phase(phase).await?;
        }
        let total_s = ctx.wtime() - t_start;
        let result = self.verify().await.map(|v| *verification = v);
        first_failure(ctx, "verification", result).await?;
        Ok(total_s)
    }
}

/// One rank's whole run: its measurements, the hints in effect on its file and
/// the failure every rank agreed on, if any.
pub(super) async fn run_rank<C: IoCtx>(
    plan: &FtioPlan,
    ctx: &C,
) -> (FtioRankOutput, Hints, Option<String>) {
    let p = ctx.rank() as u64;
    let mut run = RankRun {
        ctx,
        plan,
        p,
        base: plan.region_base(p),
        file: None,
        hints: Hints::new(),
        phases: Vec::with_capacity(Phase::ALL.len()),
        signal: None,
        line_fft: None,
    };
    let mut verification = Verification::default();
    // A leftover file from an earlier run is removed before the clock starts.
    let cleared = first_failure(ctx, "removing old files", delete_files(ctx, plan, p).await).await;
    let outcome = match cleared {
        Ok(()) => run.run(&mut verification).await,
        Err(e) => Err(e.into()),
    };
    let (total_s, mut failure) = match outcome {
        Ok(t) => (t, None),
        Err(e) => (0.0, Some(e)),
    };
    // After a failure the file may still be open (every rank alike: the failure was agreed).
    if let Some(file) = run.file.take() {
        let _ = ctx.close(file).await;
    }
    if !plan.keep {
        let removed =
            first_failure(ctx, "removing the files", delete_files(ctx, plan, p).await).await;
        if failure.is_none() {
            failure = removed.err().map(String::from);
        }
    }
    let mine = FtioRankOutput {
        rank: p as usize,
        phases: run.phases,
        total_s,
        verification,
    };
    (mine, run.hints, failure)
}
