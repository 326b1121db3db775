//! The per-rank program.

use super::*;

/// The `q`-th record of a strided pass over `n` records with stride `k`: lane
/// `l` is the records `l, l+k, l+2k, …`; lanes are visited in order, so every
/// record is read once and consecutive reads are `k` records apart except where
/// a lane wraps to the next.
pub fn stride_index(q: u64, n: u64, k: u64) -> u64 {
    let k = k.min(n).max(1);
    // Lanes 0..n%k hold ceil(n/k) records, the rest floor(n/k).
    let (long, short) = (n.div_ceil(k), n / k);
    let n_long = n % k;
    let (lane, pos) = if q < n_long * long {
        (q / long, q % long)
    } else {
        let q2 = q - n_long * long;
        (n_long + q2 / short, q2 % short)
    };
    lane + pos * k
}

/// Bytes per block of the data layout: each starts with an 8-byte stamp.
pub const BLOCK: u64 = 512;
/// Every `FULL_CHECK`-th record of a read pass is compared byte for byte (the
/// others by their stamps only).
pub const FULL_CHECK: u64 = 64;

/// The data of one rank's file (see the module docs): block `b` is
/// `key XOR b` (8 bytes, little-endian) then `body[8..]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    key: u64,
    body: [u8; BLOCK as usize],
}

impl Pattern {
    /// The pattern of rank `rank`'s file for `seed`.
    pub fn new(seed: u64, rank: u64) -> Pattern {
        let mut body = [0u8; BLOCK as usize];
        fill(&mut body, seed, rank, 0);
        let mut key = [0u8; 8];
        fill(&mut key, seed, rank, BLOCK);
        Pattern {
            key: u64::from_le_bytes(key),
            body,
        }
    }

    pub(super) fn stamp_of(&self, block: u64) -> [u8; 8] {
        (self.key ^ block).to_le_bytes()
    }

    /// Fills `buf` (a record starting at a multiple of [`BLOCK`]) with the
    /// blocks' bodies; [`Pattern::stamp`] then makes it a given record.
    pub fn fill_bodies(&self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(BLOCK as usize) {
            chunk.copy_from_slice(&self.body[..chunk.len()]);
        }
    }

    /// Writes the stamps of the record at file offset `offset` (a multiple of
    /// [`BLOCK`]) into `buf`, whose bodies are filled.
    pub fn stamp(&self, buf: &mut [u8], offset: u64) {
        let first = offset / BLOCK;
        for (k, chunk) in buf.chunks_mut(BLOCK as usize).enumerate() {
            let n = chunk.len().min(8);
            chunk[..n].copy_from_slice(&self.stamp_of(first + k as u64)[..n]);
        }
    }

    /// Checks `buf`, read at file offset `offset`: every stamp, and with `full`
    /// every byte. Returns the differing bytes found and the first.
    pub fn check(&self, buf: &[u8], offset: u64, full: bool) -> (u64, Option<Mismatch>) {
        let (mut count, mut first) = (0u64, None);
        let first_block = offset / BLOCK;
        for (k, chunk) in buf.chunks(BLOCK as usize).enumerate() {
            let at = offset + k as u64 * BLOCK;
            let stamp = self.stamp_of(first_block + k as u64);
            let n = chunk.len().min(8);
            let mut compare = |from: usize, want: &[u8]| {
                for (i, (&got, &expected)) in chunk[from..].iter().zip(want).enumerate() {
                    if got != expected {
                        count += 1;
                        first.get_or_insert(Mismatch {
                            offset: at + (from + i) as u64,
                            expected,
                            got,
                        });
                    }
                }
            };
            if chunk[..n] != stamp[..n] {
                compare(0, &stamp[..n]);
            }
            if full && chunk[n..] != self.body[n..chunk.len()] {
                compare(n, &self.body[n..chunk.len()]);
            }
        }
        (count, first)
    }
}

