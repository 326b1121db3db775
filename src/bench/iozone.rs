//! The IOzone-style probe: file-system level throughput of one process (or one
//! per rank, IOzone's throughput mode) over file sizes × record sizes × access
//! orders, written once against [`IoCtx`] (spec: `shared/spec/probes.md`).
//!
//! What it is for: IOzone's table — kB/s per (file size, record size, test) for
//! write, rewrite, read, re-read, random read, random write and strided read —
//! with IOzone's option names, in both modes; and the calibration inputs it
//! yields: bandwidth against file size across the page cache (the cache knee and
//! the memory and device plateaus), per-record cost per access order, and the
//! **sync cost**: every write pass ends with an `fsync` whose time is reported
//! with the bytes dirtied since the last one ([`Row::fsync_s`],
//! [`Row::dirty_bytes`]). What it is not: all of IOzone (no mmap, `fwrite`/
//! `fread`, backward or record-rewrite tests, no O_DIRECT, no Excel output).
//!
//! Tests (IOzone's `-i` numbers), each pass over a file of `s` bytes in records
//! of `r` bytes (`n = s / r` records):
//!
//! | `-i` | passes | record order |
//! |---|---|---|
//! | 0 | write (new file), rewrite | `0, 1, …, n−1` |
//! | 1 | read, re-read | `0, 1, …, n−1` |
//! | 2 | random read, random write | a seeded permutation of `0..n` ([`permute`]) |
//! | 5 | strided read (`-j k`) | `0, k, 2k, …`, then `1, k+1, …`: every record once |
//!
//! Test 0 always runs first: it creates the file the others read.
//!
//! Timing per pass (IOzone's: open and close are outside the time): open, with
//! `-I` drop the file's cached pages ([`IoCtx::drop_cache`]), barrier, `t0`, the
//! records, with `-e` the `fsync`, `t1`; a write pass without `-e` then times its
//! `fsync` on its own. Under N ranks each rank has its own file (`path.rank`) and
//! a pass's time is latest `t1` − earliest `t0`: kB/s are aggregate, as IOzone's
//! "Children see throughput". kB = 1024 bytes, as in IOzone.
//!
//! Data ([`Pattern`]): every [`BLOCK`]-byte block of rank `k`'s file is an 8-byte
//! stamp (a key of (`seed`, `k`) XOR the block number) then a pseudo-random body
//! of (`seed`, `k`) that is the same in every block. A write pass fills its record
//! buffer's bodies once, before the clock starts, and stamps each record (one
//! store per block); a read checks every stamp of every record (a wrong offset,
//! rank, seed or stale data shows) and compares every [`FULL_CHECK`]-th record
//! byte for byte. Checking so costs about 2 % of a memory copy and keeps the
//! timed I/O back to back — full inline verification would give the kernel's
//! read-ahead idle time to fill and overstate cold reads. Where the back end
//! keeps no data (the twin) [`IoBuf::bytes`] is `None` and all of this does
//! nothing, without this code knowing the mode.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::bench::common::agree::{first_mismatch, lowest_rank};
use crate::bench::common::options::{OptionError, SizeError, format_size, parse_size};
use crate::bench::common::pattern::{Mismatch, fill, permute};
use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, Op, OpenMode, OpenOptions, RankProgram,
    ReduceOp, Scope,
};
use crate::report::{Mode, RunReport, Table, default_headline};

/// IOzone's kilobyte: 1024 bytes.
const KB: f64 = 1024.0;

/// Auto mode's smallest and largest file (`-n`, `-g` defaults), bytes.
pub const AUTO_FILE: (u64, u64) = (64 << 10, 512 << 20);
/// Auto mode's smallest and largest record (`-y`, `-q` defaults), bytes.
pub const AUTO_RECORD: (u64, u64) = (4 << 10, 16 << 20);
/// File size without `-s` or `-a` (IOzone's 512 kB), bytes.
pub const DEFAULT_FILE: u64 = 512 << 10;
/// Record size without `-r` or `-a` (IOzone's 4 kB), bytes.
pub const DEFAULT_RECORD: u64 = 4 << 10;
/// `-j` default: IOzone's stride of 17 records.
pub const DEFAULT_STRIDE: u64 = 17;
/// The largest record: one buffer of it is held in memory.
pub const MAX_RECORD: u64 = 1 << 30;

fn opt_err(option: &str, value: impl ToString, reason: impl Into<String>) -> OptionError {
    OptionError {
        option: option.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Parses an IOzone size: a bare number is kB (1024 bytes), or a number with a
/// unit `k`, `m`, `g` (powers of 1024; `b` for bytes).
pub fn parse_kb_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()) {
        parse_size(&format!("{t}k"))
    } else {
        parse_size(t)
    }
    .map_err(|e| SizeError(format!("{e} (a bare number is kB, as in IOzone)")))
}

