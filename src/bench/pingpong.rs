//! Point-to-point probe: the time of an `MPI_Sendrecv_replace` exchange between
//! paired ranks over message sizes, and the time of a barrier — written once
//! against [`IoCtx`], so the twin's network model and the real MPI library are
//! measured by the same code.
//!
//! What it is for: calibrating the twin's message latency and bandwidth
//! (`time = latency + bytes / bandwidth`, fitted by `piotwin calibrate`) and the
//! cost of synchronising ranks, which grows sharply once there are more ranks
//! than cores (MPICH busy-polls, so a rank waiting in a barrier must be scheduled
//! before it sees its partner's message). What it is not: a full IMB/OSU suite
//! (no one-sided, no collectives besides the barrier, no non-blocking overlap).
//!
//! Method: ranks are paired `r ↔ r xor 1` (with an odd count the last rank only
//! takes part in the barriers). For each size, after a barrier and one untimed
//! warm-up exchange, every paired rank does `k` exchanges of its buffer with its
//! partner; one exchange's time is `elapsed / k` on that rank, and the row
//! reports the maximum over ranks. Both directions move at once, so an exchange
//! costs one one-way message time, not a round trip. `k` is
//! `clamp(bytes_per_size / size, 4, iterations)`, so that small messages repeat
//! often and large ones move about `bytes_per_size` bytes. The barrier row is
//! `barriers` barriers timed the same way. Where the back end keeps data (real
//! mode) each rank fills its buffer with its own pattern and checks after the
//! exchanges that it holds its own (even `k`) or its partner's (odd `k`) pattern.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::common::options::{OptionError, opt_err};
use crate::ctx::{IoBuf, IoCtx, RankProgram, ReduceOp};
use crate::report::{Mode, RunReport, Table, default_headline};

/// The probe's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingpongParams {
    /// Message sizes, bytes (each at least 1).
    pub sizes: Vec<u64>,
    /// Most exchanges per size.
    pub iterations: u64,
    /// Bytes each size should move at least (sets the exchanges of large sizes).
    pub bytes_per_size: u64,
    /// Barriers timed.
    pub barriers: u64,
}

impl PingpongParams {
    /// Exchanges timed for a message of `size` bytes (see the module docs).
    pub fn exchanges(&self, size: u64) -> u64 {
        (self.bytes_per_size / size.max(1)).clamp(4, self.iterations.max(4))
    }

    /// Checks the options for `ranks` ranks; the error names the option.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if ranks < 2 {
            return Err(opt_err(
                "--ranks",
                ranks,
                "pingpong needs at least 2 ranks to pair; run it under mpiexec -n 2 or more, or with --ranks 2",
            ));
        }
        if self.sizes.is_empty() {
            return Err(opt_err(
                "--sizes",
                "",
                "give at least one message size, e.g. --sizes 1,1k,64k,1m",
            ));
        }
        if let Some(s) = self.sizes.iter().find(|&&s| s > (1 << 30)) {
            return Err(opt_err(
                "--sizes",
                s,
                "over the 1 GiB a single message may have here",
            ));
        }
        if self.iterations == 0 || self.barriers == 0 {
            return Err(opt_err(
                "--iterations/--barriers",
                "0",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

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
fn pattern(rank: usize, i: usize) -> u8 {
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

impl Pingpong {
    /// The human table: one line per row, time in µs and bandwidth in MB/s.
    pub fn render(&self, out: &PingpongOutput, label: &str) -> String {
        let mut s = format!("piotwin point-to-point probe ({label})\n");
        let _ = writeln!(
            s,
            "{:<9} {:>6} {:>12} {:>8} {:>14} {:>12}",
            "test", "ranks", "bytes", "reps", "time/op [us]", "MB/s"
        );
        for r in &out.rows {
            let mb_s = if r.bytes > 0 {
                format!("{:.1}", r.bytes as f64 / r.seconds / 1e6)
            } else {
                "-".into()
            };
            let _ = writeln!(
                s,
                "{:<9} {:>6} {:>12} {:>8} {:>14.3} {:>12}",
                r.test,
                r.ranks,
                r.bytes,
                r.iterations,
                r.seconds * 1e6,
                mb_s
            );
        }
        s
    }

    /// The run report: headline `latency_us` (smallest message), `bandwidth_mb_s`
    /// (largest message), `barrier_us`; table `pingpong` with every row.
    pub fn report(
        &self,
        out: &PingpongOutput,
        mode: Mode,
        ranks: u64,
        environment: std::collections::BTreeMap<String, String>,
    ) -> RunReport {
        let mut metrics = std::collections::BTreeMap::new();
        let sends: Vec<&PingRow> = out.rows.iter().filter(|r| r.test == "sendrecv").collect();
        if let Some(r) = sends.iter().min_by_key(|r| r.bytes) {
            metrics.insert("latency_us".to_string(), r.seconds * 1e6);
        }
        if let Some(r) = sends.iter().max_by_key(|r| r.bytes) {
            metrics.insert(
                "bandwidth_mb_s".to_string(),
                r.bytes as f64 / r.seconds / 1e6,
            );
        }
        if let Some(r) = out.rows.iter().find(|r| r.test == "barrier") {
            metrics.insert("barrier_us".to_string(), r.seconds * 1e6);
        }
        let table = Table {
            columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.test.clone().into(),
                        r.ranks.into(),
                        r.bytes.into(),
                        r.iterations.into(),
                        r.seconds.into(),
                    ]
                })
                .collect(),
        };
        RunReport {
            benchmark: "pingpong".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(&self.params).expect("pingpong options serialise"),
            environment,
            hints: Default::default(),
            headline: default_headline(metrics.keys().map(String::as_str)),
            metrics,
            tables: [("pingpong".to_string(), table)].into_iter().collect(),
            errors: out.mismatches.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PingpongParams {
        PingpongParams {
            sizes: vec![1, 1024, 1 << 20],
            iterations: 100,
            bytes_per_size: 8 << 20,
            barriers: 10,
        }
    }

    #[test]
    fn exchanges_scale_with_size() {
        let p = params();
        assert_eq!(p.exchanges(1), 100);
        assert_eq!(p.exchanges(1 << 20), 8);
        assert_eq!(p.exchanges(1 << 30), 4);
    }

    #[test]
    fn validation_names_the_problem() {
        let p = params();
        assert!(
            p.validate(1)
                .unwrap_err()
                .to_string()
                .contains("at least 2 ranks")
        );
        assert!(p.validate(2).is_ok());
        let mut q = p.clone();
        q.sizes.clear();
        assert!(q.validate(2).unwrap_err().to_string().contains("--sizes"));
        q.sizes = vec![2 << 30];
        assert!(q.validate(2).unwrap_err().to_string().contains("1 GiB"));
    }

    #[test]
    fn twin_exchange_time_grows_with_size_and_barrier_is_timed() {
        let scenario = piotwin_sim::Scenario::from_str(
            include_str!("../../scenarios/default.toml"),
            "default.toml",
        )
        .unwrap();
        let p = Pingpong { params: params() };
        let (outs, _) =
            crate::backend::sim::launch(&scenario, 3, piotwin_sim::SimOptions::seeded(1), &p)
                .unwrap();
        let rows = &outs[0].rows;
        assert_eq!(rows.len(), 4);
        assert!(
            rows.iter().all(|r| r.ranks == 3 && r.seconds > 0.0),
            "{rows:?}"
        );
        assert!(rows[0].seconds < rows[2].seconds, "{rows:?}");
        assert_eq!(rows[3].test, "barrier");
        assert_eq!(outs[1].rows, *rows, "every rank returns the same rows");
    }
}
