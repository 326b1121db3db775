//! The per-rank program: S, W and C walked step by step with the original's
//! timers, barriers and token passing.

use super::*;

/// The original's five timers of one function on one rank (`myt[0..4]`), and
/// what the function moved.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct FunctionTimes {
    /// `_cc`: the time outside busy-work and I/O (in the I/O mode: the barriers
    /// before them, the copies into and out of the I/O buffers — here the
    /// data filled and checked —, allocation).
    pub cc_s: f64,
    /// `_bw`: busy-work, from its start to the gang's barrier after it.
    pub bw_s: f64,
    /// `_r`: reads, each from its start to the gang's barrier after it (with
    /// the RMOD token wait), and ASYNC waits for reads.
    pub r_s: f64,
    /// `_w`: writes, as reads.
    pub w_s: f64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Flops of busy-work done.
    pub busy_flops: f64,
}

impl FunctionTimes {
    /// `_total`: the four timers' sum, the function's time on this rank.
    pub fn total_s(&self) -> f64 {
        self.cc_s + self.bw_s + self.r_s + self.w_s
    }
}

/// One rank's check of what it read: every word of every slot read back.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Verification {
    /// Bytes compared with what was written there.
    pub checked_bytes: u64,
    /// 8-byte words that differed.
    pub failed_words: u64,
    /// The first difference.
    pub first: Option<Mismatch>,
}

/// A word read back that is not what was written.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Mismatch {
    /// Byte offset in the rank's file.
    pub offset: u64,
    /// The word written there.
    pub expected: u64,
    /// The word read.
    pub got: u64,
}

/// One rank's measurements.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RankOutput {
    /// The rank.
    pub rank: usize,
    /// S, W, C as far as every rank completed them.
    pub functions: Vec<FunctionTimes>,
    /// Seconds of the close of the data file after C, outside the original's
    /// timers (its `finalize`): where an NFS client flushes what it cached.
    pub close_s: f64,
    /// This rank's check of its reads (nothing checked in the twin).
    pub verification: Verification,
}

/// What the program returns on every rank: every rank's measurements
/// (gathered, so a real process can build the report), the hints in effect
/// on the data file and the failure all ranks agreed on.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Madbench2Outcome {
    /// Every rank's measurements, by rank.
    pub ranks: Vec<RankOutput>,
    /// Hints in effect on the data file (real mode: read back from MPI).
    pub hints: Hints,
    /// Why the run stopped early, the same on every rank; the functions every
    /// rank completed before it are still in `ranks`.
    pub failure: Option<String>,
}

impl RankOutput {
    const PER_FUNCTION: usize = 7;
    const FIELDS: usize = 1 + Self::PER_FUNCTION * 3 + 9;

    fn to_fields(&self) -> Vec<f64> {
        let mut v = vec![self.functions.len() as f64];
        for k in 0..Function::ALL.len() {
            let t = self.functions.get(k).copied().unwrap_or_default();
            v.extend([t.cc_s, t.bw_s, t.r_s, t.w_s]);
            v.extend([t.bytes_read as f64, t.bytes_written as f64, t.busy_flops]);
        }
        let ver = &self.verification;
        v.extend([
            self.close_s,
            ver.checked_bytes as f64,
            ver.failed_words as f64,
        ]);
        match ver.first {
            // Words as 32-bit halves, each exact in an f64.
            Some(m) => v.extend([
                m.offset as f64,
                (m.expected >> 32) as f64,
                (m.expected & 0xffff_ffff) as f64,
                (m.got >> 32) as f64,
                (m.got & 0xffff_ffff) as f64,
                1.0,
            ]),
            None => v.extend([0.0; 6]),
        }
        debug_assert_eq!(v.len(), Self::FIELDS);
        v
    }

    fn from_fields(rank: usize, v: &[f64]) -> RankOutput {
        let done = v[0] as usize;
        let functions = v[1..1 + Self::PER_FUNCTION * 3]
            .chunks_exact(Self::PER_FUNCTION)
            .take(done)
            .map(|c| FunctionTimes {
                cc_s: c[0],
                bw_s: c[1],
                r_s: c[2],
                w_s: c[3],
                bytes_read: c[4] as u64,
                bytes_written: c[5] as u64,
                busy_flops: c[6],
            })
            .collect();
        let (close_s, t) = (
            v[1 + Self::PER_FUNCTION * 3],
            &v[2 + Self::PER_FUNCTION * 3..],
        );
        RankOutput {
            rank,
            functions,
            close_s,
            verification: Verification {
                checked_bytes: t[0] as u64,
                failed_words: t[1] as u64,
                first: (t[7] != 0.0).then(|| Mismatch {
                    offset: t[2] as u64,
                    expected: (t[3] as u64) << 32 | t[4] as u64,
                    got: (t[5] as u64) << 32 | t[6] as u64,
                }),
            },
        }
    }
}

