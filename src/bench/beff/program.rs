//! The per-rank program: every pattern at every size by every method, repeated;
//! then the ping-pong of ranks 0 and 1.

use super::*;
use crate::bench::common::agree::first_failure;

/// How the messages of a pattern are moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Two `MPI_Sendrecv`: to next from previous, then to previous from next.
    Sendrecv,
    /// One `MPI_Alltoallv` with counts to and from both neighbours.
    Alltoallv,
    /// `MPI_Irecv` from both neighbours, `MPI_Isend` to both, `MPI_Waitall`.
    Nonblocking,
}

/// The methods, in b_eff's order.
pub const METHODS: [Method; 3] = [Method::Sendrecv, Method::Alltoallv, Method::Nonblocking];

impl Method {
    /// b_eff's column name.
    pub fn label(self) -> &'static str {
        match self {
            Method::Sendrecv => "Sndrcv",
            Method::Alltoallv => "Alltoal",
            Method::Nonblocking => "non-blk",
        }
    }
}

/// One measurement: a pattern at a size by a method, one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Index of the pattern in [`patterns`]' list.
    pub pattern: usize,
    /// Message size in bytes.
    pub bytes: u64,
    /// The method.
    pub method: Method,
    /// Repetition, from 0.
    pub rep: u64,
    /// Iterations of the loop.
    pub loops: u64,
    /// The loop's time, maximum over processes, seconds.
    pub seconds: f64,
    /// `b = bytes · 2·n · loops / seconds`, bytes/s.
    pub bandwidth: f64,
}

/// One size of the ping-pong between ranks 0 and 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingPongRow {
    /// Message size in bytes.
    pub bytes: u64,
    /// Round trips timed.
    pub loops: u64,
    /// Half a round trip (one message), seconds.
    pub seconds: f64,
}

/// What every rank returns (the same on every rank but the data checks).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeffOutput {
    /// The patterns' names and families, in measurement order.
    pub patterns: Vec<(String, Family)>,
    /// Every measurement.
    pub samples: Vec<Sample>,
    /// The ping-pong of ranks 0 and 1, per size.
    pub pingpong: Vec<PingPongRow>,
    /// Data checks that failed on this rank (real mode).
    pub mismatches: Vec<String>,
    /// A stop request ended the run early.
    pub interrupted: bool,
}

/// The benchmark.
#[derive(Debug, Clone)]
pub struct Beff {
    /// Its options.
    pub params: BeffParams,
}

/// Byte `j` of every message rank `rank` sends.
pub(super) fn byte(rank: usize, j: usize) -> u8 {
    (rank.wrapping_mul(131) ^ j.wrapping_mul(7) ^ (j >> 8)) as u8
}

/// The first byte of `got` that is not `source`'s message, as a message.
pub(super) fn check(got: Option<&[u8]>, source: usize, len: usize, what: &str) -> Option<String> {
    let got = got?;
    (0..got.len())
        .find(|&j| got[j] != byte(source, j % len))
        .map(|j| {
            format!(
                "{what}: byte {j} from rank {source} is {}, expected {}",
                got[j],
                byte(source, j % len)
            )
        })
}

impl RankProgram for Beff {
    type Output = BeffOutput;

    /// The measurements, then every rank's data checks agreed: the lowest
    /// failing rank's first mismatch, on every rank.
    async fn run<C: IoCtx>(&self, ctx: &C) -> BeffOutput {
        let mut out = self.measure(ctx).await;
        let bad = ctx
            .allreduce_f64(out.mismatches.len() as f64, ReduceOp::Sum)
            .await;
        let mine = out.mismatches.first().map_or(Ok(()), |m| Err(m.clone()));
        if let Err(first) = first_failure(ctx, "b_eff's data check", mine).await {
            out.mismatches = vec![format!("{first} ({bad} mismatches on all ranks)")];
        }
        out
    }
}

