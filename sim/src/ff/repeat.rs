//! The fast-forward's controller: a repetition run iteration by iteration
//! while it is observed, skipped once a plan, agreed between the ranks, allows.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use piotwin_types::{Coordination, Op, Position, Repeat, within_budget};

use crate::ff::{FfObservation, FfOffer, FfPlan, FfPointer};
use crate::mpi::Rank;
use crate::mpi::mpiio::File;

/// Iterations in each half of the fast-forward's first window (see
/// [`Rank::ff_plan`]); doubled after each refusal up to [`FF_MAX_HALF`].
pub(crate) const FF_HALF: usize = 2;
/// The longest half window.
pub(crate) const FF_MAX_HALF: usize = 256;
/// Fewest iterations worth a skip.
pub(crate) const FF_MIN_SKIP: u64 = 4;
/// Iterations between an in-step message loop's proposal of a skip and the
/// skip ([`Rank::ff_proposed`]): ranks coupled by messages run within a few
/// iterations of each other, so all have proposed by then unless they drift
/// apart (then no skip).
pub(crate) const FF_LAG: u64 = 4;
/// A skip is at most this many times the iterations done before it.
pub(crate) const FF_GROWTH: u64 = 8;
/// Fewest iterations of the slowest rank in the common stretch an independent
/// loop skips: its ranks learn of the skip up to one iteration apart (and
/// resume so), so the stretch is at least 1/ε iterations long for that
/// desynchronisation to stay within ε = [`FF_EPSILON`] of it.
pub(crate) const FF_MIN_STRETCH: u64 = 100;

/// A rank's state of its repetitions: what the current iteration's data
/// accesses were, how many repetitions it started, and its window of
/// observations.
#[derive(Default)]
pub(crate) struct Repetitions {
    /// Data accesses in the current iteration.
    calls: Cell<Calls>,
    /// Repetitions started (numbers the offer rounds).
    started: Cell<u64>,
    /// The window, kept between loops: it grows to up to 513 observations on
    /// each of up to 1024 ranks, and growing it anew in every loop had the
    /// kernel clear fresh pages for a quarter of the 32 KiB write patterns' time.
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
    /// The point-to-point messages posted: how many, and a hash of their
    /// peers, directions and sizes in order (an [`Repeat::InStep`] loop
    /// repeats only iterations that post the same ones).
    messages: u32,
    signature: u64,
}

impl Rank {
    /// Counts a data access for the fast-forward's check that each repetition
    /// makes exactly one; independent shared-pointer accesses (whose order
    /// between ranks is decided call by call) are not repeated.
    pub(crate) fn count_call(&self, file: &File, op: Op) {
        let mut c = self.reps.calls.get();
        c.count += 1;
        c.collective |= op.coord == Coordination::Collective;
        match (op.coord, op.pos) {
            (_, Position::At(_)) => {}
            (Coordination::Collective, Position::SharedPointer) => {
                c.pointer = Some(self.ff_pointer(file));
            }
            (Coordination::Independent, Position::SharedPointer) => c.odd = true,
        }
        self.reps.calls.set(c);
    }

    /// Counts a point-to-point message this rank posts: a send of `bytes`
    /// to world rank `peer`, or (`None`) a receive from it.
    pub(crate) fn count_message(&self, peer: usize, bytes: Option<u64>) {
        let mut c = self.reps.calls.get();
        c.messages += 1;
        // FNV-1a over the message's fields, chained in posting order.
        for word in [peer as u64, bytes.map_or(u64::MAX, |b| b)] {
            c.signature = (c.signature ^ word).wrapping_mul(0x100_0000_01b3);
        }
        self.reps.calls.set(c);
    }

    /// Counts a nonblocking access: the fast-forward does not repeat those.
    pub(crate) fn count_nonblocking(&self) {
        let mut c = self.reps.calls.get();
        c.count += 1;
        c.odd = true;
        self.reps.calls.set(c);
    }