/// An IOzone test (`-i` number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Test {
    /// `-i 0`: write, rewrite.
    Write,
    /// `-i 1`: read, re-read.
    Read,
    /// `-i 2`: random read, random write.
    Random,
    /// `-i 5`: strided read.
    Stride,
}

impl Test {
    /// The test of IOzone's number `n`, if this probe has it.
    pub fn from_number(n: u64) -> Option<Test> {
        match n {
            0 => Some(Test::Write),
            1 => Some(Test::Read),
            2 => Some(Test::Random),
            5 => Some(Test::Stride),
            _ => None,
        }
    }
    /// Its passes, in order.
    pub fn passes(self) -> &'static [Pass] {
        match self {
            Test::Write => &[Pass::Write, Pass::Rewrite],
            Test::Read => &[Pass::Read, Pass::Reread],
            Test::Random => &[Pass::RandomRead, Pass::RandomWrite],
            Test::Stride => &[Pass::StrideRead],
        }
    }
}

/// One pass over the file: a column of IOzone's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pass {
    /// Sequential write of a new file.
    Write,
    /// Sequential write over the existing file.
    Rewrite,
    /// Sequential read.
    Read,
    /// Sequential read again.
    Reread,
    /// Reads in a seeded random order.
    RandomRead,
    /// Writes in a seeded random order.
    RandomWrite,
    /// Reads `-j` records apart, wrapping.
    StrideRead,
}

impl Pass {
    /// Every pass, in IOzone's column order.
    pub const ALL: [Pass; 7] = [
        Pass::Write,
        Pass::Rewrite,
        Pass::Read,
        Pass::Reread,
        Pass::RandomRead,
        Pass::RandomWrite,
        Pass::StrideRead,
    ];
    /// Its name in reports (`random-read`).
    pub fn name(self) -> &'static str {
        match self {
            Pass::Write => "write",
            Pass::Rewrite => "rewrite",
            Pass::Read => "read",
            Pass::Reread => "reread",
            Pass::RandomRead => "random-read",
            Pass::RandomWrite => "random-write",
            Pass::StrideRead => "stride-read",
        }
    }
    /// The pass of a report name.
    pub fn from_name(name: &str) -> Option<Pass> {
        Pass::ALL.into_iter().find(|p| p.name() == name)
    }
    /// Write or read.
    pub fn access(self) -> Access {
        match self {
            Pass::Write | Pass::Rewrite | Pass::RandomWrite => Access::Write,
            _ => Access::Read,
        }
    }
    /// IOzone's two header lines for its column.
    fn header(self) -> (&'static str, &'static str) {
        match self {
            Pass::Write => ("", "write"),
            Pass::Rewrite => ("", "rewrite"),
            Pass::Read => ("", "read"),
            Pass::Reread => ("", "reread"),
            Pass::RandomRead => ("random", "read"),
            Pass::RandomWrite => ("random", "write"),
            Pass::StrideRead => ("stride", "read"),
        }
    }
}

/// The probe's options, checked by [`IozoneParams::validate`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IozoneParams {
    /// `-i`: the tests (test 0 is added when missing: it creates the file).
    pub tests: Vec<Test>,
    /// `-s`: file sizes in bytes (empty: [`DEFAULT_FILE`], or the auto range with `-a`).
    pub file_sizes: Vec<u64>,
    /// `-r`: record sizes in bytes (empty: [`DEFAULT_RECORD`], or the auto range with `-a`).
    pub record_sizes: Vec<u64>,
    /// `-a`: auto mode — file and record sizes in powers of two over the ranges below.
    pub auto: bool,
    /// `-n`, `-g`: auto mode's smallest and largest file, bytes.
    pub auto_file: (u64, u64),
    /// `-y`, `-q`: auto mode's smallest and largest record, bytes.
    pub auto_record: (u64, u64),
    /// `--api`: POSIX or MPI-IO (independent calls, each rank its own file).
    pub api: Api,
    /// `-j`: stride of the strided read, in records (≥ 1).
    pub stride: u64,
    /// `-e`: the final `fsync` of a write pass counts in its time.
    pub fsync_in_time: bool,
    /// `-I`: drop the file's cached pages before every read pass (cold reads).
    pub cold: bool,
    /// `--shared-pointer` (not in IOzone): the sequential passes go through
    /// MPI-IO's shared file pointer (`MPI_File_write_shared`/`read_shared`) of
    /// each rank's own file, so the same offsets cost a pointer update each.
    #[serde(default)]
    pub shared_pointer: bool,
    /// `-w`: keep the test files at the end (otherwise deleted; each file × record
    /// size starts from a fresh file either way).
    pub keep: bool,
    /// `-f`: the test file (`path.rank` under more than one rank).
    pub path: String,
    /// MPI-IO hints (`--hint`, `--hints-file`; MPI-IO only).
    pub hints: Hints,
    /// Seed of the data pattern and the random order.
    pub seed: u64,
    /// Progress lines on stderr (rank 0).
    #[serde(skip)]
    pub progress: bool,
}

