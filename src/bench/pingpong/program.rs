//! The per-rank program.

use super::*;

/// One measured row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingRow {
    /// `sendrecv`, `barrier`, `barrier_exit`, `allreduce` or one of the tests' names.
    pub test: String,
    /// Ranks in the job.
    pub ranks: u64,
    /// Message size, bytes (0 for a barrier).
    pub bytes: u64,
    /// Operations timed.
    pub iterations: u64,
    /// Time of one operation, seconds: the maximum over ranks of elapsed / iterations.
    pub seconds: f64,
    /// Ranks taking part (the polled test's first ranks); 0: all of them. In
    /// a `barrier_exit` row, the place in the order the ranks left the barriers
    /// (1: the second out).
    #[serde(default)]
    pub active: u64,
}

/// What every rank returns (the rows are the same on every rank, but for the
/// polled test's: only on the ranks that took part).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PingpongOutput {
    /// One row per size, then the barrier row.
    pub rows: Vec<PingRow>,
    /// Data checks that failed on this rank (real mode).
    pub mismatches: Vec<String>,
}

/// The probe.
#[derive(Debug, Clone)]
pub struct Pingpong {
    /// Its options.
    pub params: PingpongParams,
}

/// The byte a rank's buffer holds at index `i` before the exchanges.
pub(super) fn pattern(rank: usize, i: usize) -> u8 {
    (rank.wrapping_mul(131) ^ i.wrapping_mul(7)) as u8
}

/// The report's table columns.
pub const COLUMNS: [&str; 6] = ["test", "ranks", "bytes", "iterations", "seconds", "active"];

impl RankProgram for Pingpong {
    type Output = PingpongOutput;

    async fn run<C: IoCtx>(&self, ctx: &C) -> PingpongOutput {
        let (rank, size) = (ctx.rank(), ctx.size());
        let partner = rank ^ 1;
        let paired = partner < size;
        let mut out = PingpongOutput::default();
        for &bytes in &self.params.sizes {
            let k = self.params.exchanges(bytes);
            let mut buf = ctx.alloc(bytes as usize);
            if let Some(b) = buf.bytes_mut() {
                for (i, x) in b.iter_mut().enumerate() {
                    *x = pattern(rank, i);
                }
            }
            ctx.barrier().await;
            if paired {
                ctx.sendrecv_replace(&mut buf, partner, partner).await;
            }
            let t0 = ctx.wtime();
            if paired {
                for _ in 0..k {
                    ctx.sendrecv_replace(&mut buf, partner, partner).await;
                }
            }
            let mine = if paired {
                (ctx.wtime() - t0) / k as f64
            } else {
                0.0
            };
            let seconds = ctx.allreduce_f64(mine, ReduceOp::Max).await;
            // 1 warm-up + k exchanges: an odd total leaves the partner's data here.
            let holder = if (k + 1) % 2 == 1 { partner } else { rank };
            if paired
                && let Some(b) = buf.bytes()
                && let Some(i) = (0..b.len()).find(|&i| b[i] != pattern(holder, i))
            {
                out.mismatches.push(format!(
                    "rank {rank}: {bytes}-byte exchange with rank {partner}: byte {i} is {}, expected {}",
                    b[i],
                    pattern(holder, i)
                ));
            }
            out.rows.push(PingRow {
                test: "sendrecv".into(),
                ranks: size as u64,
                bytes,
                iterations: k,
                seconds,
                active: 0,
            });
            if ctx.stop_requested().await.is_some() {
                return out;
            }
        }
        ctx.barrier().await;
        let t0 = ctx.wtime();
        let mut left = Vec::with_capacity(self.params.barriers as usize);
        for _ in 0..self.params.barriers {
            ctx.barrier().await;
            left.push(ctx.wtime());
        }
        let mine = (ctx.wtime() - t0) / self.params.barriers as f64;
        let seconds = ctx.allreduce_f64(mine, ReduceOp::Max).await;
        out.rows.push(PingRow {
            test: "barrier".into(),
            ranks: size as u64,
            bytes: 0,
            iterations: self.params.barriers,
            seconds,
            active: 0,
        });
        out.rows.extend(exit_rows(ctx, &left).await);
        out.rows
            .push(allreduces(ctx, self.params.barriers, &mut out.mismatches).await);
        if self.params.polled > 0 && ctx.stop_requested().await.is_none() {
            self.polled(ctx, &mut out).await;
        }
        for &bytes in &self.params.locked_writes {
            if ctx.stop_requested().await.is_some() {
                break;
            }
            self.locked_writes(ctx, bytes, &mut out).await;
        }
        if !self.params.two_phase.is_empty() && ctx.stop_requested().await.is_none() {
            self.two_phase(ctx, &mut out).await;
        }
        out
    }
}