    /// The most iterations this rank may skip now, `r` done since `start`, its
    /// window of observations `window`: 0 where it may not.
    fn ff_bound(
        &self,
        policy: Repeat,
        r: u64,
        start: f64,
        window: &[FfObservation],
    ) -> (u64, Option<FfPlan>) {
        // An independent loop reads the offers' outcome some iterations after
        // it offered, when its window may have any length: the plan takes an
        // odd one (two halves and the start), so the oldest may be dropped.
        let window = &window[(window.len().max(1) - 1) % 2..];
        let mut most = FF_GROWTH.saturating_mul(r);
        if let Repeat::Count(n) | Repeat::InStep(n) = policy {
            most = most.min(n.saturating_sub(r + 1));
        }
        let Some(plan) = self.ff_plan(window, most) else {
            return (0, None);
        };
        let mut k = plan.max_skip.min(most);
        if let Repeat::TimeBudget { budget } = policy
            && self.rank() == 0
        {
            // rank 0 decides: the first j that stops, elapsed growing by Δ
            let (e, d) = (self.now() - start, plan.delta);
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

    /// `IoCtx`'s `go_on` with its barrier and rank 0's broadcast in one
    /// rendezvous ([`Rank::barrier_bcast_u64`]): the same
    /// virtual times, each rank woken once per iteration instead of twice.
    async fn go_on(&self, policy: Repeat, start: f64, done: u64) -> bool {
        match policy {
            Repeat::Count(n) | Repeat::InStep(n) => done < n,
            Repeat::TimeBudget { budget } => {
                let decide = move |now: f64| within_budget(now - start, done, budget) as u64;
                self.barrier_bcast_u64(0, decide).await == 1
            }
        }
    }

    /// Skips the `k` iterations [`Rank::ff_bound`] allows alone
    /// ([`Rank::ff_skip_alone`]) where `plan` is
    /// [local](FfPlan::local): the iterations skipped, or `None` where it is
    /// not or may not skip.
    async fn ff_alone(&self, k: u64, plan: Option<&FfPlan>) -> Option<u64> {
        let plan = plan.filter(|p| k > 0 && p.local())?;
        let k = self.ff_alone_bound(plan, k);
        if k < fewest(plan) {
            return None;
        }
        self.ff_skip_alone(plan, k).await;
        self.sim.model.borrow_mut().ff.skipped += k;
        Some(k)
    }

    /// `body(r)` for `r = 0, 1, …` as `policy` says (every rank of the
    /// communicator calls it with the same policy); returns how many times it
    /// ran, or `body`'s first error. The same collectives and stop rule as a
    /// literal loop (`IoCtx::repeat`'s default), fast-forwarded as
    /// `ff/README.md` says.
    pub async fn repeat<E>(
        &self,
        policy: Repeat,
        mut body: impl AsyncFnMut(u64) -> Result<(), E>,
    ) -> Result<u64, E> {
        let start = self.now();
        let mut r = 0u64;
        if self.sim.fast_forward {
            self.ff_start();
        }
        let mut window = self.reps.window.take();
        if self.sim.fast_forward {
            // its longest, once: growing it by doubling copies it and leaves
            // the old blocks behind
            window.reserve_exact(2 * FF_MAX_HALF + 2);
        }
        restart(&mut window, self.ff_observe(None, false));
        let mut half = FF_HALF;
        // offer rounds of an independent loop: the next round, and the round
        // awaited with this rank's plan then and the iterations done then
        let call = self.reps.started.get();
        self.reps.started.set(call + 1);
        let mut round = call << 32;
        let mut awaited: Option<(u64, Option<FfPlan>, u64)> = None;
        // skips of ranks in step, numbered alike on every rank
        let mut together = call << 32;
        // the next iteration at which a rank awaiting an offer round looks
        // for a local plan (see `ff_alone`)
        let mut alone_next = 0u64;
        // skipped alone while awaiting an offer round: its plan is stale
        let mut alone_since_offer = false;
        // an in-step loop's iterations in a row that posted the same messages,
        // and its proposal awaited: round, the iteration it is taken at, plan
        let (mut signature, mut same_messages) = (None, 0usize);
        let mut proposed: Option<(u64, u64, Option<FfPlan>)> = None;
        loop {
            self.reps.calls.set(Calls::default());
            body(r).await?;
            r += 1;
            if !self.go_on(policy, start, r).await {
                break;
            }
            if !self.sim.fast_forward {
                continue;
            }
            let calls = self.reps.calls.get();
            window.push_back(self.ff_observe(calls.pointer, true));
            if window.len() > 2 * FF_MAX_HALF + 1 {
                window.pop_front();
            }
            if let Repeat::InStep(n) = policy {
                // Messages only, the same in every iteration of the window, each
                // iteration as long as the last: proposed without waiting, and
                // taken FF_LAG iterations on where every rank proposed by then.
                let sent = (calls.messages, calls.signature);
                same_messages = if signature.replace(sent) == Some(sent) {
                    same_messages + 1
                } else {
                    1
                };
                if let Some((key, at, plan)) = proposed.take() {
                    if r < at {
                        proposed = Some((key, at, plan));
                        continue;
                    }
                    let k = self.ff_proposed(key, FF_LAG);
                    match plan.filter(|_| k > 0) {
                        Some(p) => {
                            self.ff_skip(&p.advanced(FF_LAG, self.now()), k).await;
                            r += k;
                            self.sim.model.borrow_mut().ff.skipped += k;
                            restart(&mut window, self.ff_observe(None, false));
                        }
                        None => widen(&mut half, &mut window),
                    }
                    continue;
                }
                // (decision points depend on r and earlier outcomes only: the
                // same on every rank)
                if window.len() < 2 * half + 1 || r + FF_LAG + FF_MIN_SKIP >= n {
                    continue;
                }
                let repeatable = calls.count == 0
                    && !calls.odd
                    && calls.messages > 0
                    && same_messages + 1 >= window.len()
                    && periodic(window.make_contiguous());
                let (mine, p) = if repeatable {
                    self.ff_bound(policy, r, start, window.make_contiguous())
                } else {
                    (0, None)
                };
                self.ff_propose(round, mine, p.as_ref().map_or(0, fewest));
                proposed = Some((round, r + FF_LAG, p.filter(|_| mine > 0)));
                round += 1;
                continue;
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
                k = self.ff_agree(mine, p.as_ref().map_or(0, fewest)).await;
                plan = p;
            } else if let Some((key, offered, r0)) = awaited.take() {
                let Some(out) = self.ff_offered(key) else {
                    awaited = Some((key, offered, r0));
                    // awaiting: a local plan need not wait
                    if repeatable && window.len() > 2 * half && r >= alone_next {
                        alone_next = r + half as u64;
                        let (mine, p) = self.ff_bound(policy, r, start, window.make_contiguous());
                        if let Some(k) = self.ff_alone(mine, p.as_ref()).await {
                            r += k;
                            restart(&mut window, self.ff_observe(None, false));
                            alone_since_offer = true;
                        } else if let Some(i) = Rank::ff_restart(window.make_contiguous()) {
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
                let now = self.now();
                plan = offered
                    .filter(|_| out.until - out.at >= (FF_MIN_STRETCH + 2) as f64 * out.delta)
                    .map(|p| p.advanced(r - r0, now));
                k = match &plan {
                    Some(p) => {
                        let fit = ((out.until - now) / p.delta).floor().max(0.0) as u64;
                        let mut k = p.max_skip.min(fit);
                        if let Repeat::Count(n) | Repeat::InStep(n) = policy {
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
                    restart(&mut window, self.ff_observe(None, false));
                    continue;
                }
                let now = self.now();
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
                self.ff_offer(round, offer);
                awaited = Some((round, p.filter(|_| mine > 0), r));
                round += 1;
                continue;
            }
            match plan {
                Some(plan) if k > 0 => {
                    if in_step {
                        self.ff_skip_in_step(together, &plan, k).await;
                        together += 1;
                    } else {
                        self.ff_skip(&plan, k).await;
                    }
                    r += k;
                    self.sim.model.borrow_mut().ff.skipped += k;
                    restart(&mut window, self.ff_observe(None, false));
                }
                // (ranks in step keep windows of one length: their decision
                // points depend on it)
                _ => match Rank::ff_restart(window.make_contiguous()).filter(|_| !in_step) {
                    // refused as the requests changed: observe from the change on
                    Some(i) => {
                        window.drain(..i);
                    }
                    // refused: observe a window twice as long, keeping its newest half
                    None => widen(&mut half, &mut window),
                },
            }
        }
        if self.sim.fast_forward {
            self.ff_stop();
        }
        window.clear();
        self.reps.window.replace(window);
        Ok(r)
    }
}

/// Starts the fast-forward's window anew from `start`, keeping its memory
/// (it grew to up to 513 observations on each of up to 1024 ranks).
fn restart(window: &mut VecDeque<FfObservation>, start: FfObservation) {
    window.clear();
    window.push_back(start);
}

/// After a refusal: observe a window twice as long (halves of at most
/// [`FF_MAX_HALF`]), keeping the newest `half + 1` observations.
fn widen(half: &mut usize, window: &mut VecDeque<FfObservation>) {
    *half = (*half * 2).min(FF_MAX_HALF);
    let keep = window.len().min(*half + 1);
    window.drain(..window.len() - keep);
}

/// Relative spread of iteration times within which an exchange of messages
/// counts as periodic ([`periodic`]).
const FF_PERIODIC: f64 = 1e-9;

/// Whether every iteration of `window` took the same time, within
/// [`FF_PERIODIC`] of their mean. An iteration that only exchanges messages
/// takes as long as the ranks' messages overlap on the links they share, a
/// state the window does not observe: where it drifts (contended routes,
/// ranks falling out of phase), halves of a window can agree while the loop
/// is still changing, so such a loop is skipped only once each iteration
/// repeats the last one's time, and the skip is then exact.
fn periodic(window: &[FfObservation]) -> bool {
    let Some((first, last)) = window.first().zip(window.last()) else {
        return false;
    };
    let mean = (last.end - first.end) / (window.len() - 1).max(1) as f64;
    window
        .windows(2)
        .all(|w| ((w[1].end - w[0].end) - mean).abs() <= FF_PERIODIC * mean)
}

/// The fewest iterations a skip of `plan` may take.
fn fewest(plan: &FfPlan) -> u64 {
    plan.min_skip.max(FF_MIN_SKIP)
}
