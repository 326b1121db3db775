//! The IOR-style probe: library-level bandwidth of one access pattern, written
//! once against [`IoCtx`] (spec: `shared/spec/probes.md`).
//!
//! What it is for: the bandwidth of N ranks writing and reading `segments` blocks
//! of `block` bytes each, in transfers of `transfer` bytes, to one shared file or
//! one file per process, through POSIX or MPI-IO (independent or collective) —
//! IOR's options, names and output, so IOR users feel at home. What it is not: a
//! re-implementation of every IOR option (no stonewalling, no HDF5/NCMPI back
//! ends, no memory-per-node checks).
//!
//! Layout (IOR's): rank `r` of `N` owns, in segment `s`, the block that starts at
//! `s·(N·b) + r·b` of a shared file, or at `s·b` of its own file (`-F`); transfer
//! `j` of a block is at `j·t` inside it. `-z` visits a rank's transfers in a
//! seeded pseudo-random order ([`permute`], key `seed + rank` as IOR's
//! `seed + pretendRank`). `-C` makes rank `r` read back what rank
//! `(r + tasks_per_node) mod N` wrote — IOR's task reordering, which shifts by one
//! node's worth of ranks so that no rank reads from its own node's page cache
//! (`--tasks-per-node`, default 1, says how many ranks share a node).
//!
//! Timing per repetition and access (IOR's `timer[0..5]`): a barrier, then on each
//! rank `t0` open `t1` transfers (+ fsync with `-e`) `t2` close `t3` in
//! [`IoCtx::wtime`]. Bandwidth = aggregate bytes / (max `t3` − min `t0`) over
//! ranks; open, wr/rd and close times are the maxima over ranks; IOPS = all
//! ranks' transfers / total time; latency = the mean over ranks of (wr/rd time /
//! transfers). MiB = 2^20 bytes, KiB = 2^10 bytes.
//!
//! Data: every byte written is a function of (file, file offset, seed) — see
//! [`fill`] — so read-back under `-C` can be checked against the file's contents,
//! not the reader's. Where the back end keeps data (real mode) every byte read is
//! verified ([`verify`]); in the twin [`IoBuf::bytes`] is `None` and filling and
//! verifying are no-ops, without this code knowing the mode.
//!
//! Errors: a rank whose call fails stops its access (still closing what it
//! opened), and all ranks agree after the access (one reduction) to stop the run;
//! the repetitions completed so far are kept. A failed **collective** call is
//! assumed to fail on every rank, as MPI-IO errors on collective calls do.

use std::fmt::Write as _;

use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode, OpenOptions,
    RankProgram, ReduceOp, Scope,
};
use crate::report::{Mode, RunReport, Table, headline_among};

use super::common::agree::first_mismatch;
use super::common::options::{OptionError, format_size, opt_err};
use super::common::pattern::{Mismatch, fill, permute, verify};
use super::common::stats::stats;

/// The headline metrics of IOR, most important first.
pub const HEADLINE: &[&str] = &["write_mib_s", "read_mib_s"];

/// 2^20 bytes.
const MIB: f64 = 1_048_576.0;

/// The probe's options (IOR's names in the field docs).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IorParams {
    /// `-a`: POSIX or MPI-IO.
    pub api: Api,
    /// `-b`: bytes per rank per segment.
    pub block: u64,
    /// `-t`: bytes per transfer (divides `block`).
    pub transfer: u64,
    /// `-s`: number of segments (≥ 1).
    pub segments: u64,
    /// `-F`: one file per rank instead of one shared file.
    pub file_per_proc: bool,
    /// `-c`: collective transfers (MPI-IO only).
    pub collective: bool,
    /// `-C`: read back what another node wrote (rank shift by `tasks_per_node`).
    pub reorder: bool,
    /// `--tasks-per-node`: ranks per node, the shift of `-C` (≥ 1).
    pub tasks_per_node: u64,
    /// `-e`: fsync (`MPI_File_sync`) after the writes, inside the timed wr phase.
    pub fsync: bool,
    /// `-w`: write.
    pub write: bool,
    /// `-r`: read (and verify where data exists).
    pub read: bool,
    /// `-z`: transfers in a seeded random order.
    pub random: bool,
    /// `-i`: repetitions (≥ 1).
    pub repetitions: u64,
    /// `-k`: keep the file after each repetition (otherwise a repetition that
    /// wrote removes it at its end, as IOR does).
    pub keep_file: bool,
    /// `-o`: the test file (`-F` appends `.%08d` of the rank).
    pub path: String,
    /// MPI-IO hints given (`--hint`, `--hints-file`).
    pub hints: Hints,
    /// Seed of the `-z` order and of the data pattern.
    pub seed: u64,
}