impl Beff {
    async fn measure<C: IoCtx>(&self, ctx: &C) -> BeffOutput {
        let (me, n) = (ctx.rank(), ctx.size());
        let pats = patterns(n, self.params.seed);
        let sizes = self.params.sizes();
        let lmax = *sizes.last().expect("21 sizes") as usize;
        let mut out = BeffOutput {
            patterns: pats.iter().map(|p| (p.name.clone(), p.family)).collect(),
            ..BeffOutput::default()
        };
        // Two messages' worth each way: the alltoallv buffers, and the two
        // receives of the nonblocking method.
        let mut send = ctx.alloc(2 * lmax);
        let mut recv = ctx.alloc(2 * lmax);
        let mut recv2 = ctx.alloc(lmax);
        let mut loops = vec![0u64; sizes.len()];
        loops[0] = self.params.first_loop;
        for rep in 0..self.params.repetitions {
            for (i, &bytes) in sizes.iter().enumerate() {
                let len = bytes as usize;
                send.set_len(2 * len);
                if let Some(b) = send.bytes_mut() {
                    for (j, x) in b.iter_mut().enumerate() {
                        *x = byte(me, j % len);
                    }
                }
                let mut longest: f64 = 0.0;
                for (p, pat) in pats.iter().enumerate() {
                    for method in METHODS {
                        let counts = alltoallv_counts(pat, me, len);
                        ctx.barrier().await;
                        let t0 = ctx.wtime();
                        // Every iteration exchanges the same messages with the
                        // same neighbours: the twin may fast-forward the loop.
                        let looped = ctx.repeat(Repeat::InStep(loops[i]), async |_| {
                            let bufs = (&mut send, &mut recv, &mut recv2);
                            move_messages(ctx, pat, method, len, &counts, bufs).await;
                            Ok(())
                        });
                        looped
                            .await
                            .expect("message loops make no I/O call that can fail");
                        let mine = ctx.wtime() - t0;
                        let seconds = ctx.allreduce_f64(mine, ReduceOp::Max).await;
                        longest = longest.max(seconds);
                        let (next, prev) = pat.neighbours[me];
                        let what = format!("{} {bytes} B {}", pat.name, method.label());
                        let bad = match method {
                            Method::Sendrecv => {
                                check(recv.bytes().map(|b| &b[..len]), next, len, &what)
                            }
                            Method::Nonblocking => {
                                check(recv.bytes().map(|b| &b[..len]), prev, len, &what)
                                    .or_else(|| check(recv2.bytes(), next, len, &what))
                            }
                            Method::Alltoallv => {
                                let (a, b) = (prev.min(next), prev.max(next));
                                if a == b {
                                    check(recv.bytes(), a, len, &what)
                                } else {
                                    check(recv.bytes().map(|x| &x[..len]), a, len, &what).or_else(
                                        || check(recv.bytes().map(|x| &x[len..]), b, len, &what),
                                    )
                                }
                            }
                        };
                        out.mismatches
                            .extend(bad.map(|m| format!("rank {me}: {m}")));
                        out.samples.push(Sample {
                            pattern: p,
                            bytes,
                            method,
                            rep,
                            loops: loops[i],
                            seconds,
                            bandwidth: bytes as f64 * 2.0 * n as f64 * loops[i] as f64 / seconds,
                        });
                    }
                }
                // Loop lengths are decided in the first repetition.
                if rep == 0
                    && let Some(&following) = sizes.get(i + 1)
                {
                    loops[i + 1] = next_loop_length(loops[i], longest, bytes, following);
                }
                if ctx.stop_requested().await.is_some() {
                    out.interrupted = true;
                    return out;
                }
            }
        }
        for (i, &bytes) in sizes.iter().enumerate() {
            let len = bytes as usize;
            send.set_len(len);
            recv.set_len(len);
            if let Some(b) = send.bytes_mut() {
                for (j, x) in b.iter_mut().enumerate() {
                    *x = byte(me, j);
                }
            }
            ctx.barrier().await;
            let t0 = ctx.wtime();
            for _ in 0..loops[i] {
                match me {
                    0 => {
                        ctx.send(&send, 1).await;
                        ctx.recv(&mut recv, 1).await;
                    }
                    1 => {
                        ctx.recv(&mut recv, 0).await;
                        ctx.send(&send, 0).await;
                    }
                    _ => {}
                }
            }
            let mine = if me < 2 { ctx.wtime() - t0 } else { 0.0 };
            let round_trips = ctx.allreduce_f64(mine, ReduceOp::Max).await;
            if me < 2 {
                let what = format!("ping-pong {bytes} B");
                out.mismatches.extend(
                    check(recv.bytes(), 1 - me, len, &what).map(|m| format!("rank {me}: {m}")),
                );
            }
            out.pingpong.push(PingPongRow {
                bytes,
                loops: loops[i],
                seconds: round_trips / (2 * loops[i]) as f64,
            });
        }
        out
    }
}

/// The counts of `me`'s alltoallv in `pat`: `len` bytes each way with each
/// neighbour (twice `len` with the one neighbour of a ring of two).
fn alltoallv_counts(pat: &Pattern, me: usize, len: usize) -> Vec<(usize, usize)> {
    let (next, prev) = pat.neighbours[me];
    match next.cmp(&prev) {
        std::cmp::Ordering::Equal => vec![(next, 2 * len)],
        std::cmp::Ordering::Less => vec![(next, len), (prev, len)],
        std::cmp::Ordering::Greater => vec![(prev, len), (next, len)],
    }
}

/// One iteration of `pat` by `method`: every rank sends `len` bytes to each
/// neighbour and receives as much from each (`counts`: the alltoallv's, from
/// [`alltoallv_counts`]).
async fn move_messages<C: IoCtx>(
    ctx: &C,
    pat: &Pattern,
    method: Method,
    len: usize,
    counts: &[(usize, usize)],
    (send, recv, recv2): (&mut C::Buf, &mut C::Buf, &mut C::Buf),
) {
    let (next, prev) = pat.neighbours[ctx.rank()];
    match method {
        Method::Sendrecv => {
            send.set_len(len);
            recv.set_len(len);
            ctx.sendrecv(send, next, recv, prev).await;
            ctx.sendrecv(send, prev, recv, next).await;
        }
        Method::Alltoallv => {
            send.set_len(2 * len);
            recv.set_len(2 * len);
            ctx.alltoallv(send, counts, recv, counts).await;
        }
        Method::Nonblocking => {
            send.set_len(len);
            recv.set_len(len);
            recv2.set_len(len);
            let sends = [(next, &*send), (prev, &*send)];
            let mut recvs = [(prev, &mut *recv), (next, &mut *recv2)];
            ctx.exchange(&sends, &mut recvs).await;
        }
    }
}
