//! The twin back end: `IoCtx` over `piotwin-sim`. Every rank is a task of one
//! deterministic virtual-time engine; data buffers carry lengths only.
//!
//! This file only translates: `IoCtx`'s types to the twin's ([`piotwin_sim::Rank`]
//! does the modelling, ROMIO's methods included), hints to the twin's MPI-IO
//! layer (which reports the hints in effect as MPICH does), `IoBuf` to a length,
//! `Kernel` kinds to the scenario's rates.
//!
//! One thing it adds: [`IoCtx::repeat`] **fast-forwards**. It runs iterations
//! exactly while observing them; once the twin is in a steady state (every
//! rank: the mean iteration times of the two halves of its window equal
//! within 1e-2, the same file-system
//! requests shifted by a constant per iteration, no cache threshold and no
//! change of where reads are served from within the skip — see
//! [`piotwin_sim::Rank::ff_plan`] for the conditions and the error bound), ranks
//! in step agree on a number of iterations `k` (a collective that costs no virtual
//! time), apply the skipped requests' effect on the storage state (together:
//! see [`piotwin_sim::Rank::ff_skip_in_step`]), advance the
//! clock by `k·Δ` and go on exactly. Ranks of an independent loop
//! offer a skip without waiting and skip a common stretch of virtual time of
//! at least [`FF_MIN_STRETCH`] iterations of the slowest rank; one whose
//! iterations stay on its node (reads its page cache serves: `FfPlan::local`)
//! skips alone at once, its load on the node's shared cores and memory bus
//! kept as flows ([`piotwin_sim::Rank::ff_skip_alone`]), so that ranks
//! streaming from their caches between read-ahead fetches do not wait for
//! all others to be between fetches too. A window refused as the requests
//! changed restarts after the change (ranks in step: it doubles, so that
//! their windows stay alike). Iterations whose
//! requests the devices serve are skipped only over stretches long enough to
//! bound the disk positionings the window did not see (the plan's
//! `min_skip`: every rank's, agreed with the skip; see
//! `scenarios/README.md`). The loop's last iteration always runs
//! exactly: `Count(n)` skips at most to `n − 1`; `TimeBudget` solves the stop
//! rule `(e + jΔ)·(r + j + 1)/(r + j) ≤ Tp` for the first `j` that stops and
//! skips at most `j − 2`, so the stop decision is taken on simulated time. A
//! skip is at most [`FF_GROWTH`] times the iterations done, so the steady state
//! is re-observed at geometrically spaced points. [`set_fast_forward`]`(false)`
//! (the CLI's `--exact`) runs every iteration.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use crate::ctx::Repeat;
use crate::ctx::{
    Api, Coordination, Hints, IoBuf, IoCtx, IoResult, Kernel, Op, OpenOptions, Position,
    RankProgram, ReduceOp, Scope, View,
};
use piotwin_sim::{FfObservation, FfOffer, FfPlan, FfPointer, Scenario, SimError};

/// Iterations in each half of the fast-forward's first window (see
/// [`piotwin_sim::Rank::ff_plan`]); doubled after each refusal up to [`FF_MAX_HALF`].
pub const FF_HALF: usize = 2;
/// The longest half window.
pub const FF_MAX_HALF: usize = 256;
/// Fewest iterations worth a skip.
pub const FF_MIN_SKIP: u64 = 4;
/// A skip is at most this many times the iterations done before it.
pub const FF_GROWTH: u64 = 8;
/// Fewest iterations of the slowest rank in the common stretch an independent
/// loop skips: its ranks learn of the skip up to one iteration apart (and
/// resume so), so the stretch is at least 1/ε iterations long for that
/// desynchronisation to stay within ε = [`piotwin_sim::FF_EPSILON`] of it.
pub const FF_MIN_STRETCH: u64 = 100;

thread_local! {
    static FAST_FORWARD: Cell<bool> = const { Cell::new(true) };
    static SKIPPED: Cell<u64> = const { Cell::new(0) };
}

/// Turns the fast-forward of [`IoCtx::repeat`] on (the default) or off for the
/// twin runs [`launch`] starts on this thread.
pub fn set_fast_forward(on: bool) {
    FAST_FORWARD.with(|f| f.set(on));
}

/// Whether [`launch`] on this thread fast-forwards repetitions.
pub fn fast_forward() -> bool {
    FAST_FORWARD.with(Cell::get)
}