impl IorParams {
    /// Checks the options on their own and for a run on `ranks` ranks.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if self.block == 0 {
            return Err(opt_err(
                "-b",
                self.block,
                "the block size must be at least 1 byte",
            ));
        }
        if self.transfer == 0 {
            return Err(opt_err(
                "-t",
                self.transfer,
                "the transfer size must be at least 1 byte",
            ));
        }
        if !self.block.is_multiple_of(self.transfer) {
            return Err(opt_err(
                "-t",
                self.transfer,
                format!(
                    "the transfer size must divide the block size (-b {})",
                    self.block
                ),
            ));
        }
        if self.transfer > usize::MAX as u64 / 2 {
            return Err(opt_err(
                "-t",
                self.transfer,
                "too large for one buffer on this machine",
            ));
        }
        if self.segments == 0 {
            return Err(opt_err("-s", 0, "at least one segment"));
        }
        if self.repetitions == 0 {
            return Err(opt_err("-i", 0, "at least one repetition"));
        }
        if self.tasks_per_node == 0 {
            return Err(opt_err("--tasks-per-node", 0, "at least one rank per node"));
        }
        if self.collective && self.api == Api::Posix {
            return Err(opt_err("-c", "", "collective I/O needs -a MPIIO"));
        }
        if self.path.is_empty() {
            return Err(opt_err("-o", "", "the test file name is empty"));
        }
        if ranks == 0 {
            return Err(opt_err("--ranks", 0, "at least one rank"));
        }
        let file_bytes = if self.file_per_proc {
            Some(self.block)
        } else {
            self.block.checked_mul(ranks)
        }
        .and_then(|x| x.checked_mul(self.segments));
        if file_bytes.is_none() {
            return Err(opt_err(
                "-s",
                self.segments,
                "segments × ranks × block size exceeds 2^64 bytes",
            ));
        }
        Ok(())
    }

    /// Transfers per block (`b / t`).
    pub fn transfers_per_block(&self) -> u64 {
        self.block / self.transfer
    }

    /// Transfers per rank and access (`s · b / t`).
    pub fn transfers_per_rank(&self) -> u64 {
        self.segments * self.transfers_per_block()
    }

    /// Bytes each rank moves per access.
    pub fn bytes_per_rank(&self) -> u64 {
        self.segments * self.block
    }

    /// The rank whose data `rank` accesses: itself for writes, and for reads under
    /// `-C` the rank `tasks_per_node` further on (mod `ranks`).
    pub fn role_rank(&self, access: Access, rank: u64, ranks: u64) -> u64 {
        match access {
            Access::Read if self.reorder => (rank + self.tasks_per_node) % ranks,
            _ => rank,
        }
    }

    /// The file rank `role` accesses: the shared file, or `path.%08d` under `-F`.
    pub fn file_name(&self, role: u64) -> String {
        if self.file_per_proc {
            format!("{}.{:08}", self.path, role)
        } else {
            self.path.clone()
        }
    }

    /// Identity of the file for the data pattern: the owning rank under `-F`,
    /// `u64::MAX` for the shared file (where the offset already says who wrote).
    fn file_id(&self, role: u64) -> u64 {
        if self.file_per_proc { role } else { u64::MAX }
    }

    /// File offset of the `q`-th transfer visited by the rank in role `role`:
    /// `q` is mapped through the `-z` permutation, then split into segment `s` and
    /// transfer `j`; shared file `j·t + s·(N·b) + role·b`, file per process `j·t + s·b`.
    pub fn offset(&self, role: u64, ranks: u64, q: u64) -> u64 {
        let n = self.transfers_per_rank();
        let idx = if self.random {
            permute(q, n, self.seed.wrapping_add(role))
        } else {
            q
        };
        let (s, j) = (
            idx / self.transfers_per_block(),
            idx % self.transfers_per_block(),
        );
        if self.file_per_proc {
            j * self.transfer + s * self.block
        } else {
            j * self.transfer + s * (ranks * self.block) + role * self.block
        }
    }

    /// The accesses of each repetition, in order (`-w`, `-r`; neither means both).
    pub fn accesses(&self) -> Vec<Access> {
        let (w, r) = if !self.write && !self.read {
            (true, true)
        } else {
            (self.write, self.read)
        };
        let mut v = Vec::new();
        if w {
            v.push(Access::Write);
        }
        if r {
            v.push(Access::Read);
        }
        v
    }
}

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
}