impl IozoneParams {
    /// The defaults: `-i 0 -i 1 -i 2`, 512 kB file, 4 kB records, POSIX, `iozone.tmp`.
    pub fn new(seed: u64) -> IozoneParams {
        IozoneParams {
            tests: vec![Test::Write, Test::Read, Test::Random],
            file_sizes: Vec::new(),
            record_sizes: Vec::new(),
            auto: false,
            auto_file: AUTO_FILE,
            auto_record: AUTO_RECORD,
            api: Api::Posix,
            shared_pointer: false,
            stride: DEFAULT_STRIDE,
            fsync_in_time: false,
            cold: false,
            keep: false,
            path: "iozone.tmp".into(),
            hints: Hints::new(),
            seed,
            progress: false,
        }
    }

    /// The passes of every test, in IOzone's column order.
    pub fn passes(&self) -> Vec<Pass> {
        let mut tests = self.tests.clone();
        tests.push(Test::Write);
        tests.sort();
        tests.dedup();
        tests
            .iter()
            .flat_map(|t| t.passes().iter().copied())
            .collect()
    }

    /// Doubling steps from `lo` up to `hi`.
    fn doublings(lo: u64, hi: u64) -> Vec<u64> {
        let mut v = Vec::new();
        let mut x = lo;
        while x <= hi {
            v.push(x);
            match x.checked_mul(2) {
                Some(y) => x = y,
                None => break,
            }
        }
        v
    }

    /// File sizes, ascending.
    fn files(&self) -> Vec<u64> {
        let mut v = match (self.file_sizes.is_empty(), self.auto) {
            (false, _) => self.file_sizes.clone(),
            (true, true) => Self::doublings(self.auto_file.0, self.auto_file.1),
            (true, false) => vec![DEFAULT_FILE],
        };
        v.sort();
        v.dedup();
        v
    }

    /// Record sizes, ascending.
    fn records(&self) -> Vec<u64> {
        let mut v = match (self.record_sizes.is_empty(), self.auto) {
            (false, _) => self.record_sizes.clone(),
            (true, true) => Self::doublings(self.auto_record.0, self.auto_record.1),
            (true, false) => vec![DEFAULT_RECORD],
        };
        v.sort();
        v.dedup();
        v
    }

    /// The (file size, record size) pairs measured, in IOzone's order: by file
    /// size, then record size; records larger than the file are skipped.
    pub fn combos(&self) -> Vec<(u64, u64)> {
        let records = self.records();
        self.files()
            .into_iter()
            .flat_map(|s| {
                records
                    .iter()
                    .filter(move |&&r| r <= s)
                    .map(move |&r| (s, r))
            })
            .collect()
    }