/// One measured pass, reduced over ranks (a row of the report's `rows` table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The pass (`write`, `random-read`, …).
    pub test: Pass,
    /// File size per rank, bytes.
    pub file_bytes: u64,
    /// Record size, bytes.
    pub record_bytes: u64,
    /// Latest end − earliest start over ranks, s (with `-e`, write passes include the fsync).
    pub seconds: f64,
    /// Bytes moved by all ranks.
    pub bytes: u64,
    /// Records moved by all ranks.
    pub ops: u64,
    /// Aggregate kB/s (kB = 1024 bytes).
    pub kb_s: f64,
    /// Write passes: the longest time over ranks of the pass's final `fsync`, s.
    pub fsync_s: Option<f64>,
    /// Write passes: bytes all ranks dirtied since their last `fsync` (every write
    /// pass ends with one, so the pass's bytes; an upper bound of what was still
    /// dirty when it began, as background write-back may have cleaned some).
    pub dirty_bytes: u64,
}

/// Columns of the `rows` table, in [`Row`]'s field order.
pub const ROW_COLUMNS: [&str; 9] = [
    "test",
    "file_bytes",
    "record_bytes",
    "seconds",
    "bytes",
    "ops",
    "kb_s",
    "fsync_s",
    "dirty_bytes",
];

/// Why a report's rows cannot be read back as IOzone [`Row`]s.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RowsError {
    /// The report is of another benchmark.
    #[error("a report of `{0}`, not of `iozone`")]
    Benchmark(String),
    /// It has no `rows` table.
    #[error("the report has no `rows` table")]
    NoTable,
    /// Its `rows` table has other columns.
    #[error("the `rows` table has columns {0:?}, expected {ROW_COLUMNS:?}")]
    Columns(Vec<String>),
    /// A row does not parse.
    #[error("`rows` row {row}: {message}")]
    Row {
        /// Its index.
        row: usize,
        /// Why.
        message: String,
    },
}

/// The [`Row`]s of an IOzone report (its `rows` table), for the calibrator.
pub fn rows_from_report(report: &RunReport) -> Result<Vec<Row>, RowsError> {
    if report.benchmark != "iozone" {
        return Err(RowsError::Benchmark(report.benchmark.clone()));
    }
    let table = report.tables.get("rows").ok_or(RowsError::NoTable)?;
    if table.columns != ROW_COLUMNS {
        return Err(RowsError::Columns(table.columns.clone()));
    }
    table
        .rows
        .iter()
        .enumerate()
        .map(|(i, cells)| {
            let obj: serde_json::Map<String, serde_json::Value> = ROW_COLUMNS
                .iter()
                .map(|c| c.to_string())
                .zip(cells.iter().cloned())
                .collect();
            serde_json::from_value(serde_json::Value::Object(obj)).map_err(|e| RowsError::Row {
                row: i,
                message: e.to_string(),
            })
        })
        .collect()
}

/// Read-back found bytes that differ from what was written, in one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    /// The pass.
    pub test: Pass,
    /// File size, bytes.
    pub file_bytes: u64,
    /// Record size, bytes.
    pub record_bytes: u64,
    /// Differing bytes over all ranks.
    pub count: u64,
    /// The lowest rank that found one.
    pub rank: u64,
    /// That rank's file.
    pub file: String,
    /// The first differing byte it found.
    pub first: Mismatch,
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of a {} file in {} records: {} bytes differ from what was written; first: {}",
            self.test.name(),
            format_size(self.file_bytes),
            format_size(self.record_bytes),
            self.count,
            self.first.at(self.rank, &self.file)
        )
    }
}

/// What every rank returns (the same on every rank).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IozoneOutput {
    /// Passes measured, in order.
    pub rows: Vec<Row>,
    /// Verification failures (the run goes on after them).
    pub verify_errors: Vec<VerifyError>,
    /// Hints in effect on the first file (MPI-IO).
    pub hints: Hints,
    /// The error that stopped the run, if one did.
    pub failure: Option<String>,
}

/// The IOzone-style probe as a [`RankProgram`].
#[derive(Debug, Clone)]
pub struct Iozone {
    /// Validated options.
    pub params: IozoneParams,
}

/// One rank's measurement of one pass.
#[derive(Default)]
pub(super) struct Stamps {
    pub(super) t0: f64,
    pub(super) t1: f64,
    pub(super) fsync_s: f64,
    pub(super) bytes: u64,
    pub(super) ops: u64,
    pub(super) mismatches: u64,
    pub(super) first: Option<Mismatch>,
    pub(super) error: Option<String>,
}