/// Iterations the last [`launch`] on this thread skipped, summed over ranks.
pub fn skipped_iterations() -> u64 {
    SKIPPED.with(Cell::get)
}

/// A twin buffer: a length, no bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimBuf {
    len: usize,
}

impl IoBuf for SimBuf {
    fn len(&self) -> usize {
        self.len
    }
    fn bytes(&self) -> Option<&[u8]> {
        None
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
}

/// An open file in the twin.
pub struct SimFile {
    inner: piotwin_sim::File,
}

/// A posted nonblocking operation in the twin.
pub struct SimRequest {
    pending: piotwin_sim::Pending,
    buf: SimBuf,
}

/// One simulated rank's context.
pub struct SimCtx {
    rank: piotwin_sim::Rank,
    /// Fast-forward repetitions.
    ff: bool,
    /// Data accesses in the current repetition.
    calls: Cell<Calls>,
    /// Repetitions started (numbers the fast-forward's offer rounds).
    repeats: Cell<u64>,
    /// The fast-forward's window, kept between loops: it grows to up to 513
    /// observations on each of up to 1024 ranks, and growing it anew in every
    /// loop had the kernel clear fresh pages for a quarter of the 32 KiB
    /// write patterns' time.
    window: RefCell<VecDeque<FfObservation>>,
}

/// What the data accesses of one repetition were, for the fast-forward.
#[derive(Debug, Clone, Copy, Default)]
struct Calls {
    /// How many.
    count: u32,
    /// The shared file pointer an ordered access used.
    pointer: Option<FfPointer>,
    /// Something the fast-forward does not repeat (nonblocking or independent
    /// shared-pointer access).
    odd: bool,
    /// A collective access: every rank is in step, so skips are agreed.
    collective: bool,
}

impl SimCtx {
    fn new(rank: piotwin_sim::Rank, ff: bool) -> SimCtx {
        SimCtx {
            rank,
            ff,
            calls: Cell::new(Calls::default()),
            repeats: Cell::new(0),
            window: RefCell::new(VecDeque::new()),
        }
    }

    /// Counts a data access for the fast-forward's check that each repetition
    /// makes exactly one; independent shared-pointer accesses (whose order
    /// between ranks is decided call by call) are not repeated.
    fn count_call(&self, file: &SimFile, op: Op) {
        let mut c = self.calls.get();
        c.count += 1;
        c.collective |= op.coord == Coordination::Collective;
        match (op.coord, op.pos) {
            (_, Position::At(_)) => {}
            (Coordination::Collective, Position::SharedPointer) => {
                c.pointer = Some(self.rank.ff_pointer(&file.inner));
            }
            (Coordination::Independent, Position::SharedPointer) => c.odd = true,
        }
        self.calls.set(c);
    }

    /// The most iterations this rank may skip now, `r` done since `start`, its
    /// window of observations `window`: 0 where it may not.
    fn ff_bound(
        &self,
        policy: Repeat,
        r: u64,
        start: f64,
        window: &[FfObservation],
    ) -> (u64, Option<piotwin_sim::FfPlan>) {
        // An independent loop reads the offers' outcome some iterations after
        // it offered, when its window may have any length: the plan takes an
        // odd one (two halves and the start), so the oldest may be dropped.
        let window = &window[(window.len().max(1) - 1) % 2..];
        let mut most = FF_GROWTH.saturating_mul(r);
        if let Repeat::Count(n) = policy {
            most = most.min(n.saturating_sub(r + 1));
        }
        let Some(plan) = self.rank.ff_plan(window, most) else {
            return (0, None);
        };
        let mut k = plan.max_skip.min(most);
        if let Repeat::TimeBudget { budget } = policy
            && self.rank.rank() == 0
        {
            // rank 0 decides: the first j that stops, elapsed growing by Δ
            let (e, d) = (self.wtime() - start, plan.delta);
            let stops = |j: u64| (e + j as f64 * d) * (r + j + 1) as f64 / (r + j) as f64 > budget;
            let mut hi = 1u64;
            while !stops(hi) && hi < k {
                hi = hi.saturating_mul(2);
            }
            let mut lo = hi / 2;
            // first stopping j lies in (lo, hi] (or beyond k)
            while lo + 1 < hi {
                let mid = lo + (hi - lo) / 2;
                if stops(mid) { hi = mid } else { lo = mid }
            }
            if stops(hi) {
                k = k.min(hi.saturating_sub(2));
            }
        }
        (if k >= fewest(&plan) { k } else { 0 }, Some(plan))
    }