    /// Checks the options on their own and for `ranks` ranks.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if ranks == 0 {
            return Err(opt_err("--ranks", 0, "at least one rank"));
        }
        if self.stride == 0 {
            return Err(opt_err("-j", 0, "the stride is at least 1 record"));
        }
        if self.path.is_empty() {
            return Err(opt_err("-f", "", "the test file name is empty"));
        }
        if self.auto {
            let ((n, g), (y, q)) = (self.auto_file, self.auto_record);
            if n > g {
                return Err(opt_err(
                    "-n",
                    format_size(n),
                    format!(
                        "the smallest file exceeds the largest (-g {})",
                        format_size(g)
                    ),
                ));
            }
            if y > q {
                return Err(opt_err(
                    "-y",
                    format_size(y),
                    format!(
                        "the smallest record exceeds the largest (-q {})",
                        format_size(q)
                    ),
                ));
            }
        }
        for (flag, sizes) in [("-s", self.files()), ("-r", self.records())] {
            if let Some(&x) = sizes.iter().find(|&&x| !x.is_multiple_of(1024)) {
                return Err(opt_err(
                    flag,
                    format!("{x} bytes"),
                    "sizes are whole kB (1024 bytes), as in IOzone",
                ));
            }
        }
        for &r in &self.records() {
            if r > MAX_RECORD {
                return Err(opt_err(
                    "-r",
                    format_size(r),
                    format!(
                        "records are at most {}: one is held in memory",
                        format_size(MAX_RECORD)
                    ),
                ));
            }
        }
        let combos = self.combos();
        if combos.is_empty() {
            return Err(opt_err(
                "-r",
                format_size(self.records()[0]),
                format!(
                    "every record size exceeds every file size (largest file {})",
                    format_size(*self.files().last().expect("at least one file size"))
                ),
            ));
        }
        for &(s, r) in &combos {
            if !s.is_multiple_of(r) {
                return Err(opt_err(
                    "-r",
                    format_size(r),
                    format!(
                        "the record size must divide the file size (-s {})",
                        format_size(s)
                    ),
                ));
            }
        }
        if self.shared_pointer && self.api != Api::MpiIo {
            return Err(opt_err(
                "--shared-pointer",
                "",
                "the shared file pointer is MPI-IO's: it needs --api MPIIO",
            ));
        }
        if self.shared_pointer
            && let Some(t) = self
                .tests
                .iter()
                .find(|t| !matches!(t, Test::Write | Test::Read))
        {
            return Err(opt_err(
                "--shared-pointer",
                "",
                format!(
                    "the shared file pointer only moves forward: tests 0 and 1 only, not {t:?}"
                ),
            ));
        }
        if self.api == Api::Posix && !self.hints.is_empty() {
            return Err(opt_err(
                "--hint",
                "",
                "MPI-IO hints need --api MPIIO (POSIX files take no hints)",
            ));
        }
        Ok(())
    }

    /// The file of rank `rank` of `ranks`: `path`, or `path.rank` under several ranks.
    pub fn file_name(&self, rank: u64, ranks: u64) -> String {
        if ranks == 1 {
            self.path.clone()
        } else {
            format!("{}.{rank}", self.path)
        }
    }

    /// The file offset of the `q`-th record a pass visits, for rank `rank`, in a
    /// file of `n` records of `r` bytes.
    pub fn offset(&self, pass: Pass, rank: u64, n: u64, r: u64, q: u64) -> u64 {
        let idx = match pass {
            Pass::RandomRead => permute(q, n, self.random_key(rank, 0)),
            Pass::RandomWrite => permute(q, n, self.random_key(rank, 1)),
            Pass::StrideRead => stride_index(q, n, self.stride),
            _ => q,
        };
        idx * r
    }

    /// The key of rank `rank`'s random order of pass kind `which` (0 read, 1 write).
    fn random_key(&self, rank: u64, which: u64) -> u64 {
        self.seed
            .wrapping_add(rank)
            .wrapping_add(which.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}

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

    fn stamp_of(&self, block: u64) -> [u8; 8] {
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
struct Stamps {
    t0: f64,
    t1: f64,
    fsync_s: f64,
    bytes: u64,
    ops: u64,
    mismatches: u64,
    first: Option<Mismatch>,
    error: Option<String>,
}

impl Iozone {
    /// The probe with `params` (check them first with [`IozoneParams::validate`]).
    pub fn new(params: IozoneParams) -> Self {
        Iozone { params }
    }

    fn open_options(&self, mode: OpenMode) -> OpenOptions {
        OpenOptions {
            mode,
            scope: Scope::Private,
            api: self.params.api,
            hints: self.params.hints.clone(),
            unique_open: false,
        }
    }

    /// One pass on this rank over its file of `s` bytes in records of `r`.
    async fn pass<C: IoCtx>(
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
    async fn remove<C: IoCtx>(&self, ctx: &C) -> Option<String> {
        let name = self.params.file_name(ctx.rank() as u64, ctx.size() as u64);
        ctx.delete(&name).await.err().map(|e| e.to_string())
    }

    /// The message for a failure agreed at rank `who`.
    fn failure_text(ctx_rank: u64, who: u64, what: &str, error: &Option<String>) -> String {
        match error {
            Some(e) if who == ctx_rank => format!("{what}: rank {who}: {e}"),
            _ => format!("{what}: rank {who} failed (see that rank's message)"),
        }
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
            let removed = self.remove(ctx).await;
            if let Some(who) = lowest_rank(ctx, removed.is_some()).await.map(|w| w as u64) {
                let what = format!("removing the old test file before {}", combo_name(s, r));
                out.failure = Some(Self::failure_text(rank, who, &what, &removed));
                break;
            }
            for &pass in &passes {
                let st = self.pass(ctx, pass, (s, r), &mut hints).await;
                if let Some(who) = lowest_rank(ctx, st.error.is_some()).await.map(|w| w as u64) {
                    let what = format!("{} of {}", pass.name(), combo_name(s, r));
                    out.failure = Some(Self::failure_text(rank, who, &what, &st.error));
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
            let removed = self.remove(ctx).await;
            if let Some(who) = lowest_rank(ctx, removed.is_some()).await.map(|w| w as u64)
                && out.failure.is_none()
            {
                out.failure = Some(Self::failure_text(
                    rank,
                    who,
                    "removing the test file",
                    &removed,
                ));
            }
        }
        out.hints = hints.unwrap_or_default();
        out
    }
}

fn combo_name(s: u64, r: u64) -> String {
    format!("file {} record {}", format_size(s), format_size(r))
}

impl Iozone {
    /// IOzone's header and table (kB/s per file size × record size × pass), then
    /// each pass's seconds, records and fsync time; `mode` says where it ran.
    pub fn render(&self, out: &IozoneOutput, ranks: u64, mode: &str) -> String {
        let p = &self.params;
        let mut s = String::new();
        let _ = writeln!(s, "\tpiotwin IOzone-style probe ({mode})");
        if p.auto {
            let _ = writeln!(s, "\tAuto Mode");
        }
        if ranks > 1 {
            let _ = writeln!(
                s,
                "\tThroughput test with {ranks} processes, one file each: kB/s are aggregate"
            );
        }
        let api = match p.api {
            Api::Posix => "POSIX",
            Api::MpiIo => "MPI-IO (independent)",
        };
        let _ = writeln!(s, "\tAPI: {api}, test file `{}`", p.file_name(0, ranks));
        if p.fsync_in_time {
            let _ = writeln!(s, "\tInclude fsync in write timing");
        }
        if p.cold {
            let _ = writeln!(
                s,
                "\tCold reads: the file's cached pages dropped before each read (fsync + POSIX_FADV_DONTNEED)"
            );
        }
        if p.tests.contains(&Test::Stride) {
            let _ = writeln!(s, "\tStride = {} records", p.stride);
        }
        let _ = writeln!(s, "\tData pattern seed {}", p.seed);
        let _ = writeln!(s, "\tOutput is in kBytes/sec\n");
        let passes = p.passes();
        let mut top = format!("{:>16}{:>8}", "", "");
        let mut head = format!("{:>16}{:>8}", "kB", "reclen");
        for pass in &passes {
            let (a, b) = pass.header();
            let _ = write!(top, " {a:>9}");
            let _ = write!(head, " {b:>9}");
        }
        let _ = writeln!(s, "{}", top.trim_end());
        let _ = writeln!(s, "{head}");
        let by_cell: BTreeMap<(u64, u64, Pass), &Row> = out
            .rows
            .iter()
            .map(|r| ((r.file_bytes, r.record_bytes, r.test), r))
            .collect();
        for (fs, rs) in p.combos() {
            if !passes.iter().any(|&x| by_cell.contains_key(&(fs, rs, x))) {
                continue;
            }
            let mut line = format!("{:>16}{:>8}", fs / 1024, rs / 1024);
            for &pass in &passes {
                match by_cell.get(&(fs, rs, pass)) {
                    Some(r) => {
                        // a space before each column, so that a rate too wide for it stays apart
                        let _ = write!(line, " {:>9.0}", r.kb_s);
                    }
                    None => line.push_str(&" ".repeat(10)),
                }
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
        let _ = writeln!(
            s,
            "\nPer pass (kB = 1024 bytes; fsync s: the pass's final fsync{}):",
            if p.fsync_in_time {
                ", inside the seconds (-e)"
            } else {
                ", after the seconds"
            }
        );
        let _ = writeln!(
            s,
            "{:>12} {:>8} {:<13} {:>12} {:>10} {:>12} {:>10} {:>12}",
            "file kB", "reclen", "test", "seconds", "ops", "kB/s", "fsync s", "dirty kB"
        );
        for r in &out.rows {
            let (fsync, dirty) = match r.fsync_s {
                Some(f) => (format!("{f:.6}"), format!("{}", r.dirty_bytes / 1024)),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "{:>12} {:>8} {:<13} {:>12.6} {:>10} {:>12.0} {:>10} {:>12}",
                r.file_bytes / 1024,
                r.record_bytes / 1024,
                r.test.name(),
                r.seconds,
                r.ops,
                r.kb_s,
                fsync,
                dirty
            );
        }
        for e in &out.verify_errors {
            let _ = writeln!(s, "ERROR: {e}");
        }
        if let Some(f) = &out.failure {
            let _ = writeln!(s, "\nERROR: the run stopped: {f}");
        }
        if out.verify_errors.is_empty() && out.failure.is_none() {
            let _ = writeln!(s, "\npiotwin iozone test complete.");
        }
        s
    }

    /// The run report: metrics `<pass>_kb_s@s=<file bytes>,r=<record bytes>` (and
    /// `<pass>_fsync_s@…` for write passes), and the `rows` table ([`ROW_COLUMNS`];
    /// read back with [`rows_from_report`]).
    pub fn report(
        &self,
        out: &IozoneOutput,
        mode: Mode,
        ranks: u64,
        environment: BTreeMap<String, String>,
    ) -> RunReport {
        let mut metrics = BTreeMap::new();
        for r in &out.rows {
            let at = format!("s={},r={}", r.file_bytes, r.record_bytes);
            let name = r.test.name().replace('-', "_");
            metrics.insert(format!("{name}_kb_s@{at}"), r.kb_s);
            if let Some(f) = r.fsync_s {
                metrics.insert(format!("{name}_fsync_s@{at}"), f);
            }
        }
        let verify_bytes: u64 = out.verify_errors.iter().map(|e| e.count).sum();
        metrics.insert("verify_errors".into(), verify_bytes as f64);
        let table = Table {
            columns: ROW_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.test.name().into(),
                        r.file_bytes.into(),
                        r.record_bytes.into(),
                        r.seconds.into(),
                        r.bytes.into(),
                        r.ops.into(),
                        r.kb_s.into(),
                        r.fsync_s.into(),
                        r.dirty_bytes.into(),
                    ]
                })
                .collect(),
        };
        let mut errors: Vec<String> = out.verify_errors.iter().map(|e| e.to_string()).collect();
        errors.extend(out.failure.iter().cloned());
        RunReport {
            benchmark: "iozone".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(&self.params).expect("IOzone parameters serialise"),
            environment,
            hints: out.hints.clone(),
            headline: default_headline(metrics.keys().map(String::as_str)),
            metrics,
            tables: [("rows".to_string(), table)].into_iter().collect(),
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::fault::{Call, Fault, WithFault};
    use crate::backend::mem::MemCtx;
    use crate::ctx::block_on;

    fn params() -> IozoneParams {
        IozoneParams {
            tests: vec![Test::Write, Test::Read, Test::Random, Test::Stride],
            file_sizes: vec![64 << 10],
            record_sizes: vec![4 << 10, 16 << 10],
            stride: 3,
            ..IozoneParams::new(7)
        }
    }

    #[test]
    fn sizes_are_kb_by_default() {
        assert_eq!(parse_kb_size("512"), Ok(512 << 10));
        assert_eq!(parse_kb_size("4k"), Ok(4 << 10));
        assert_eq!(parse_kb_size("64m"), Ok(64 << 20));
        assert_eq!(parse_kb_size("100b"), Ok(100));
        assert!(
            parse_kb_size("0")
                .unwrap_err()
                .0
                .contains("at least 1 byte")
        );
        assert!(
            parse_kb_size("4x")
                .unwrap_err()
                .0
                .contains("a bare number is kB")
        );
    }

    #[test]
    fn strided_order_visits_every_record_once_k_apart() {
        for n in [1u64, 2, 5, 16, 17, 100, 257] {
            for k in [1u64, 2, 3, 17, 300] {
                let v: Vec<u64> = (0..n).map(|q| stride_index(q, n, k)).collect();
                let mut sorted = v.clone();
                sorted.sort();
                assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n} k {k}");
            }
        }
        let v: Vec<u64> = (0..10).map(|q| stride_index(q, 10, 3)).collect();
        assert_eq!(v, vec![0, 3, 6, 9, 1, 4, 7, 2, 5, 8]);
    }

    #[test]
    fn random_orders_are_seeded_permutations() {
        let p = params();
        let (n, r) = (64u64, 1024u64);
        let order =
            |pass, rank| -> Vec<u64> { (0..n).map(|q| p.offset(pass, rank, n, r, q)).collect() };
        let rr = order(Pass::RandomRead, 0);
        let mut sorted = rr.clone();
        sorted.sort();
        assert_eq!(sorted, (0..n).map(|i| i * r).collect::<Vec<_>>());
        assert_eq!(rr, order(Pass::RandomRead, 0), "deterministic");
        assert_ne!(rr, order(Pass::RandomWrite, 0));
        assert_ne!(rr, order(Pass::RandomRead, 1));
        assert_ne!(rr, order(Pass::Read, 0));
        assert_eq!(
            order(Pass::Reread, 3),
            (0..n).map(|i| i * r).collect::<Vec<_>>()
        );
    }

    #[test]
    fn auto_mode_spans_powers_of_two_with_records_within_the_file() {
        let p = IozoneParams {
            auto: true,
            auto_file: (64 << 10, 64 << 20),
            ..IozoneParams::new(0)
        };
        let c = p.combos();
        // Files 64k..64m (11 sizes); records 4k..min(file, 16m).
        let expected: usize = (0..11).map(|i| (5 + i).min(13)).sum();
        assert_eq!(c.len(), expected);
        assert_eq!(c[0], (64 << 10, 4 << 10));
        assert_eq!(*c.last().unwrap(), (64 << 20, 16 << 20));
        assert!(c.iter().all(|&(s, r)| r <= s && s % r == 0));
        assert!(p.validate(1).is_ok());
        let defaults = IozoneParams::new(0);
        assert_eq!(defaults.combos(), vec![(DEFAULT_FILE, DEFAULT_RECORD)]);
        assert_eq!(
            defaults.passes(),
            vec![
                Pass::Write,
                Pass::Rewrite,
                Pass::Read,
                Pass::Reread,
                Pass::RandomRead,
                Pass::RandomWrite
            ]
        );
        let only_reads = IozoneParams {
            tests: vec![Test::Stride, Test::Read],
            ..IozoneParams::new(0)
        };
        assert_eq!(
            only_reads.passes(),
            vec![
                Pass::Write,
                Pass::Rewrite,
                Pass::Read,
                Pass::Reread,
                Pass::StrideRead
            ]
        );
    }

    #[test]
    fn validation_names_the_option() {
        let opt = |p: IozoneParams| p.validate(1).unwrap_err().option;
        assert_eq!(
            opt(IozoneParams {
                record_sizes: vec![3 << 10],
                ..params()
            }),
            "-r"
        );
        assert_eq!(
            opt(IozoneParams {
                record_sizes: vec![1 << 20],
                ..params()
            }),
            "-r"
        );
        assert_eq!(
            opt(IozoneParams {
                file_sizes: vec![1000],
                record_sizes: vec![1000],
                ..params()
            }),
            "-s"
        );
        assert_eq!(
            opt(IozoneParams {
                stride: 0,
                ..params()
            }),
            "-j"
        );
        assert_eq!(
            opt(IozoneParams {
                path: String::new(),
                ..params()
            }),
            "-f"
        );
        assert_eq!(
            opt(IozoneParams {
                auto: true,
                auto_file: (1 << 20, 1 << 10),
                ..params()
            }),
            "-n"
        );
        assert_eq!(
            opt(IozoneParams {
                auto: true,
                auto_record: (1 << 20, 1 << 10),
                ..params()
            }),
            "-y"
        );
        let mut hints = Hints::new();
        hints.set("cb_nodes", "2");
        assert_eq!(
            opt(IozoneParams {
                hints: hints.clone(),
                ..params()
            }),
            "--hint"
        );
        assert!(
            IozoneParams {
                hints,
                api: Api::MpiIo,
                ..params()
            }
            .validate(1)
            .is_ok()
        );
        assert_eq!(params().validate(0).unwrap_err().option, "--ranks");
        assert_eq!(params().file_name(3, 1), "iozone.tmp");
        assert_eq!(params().file_name(3, 4), "iozone.tmp.3");
    }

    #[test]
    fn pattern_round_trips_and_catches_errors() {
        let pat = Pattern::new(5, 2);
        let mut buf = vec![0u8; 4096];
        pat.fill_bodies(&mut buf);
        pat.stamp(&mut buf, 8192);
        assert_eq!(pat.check(&buf, 8192, true), (0, None));
        // Read at the wrong offset, or another rank's data: every stamp differs.
        assert!(pat.check(&buf, 4096, false).0 >= 8);
        assert!(Pattern::new(5, 3).check(&buf, 8192, false).0 >= 8);
        // A body byte: only the full check sees it.
        buf[700] ^= 0x10;
        assert_eq!(pat.check(&buf, 8192, false).0, 0);
        let (n, first) = pat.check(&buf, 8192, true);
        assert_eq!(n, 1);
        let m = first.unwrap();
        assert_eq!((m.offset, m.got), (8192 + 700, m.expected ^ 0x10));
        // A zeroed buffer fails.
        assert!(pat.check(&[0u8; 1024], 0, true).0 > 500);
    }

    fn mem_run(p: IozoneParams, ctx: &MemCtx) -> IozoneOutput {
        block_on(Iozone::new(p).run(ctx))
    }

    #[test]
    fn every_pass_on_one_in_memory_rank_verifies_and_times() {
        // Every xfer costs 1 ms of fake time and the clock moves only then: a pass
        // of n records takes n ms (the fsync costs nothing here).
        let ctx = MemCtx {
            xfer_cost: 1e-3,
            ..Default::default()
        };
        let p = params();
        let out = mem_run(p.clone(), &ctx);
        assert_eq!(out.failure, None);
        assert!(out.verify_errors.is_empty(), "{:?}", out.verify_errors);
        assert_eq!(out.rows.len(), 2 * 7);
        for row in &out.rows {
            let n = row.file_bytes / row.record_bytes;
            assert_eq!((row.bytes, row.ops), (row.file_bytes, n));
            assert!((row.seconds - n as f64 * 1e-3).abs() < 1e-12, "{row:?}");
            assert!((row.kb_s - row.bytes as f64 / 1024.0 / row.seconds).abs() < 1e-6);
            match row.test.access() {
                Access::Write => {
                    assert_eq!(row.fsync_s, Some(0.0));
                    assert_eq!(row.dirty_bytes, row.bytes);
                }
                Access::Read => assert_eq!((row.fsync_s, row.dirty_bytes), (None, 0)),
            }
        }
        assert_eq!(out.rows[0].test, Pass::Write);
        assert_eq!(out.rows[13].test, Pass::StrideRead);
        // Deleted at the end unless -w.
        assert!(ctx.files.borrow().is_empty());
        let kept = MemCtx::default();
        mem_run(
            IozoneParams {
                keep: true,
                ..params()
            },
            &kept,
        );
        assert_eq!(kept.files.borrow()["iozone.tmp"].len(), 64 << 10);
    }

    #[test]
    fn corrupted_reads_are_counted_and_reported() {
        let ctx = MemCtx {
            corrupt_reads: true,
            ..Default::default()
        };
        let out = mem_run(params(), &ctx);
        assert_eq!(out.failure, None);
        // Every read pass of both record sizes: one flipped stamp byte per record.
        assert_eq!(out.verify_errors.len(), 2 * 4);
        let e = &out.verify_errors[0];
        assert_eq!((e.test, e.record_bytes, e.count), (Pass::Read, 4 << 10, 16));
        assert_eq!((e.first.offset, e.first.got), (0, e.first.expected ^ 1));
        let report = Iozone::new(params()).report(&out, Mode::Real, 1, BTreeMap::new());
        assert_eq!(report.errors.len(), 8);
        assert!(
            report.errors[0].contains("16 bytes differ"),
            "{}",
            report.errors[0]
        );
        assert_eq!(
            report.metrics["verify_errors"],
            (4 * 16 + 4 * 4) as f64,
            "one byte per record read"
        );
    }

    #[test]
    fn ranks_agree_and_bytes_are_aggregate() {
        let p = IozoneParams {
            cold: true,
            ..params()
        };
        let outs = crate::backend::null::launch(3, &Iozone::new(p)).expect("no deadlock");
        assert!(outs.iter().all(|o| *o == outs[0]), "ranks disagree");
        assert_eq!(outs[0].failure, None);
        for row in &outs[0].rows {
            assert_eq!(row.bytes, 3 * row.file_bytes);
            assert_eq!(row.ops, 3 * row.file_bytes / row.record_bytes);
        }
    }

    #[test]
    fn a_failed_open_stops_every_rank_and_keeps_earlier_rows() {
        // Rank 1's 3rd open fails: write and rewrite of the first combination are kept.
        let outs = crate::backend::null::launch(
            2,
            &WithFault {
                inner: Iozone::new(params()),
                fault: Fault {
                    rank: 1,
                    call: Call::Open,
                    numbers: 3..=3,
                },
            },
        )
        .unwrap();
        for o in &outs {
            assert_eq!(o.rows.len(), 2);
        }
        let f = outs[0].failure.as_deref().unwrap();
        assert!(
            f.starts_with("read of file 64 KiB record 4 KiB: rank 1 failed"),
            "{f}"
        );
        assert!(outs[1].failure.as_deref().unwrap().contains("injected"));
    }

    #[test]
    fn report_rows_round_trip_and_text_has_iozone_table() {
        let ctx = MemCtx {
            xfer_cost: 1e-3,
            ..Default::default()
        };
        let io = Iozone::new(params());
        let out = block_on(io.run(&ctx));
        let report = io.report(&out, Mode::Sim, 1, BTreeMap::new());
        assert_eq!(report.benchmark, "iozone");
        assert_eq!(rows_from_report(&report).unwrap(), out.rows);
        let json: RunReport = serde_json::from_str(&report.to_json()).unwrap();
        // JSON keeps every field (floats to within their last bits).
        let back = rows_from_report(&json).unwrap();
        assert_eq!(back.len(), out.rows.len());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
        for (a, b) in back.iter().zip(&out.rows) {
            assert_eq!(
                (
                    a.test,
                    a.file_bytes,
                    a.record_bytes,
                    a.bytes,
                    a.ops,
                    a.dirty_bytes
                ),
                (
                    b.test,
                    b.file_bytes,
                    b.record_bytes,
                    b.bytes,
                    b.ops,
                    b.dirty_bytes
                )
            );
            assert!(close(a.seconds, b.seconds) && close(a.kb_s, b.kb_s));
            assert_eq!(a.fsync_s.is_some(), b.fsync_s.is_some());
        }
        assert!(close(
            report.metrics["write_kb_s@s=65536,r=4096"],
            64.0 / 16e-3
        ));
        assert!(
            report
                .metrics
                .contains_key("random_write_fsync_s@s=65536,r=16384")
        );
        let text = io.render(&out, 1, "test");
        assert!(
            text.contains(
                "kB  reclen     write   rewrite      read    reread      read     write      read"
            ),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("64       4 ")),
            "{text}"
        );
        assert!(text.contains("piotwin iozone test complete."));
    }
}