impl Iozone {
    /// The probe with `params` (check them first with [`IozoneParams::validate`]).
    pub fn new(params: IozoneParams) -> Self {
        Iozone { params }
    }

    pub(super) fn open_options(&self, mode: OpenMode) -> OpenOptions {
        OpenOptions {
            mode,
            scope: Scope::Private,
            api: self.params.api,
            hints: self.params.hints.clone(),
            unique_open: false,
        }
    }

    /// One pass on this rank over its file of `s` bytes in records of `r`.
    pub(super) async fn pass<C: IoCtx>(
        &self,
        ctx: &C,
        pass: Pass,
        (s, r): (u64, u64),
        hints: &mut Option<Hints>,
    ) -> Stamps {
        let p = &self.params;
        let (rank, ranks) = (ctx.rank() as u64, ctx.size() as u64);
        let name = p.file_name(rank, ranks);
        let access = pass.access();
        let mut st = Stamps::default();
        let mode = match access {
            Access::Write => OpenMode::Create,
            Access::Read => OpenMode::Read,
        };
        let pattern = Pattern::new(p.seed, rank);
        let mut buf = ctx.alloc(r as usize);
        if access == Access::Write
            && let Some(b) = buf.bytes_mut()
        {
            pattern.fill_bodies(b);
        }
        let mut file = match ctx.open(&name, &self.open_options(mode)).await {
            Ok(f) => Some(f),
            Err(e) => {
                st.error = Some(e.to_string());
                None
            }
        };
        if let Some(f) = file.as_mut() {
            if hints.is_none() {
                *hints = Some(ctx.hints_in_effect(f));
            }
            if access == Access::Read
                && p.cold
                && let Err(e) = ctx.drop_cache(f).await
            {
                st.error = Some(e.to_string());
            }
        }
        // Every rank reaches the barrier, failed or not, so none waits forever.
        ctx.barrier().await;
        st.t0 = ctx.wtime();
        st.t1 = st.t0;
        let Some(mut f) = file else {
            return st;
        };
        if st.error.is_none() {
            let n = s / r;
            for q in 0..n {
                if ctx.stop_seen() {
                    // Interrupted (each rank its own file): the checkpoint drops the pass.
                    break;
                }
                let off = p.offset(pass, rank, n, r, q);
                if access == Access::Write
                    && let Some(b) = buf.bytes_mut()
                {
                    pattern.stamp(b, off);
                }
                // The shared pointer of a file this rank opened alone moves
                // through the same sequential offsets.
                let op = match (p.shared_pointer, access) {
                    (true, Access::Write) => Op::write_shared(),
                    (true, Access::Read) => Op::read_shared(),
                    (false, _) => Op::at(access, Coordination::Independent, off),
                };
                match ctx.xfer(&mut f, op, &mut buf).await {
                    Ok(m) if m as u64 == r => {
                        st.bytes += r;
                        st.ops += 1;
                    }
                    Ok(m) => {
                        st.bytes += m as u64;
                        st.error = Some(format!(
                            "{} of {r} bytes at offset {off} of `{name}` moved only {m} bytes",
                            pass.name()
                        ));
                        break;
                    }
                    Err(e) => {
                        st.error = Some(e.to_string());
                        break;
                    }
                }
                if access == Access::Read
                    && let Some(b) = buf.bytes()
                {
                    let (k, first) = pattern.check(b, off, q.is_multiple_of(FULL_CHECK));
                    st.mismatches += k;
                    if st.first.is_none() {
                        st.first = first;
                    }
                }
            }
            if access == Access::Write && st.error.is_none() {
                let before = ctx.wtime();
                if let Err(e) = ctx.sync(&mut f).await {
                    st.error = Some(e.to_string());
                }
                let after = ctx.wtime();
                st.fsync_s = after - before;
                st.t1 = if p.fsync_in_time { after } else { before };
            } else {
                st.t1 = ctx.wtime();
            }
        }
        if let Err(e) = ctx.close(f).await {
            st.error.get_or_insert(e.to_string());
        }
        st
    }