/// Every rank's measurements on every rank, in rank order.
async fn gather<C: IoCtx>(ctx: &C, mine: &RankOutput) -> Vec<RankOutput> {
    crate::bench::common::agree::gather_fields(ctx, mine.to_fields())
        .await
        .iter()
        .enumerate()
        .map(|(r, fields)| RankOutput::from_fields(r, fields))
        .collect()
}

/// The word at element `i` of the piece of `matrix` rank `rank` writes to
/// `slot`: distinct for every matrix, rank, slot and element, so a word read
/// from the wrong place, a stale one or a flipped byte all differ.
pub fn pattern_word(matrix: Matrix, rank: u64, slot: u64, i: u64) -> u64 {
    let tag = ((matrix as u64) << 62) ^ (rank << 32) ^ slot;
    splitmix64(tag) ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `bytes` with the piece of `matrix` rank `rank` writes to `slot`.
pub fn fill(bytes: &mut [u8], matrix: Matrix, rank: u64, slot: u64) {
    for (i, w) in bytes.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&pattern_word(matrix, rank, slot, i as u64).to_le_bytes());
    }
}

/// Compares `bytes`, read from byte `offset`, with what `fill` put there.
pub fn check(
    bytes: &[u8],
    matrix: Matrix,
    rank: u64,
    slot: u64,
    offset: u64,
    v: &mut Verification,
) {
    for (i, w) in bytes.chunks_exact(8).enumerate() {
        let got = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        let expected = pattern_word(matrix, rank, slot, i as u64);
        if got != expected {
            v.failed_words += 1;
            v.first.get_or_insert(Mismatch {
                offset: offset + 8 * i as u64,
                expected,
                got,
            });
        }
    }
    v.checked_bytes += bytes.len() as u64;
}

/// The busy-work loop of the original: `loops` times, SBLOCKSIZE = `len`
/// multiply-adds `a[m] += b·c`. Its result keeps the work from being optimised away.
pub fn busy_loop(loops: u64, len: usize) -> f64 {
    let (b, c) = (std::hint::black_box(1.2f64), std::hint::black_box(3.4f64));
    let mut a = vec![0.0f64; len];
    for _ in 0..loops {
        for x in a.iter_mut() {
            *x += b * c;
        }
        std::hint::black_box(&mut a);
    }
    a.first().copied().unwrap_or(0.0)
}

/// The MADbench2 I/O mode as one per-rank program.
#[derive(Debug, Clone)]
pub struct Madbench2Program {
    pub(super) plan: Madbench2Plan,
}

impl Madbench2Program {
    /// The program for a checked plan.
    pub fn new(plan: Madbench2Plan) -> Madbench2Program {
        Madbench2Program { plan }
    }
}

impl RankProgram for Madbench2Program {
    type Output = Madbench2Outcome;

    async fn run<C: IoCtx>(&self, ctx: &C) -> Madbench2Outcome {
        let (planned, actual) = (self.plan.p, ctx.size() as u64);
        if planned != actual {
            // Every rank sees the same sizes: all stop here, before any collective.
            return Madbench2Outcome {
                ranks: Vec::new(),
                hints: Hints::new(),
                failure: Some(Madbench2Error::RankMismatch { planned, actual }.to_string()),
            };
        }
        let (mine, hints, failure) = run_rank(&self.plan, ctx).await;
        Madbench2Outcome {
            ranks: gather(ctx, &mine).await,
            hints,
            failure,
        }
    }
}

/// Which of the original's timers a lap goes to.
#[derive(Clone, Copy)]
enum Timer {
    Cc,
    Bw,
    R,
    W,
}

/// A transfer in flight (ASYNC): the request and, for a read, where it reads.
struct InFlight<C: IoCtx> {
    request: C::Request,
    matrix: Matrix,
    slot: u64,
}