/// The `allreduce` row: `count` all-reduces (sum) of one value each, timed as
/// the barriers are. MPI's all-reduce is not its barrier: with more ranks than
/// cores MPICH's took 0.5-0.75 of a barrier's time here (`nodes.allreduce_wake`).
/// Each sum is checked (the twin reduces the values too).
async fn allreduces<C: IoCtx>(ctx: &C, count: u64, mismatches: &mut Vec<String>) -> PingRow {
    let (rank, size) = (ctx.rank(), ctx.size());
    let expected = (size * (size - 1) / 2) as f64;
    ctx.barrier().await;
    let t0 = ctx.wtime();
    let mut wrong = None;
    for i in 0..count {
        let sum = ctx.allreduce_f64(rank as f64, ReduceOp::Sum).await;
        if sum != expected && wrong.is_none() {
            wrong = Some((i, sum));
        }
    }
    let mine = (ctx.wtime() - t0) / count as f64;
    if let Some((i, sum)) = wrong {
        mismatches.push(format!(
            "rank {rank}: all-reduce {i} of the ranks' numbers gave {sum}, expected {expected}"
        ));
    }
    PingRow {
        test: "allreduce".into(),
        ranks: size as u64,
        bytes: 8,
        iterations: count,
        seconds: ctx.allreduce_f64(mine, ReduceOp::Max).await,
        active: 0,
    }
}

/// Barriers whose exit times are gathered (one all-gather each, after the
/// timed loop: 8 ms apiece at 4 ranks on 2 cores).
const EXITS_GATHERED: usize = 100;

/// The `barrier_exit` rows of the timed barriers, whose exit times on this rank are
/// `left`: row `k` (in `active`, 1 to ranks − 1) is the mean over the first
/// [`EXITS_GATHERED`] barriers of how long after the first rank out the
/// (k + 1)-th left.
async fn exit_rows<C: IoCtx>(ctx: &C, left: &[f64]) -> Vec<PingRow> {
    let left = &left[..left.len().min(EXITS_GATHERED)];
    let size = ctx.size();
    let mut after_first = vec![0.0; size];
    for &t in left {
        let mut exits = ctx.allgather_f64(t).await;
        exits.sort_by(f64::total_cmp);
        for (k, e) in exits.iter().enumerate() {
            after_first[k] += e - exits[0];
        }
    }
    (1..size)
        .map(|k| PingRow {
            test: "barrier_exit".into(),
            ranks: size as u64,
            bytes: 0,
            iterations: left.len() as u64,
            seconds: after_first[k] / left.len().max(1) as f64,
            active: k as u64,
        })
        .collect()
}

/// Opens the tests' shared file for MPI-IO, created if absent; a failure is
/// recorded as `test`'s.
async fn open_shared<C: IoCtx>(
    ctx: &C,
    path: &str,
    test: &str,
    out: &mut PingpongOutput,
) -> Option<C::File> {
    let opts = OpenOptions {
        mode: OpenMode::CreateReadWrite,
        scope: Scope::Shared,
        api: Api::MpiIo,
        hints: Default::default(),
        unique_open: false,
    };
    match ctx.open(path, &opts).await {
        Ok(f) => Some(f),
        Err(e) => {
            out.mismatches.push(format!("{test}: open `{path}`: {e}"));
            None
        }
    }
}

