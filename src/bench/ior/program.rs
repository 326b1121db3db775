//! The per-rank program.

use super::*;
use crate::bench::common::agree::first_failure;

/// One access of one repetition, reduced over all ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct RepResult {
    /// Repetition number, from 0.
    pub iter: u64,
    /// Write or read.
    pub access: Access,
    /// Bytes moved by all ranks.
    pub bytes: u64,
    /// Transfers made by all ranks.
    pub ops: u64,
    /// Max over ranks of the open time, s.
    pub open_s: f64,
    /// Max over ranks of the transfer (+ fsync) time, s.
    pub xfer_s: f64,
    /// Max over ranks of the close time, s.
    pub close_s: f64,
    /// Latest close end − earliest open start, s.
    pub total_s: f64,
    /// Mean over ranks of (transfer time / transfers), s.
    pub latency_s: f64,
}

impl RepResult {
    /// Aggregate bandwidth, MiB/s.
    pub fn bw_mib_s(&self) -> f64 {
        self.bytes as f64 / MIB / self.total_s
    }
    /// Transfers per second over all ranks.
    pub fn iops(&self) -> f64 {
        self.ops as f64 / self.total_s
    }
}

/// Read-back verification found differing bytes in one access.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    /// Repetition, from 0.
    pub iter: u64,
    /// Differing bytes over all ranks.
    pub count: u64,
    /// The lowest rank that found one.
    pub rank: u64,
    /// The file it read.
    pub file: String,
    /// The first differing byte that rank found.
    pub first: Mismatch,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "repetition {}: read-back verification found {} differing bytes; first: {}",
            self.iter,
            self.count,
            self.first.at(self.rank, &self.file)
        )
    }
}

/// What every rank returns: the same reduced results on every rank.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IorOutput {
    /// Accesses completed, in order.
    pub reps: Vec<RepResult>,
    /// Verification failures (the run goes on after them, as IOR's does).
    pub verify_errors: Vec<VerifyError>,
    /// Hints in effect on the first file this rank opened.
    pub hints: Hints,
    /// The error that stopped the run, if one did.
    pub failure: Option<String>,
}

/// The IOR-style probe as a [`RankProgram`].
#[derive(Debug, Clone)]
pub struct Ior {
    /// Validated options.
    pub params: IorParams,
    /// Where to write IOR's own JSON summary too (`--ior-json`).
    pub ior_json: Option<std::path::PathBuf>,
}

/// One rank's measurements of one access.
#[derive(Default)]
pub(super) struct Stamps {
    pub(super) t0: f64,
    pub(super) t1: f64,
    pub(super) t2: f64,
    pub(super) t3: f64,
    pub(super) bytes: u64,
    pub(super) ops: u64,
    pub(super) mismatches: u64,
    pub(super) first: Option<Mismatch>,
    pub(super) error: Option<String>,
}

impl Ior {
    /// The probe with `params` (validate them first with [`IorParams::validate`]).
    pub fn new(params: IorParams) -> Self {
        Ior {
            params,
            ior_json: None,
        }
    }

    /// The probe that also writes IOR's JSON summary to `path`.
    pub fn with_ior_json(self, path: Option<std::path::PathBuf>) -> Self {
        Ior {
            ior_json: path,
            ..self
        }
    }

    pub(super) fn open_options(&self, mode: OpenMode) -> OpenOptions {
        OpenOptions {
            mode,
            scope: if self.params.file_per_proc {
                Scope::Private
            } else {
                Scope::Shared
            },
            api: self.params.api,
            hints: self.params.hints.clone(),
            unique_open: false,
        }
    }

    /// Removes the file(s) of this test: rank 0 the shared file, each rank its own under `-F`.
    pub(super) async fn remove<C: IoCtx>(&self, ctx: &C) -> Result<(), IoError> {
        let rank = ctx.rank() as u64;
        if self.params.file_per_proc {
            ctx.delete(&self.params.file_name(rank)).await
        } else if rank == 0 {
            ctx.delete(&self.params.path).await
        } else {
            Ok(())
        }
    }