    /// Deletes this rank's file (a missing file is no error).
    pub(super) async fn remove<C: IoCtx>(&self, ctx: &C) -> Option<String> {
        let name = self.params.file_name(ctx.rank() as u64, ctx.size() as u64);
        ctx.delete(&name).await.err().map(|e| e.to_string())
    }
}

impl RankProgram for Iozone {
    type Output = IozoneOutput;

    async fn run<C: IoCtx>(&self, ctx: &C) -> IozoneOutput {
        let p = &self.params;
        let (rank, ranks) = (ctx.rank() as u64, ctx.size() as u64);
        let mut out = IozoneOutput::default();
        let mut hints = None;
        let combos = p.combos();
        let passes = p.passes();
        'combos: for (k, &(s, r)) in combos.iter().enumerate() {
            // A fresh file for this file × record size.
            let removed = self.remove(ctx).await.map_or(Ok(()), Err);
            let what = format!("removing the old test file before {}", combo_name(s, r));
            if let Err(f) = first_failure(ctx, &what, removed).await {
                out.failure = Some(f.0);
                break;
            }
            for &pass in &passes {
                let st = self.pass(ctx, pass, (s, r), &mut hints).await;
                let what = format!("{} of {}", pass.name(), combo_name(s, r));
                let failed = st.error.as_ref().map_or(Ok(()), Err);
                if let Err(f) = first_failure(ctx, &what, failed).await {
                    out.failure = Some(f.0);
                    break 'combos;
                }
                if ctx.stop_requested().await.is_some() {
                    // The pass the signal came in may have ended early: not a result.
                    break 'combos;
                }
                let start = ctx.allreduce_f64(st.t0, ReduceOp::Min).await;
                let end = ctx.allreduce_f64(st.t1, ReduceOp::Max).await;
                let bytes = ctx.allreduce_f64(st.bytes as f64, ReduceOp::Sum).await as u64;
                let ops = ctx.allreduce_f64(st.ops as f64, ReduceOp::Sum).await as u64;
                let seconds = end - start;
                let write = pass.access() == Access::Write;
                let fsync_s = if write {
                    Some(ctx.allreduce_f64(st.fsync_s, ReduceOp::Max).await)
                } else {
                    None
                };
                out.rows.push(Row {
                    test: pass,
                    file_bytes: s,
                    record_bytes: r,
                    seconds,
                    bytes,
                    ops,
                    kb_s: if seconds > 0.0 {
                        bytes as f64 / KB / seconds
                    } else {
                        0.0
                    },
                    fsync_s,
                    dirty_bytes: if write { bytes } else { 0 },
                });
                if !write {
                    let total = ctx.allreduce_f64(st.mismatches as f64, ReduceOp::Sum).await;
                    if total > 0.0 {
                        let (who, first) = first_mismatch(ctx, st.first).await;
                        out.verify_errors.push(VerifyError {
                            test: pass,
                            file_bytes: s,
                            record_bytes: r,
                            count: total as u64,
                            rank: who as u64,
                            file: p.file_name(who as u64, ranks),
                            first,
                        });
                    }
                }
            }
            if p.progress && rank == 0 {
                let line: Vec<String> = out
                    .rows
                    .iter()
                    .filter(|row| (row.file_bytes, row.record_bytes) == (s, r))
                    .map(|row| format!("{} {:.0}", row.test.name(), row.kb_s))
                    .collect();
                eprintln!(
                    "iozone [{}/{}] {}: {} kB/s",
                    k + 1,
                    combos.len(),
                    combo_name(s, r),
                    line.join(", ")
                );
            }
        }
        if !p.keep {
            // Delete what this run created, even after a failure.
            ctx.barrier().await;
            let removed = self.remove(ctx).await.map_or(Ok(()), Err);
            if let Err(f) = first_failure(ctx, "removing the test file", removed).await
                && out.failure.is_none()
            {
                out.failure = Some(f.0);
            }
        }
        out.hints = hints.unwrap_or_default();
        out
    }
}

/// "file 512 KiB record 4 KiB": a (file size, record size) combination.
pub(super) fn combo_name(s: u64, r: u64) -> String {
    format!("file {} record {}", format_size(s), format_size(r))
}