/// Steps of the polled test between two sleeps ([`sleep_in_a_sync`]).
const POLLED_EPISODE: u64 = 5;

/// Bytes of the file each rank of the polled test writes and syncs before an
/// episode of steps.
const SLEEPER_BYTES: usize = 4096;

/// Sleeps this rank in the kernel as an application's I/O does: creates
/// `path`, writes a page, syncs it (a journal commit) and deletes it. A rank that
/// never sleeps keeps the core the scheduler gave it; one that sleeps is
/// placed again when it wakes, so the polled test's episodes sample the
/// placements an I/O application's ranks go through, not one job's.
/// Failures are recorded as the polled test's.
async fn sleep_in_a_sync<C: IoCtx>(ctx: &C, path: &str, out: &mut PingpongOutput) {
    let opts = OpenOptions {
        mode: OpenMode::Create,
        scope: Scope::Private,
        api: Api::Posix,
        hints: Default::default(),
        unique_open: false,
    };
    let mut file = match ctx.open(path, &opts).await {
        Ok(f) => f,
        Err(e) => {
            out.mismatches
                .push(format!("polled test: open `{path}`: {e}"));
            return;
        }
    };
    let mut page = ctx.alloc(SLEEPER_BYTES);
    let written = ctx.xfer(&mut file, Op::write_at(0), &mut page).await;
    let synced = ctx.sync(&mut file).await;
    let closed = ctx.close(file).await;
    let deleted = ctx.delete(path).await;
    if let Err(e) = written.and(synced).and(closed).and(deleted) {
        out.mismatches
            .push(format!("polled test: write, sync and delete `{path}`: {e}"));
    }
}

/// The byte at index `i` of rank `rank`'s data in two-phase call `call`.
fn call_pattern(rank: usize, call: u64, i: usize) -> u8 {
    pattern(rank, i) ^ (call as u8).wrapping_mul(29)
}

impl Pingpong {
    /// The polled test: the first `polled` ranks, in a communicator of their
    /// own, time for each copy size `n` copies of it (a copy of a buffer into
    /// another), then `n` steps of a copy and a barrier among them in episodes
    /// of [`POLLED_EPISODE`], each after [`sleep_in_a_sync`] (untimed), while the
    /// other ranks wait in the world's barrier. Rows `polled_copy` and
    /// `polled_step`: the mean time of a copy, of a step (maximum over the
    /// taking part). With more ranks than cores, a copy's time says whether
    /// the waiting ranks take their share of the cores (MPICH busy-polls) and a
    /// step's time less a copy's what a barrier among no more ranks than cores
    /// costs while they do. Real runs check the last copy. The rows are on the
    /// ranks that took part (rank 0 always does).
    async fn polled<C: IoCtx>(&self, ctx: &C, out: &mut PingpongOutput) {
        let (rank, size) = (ctx.rank(), ctx.size());
        let active = self.params.polled;
        let sub = ctx.split(Some(usize::from(rank as u64 >= active)), 0).await;
        if let Some(sub) = sub.filter(|_| (rank as u64) < active) {
            let sleeper = format!("{}.polled{rank}", self.params.file);
            for &bytes in &self.params.polled_copies {
                let n = self.params.polled_steps(bytes);
                let mut src = ctx.alloc(bytes as usize);
                let mut dst = ctx.alloc(bytes as usize);
                if let Some(b) = src.bytes_mut() {
                    for (i, x) in b.iter_mut().enumerate() {
                        *x = pattern(rank, i);
                    }
                }
                let copy = async |dst: &mut C::Buf| {
                    sub.compute(Kernel::memcpy(bytes), || {
                        if let (Some(from), Some(to)) = (src.bytes(), dst.bytes_mut()) {
                            to.copy_from_slice(from);
                        }
                    })
                    .await;
                };
                sub.barrier().await;
                let t0 = sub.wtime();
                for _ in 0..n {
                    copy(&mut dst).await;
                }
                let copied = (sub.wtime() - t0) / n as f64;
                let mut stepping = 0.0;
                for first in (0..n).step_by(POLLED_EPISODE as usize) {
                    sleep_in_a_sync(&sub, &sleeper, out).await;
                    sub.barrier().await;
                    let t0 = sub.wtime();
                    for _ in first..n.min(first + POLLED_EPISODE) {
                        copy(&mut dst).await;
                        sub.barrier().await;
                    }
                    stepping += sub.wtime() - t0;
                }
                let stepped = stepping / n as f64;
                if let Some(b) = dst.bytes()
                    && let Some(i) = (0..b.len()).find(|&i| b[i] != pattern(rank, i))
                {
                    out.mismatches.push(format!(
                        "rank {rank}: polled test, {bytes}-byte copy: byte {i} is {}, expected {}",
                        b[i],
                        pattern(rank, i)
                    ));
                }
                for (test, mine) in [("polled_copy", copied), ("polled_step", stepped)] {
                    out.rows.push(PingRow {
                        test: test.into(),
                        ranks: size as u64,
                        bytes,
                        iterations: n,
                        seconds: sub.allreduce_f64(mine, ReduceOp::Max).await,
                        active,
                    });
                }
            }
        }
        ctx.barrier().await;
    }