    /// [`crate::ctx::go_on`] with its barrier and rank 0's broadcast in one
    /// rendezvous ([`piotwin_sim::Rank::barrier_bcast_u64`]): the same
    /// virtual times, each rank woken once per iteration instead of twice.
    async fn go_on(&self, policy: Repeat, start: f64, done: u64) -> bool {
        match policy {
            Repeat::Count(n) => done < n,
            Repeat::TimeBudget { budget } => {
                let decide =
                    move |now: f64| crate::ctx::within_budget(now - start, done, budget) as u64;
                self.rank.barrier_bcast_u64(0, decide).await == 1
            }
        }
    }

    /// Skips the `k` iterations [`SimCtx::ff_bound`] allows alone
    /// ([`piotwin_sim::Rank::ff_skip_alone`]) where `plan` is
    /// [local](FfPlan::local): the iterations skipped, or `None` where it is
    /// not or may not skip.
    async fn ff_alone(&self, k: u64, plan: Option<&FfPlan>) -> Option<u64> {
        let plan = plan.filter(|p| k > 0 && p.local())?;
        let k = self.rank.ff_alone_bound(plan, k);
        if k < fewest(plan) {
            return None;
        }
        self.rank.ff_skip_alone(plan, k).await;
        SKIPPED.with(|s| s.set(s.get() + k));
        Some(k)
    }
}

/// Starts the fast-forward's window anew from `start`, keeping its memory
/// (it grew to up to 513 observations on each of up to 1024 ranks).
fn restart(window: &mut VecDeque<FfObservation>, start: FfObservation) {
    window.clear();
    window.push_back(start);
}

/// The fewest iterations a skip of `plan` may take.
fn fewest(plan: &FfPlan) -> u64 {
    plan.min_skip.max(FF_MIN_SKIP)
}

impl IoCtx for SimCtx {
    type Buf = SimBuf;
    type File = SimFile;
    type Request = SimRequest;

    fn rank(&self) -> usize {
        self.rank.rank()
    }
    fn size(&self) -> usize {
        self.rank.size()
    }
    fn wtime(&self) -> f64 {
        self.rank.now()
    }
    fn alloc(&self, len: usize) -> SimBuf {
        SimBuf { len }
    }

    async fn barrier(&self) {
        self.rank.barrier().await
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.rank.bcast_u64(value, root).await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.rank.allreduce_f64(value, op).await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.rank.allgather_f64(value).await
    }
    async fn sendrecv_replace(&self, buf: &mut SimBuf, dest: usize, source: usize) {
        self.rank.sendrecv(buf.len as u64, dest, source).await
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        self.rank
            .split(color, key)
            .await
            .map(|rank| SimCtx::new(rank, self.ff))
    }

    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<SimFile> {
        // POSIX files take no MPI-IO hints.
        let hints = match opts.api {
            Api::MpiIo => opts.hints.clone(),
            Api::Posix => Hints::new(),
        };
        let inner = self
            .rank
            .open_with_hints(
                path,
                opts.mode,
                opts.scope == Scope::Shared,
                opts.api,
                &hints,
            )
            .await?;
        Ok(SimFile { inner })
    }
    async fn set_view(&self, file: &mut SimFile, view: &View) -> IoResult<()> {
        self.rank.set_view(&mut file.inner, view).await
    }
    async fn xfer(&self, file: &mut SimFile, op: Op, buf: &mut SimBuf) -> IoResult<usize> {
        self.count_call(file, op);
        let n = self.rank.xfer(&mut file.inner, op, buf.len as u64).await?;
        Ok(n as usize)
    }
    async fn post(&self, file: &mut SimFile, op: Op, buf: SimBuf) -> IoResult<SimRequest> {
        let mut c = self.calls.get();
        c.count += 1;
        c.odd = true;
        self.calls.set(c);
        let pending = self.rank.post(&mut file.inner, op, buf.len as u64).await?;
        Ok(SimRequest { pending, buf })
    }
    async fn wait_all(
        &self,
        file: &mut SimFile,
        requests: Vec<SimRequest>,
    ) -> IoResult<Vec<SimBuf>> {
        let (pending, bufs): (Vec<_>, Vec<_>) =
            requests.into_iter().map(|r| (r.pending, r.buf)).unzip();
        self.rank.wait_all(&mut file.inner, pending).await;
        Ok(bufs)
    }
    async fn sync(&self, file: &mut SimFile) -> IoResult<()> {
        self.rank.sync(&mut file.inner).await;
        Ok(())
    }
    /// Write-back of the node's dirty pages of the file, then its clean pages evicted.
    async fn drop_cache(&self, file: &mut SimFile) -> IoResult<()> {
        self.rank.drop_cache(&mut file.inner).await;
        Ok(())
    }
    async fn file_size(&self, file: &mut SimFile) -> IoResult<u64> {
        Ok(self.rank.file_size(&file.inner).await)
    }
    async fn set_info(&self, file: &mut SimFile, hints: &Hints) -> IoResult<()> {
        self.rank.set_info(&mut file.inner, hints)
    }
    fn hints_in_effect(&self, file: &SimFile) -> Hints {
        file.inner.hints_in_effect()
    }
    async fn close(&self, file: SimFile) -> IoResult<()> {
        self.rank.close(file.inner).await;
        Ok(())
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.rank.delete(path).await;
        Ok(())
    }