/// One rank's state through the run.
struct RankRun<'a, C: IoCtx> {
    ctx: &'a C,
    /// This rank's gang 2.
    gang: &'a C,
    plan: &'a Madbench2Plan,
    rank: u64,
    file: Option<C::File>,
    /// The running function's timers and the original's `timer` (start of the current lap).
    times: FunctionTimes,
    lap_start: f64,
    read_buf: Option<C::Buf>,
    write_buf: Option<C::Buf>,
    pending_read: Option<InFlight<C>>,
    pending_write: Option<InFlight<C>>,
    token: C::Buf,
    /// This rank's first failure in the running function: it then skips its
    /// I/O and busy-work but keeps every barrier and token, so no partner waits.
    error: Option<Madbench2Error>,
    /// A stop request was seen in the running function: work skipped as after a failure.
    stopped: bool,
    verification: Verification,
}

impl<'a, C: IoCtx> RankRun<'a, C> {
    fn comm(&self, gang: Gang) -> &'a C {
        match gang {
            Gang::All => self.ctx,
            Gang::Own => self.gang,
        }
    }

    /// Ends the current lap on `timer` (the original's `myt[k] += MPI_Wtime() - timer`).
    fn lap(&mut self, timer: Timer) {
        let now = self.ctx.wtime();
        let dt = now - self.lap_start;
        match timer {
            Timer::Cc => self.times.cc_s += dt,
            Timer::Bw => self.times.bw_s += dt,
            Timer::R => self.times.r_s += dt,
            Timer::W => self.times.w_s += dt,
        }
        self.lap_start = now;
    }

    /// Whether this rank still does work in this function.
    fn working(&mut self) -> bool {
        if self.ctx.stop_seen() {
            self.stopped = true;
        }
        self.error.is_none() && !self.stopped
    }

    fn fail(&mut self, e: Madbench2Error) {
        self.error.get_or_insert(e);
    }

    async fn busy_work(&mut self, sexp: u32, gang: Gang) {
        let comm = self.comm(gang);
        comm.barrier().await;
        self.lap(Timer::Cc);
        if self.working() {
            let flops = self.plan.busy_flops(gang, sexp);
            let loops = self.plan.busy_loops(gang, sexp).expect("checked");
            let len = self.plan.sblocksize as usize;
            self.ctx
                .compute(Kernel::flops(flops), || busy_loop(loops, len))
                .await;
            self.times.busy_flops += flops;
        }
        comm.barrier().await;
        self.lap(Timer::Bw);
    }

    /// The write buffer filled with `matrix`'s piece for `slot` (in `_cc`).
    async fn fill_write(&mut self, matrix: Matrix, slot: u64) {
        let rank = self.rank;
        let Some(buf) = self.write_buf.as_mut() else {
            return;
        };
        let bytes = buf.len() as u64;
        if self.plan.zero_data {
            // The original's copy of a never-written matrix into its write buffer.
            self.ctx
                .compute(Kernel::memcpy(bytes), || {
                    if let Some(b) = buf.bytes_mut() {
                        b.fill(0);
                    }
                })
                .await;
            return;
        }
        self.ctx
            .compute(Kernel::pattern_fill(bytes), || {
                if let Some(b) = buf.bytes_mut() {
                    fill(b, matrix, rank, slot);
                }
            })
            .await;
    }

    /// What was read into the read buffer from `slot` of `matrix`, checked (in `_cc`).
    async fn check_read(&mut self, matrix: Matrix, slot: u64) {
        let (rank, offset) = (self.rank, self.plan.offset(matrix, self.rank, slot));
        let Some(buf) = self.read_buf.as_ref().filter(|_| !self.plan.zero_data) else {
            return;
        };
        let verification = &mut self.verification;
        self.ctx
            .compute(Kernel::pattern_check(buf.len() as u64), || {
                if let Some(b) = buf.bytes() {
                    check(b, matrix, rank, slot, offset, verification);
                }
            })
            .await;
    }

    /// `io_distmatrix`: the gang's barrier, the token from the rank before
    /// (unless first of its RMOD/WMOD group), the transfer (or its post), the
    /// token to the next, the gang's barrier.
    async fn io(&mut self, access: Access, matrix: Matrix, slot: u64, gang: Gang) {
        let comm = self.comm(gang);
        if access == Access::Write && self.working() {
            self.fill_write(matrix, slot).await;
        }
        comm.barrier().await;
        self.lap(Timer::Cc);
        let io_mod = match access {
            Access::Read => self.plan.rmod,
            Access::Write => self.plan.wmod,
        } as usize;
        let me = comm.rank();
        if me % io_mod > 0 {
            comm.recv(&mut self.token, me - 1).await;
        }
        if self.working() {
            if let Err(e) = self.transfer(access, matrix, slot).await {
                self.fail(e);
            }
        }
        if (me + 1) % io_mod > 0 {
            comm.send(&self.token, me + 1).await;
        }
        comm.barrier().await;
        self.lap(match access {
            Access::Read => Timer::R,
            Access::Write => Timer::W,
        });
        if access == Access::Read && self.plan.iomode == IoMode::Sync && self.working() {
            self.check_read(matrix, slot).await;
        }
    }

    async fn transfer(
        &mut self,
        access: Access,
        matrix: Matrix,
        slot: u64,
    ) -> Result<(), Madbench2Error> {
        let ctx = self.ctx;
        let at = self.plan.offset(matrix, self.rank, slot);
        let (op, slot_buf) = match access {
            Access::Read => (Op::read_at(at), &mut self.read_buf),
            Access::Write => (Op::write_at(at), &mut self.write_buf),
        };
        let file = self.file.as_mut().expect("the data file is open");
        let what = || format!("{access:?} of slot {slot} at byte {at}");
        match self.plan.iomode {
            IoMode::Sync => {
                let buf = slot_buf.as_mut().expect("the buffer is home in SYNC mode");
                let want = buf.len();
                let got = ctx.xfer(file, op, buf).await?;
                if got != want {
                    return Err(Madbench2Error::Short {
                        what: what(),
                        want,
                        got,
                    });
                }
                self.count(access, got as u64);
            }
            IoMode::Async => {
                let buf = slot_buf.take().expect("the last transfer was waited for");
                let len = buf.len();
                let request = match ctx.post(file, op, buf).await {
                    Ok(r) => r,
                    Err(e) => {
                        *slot_buf = Some(ctx.alloc(len));
                        return Err(e.into());
                    }
                };
                let flight = Some(InFlight {
                    request,
                    matrix,
                    slot,
                });
                match access {
                    Access::Read => self.pending_read = flight,
                    Access::Write => self.pending_write = flight,
                }
            }
        }
        Ok(())
    }

    fn count(&mut self, access: Access, bytes: u64) {
        match access {
            Access::Read => self.times.bytes_read += bytes,
            Access::Write => self.times.bytes_written += bytes,
        }
    }

    /// `io_resync`: a barrier of all ranks, the wait for the posted transfer,
    /// a barrier; then what a read brought is checked.
    async fn resync(&mut self, access: Access) {
        let ctx = self.ctx;
        ctx.barrier().await;
        self.lap(Timer::Cc);
        let flight = match access {
            Access::Read => self.pending_read.take(),
            Access::Write => self.pending_write.take(),
        };
        let mut read_back = None;
        if let Some(InFlight {
            request,
            matrix,
            slot,
        }) = flight
        {
            let file = self.file.as_mut().expect("the data file is open");
            let done = ctx.wait_all(file, vec![request]).await;
            let buf = match done {
                Ok(mut bufs) => bufs.pop().expect("one request, one buffer"),
                Err(e) => {
                    self.fail(e.into());
                    let len = self.plan.call_bytes(matrix, self.rank);
                    ctx.alloc(len)
                }
            };
            // A nonblocking transfer reports no count here: it moved all or failed.
            self.count(access, buf.len() as u64);
            match access {
                Access::Read => {
                    self.read_buf = Some(buf);
                    read_back = Some((matrix, slot));
                }
                Access::Write => self.write_buf = Some(buf),
            }
        }
        ctx.barrier().await;
        self.lap(match access {
            Access::Read => Timer::R,
            Access::Write => Timer::W,
        });
        if let Some((matrix, slot)) = read_back
            && self.working()
        {
            self.check_read(matrix, slot).await;
        }
    }

    /// One function, timed as the original times it; `Err` (the same on every
    /// rank) where a rank failed or a stop request cut it short.
    async fn function(&mut self, function: Function) -> Result<FunctionTimes, String> {
        let ctx = self.ctx;
        ctx.barrier().await;
        self.times = FunctionTimes::default();
        self.lap_start = ctx.wtime();
        let buffer = |m: Option<Matrix>| m.map(|m| ctx.alloc(self.plan.call_bytes(m, self.rank)));
        self.read_buf = buffer(function.reads());
        self.write_buf = buffer(function.writes());
        for step in self.plan.steps(function) {
            match step {
                Step::BusyWork { sexp, gang } => self.busy_work(sexp, gang).await,
                Step::Io {
                    access,
                    matrix,
                    slot,
                    gang,
                } => self.io(access, matrix, slot, gang).await,
                Step::Resync(access) => self.resync(access).await,
            }
        }
        self.lap(Timer::Cc);
        let times = self.times;
        let error = self.error.take();
        first_failure(ctx, function.name(), error.map_or(Ok(()), Err)).await?;
        let stopped = lowest_rank(ctx, std::mem::take(&mut self.stopped)).await;
        if stopped.is_some() {
            return Err(format!(
                "interrupted during {} (a stop request; its work was cut short)",
                function.name()
            ));
        }
        match ctx.stop_requested().await {
            Some(signal) => Err(format!(
                "interrupted by {} after {}",
                piotwin_types::stop::signal_name(signal),
                function.name()
            )),
            None => Ok(times),
        }
    }
}