    /// The locked-write test: every rank writes `bytes` bytes at
    /// `rank · bytes` of one shared file with independent MPI-IO,
    /// once untimed (the timed writes then find their pages cached) and then
    /// `locked_calls` times, each after a barrier. Row `locked_write`: the
    /// mean call time, maximum over ranks; its bytes those of one call over
    /// all ranks. Real runs read their part back and check it. The file is
    /// deleted at the end.
    async fn locked_writes<C: IoCtx>(&self, ctx: &C, bytes: u64, out: &mut PingpongOutput) {
        let (rank, size) = (ctx.rank(), ctx.size());
        let path = self.params.file.as_str();
        let Some(mut file) = open_shared(ctx, path, "locked-write test", out).await else {
            return;
        };
        let at = rank as u64 * bytes;
        let mut buf = ctx.alloc(bytes as usize);
        if let Some(b) = buf.bytes_mut() {
            for (i, x) in b.iter_mut().enumerate() {
                *x = pattern(rank, i);
            }
        }
        let write = Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(at),
        };
        let calls = self.params.locked_calls(bytes, size as u64);
        let mut elapsed = 0.0;
        for call in 0..=calls {
            ctx.barrier().await;
            let t0 = ctx.wtime();
            // A failed write is recorded and the calls go on, so that every
            // rank meets the others' barriers and the file is still deleted.
            if let Err(e) = ctx.xfer(&mut file, write, &mut buf).await {
                out.mismatches
                    .push(format!("locked-write test: write {call}: {e}"));
            }
            if call > 0 {
                elapsed += ctx.wtime() - t0;
            }
        }
        let seconds = ctx
            .allreduce_f64(elapsed / calls as f64, ReduceOp::Max)
            .await;
        out.rows.push(PingRow {
            test: "locked_write".into(),
            ranks: size as u64,
            bytes: bytes * size as u64,
            iterations: calls,
            seconds,
            active: 0,
        });
        let mut back = ctx.alloc(bytes as usize);
        let read = Op {
            access: Access::Read,
            coord: Coordination::Independent,
            pos: Position::At(at),
        };
        match ctx.xfer(&mut file, read, &mut back).await {
            Err(e) => out
                .mismatches
                .push(format!("locked-write test: read back: {e}")),
            Ok(_) => {
                if let Some(b) = back.bytes()
                    && let Some(i) = (0..b.len()).find(|&i| b[i] != pattern(rank, i))
                {
                    out.mismatches.push(format!(
                        "rank {rank}: locked-write test, read back: byte {i} is {}, expected {}",
                        b[i],
                        pattern(rank, i)
                    ));
                }
            }
        }
        let _ = ctx.close(file).await;
        ctx.barrier().await;
        if rank == 0 {
            let _ = ctx.delete(path).await;
        }
        ctx.barrier().await;
    }

    /// The two-phase test: every rank sees the file through an interleaved view
    /// (blocks of `two_phase_block` bytes, rank r's at `(r + k·ranks)·block`), so
    /// ROMIO's interleave test chooses collective buffering; for each size, calls
    /// of `write_at_all` then as many `read_at_all` over the same bytes, each
    /// after a barrier. A row's time is the mean call time, maximum over ranks;
    /// its bytes are those of one call over all ranks. Real runs check what they
    /// read back. The file is deleted at the end.
    async fn two_phase<C: IoCtx>(&self, ctx: &C, out: &mut PingpongOutput) {
        let (rank, size) = (ctx.rank(), ctx.size());
        let block = self.params.two_phase_block;
        let path = self.params.file.as_str();
        let Some(mut file) = open_shared(ctx, path, "two-phase test", out).await else {
            return;
        };
        let view = View {
            disp: rank as u64 * block,
            etype: Datatype::Byte,
            filetype: Datatype::Resized {
                lb: 0,
                extent: block * size as u64,
                inner: Box::new(Datatype::Contiguous {
                    count: block,
                    inner: Box::new(Datatype::Byte),
                }),
            },
        };
        if let Err(e) = ctx.set_view(&mut file, &view).await {
            out.mismatches
                .push(format!("two-phase test: set_view: {e}"));
            let _ = ctx.close(file).await;
            return;
        }
        'sizes: for &per_rank in &self.params.two_phase {
            let calls = self.params.two_phase_calls(per_rank, size as u64);
            for access in [Access::Write, Access::Read] {
                let mut elapsed = 0.0;
                for call in 0..calls {
                    let mut buf = ctx.alloc(per_rank as usize);
                    if access == Access::Write
                        && let Some(b) = buf.bytes_mut()
                    {
                        for (i, x) in b.iter_mut().enumerate() {
                            *x = call_pattern(rank, call, i);
                        }
                    }
                    let op = Op {
                        access,
                        coord: Coordination::Collective,
                        pos: Position::At(call * per_rank),
                    };
                    ctx.barrier().await;
                    let t0 = ctx.wtime();
                    let done = ctx.xfer(&mut file, op, &mut buf).await;
                    elapsed += ctx.wtime() - t0;
                    match done {
                        Err(e) => {
                            out.mismatches.push(format!(
                                "two-phase test: {per_rank}-byte {access:?} call {call}: {e}"
                            ));
                            break 'sizes;
                        }
                        Ok(_) if access == Access::Read => {
                            if let Some(b) = buf.bytes()
                                && let Some(i) =
                                    (0..b.len()).find(|&i| b[i] != call_pattern(rank, call, i))
                            {
                                out.mismatches.push(format!(
                                    "rank {rank}: two-phase read of {per_rank} bytes, call {call}: byte {i} is {}, expected {}",
                                    b[i],
                                    call_pattern(rank, call, i)
                                ));
                            }
                        }
                        Ok(_) => {}
                    }
                }
                let seconds = ctx
                    .allreduce_f64(elapsed / calls as f64, ReduceOp::Max)
                    .await;
                out.rows.push(PingRow {
                    test: match access {
                        Access::Write => "twophase_write",
                        Access::Read => "twophase_read",
                    }
                    .into(),
                    ranks: size as u64,
                    bytes: per_rank * size as u64,
                    iterations: calls,
                    seconds,
                    active: 0,
                });
            }
            if ctx.stop_requested().await.is_some() {
                break;
            }
        }
        let _ = ctx.close(file).await;
        if rank == 0 {
            let _ = ctx.delete(path).await;
        }
    }
}