/// One rank's measurements of one access.
struct Stamps {
    t0: f64,
    t1: f64,
    t2: f64,
    t3: f64,
    bytes: u64,
    ops: u64,
    mismatches: u64,
    first: Option<Mismatch>,
    error: Option<String>,
}

impl Ior {
    /// The probe with `params` (validate them first with [`IorParams::validate`]).
    pub fn new(params: IorParams) -> Self {
        Ior { params }
    }

    fn open_options(&self, mode: OpenMode) -> OpenOptions {
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
    async fn remove<C: IoCtx>(&self, ctx: &C) -> Result<(), IoError> {
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
    async fn access<C: IoCtx>(&self, ctx: &C, access: Access, hints: &mut Option<Hints>) -> Stamps {
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
        let mut st = Stamps {
            t0: 0.0,
            t1: 0.0,
            t2: 0.0,
            t3: 0.0,
            bytes: 0,
            ops: 0,
            mismatches: 0,
            first: None,
            error: None,
        };
        let mut buf = ctx.alloc(p.transfer as usize);

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
            let off = p.offset(role, ranks, q);
            if access == Access::Write {
                ctx.compute(Kernel::pattern(p.transfer), || {
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
                    .compute(Kernel::pattern(p.transfer), || {
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

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Write => "write",
        Access::Read => "read",
    }
}

impl RankProgram for Ior {
    type Output = IorOutput;

    async fn run<C: IoCtx>(&self, ctx: &C) -> IorOutput {
        let p = &self.params;
        let (rank, ranks) = (ctx.rank() as u64, ctx.size() as u64);
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
                        t0: 0.0,
                        t1: 0.0,
                        t2: 0.0,
                        t3: 0.0,
                        bytes: 0,
                        ops: 0,
                        mismatches: 0,
                        first: None,
                        error: local_error,
                    }
                };
                // Agree on failure first: every rank then takes the same path.
                let failed = ctx
                    .allreduce_f64(
                        if st.error.is_some() {
                            rank as f64
                        } else {
                            f64::INFINITY
                        },
                        ReduceOp::Min,
                    )
                    .await;
                if failed.is_finite() {
                    let who = failed as u64;
                    out.failure = Some(match &st.error {
                        Some(e) if who == rank => format!(
                            "repetition {iter}, {}: rank {rank}: {e}",
                            access_name(access)
                        ),
                        _ => format!(
                            "repetition {iter}, {}: rank {who} failed (see that rank's message)",
                            access_name(access)
                        ),
                    });
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
                let e = self.remove(ctx).await.err();
                let failed = ctx
                    .allreduce_f64(
                        if e.is_some() {
                            rank as f64
                        } else {
                            f64::INFINITY
                        },
                        ReduceOp::Min,
                    )
                    .await;
                if failed.is_finite() {
                    out.failure = Some(match e {
                        Some(e) => {
                            format!("repetition {iter}, removing the test file: rank {rank}: {e}")
                        }
                        None => format!(
                            "repetition {iter}, removing the test file: rank {failed} failed"
                        ),
                    });
                    break;
                }
            }
        }
        out.hints = hints.unwrap_or_default();
        out
    }
}

const REP_COLUMNS: [&str; 11] = [
    "access",
    "bw_mib_s",
    "iops",
    "latency_s",
    "block_kib",
    "xfer_kib",
    "open_s",
    "wrrd_s",
    "close_s",
    "total_s",
    "iter",
];

impl Ior {
    fn api_name(&self) -> &'static str {
        match self.params.api {
            Api::Posix => "POSIX",
            Api::MpiIo => "MPIIO",
        }
    }

    /// IOR's header, per-repetition lines and "Summary of all tests" for `out`,
    /// from a run on `ranks` ranks; `mode` says where it ran (one line).
    pub fn render(&self, out: &IorOutput, ranks: u64, mode: &str) -> String {
        let p = &self.params;
        let mut s = String::new();
        let aggregate = p.bytes_per_rank() * ranks;
        let _ = writeln!(s, "piotwin IOR-style probe ({mode})");
        let _ = writeln!(s, "Options:");
        let kv = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "{k:<20}: {v}");
        };
        kv(&mut s, "api", self.api_name().into());
        kv(&mut s, "test filename", p.path.clone());
        kv(
            &mut s,
            "access",
            if p.file_per_proc {
                "file-per-process".into()
            } else {
                "single-shared-file".into()
            },
        );
        kv(
            &mut s,
            "type",
            if p.collective {
                "collective".into()
            } else {
                "independent".into()
            },
        );
        kv(&mut s, "segments", p.segments.to_string());
        kv(
            &mut s,
            "ordering in a file",
            if p.random {
                "random".into()
            } else {
                "sequential".into()
            },
        );
        kv(
            &mut s,
            "ordering inter file",
            if p.reorder {
                format!("constant task offset {}", p.tasks_per_node % ranks)
            } else {
                "no tasks offsets".into()
            },
        );
        kv(
            &mut s,
            "tasks",
            format!("{ranks} ({} per node)", p.tasks_per_node),
        );
        kv(&mut s, "repetitions", p.repetitions.to_string());
        kv(&mut s, "xfersize", format_size(p.transfer));
        kv(&mut s, "blocksize", format_size(p.block));
        kv(&mut s, "aggregate filesize", format_size(aggregate));
        kv(
            &mut s,
            "fsync",
            if p.fsync { "yes".into() } else { "no".into() },
        );
        kv(&mut s, "seed", p.seed.to_string());
        let hints: Vec<String> = out.hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        kv(
            &mut s,
            "hints in effect",
            if hints.is_empty() {
                "(none)".into()
            } else {
                hints.join(" ")
            },
        );
        let _ = writeln!(s, "\nResults:\n");
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>4}",
            "access",
            "bw(MiB/s)",
            "IOPS",
            "Latency(s)",
            "block(KiB)",
            "xfer(KiB)",
            "open(s)",
            "wr/rd(s)",
            "close(s)",
            "total(s)",
            "iter"
        );
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>4}",
            "------",
            "---------",
            "----",
            "----------",
            "----------",
            "---------",
            "--------",
            "--------",
            "--------",
            "--------",
            "----"
        );
        for r in &out.reps {
            let _ = writeln!(
                s,
                "{:<6} {:>10.2} {:>10.2} {:>10.6} {:>10.2} {:>10.2} {:>10.6} {:>10.6} {:>10.6} {:>10.6} {:>4}",
                access_name(r.access),
                r.bw_mib_s(),
                r.iops(),
                r.latency_s,
                p.block as f64 / 1024.0,
                p.transfer as f64 / 1024.0,
                r.open_s,
                r.xfer_s,
                r.close_s,
                r.total_s,
                r.iter
            );
        }
        for e in &out.verify_errors {
            let _ = writeln!(s, "ERROR: {e}");
        }
        let _ = writeln!(s, "\nSummary of all tests:");
        let _ = writeln!(
            s,
            "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>4} {:>4} {:>3} {:>5} {:>6} {:>12} {:>10} {:>9} {:>5}",
            "Operation",
            "Max(MiB)",
            "Min(MiB)",
            "Mean(MiB)",
            "StdDev",
            "Max(OPs)",
            "Min(OPs)",
            "Mean(OPs)",
            "StdDev",
            "Mean(s)",
            "#Tasks",
            "tPN",
            "reps",
            "fPP",
            "reord",
            "segcnt",
            "blksiz",
            "xsize",
            "aggs(MiB)",
            "API"
        );
        for access in p.accesses() {
            let Some(sum) = summary(out, access) else {
                continue;
            };
            let _ = writeln!(
                s,
                "{:<9} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.5} {:>6} {:>4} {:>4} {:>3} {:>5} {:>6} {:>12} {:>10} {:>9.1} {:>5}",
                access_name(access),
                sum.bw.0,
                sum.bw.1,
                sum.bw.2,
                sum.bw.3,
                sum.ops.0,
                sum.ops.1,
                sum.ops.2,
                sum.ops.3,
                sum.mean_s,
                ranks,
                p.tasks_per_node,
                p.repetitions,
                p.file_per_proc as u8,
                p.reorder as u8,
                p.segments,
                p.block,
                p.transfer,
                aggregate as f64 / MIB,
                self.api_name()
            );
        }
        if let Some(f) = &out.failure {
            let _ = writeln!(s, "\nERROR: the run stopped: {f}");
        }
        s
    }

    /// The run report for `out` from a run on `ranks` ranks in `mode`.
    pub fn report(
        &self,
        out: &IorOutput,
        mode: Mode,
        ranks: u64,
        environment: std::collections::BTreeMap<String, String>,
    ) -> RunReport {
        let p = &self.params;
        let mut metrics = std::collections::BTreeMap::new();
        for access in p.accesses() {
            let Some(sum) = summary(out, access) else {
                continue;
            };
            let a = access_name(access);
            for (name, (max, min, mean, sd)) in [("mib_s", sum.bw), ("ops_s", sum.ops)] {
                metrics.insert(format!("{a}_{name}"), mean);
                metrics.insert(format!("{a}_{name}_max"), max);
                metrics.insert(format!("{a}_{name}_min"), min);
                metrics.insert(format!("{a}_{name}_stddev"), sd);
            }
            metrics.insert(format!("{a}_mean_s"), sum.mean_s);
        }
        let table = Table {
            columns: REP_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .reps
                .iter()
                .map(|r| {
                    vec![
                        access_name(r.access).into(),
                        r.bw_mib_s().into(),
                        r.iops().into(),
                        r.latency_s.into(),
                        (p.block as f64 / 1024.0).into(),
                        (p.transfer as f64 / 1024.0).into(),
                        r.open_s.into(),
                        r.xfer_s.into(),
                        r.close_s.into(),
                        r.total_s.into(),
                        r.iter.into(),
                    ]
                })
                .collect(),
        };
        let mut errors: Vec<String> = out.verify_errors.iter().map(|e| e.to_string()).collect();
        errors.extend(out.failure.iter().cloned());
        RunReport {
            benchmark: "ior".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(p).expect("IOR parameters serialise"),
            environment,
            hints: out.hints.clone(),
            headline: headline_among(&metrics, HEADLINE),
            metrics,
            tables: [("repetitions".to_string(), table)].into_iter().collect(),
            errors,
        }
    }
}