    /// One access on this rank: barrier, open, transfers, (fsync), close.
    pub(super) async fn access<C: IoCtx>(
        &self,
        ctx: &C,
        access: Access,
        hints: &mut Option<Hints>,
    ) -> Stamps {
        let p = &self.params;
        let (rank, ranks) = (ctx.rank() as u64, ctx.size() as u64);
        let role = p.role_rank(access, rank, ranks);
        let file_name = p.file_name(role);
        let file_id = p.file_id(role);
        let coord = if p.collective {
            Coordination::Collective
        } else {
            Coordination::Independent
        };
        let mode = match access {
            Access::Write => OpenMode::Create,
            Access::Read => OpenMode::Read,
        };
        let mut st = Stamps::default();
        // IOR's transfer buffer is page-aligned (its `aligned_buffer_alloc`, made
        // for O_DIRECT): where a buffer lies changes how fast the kernel copies
        // into it from the page cache.
        let mut buf = ctx.alloc_placed(p.transfer as usize, 0);

        ctx.barrier().await;
        st.t0 = ctx.wtime();
        let opened = ctx.open(&file_name, &self.open_options(mode)).await;
        st.t1 = ctx.wtime();
        let mut file = match opened {
            Ok(f) => f,
            Err(e) => {
                st.error = Some(e.to_string());
                (st.t2, st.t3) = (st.t1, st.t1);
                return st;
            }
        };
        if hints.is_none() {
            *hints = Some(ctx.hints_in_effect(&file));
        }
        for q in 0..p.transfers_per_rank() {
            if coord == Coordination::Independent && ctx.stop_seen() {
                // Interrupted: the checkpoint after the access drops it.
                break;
            }
            let off = p.offset(role, ranks, q);
            if access == Access::Write {
                ctx.compute(Kernel::pattern_fill(p.transfer), || {
                    if let Some(b) = buf.bytes_mut() {
                        fill(b, p.seed, file_id, off);
                    }
                })
                .await;
            }
            match ctx
                .xfer(&mut file, Op::at(access, coord, off), &mut buf)
                .await
            {
                Ok(n) if n as u64 == p.transfer => {
                    st.bytes += n as u64;
                    st.ops += 1;
                }
                Ok(n) => {
                    st.bytes += n as u64;
                    st.error = Some(format!(
                        "{} of {} bytes at offset {off} of `{file_name}` moved only {n} bytes",
                        access_name(access),
                        p.transfer
                    ));
                    break;
                }
                Err(e) => {
                    st.error = Some(e.to_string());
                    break;
                }
            }
            if access == Access::Read {
                let checked = ctx
                    .compute(Kernel::pattern_check(p.transfer), || {
                        buf.bytes().map(|b| verify(b, p.seed, file_id, off))
                    })
                    .await;
                if let Some(Some((n, first))) = checked {
                    st.mismatches += n;
                    if st.first.is_none() {
                        st.first = first;
                    }
                }
            }
        }
        if access == Access::Write
            && p.fsync
            && st.error.is_none()
            && let Err(e) = ctx.sync(&mut file).await
        {
            st.error = Some(e.to_string());
        }
        st.t2 = ctx.wtime();
        if let Err(e) = ctx.close(file).await {
            st.error.get_or_insert(e.to_string());
        }
        st.t3 = ctx.wtime();
        st
    }
}

pub(super) fn access_name(a: Access) -> &'static str {
    match a {
        Access::Write => "write",
        Access::Read => "read",
    }
}

impl RankProgram for Ior {
    type Output = IorOutput;

    async fn run<C: IoCtx>(&self, ctx: &C) -> IorOutput {
        let p = &self.params;
        let ranks = ctx.size() as u64;
        let mut out = IorOutput::default();
        let mut hints = None;
        'reps: for iter in 0..p.repetitions {
            let mut wrote = false;
            for access in p.accesses() {
                let mut local_error = None;
                if access == Access::Write {
                    // A fresh file: the old one removed before the timed open.
                    if let Err(e) = self.remove(ctx).await {
                        local_error = Some(e.to_string());
                    }
                    wrote = true;
                }
                let st = if local_error.is_none() {
                    self.access(ctx, access, &mut hints).await
                } else {
                    Stamps {
                        error: local_error,
                        ..Stamps::default()
                    }
                };
                // Agree on failure first: every rank then takes the same path,
                // with the failing rank's message.
                let step = format!("repetition {iter}, {}", access_name(access));
                let failed = first_failure(ctx, &step, st.error.as_ref().map_or(Ok(()), Err)).await;
                if let Err(f) = &failed {
                    out.failure = Some(f.0.clone());
                }
                // A failed access, or one a signal may have cut short, is not a
                // result; its test file is removed all the same (best effort).
                if failed.is_err() || ctx.stop_requested().await.is_some() {
                    if wrote && !p.keep_file {
                        let _ = self.remove(ctx).await;
                    }
                    break 'reps;
                }
                let start = ctx.allreduce_f64(st.t0, ReduceOp::Min).await;
                let end = ctx.allreduce_f64(st.t3, ReduceOp::Max).await;
                let open_s = ctx.allreduce_f64(st.t1 - st.t0, ReduceOp::Max).await;
                let xfer_s = ctx.allreduce_f64(st.t2 - st.t1, ReduceOp::Max).await;
                let close_s = ctx.allreduce_f64(st.t3 - st.t2, ReduceOp::Max).await;
                let lat = if st.ops > 0 {
                    (st.t2 - st.t1) / st.ops as f64
                } else {
                    0.0
                };
                let lat_sum = ctx.allreduce_f64(lat, ReduceOp::Sum).await;
                let bytes = ctx.allreduce_f64(st.bytes as f64, ReduceOp::Sum).await;
                let ops = ctx.allreduce_f64(st.ops as f64, ReduceOp::Sum).await;
                out.reps.push(RepResult {
                    iter,
                    access,
                    bytes: bytes as u64,
                    ops: ops as u64,
                    open_s,
                    xfer_s,
                    close_s,
                    total_s: end - start,
                    latency_s: lat_sum / ranks as f64,
                });
                if access == Access::Read {
                    let total = ctx.allreduce_f64(st.mismatches as f64, ReduceOp::Sum).await;
                    if total > 0.0 {
                        let (who, first) = first_mismatch(ctx, st.first).await;
                        let role = p.role_rank(Access::Read, who as u64, ranks);
                        out.verify_errors.push(VerifyError {
                            iter,
                            count: total as u64,
                            rank: who as u64,
                            file: p.file_name(role),
                            first,
                        });
                    }
                }
            }
            if wrote && !p.keep_file {
                ctx.barrier().await;
                let step = format!("repetition {iter}, removing the test file");
                if let Err(f) = first_failure(ctx, &step, self.remove(ctx).await).await {
                    out.failure = Some(f.0);
                    break;
                }
            }
        }
        out.hints = hints.unwrap_or_default();
        out
    }
}