fn open_options(plan: &Madbench2Plan) -> OpenOptions {
    OpenOptions {
        mode: OpenMode::CreateReadWrite,
        scope: match plan.filetype {
            FileType::Unique => Scope::Private,
            FileType::Shared => Scope::Shared,
        },
        api: match plan.iomethod {
            IoMethod::Posix => Api::Posix,
            IoMethod::Mpi => Api::MpiIo,
        },
        hints: plan.hints.clone(),
        unique_open: false,
    }
}

/// Deletes the data file(s): each rank its own, or rank 0 the shared one.
async fn delete_files<C: IoCtx>(
    ctx: &C,
    plan: &Madbench2Plan,
    rank: u64,
) -> Result<(), Madbench2Error> {
    match plan.filetype {
        FileType::Shared => {
            ctx.barrier().await;
            if rank == 0 {
                ctx.delete(&plan.path(0)).await?;
            }
            ctx.barrier().await;
        }
        FileType::Unique => ctx.delete(&plan.path(rank)).await?,
    }
    Ok(())
}

/// One rank's whole run: its measurements, the hints in effect on its file and
/// the failure every rank agreed on, if any.
async fn run_rank<C: IoCtx>(plan: &Madbench2Plan, ctx: &C) -> (RankOutput, Hints, Option<String>) {
    let rank = ctx.rank() as u64;
    let gang_size = plan.gang_size(Gang::Own);
    // gang2: consecutive ranks, ordered by their rank in it (`MPI_Comm_split`).
    let gang = ctx
        .split(
            Some((rank / gang_size) as usize),
            (rank % gang_size) as usize,
        )
        .await
        .expect("every rank has a gang");
    let mut run = RankRun {
        ctx,
        gang: &gang,
        plan,
        rank,
        file: None,
        times: FunctionTimes::default(),
        lap_start: 0.0,
        read_buf: None,
        write_buf: None,
        pending_read: None,
        pending_write: None,
        token: ctx.alloc(4),
        error: None,
        stopped: false,
        verification: Verification::default(),
    };
    let mut functions = Vec::new();
    let mut hints = Hints::new();
    let mut failure = None;
    // A leftover file of an earlier run is removed first (the original opens with "w+").
    let cleared = first_failure(
        ctx,
        "removing old files",
        delete_files(ctx, plan, rank).await,
    )
    .await;
    let opened = match cleared {
        Err(e) => Err(e),
        Ok(()) => {
            let file = ctx.open(&plan.path(rank), &open_options(plan)).await;
            let result = file.map(|f| {
                hints = ctx.hints_in_effect(&f);
                run.file = Some(f);
            });
            first_failure(ctx, "opening the data file", result).await
        }
    };
    match opened {
        Err(e) => failure = Some(e.to_string()),
        Ok(()) => {
            for function in Function::ALL {
                match run.function(function).await {
                    Ok(times) => functions.push(times),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
        }
    }
    // Every rank takes part in the agreement, with its file or without.
    let t0 = ctx.wtime();
    let closed = match run.file.take() {
        Some(file) => ctx.close(file).await,
        None => Ok(()),
    };
    let close_s = ctx.wtime() - t0;
    if let Err(e) = first_failure(ctx, "closing the data file", closed).await {
        failure.get_or_insert(e.to_string());
    }
    if !plan.keep {
        let removed = first_failure(
            ctx,
            "removing the files",
            delete_files(ctx, plan, rank).await,
        )
        .await;
        if let Err(e) = removed {
            failure.get_or_insert(e.to_string());
        }
    }
    let mine = RankOutput {
        rank: rank as usize,
        functions,
        close_s,
        verification: run.verification,
    };
    (mine, hints, failure)
}