/// The summary of one access over all repetitions.
struct Summary {
    /// Bandwidth MiB/s: max, min, mean, stddev.
    bw: (f64, f64, f64, f64),
    /// Operations per second: max, min, mean, stddev.
    ops: (f64, f64, f64, f64),
    /// Mean total time, s.
    mean_s: f64,
}

fn summary(out: &IorOutput, access: Access) -> Option<Summary> {
    let reps: Vec<&RepResult> = out.reps.iter().filter(|r| r.access == access).collect();
    if reps.is_empty() {
        return None;
    }
    let bw: Vec<f64> = reps.iter().map(|r| r.bw_mib_s()).collect();
    let ops: Vec<f64> = reps.iter().map(|r| r.iops()).collect();
    let times: Vec<f64> = reps.iter().map(|r| r.total_s).collect();
    Some(Summary {
        bw: stats(&bw),
        ops: stats(&ops),
        mean_s: stats(&times).2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fault::{Call, Fault, WithFault};
    use crate::bench::common::options::parse_size;

    fn params() -> IorParams {
        IorParams {
            api: Api::MpiIo,
            block: 4 << 10,
            transfer: 1 << 10,
            segments: 3,
            file_per_proc: false,
            collective: false,
            reorder: false,
            tasks_per_node: 1,
            fsync: false,
            write: false,
            read: false,
            random: false,
            repetitions: 1,
            keep_file: false,
            path: "f".into(),
            hints: Hints::new(),
            seed: 7,
        }
    }

    #[test]
    fn sizes_parse_like_ior() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("3MiB"), Ok(3 << 20));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("0").unwrap_err().0.contains("at least 1 byte"));
        assert!(parse_size("-4k").unwrap_err().0.contains("positive"));
        assert!(parse_size("4x").unwrap_err().0.contains("unknown unit `x`"));
        assert!(parse_size("k").unwrap_err().0.contains("not a size"));
        assert!(
            parse_size("99999999999t")
                .unwrap_err()
                .0
                .contains("too large")
        );
        assert_eq!(format_size(4 << 20), "4 MiB");
        assert_eq!(format_size(1536), "1.50 KiB");
        assert_eq!(format_size(100), "100 bytes");
    }

    #[test]
    fn shared_file_offsets_follow_ior() {
        let p = params();
        // rank 2 of 4, segment 1, transfer 3: j·t + s·(N·b) + r·b
        let q = p.transfers_per_block() + 3;
        assert_eq!(p.offset(2, 4, q), 3 * 1024 + 4 * 4096 + 2 * 4096);
        // Every byte of the file is covered exactly once over all ranks.
        let mut seen = vec![false; (4 * 4096 * 3 / 1024) as usize];
        for r in 0..4 {
            for q in 0..p.transfers_per_rank() {
                let o = p.offset(r, 4, q);
                assert_eq!(o % 1024, 0);
                assert!(!std::mem::replace(&mut seen[(o / 1024) as usize], true));
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn file_per_process_offsets_follow_ior() {
        let p = IorParams {
            file_per_proc: true,
            ..params()
        };
        let q = 2 * p.transfers_per_block() + 1;
        assert_eq!(p.offset(3, 4, q), 1024 + 2 * 4096);
        assert_eq!(p.file_name(3), "f.00000003");
        assert_eq!(params().file_name(3), "f");
    }

    #[test]
    fn random_order_is_a_permutation_of_the_same_offsets() {
        let seq = params();
        let rnd = IorParams {
            random: true,
            ..params()
        };
        for r in 0..4 {
            let mut a: Vec<u64> = (0..seq.transfers_per_rank())
                .map(|q| seq.offset(r, 4, q))
                .collect();
            let b: Vec<u64> = (0..rnd.transfers_per_rank())
                .map(|q| rnd.offset(r, 4, q))
                .collect();
            assert_ne!(a, b, "rank {r}: -z changed nothing");
            let mut b_sorted = b.clone();
            b_sorted.sort();
            a.sort();
            assert_eq!(a, b_sorted);
        }
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4097] {
            let mut v: Vec<u64> = (0..n).map(|i| permute(i, n, 42)).collect();
            v.sort();
            assert_eq!(v, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
        // Deterministic from the key, and different keys differ.
        let a: Vec<u64> = (0..100).map(|i| permute(i, 100, 1)).collect();
        assert_eq!(a, (0..100).map(|i| permute(i, 100, 1)).collect::<Vec<_>>());
        assert_ne!(a, (0..100).map(|i| permute(i, 100, 2)).collect::<Vec<_>>());
    }

    #[test]
    fn reorder_shifts_by_tasks_per_node() {
        let p = IorParams {
            reorder: true,
            tasks_per_node: 2,
            ..params()
        };
        assert_eq!(p.role_rank(Access::Write, 3, 4), 3);
        assert_eq!(p.role_rank(Access::Read, 3, 4), 1);
        assert_eq!(params().role_rank(Access::Read, 3, 4), 3);
    }

    #[test]
    fn pattern_verifies_at_any_alignment_and_catches_errors() {
        let mut buf = vec![0u8; 37];
        fill(&mut buf, 5, 9, 1003);
        assert_eq!(verify(&buf, 5, 9, 1003), (0, None));
        // The same bytes seen as two unaligned pieces.
        let mut a = vec![0u8; 10];
        fill(&mut a, 5, 9, 1003);
        assert_eq!(a[..], buf[..10]);
        // Another file or offset is different data.
        assert!(verify(&buf, 5, 8, 1003).0 > 30);
        assert!(verify(&buf, 5, 9, 1004).0 > 30);
        buf[20] ^= 0xff;
        buf[30] ^= 0x01;
        let (n, first) = verify(&buf, 5, 9, 1003);
        assert_eq!(n, 2);
        let m = first.unwrap();
        assert_eq!(m.offset, 1023);
        assert_eq!(m.got, m.expected ^ 0xff);
    }

    #[test]
    fn validation_names_the_option() {
        let bad = IorParams {
            transfer: 3000,
            ..params()
        };
        let e = bad.validate(4).unwrap_err();
        assert_eq!(e.option, "-t");
        assert!(e.to_string().contains("must divide the block size"));
        let e = IorParams {
            collective: true,
            api: Api::Posix,
            ..params()
        }
        .validate(4)
        .unwrap_err();
        assert_eq!(e.option, "-c");
        assert_eq!(params().validate(0).unwrap_err().option, "--ranks");
        let huge = IorParams {
            block: 1 << 40,
            segments: 1 << 20,
            ..params()
        };
        assert_eq!(huge.validate(4096).unwrap_err().option, "-s");
        assert!(params().validate(4).is_ok());
    }

    #[test]
    fn accesses_default_to_both() {
        assert_eq!(params().accesses(), vec![Access::Write, Access::Read]);
        assert_eq!(
            IorParams {
                read: true,
                ..params()
            }
            .accesses(),
            vec![Access::Read]
        );
        assert_eq!(
            IorParams {
                write: true,
                ..params()
            }
            .accesses(),
            vec![Access::Write]
        );
    }

    #[test]
    fn stats_are_ior_population_statistics() {
        let (max, min, mean, sd) = stats(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((max, min, mean, sd), (9.0, 2.0, 5.0, 2.0));
    }

    #[test]
    fn report_and_text_carry_every_repetition() {
        let ior = Ior::new(params());
        let rep = |iter, access, total_s| RepResult {
            iter,
            access,
            bytes: 4 * 3 * 4096,
            ops: 48,
            open_s: 0.1,
            xfer_s: 0.5,
            close_s: 0.1,
            total_s,
            latency_s: 0.01,
        };
        let out = IorOutput {
            reps: vec![
                rep(0, Access::Write, 1.0),
                rep(0, Access::Read, 0.5),
                rep(1, Access::Write, 0.5),
            ],
            failure: Some("repetition 1, read: rank 2: boom".into()),
            ..Default::default()
        };
        let r = ior.report(&out, Mode::Sim, 4, Default::default());
        let mib = 48.0 * 1024.0 / MIB;
        assert_eq!(r.metrics["write_mib_s_max"], mib / 0.5);
        assert_eq!(r.metrics["write_mib_s_min"], mib);
        assert_eq!(r.metrics["write_mib_s"], (mib + 2.0 * mib) / 2.0);
        assert_eq!(r.metrics["read_mib_s"], mib / 0.5);
        assert_eq!(r.tables["repetitions"].rows.len(), 3);
        assert_eq!(
            r.errors,
            vec!["repetition 1, read: rank 2: boom".to_string()]
        );
        let text = ior.render(&out, 4, "twin");
        assert!(text.contains("Summary of all tests:"));
        assert_eq!(
            text.lines().filter(|l| l.starts_with("write ")).count(),
            2 + 1
        );
        assert!(text.contains("ERROR: the run stopped"));
    }

    /// Runs the probe on the null back end (zero-cost I/O, real collectives).
    fn dry(p: IorParams, ranks: usize) -> Vec<IorOutput> {
        crate::backend::null::launch(ranks, &Ior::new(p)).expect("no deadlock")
    }

    #[test]
    fn every_rank_agrees_on_every_repetition() {
        for (fpp, coll, reorder, random) in [
            (false, false, false, false),
            (true, true, true, true),
            (false, true, true, false),
            (true, false, false, true),
        ] {
            let p = IorParams {
                file_per_proc: fpp,
                collective: coll,
                reorder,
                random,
                repetitions: 3,
                hints: {
                    let mut h = Hints::new();
                    h.set("cb_nodes", "2");
                    h
                },
                ..params()
            };
            let outs = dry(p.clone(), 6);
            assert!(outs.iter().all(|o| *o == outs[0]), "ranks disagree");
            let o = &outs[0];
            assert_eq!(o.failure, None);
            assert_eq!(o.reps.len(), 6);
            for (k, r) in o.reps.iter().enumerate() {
                assert_eq!(r.iter, k as u64 / 2);
                assert_eq!(
                    r.access,
                    if k % 2 == 0 {
                        Access::Write
                    } else {
                        Access::Read
                    }
                );
                assert_eq!(r.bytes, 6 * p.bytes_per_rank());
                assert_eq!(r.ops, 6 * p.transfers_per_rank());
                assert!(r.total_s >= r.open_s && r.total_s >= 0.0);
            }
            assert_eq!(o.hints.get("cb_nodes"), Some("2"));
        }
    }

    #[test]
    fn reading_a_missing_file_stops_the_run_on_every_rank() {
        let outs = dry(
            IorParams {
                read: true,
                repetitions: 3,
                ..params()
            },
            4,
        );
        for o in &outs {
            assert!(o.reps.is_empty());
            let f = o.failure.as_deref().unwrap();
            assert!(f.starts_with("repetition 0, read: rank 0"), "{f}");
        }
    }

    #[test]
    fn a_failure_keeps_the_repetitions_before_it() {
        // Every open after the 4th on rank 1 fails: repetition 0 (write + read)
        // and repetition 1 (write + read) complete, repetition 2's write fails.
        // File per process: a rank's open is its own (a failing collective open
        // fails on every rank, as ROMIO's does).
        let outs = crate::backend::null::launch(
            3,
            &WithFault {
                inner: Ior::new(IorParams {
                    repetitions: 4,
                    file_per_proc: true,
                    ..params()
                }),
                fault: Fault {
                    rank: 1,
                    call: Call::Open,
                    numbers: 5..=u64::MAX,
                },
            },
        )
        .unwrap();
        let o = &outs[0];
        assert_eq!(o.reps.len(), 4);
        assert_eq!(o.reps.last().unwrap().iter, 1);
        let f = o.failure.as_deref().unwrap();
        assert!(f.starts_with("repetition 2, write: rank 1 failed"), "{f}");
        assert!(outs[1].failure.as_deref().unwrap().contains("injected"));
    }
}
