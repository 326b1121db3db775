//! The per-rank program.

use super::*;

/// One measured row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingRow {
    /// `sendrecv` or `barrier`.
    pub test: String,
    /// Ranks in the job.
    pub ranks: u64,
    /// Message size, bytes (0 for a barrier).
    pub bytes: u64,
    /// Operations timed.
    pub iterations: u64,
    /// Time of one operation, seconds: the maximum over ranks of elapsed / iterations.
    pub seconds: f64,
}

/// What every rank returns (the rows are the same on every rank).
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
pub const COLUMNS: [&str; 5] = ["test", "ranks", "bytes", "iterations", "seconds"];

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
            });
            if ctx.stop_requested().await.is_some() {
                return out;
            }
        }
        ctx.barrier().await;
        let t0 = ctx.wtime();
        for _ in 0..self.params.barriers {
            ctx.barrier().await;
        }
        let mine = (ctx.wtime() - t0) / self.params.barriers as f64;
        let seconds = ctx.allreduce_f64(mine, ReduceOp::Max).await;
        out.rows.push(PingRow {
            test: "barrier".into(),
            ranks: size as u64,
            bytes: 0,
            iterations: self.params.barriers,
            seconds,
        });
        out
    }
}