    async fn compute<R>(&self, kernel: Kernel, _work: impl FnOnce() -> R) -> Option<R> {
        self.rank.compute(kernel.kind, kernel.amount).await;
        None
    }

    /// Runs `body` as the default does (the same collectives, the same stop
    /// rule) and fast-forwards as the module docs say.
    async fn repeat(
        &self,
        policy: Repeat,
        mut body: impl AsyncFnMut(u64) -> IoResult<()>,
    ) -> IoResult<u64> {
        let start = self.wtime();
        let mut r = 0u64;
        if self.ff {
            self.rank.ff_start();
        }
        let mut window = self.window.take();
        if self.ff {
            // its longest, once: growing it by doubling copies it and leaves
            // the old blocks behind
            window.reserve_exact(2 * FF_MAX_HALF + 2);
        }
        restart(&mut window, self.rank.ff_observe(None, false));
        let mut half = FF_HALF;
        // offer rounds of an independent loop: the next round, and the round
        // awaited with this rank's plan then and the iterations done then
        let call = self.repeats.get();
        self.repeats.set(call + 1);
        let mut round = call << 32;
        let mut awaited: Option<(u64, Option<FfPlan>, u64)> = None;
        // skips of ranks in step, numbered alike on every rank
        let mut together = call << 32;
        // the next iteration at which a rank awaiting an offer round looks
        // for a local plan (see `ff_alone`)
        let mut alone_next = 0u64;
        // skipped alone while awaiting an offer round: its plan is stale
        let mut alone_since_offer = false;
        loop {
            self.calls.set(Calls::default());
            body(r).await?;
            r += 1;
            if !self.go_on(policy, start, r).await {
                break;
            }
            if !self.ff {
                continue;
            }
            let calls = self.calls.get();
            window.push_back(self.rank.ff_observe(calls.pointer, true));
            if window.len() > 2 * FF_MAX_HALF + 1 {
                window.pop_front();
            }
            let repeatable = calls.count == 1 && !calls.odd;
            // Ranks in step (a barrier per iteration, or a collective access) agree
            // on one number of iterations at decision points that depend on r and
            // agreed skips only, the same on every rank. Ranks of an independent
            // loop offer a time to skip to and go on; once all have offered, each
            // skips its own iterations up to the earliest offered time, provided
            // that every rank can skip [`FF_MIN_STRETCH`] iterations of the
            // slowest one (a rule every rank evaluates alike on the outcome).
            let in_step = calls.collective || matches!(policy, Repeat::TimeBudget { .. });
            let k;
            let plan;
            if in_step {
                if window.len() < 2 * half + 1 {
                    continue;
                }
                let (mine, p) = if repeatable {
                    self.ff_bound(policy, r, start, window.make_contiguous())
                } else {
                    (0, None)
                };
                k = self.rank.ff_agree(mine, p.as_ref().map_or(0, fewest)).await;
                plan = p;
            } else if let Some((key, offered, r0)) = awaited.take() {
                let Some(out) = self.rank.ff_offered(key) else {
                    awaited = Some((key, offered, r0));
                    // awaiting: a local plan need not wait
                    if repeatable && window.len() > 2 * half && r >= alone_next {
                        alone_next = r + half as u64;
                        let (mine, p) = self.ff_bound(policy, r, start, window.make_contiguous());
                        if let Some(k) = self.ff_alone(mine, p.as_ref()).await {
                            r += k;
                            restart(&mut window, self.rank.ff_observe(None, false));
                            alone_since_offer = true;
                        } else if let Some(i) =
                            piotwin_sim::Rank::ff_restart(window.make_contiguous())
                        {
                            window.drain(..i);
                        }
                    }
                    continue;
                };
                if std::mem::take(&mut alone_since_offer) {
                    continue;
                }
                // The plan made at the offer, carried over the iterations run
                // since (the state was steady then, and every rank skips the
                // same stretch); the stretch must be long for every rank.
                let now = self.wtime();
                plan = offered
                    .filter(|_| out.until - out.at >= (FF_MIN_STRETCH + 2) as f64 * out.delta)
                    .map(|p| p.advanced(r - r0, now));
                k = match &plan {
                    Some(p) => {
                        let fit = ((out.until - now) / p.delta).floor().max(0.0) as u64;
                        let mut k = p.max_skip.min(fit);
                        if let Repeat::Count(n) = policy {
                            k = k.min(n.saturating_sub(r + 1));
                        }
                        if k >= fewest(p) { k } else { 0 }
                    }
                    None => 0,
                };
            } else {
                if window.len() < 2 * half + 1 {
                    continue;
                }
                let (mine, p) = if repeatable {
                    self.ff_bound(policy, r, start, window.make_contiguous())
                } else {
                    (0, None)
                };
                if let Some(k) = self.ff_alone(mine, p.as_ref()).await {
                    r += k;
                    restart(&mut window, self.rank.ff_observe(None, false));
                    continue;
                }
                let now = self.wtime();
                let offer = match &p {
                    Some(p) if mine > 0 => FfOffer {
                        at: now,
                        until: now + mine as f64 * p.delta,
                        delta: p.delta,
                    },
                    _ => FfOffer {
                        at: now,
                        until: 0.0,
                        delta: 0.0,
                    },
                };
                self.rank.ff_offer(round, offer);
                awaited = Some((round, p.filter(|_| mine > 0), r));
                round += 1;
                continue;
            }
            match plan {
                Some(plan) if k > 0 => {
                    if in_step {
                        self.rank.ff_skip_in_step(together, &plan, k).await;
                        together += 1;
                    } else {
                        self.rank.ff_skip(&plan, k).await;
                    }
                    r += k;
                    SKIPPED.with(|s| s.set(s.get() + k));
                    restart(&mut window, self.rank.ff_observe(None, false));
                }
                // (ranks in step keep windows of one length: their decision
                // points depend on it)
                _ => match piotwin_sim::Rank::ff_restart(window.make_contiguous())
                    .filter(|_| !in_step)
                {
                    // refused as the requests changed: observe from the change on
                    Some(i) => {
                        window.drain(..i);
                    }
                    // refused: observe a window twice as long, keeping its newest half
                    None => {
                        half = (half * 2).min(FF_MAX_HALF);
                        let keep = window.len().min(half + 1);
                        window.drain(..window.len() - keep);
                    }
                },
            }
        }
        if self.ff {
            self.rank.ff_stop();
        }
        window.clear();
        self.window.replace(window);
        Ok(r)
    }
}

/// Run `program` on `ranks` simulated ranks of `scenario` with RNG seed `seed`;
/// returns every rank's output, indexed by rank. Deterministic: the same
/// scenario, ranks, seed and program give bit-identical outputs.
pub fn launch<P: RankProgram>(
    scenario: &Scenario,
    ranks: usize,
    seed: u64,
    program: &P,
) -> Result<Vec<P::Output>, SimError> {
    let twin = piotwin_sim::Twin::new(scenario, ranks, seed)?;
    let ff = fast_forward();
    SKIPPED.with(|s| s.set(0));
    let ctxs: Vec<SimCtx> = (0..ranks).map(|r| SimCtx::new(twin.rank(r), ff)).collect();
    let outputs: Vec<RefCell<Option<P::Output>>> = (0..ranks).map(|_| RefCell::new(None)).collect();
    let tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = ctxs
        .iter()
        .zip(&outputs)
        .map(|(ctx, slot)| {
            Box::pin(async move {
                let out = program.run(ctx).await;
                *slot.borrow_mut() = Some(out);
            }) as Pin<Box<dyn Future<Output = ()> + '_>>
        })
        .collect();
    twin.run(tasks)?;
    Ok(outputs
        .into_iter()
        .map(|o| o.into_inner().expect("every rank finished"))
        .collect())
}
