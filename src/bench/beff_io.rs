//! b_eff_io — the effective I/O bandwidth benchmark (Rabenseifner & Koniges,
//! "Effective File-I/O Bandwidth Benchmark", Euro-Par 2000; public release 2.1),
//! written once against [`IoCtx`] for both modes.
//!
//! What it is: one time-driven schedule of 43 access patterns in 5 types (scatter,
//! shared pointer, separate files, segmented, segmented collective), run for
//! write, rewrite and read on each partition of the processes; one number, the
//! system's b_eff_io, plus the release's summary table. What it is not: a tuning
//! tool for one pattern (use `ior`), or a metadata benchmark.
//!
//! Layout:
//! * [`schedule`] — the pattern table as data, Lmax, partitions, Tn/ΣU/Tp, rep3/Lseg;
//! * [`formulas`] — per-pattern/type/access/partition bandwidths, both b_eff_io
//!   definitions, validity;
//! * [`hintfile`] — the `-i` per-pattern hints file;
//! * [`output`] — analysis, the summary table, the protocol, the [`RunReport`], plots;
//! * this file — options, the resolved [`Config`], and the per-rank program [`BeffIo`].
//!
//! Time-driven repetition goes through [`IoCtx::repeat`]: real mode runs it
//! literally; the twin may fast-forward it. Each repetition body issues exactly
//! one `xfer` (fill before and verify after are no-ops in the twin) at an offset
//! that is an affine function of the repetition number, and calls nothing else on
//! the context — no clock, no collective — so its steady state is visible to the
//! back end.
//!
//! [`RunReport`]: crate::report::RunReport

pub mod cli;
pub mod formulas;
pub mod hintfile;
pub mod output;
pub mod schedule;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Hints, Order, View};
use serde::Serialize;

use crate::ctx::{
    Access, Api, Coordination, IoBuf, IoCtx, IoError, Op, OpenMode, OpenOptions, RankProgram,
    ReduceOp, Repeat, Scope,
};
use hintfile::PatternHints;
use schedule::{ETYPE_BYTES, Pass, PatternDef, PatternType, SegmentPlan};

/// Errors of a b_eff_io run: bad options or hints file (exit code 2), or a failed
/// open/view/sync/close (I/O failures inside the repetition loop are counted, not fatal).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BeffIoError {
    /// An option has a value that is not allowed.
    #[error("b_eff_io option {option} = `{value}`: {reason}")]
    Option {
        /// The option, as the original names it (`-N`, `-MB`, …).
        option: &'static str,
        /// The value given.
        value: String,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A line of the `-i` hints file is wrong.
    #[error("{file}:{line}: {reason}")]
    HintsFile {
        /// The hints file.
        file: String,
        /// Line number from 1 (0: the file as a whole).
        line: usize,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A datatype or view the benchmark built was rejected.
    #[error("b_eff_io view: {0}")]
    View(String),
    /// A call outside the repetition loop failed.
    #[error("b_eff_io: {0}")]
    Io(#[from] IoError),
}

/// b_eff_io's options. The original's single-dash names (`-MB 1024 -rewrite`) are
/// accepted after [`normalize_beff_io_args`].
#[derive(clap::Args, Debug, Clone, Serialize)]
pub struct BeffIoArgs {
    /// Memory per process in MiB (`-MB`); Lmax = MB/128 clamped to [2 MiB, 1 GiB].
    /// Default: the node's memory divided by its processes (`/proc/meminfo` and
    /// cores in real mode, the scenario's node in the twin).
    #[arg(long = "mb", value_name = "MIB")]
    pub mb: Option<u64>,
    /// Total memory of the system in MiB (`-MT`), for the "percent of the total
    /// memory" line only. Default: MB × processes.
    #[arg(long = "mt", value_name = "MIB")]
    pub mt: Option<u64>,
    /// Scheduled time T in seconds for all partitions together (`-T`).
    #[arg(
        short = 'T',
        long = "time",
        value_name = "SECONDS",
        default_value_t = 1800
    )]
    pub time: u64,
    /// Partition sizes (`-N a,b,…`). Default: the release's rule (see `schedule::default_partitions`).
    #[arg(
        short = 'N',
        long = "partitions",
        value_name = "N,…",
        value_delimiter = ','
    )]
    pub partitions: Vec<usize>,
    /// Directory for the scratch files (`-p`).
    #[arg(short = 'p', long = "path", value_name = "DIR", default_value = ".")]
    pub path: PathBuf,
    /// Prefix of the output files (`-f`): PREFIX.sum, .prot, .json, .csv, plots.
    #[arg(
        short = 'f',
        long = "prefix",
        value_name = "PREFIX",
        default_value = "b_eff_io"
    )]
    pub prefix: String,
    /// Rewrite all pattern types, not only type 0 (`-rewrite`).
    #[arg(long)]
    pub rewrite: bool,
    /// Type 1 with explicit offsets instead of the shared file pointer (`-noshared`;
    /// makes the result not valid for comparisons).
    #[arg(long)]
    pub noshared: bool,
    /// Open files without MPI_MODE_UNIQUE_OPEN (`-nounique`).
    #[arg(long)]
    pub nounique: bool,
    /// Keep the scratch files after the read pass (`-keep`).
    #[arg(long)]
    pub keep: bool,
    /// Per-pattern hints file (`-i`): lines `[proc_num] access pattern_type chunk key value`;
    /// its rules lay over the hints given for every file (`--hint`, `--hints-file`).
    #[arg(
        id = "pattern_hints",
        short = 'i',
        long = "pattern-hints",
        value_name = "FILE"
    )]
    pub hints_file: Option<PathBuf>,
    /// Data errors reported in full per pattern and rank (`-e`); all are counted.
    #[arg(
        short = 'e',
        long = "max-errors",
        value_name = "COUNT",
        default_value_t = 1
    )]
    pub max_errors: usize,
}

/// Maps the original's multi-letter single-dash options to this CLI's long ones:
/// `-MB` → `--mb`, `-MT` → `--mt`, `-rewrite` → `--rewrite`, `-noshared` →
/// `--noshared`, `-nounique` → `--nounique`, `-keep` → `--keep`. Other words are
/// kept as they are; nothing after `--` is touched.
pub fn normalize_beff_io_args<I, S>(argv: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut out = Vec::new();
    let mut raw = false;
    for a in argv {
        let a: OsString = a.into();
        if raw {
            out.push(a);
            continue;
        }
        let mapped = match a.to_str() {
            Some("--") => {
                raw = true;
                None
            }
            Some("-MB") => Some("--mb"),
            Some("-MT") => Some("--mt"),
            Some("-rewrite") => Some("--rewrite"),
            Some("-noshared") => Some("--noshared"),
            Some("-nounique") => Some("--nounique"),
            Some("-keep") => Some("--keep"),
            _ => None,
        };
        out.push(mapped.map_or(a, OsString::from));
    }
    out
}

/// A run's settings after defaults and checks; what every rank runs from.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Memory per process in MiB.
    pub mb: u64,
    /// Total memory in MiB.
    pub mt: u64,
    /// Scheduled time T in seconds.
    pub t: u64,
    /// Partition sizes, in running order.
    pub partitions: Vec<usize>,
    /// Scratch directory.
    pub path: String,
    /// Output prefix.
    pub prefix: String,
    /// `-rewrite`.
    pub rewrite: bool,
    /// Shared file pointer for type 1 (no `-noshared`).
    pub shared: bool,
    /// MPI_MODE_UNIQUE_OPEN (no `-nounique`).
    pub unique: bool,
    /// `-keep`.
    pub keep: bool,
    /// Data errors reported in full per pattern and rank.
    pub max_errors: usize,
    /// Hints for every file.
    pub common_hints: Hints,
    /// The `-i` file's name.
    pub hints_file: Option<String>,
    /// The `-i` file's rules.
    #[serde(skip)]
    pub pattern_hints: PatternHints,
    /// Progress on stderr from rank 0 (a bar on a terminal, else a line per pattern).
    #[serde(skip)]
    pub progress: bool,
}

impl Config {
    /// Checks `args` for a world of `world` processes. `default_mb` is used when
    /// `-MB` is absent (see [`schedule::default_mb_per_process`]); `common_hints`
    /// are given to every file. Reads the `-i` hints file.
    pub fn resolve(
        args: &BeffIoArgs,
        world: usize,
        default_mb: u64,
        common_hints: Hints,
    ) -> Result<Config, BeffIoError> {
        let opt = |option: &'static str, value: String, reason: &str| BeffIoError::Option {
            option,
            value,
            reason: reason.to_string(),
        };
        let mb = args.mb.unwrap_or(default_mb);
        if mb == 0 {
            return Err(opt(
                "-MB",
                "0".into(),
                "memory per process must be at least 1 MiB",
            ));
        }
        let mt = args.mt.unwrap_or(mb * world as u64);
        if mt == 0 {
            return Err(opt(
                "-MT",
                "0".into(),
                "total memory must be at least 1 MiB",
            ));
        }
        if args.time == 0 {
            return Err(opt(
                "-T",
                "0".into(),
                "the scheduled time must be at least 1 second",
            ));
        }
        let partitions = if args.partitions.is_empty() {
            schedule::default_partitions(world)
        } else {
            args.partitions.clone()
        };
        let shown = || {
            partitions
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        if let Some(bad) = partitions.iter().find(|&&n| n == 0 || n > world) {
            return Err(opt(
                "-N",
                shown(),
                &format!("partition size {bad} is not in 1..={world} (the number of processes)"),
            ));
        }
        let mut sorted = partitions.clone();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(opt("-N", shown(), "each partition size may appear once"));
        }
        if (args.time / partitions.len() as u64) == 0 {
            return Err(opt(
                "-T",
                args.time.to_string(),
                &format!(
                    "T must give each of the {} partitions at least 1 second",
                    partitions.len()
                ),
            ));
        }
        let (pattern_hints, hints_file) = match &args.hints_file {
            None => (PatternHints::default(), None),
            Some(p) => {
                let name = p.display().to_string();
                let text = std::fs::read_to_string(p).map_err(|e| BeffIoError::HintsFile {
                    file: name.clone(),
                    line: 0,
                    reason: format!("cannot read: {e}"),
                })?;
                (PatternHints::parse(&text, &name, &partitions)?, Some(name))
            }
        };
        Ok(Config {
            mb,
            mt,
            t: args.time,
            partitions,
            path: args.path.display().to_string(),
            prefix: args.prefix.clone(),
            rewrite: args.rewrite,
            shared: !args.noshared,
            unique: !args.nounique,
            keep: args.keep,
            max_errors: args.max_errors,
            common_hints,
            hints_file,
            pattern_hints,
            progress: true,
        })
    }

    /// Lmax in bytes.
    pub fn lmax(&self) -> u64 {
        schedule::lmax_bytes(self.mb)
    }
    /// Tn, seconds per partition.
    pub fn tn(&self) -> u64 {
        schedule::tn_seconds(self.t, self.partitions.len())
    }
    /// ΣU.
    pub fn usum(&self) -> u64 {
        schedule::usum(self.rewrite)
    }
    /// Tp of a pattern, seconds.
    pub fn tp(&self, def: &PatternDef) -> f64 {
        schedule::tp_seconds(def.u, self.tn(), self.usum())
    }
    /// Number of pattern runs over the whole schedule (for progress).
    pub fn total_patterns(&self) -> u64 {
        (Pass::ALL
            .iter()
            .map(|&p| schedule::patterns_in_pass(p, self.rewrite).len())
            .sum::<usize>()
            * self.partitions.len()) as u64
    }
    /// The pass whose data the read pass finds for `ptype`: rewrite where it ran.
    pub fn last_writer(&self, ptype: PatternType) -> Pass {
        if ptype == PatternType::Scatter || self.rewrite {
            Pass::Rewrite
        } else {
            Pass::Write
        }
    }
    /// Whether `ptype` uses the per-pattern strided (darray) view: type 0, and
    /// type 1 under `-noshared`.
    fn strided(&self, ptype: PatternType) -> bool {
        ptype == PatternType::Scatter || (ptype == PatternType::Shared && !self.shared)
    }
}

/// One pattern as measured (times from rank 0 of the partition; errors summed over it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternRecord {
    /// Partition size.
    pub n: usize,
    /// Access pass.
    pub pass: Pass,
    /// Pattern type.
    pub ptype: PatternType,
    /// Global pattern number 0..43.
    pub pattern: usize,
    /// Time budget Tp in seconds.
    pub tp: f64,
    /// Contiguous chunk on disk, bytes.
    pub l: u64,
    /// Bytes per call and process.
    pub big_l: u64,
    /// Repetitions.
    pub reps: u64,
    /// Bytes per process (reps · L).
    pub bytes: u64,
    /// Pattern time in seconds: view, calls, barrier + sync (writes), barriers.
    pub time: f64,
    /// Errors over the partition (failed calls, short transfers, wrong data).
    pub errors: u64,
}

impl PatternRecord {
    /// Bandwidth in MB/s.
    pub fn mb_s(&self) -> f64 {
        formulas::pattern_mb_s(self.n, self.bytes, self.time)
    }
}

/// One pattern type in one pass as measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeRecord {
    /// Partition size.
    pub n: usize,
    /// Access pass.
    pub pass: Pass,
    /// Pattern type.
    pub ptype: PatternType,
    /// Open time, seconds.
    pub open: f64,
    /// Σ pattern times, seconds.
    pub patterns: f64,
    /// Close time (with the delete after the read pass), seconds.
    pub close: f64,
    /// Σ bytes per process.
    pub bytes: u64,
    /// Hints in effect after open (rank 0).
    pub hints: Hints,
}

impl TypeRecord {
    /// Bandwidth in MB/s: n · bytes / (open + patterns + close).
    pub fn mb_s(&self) -> f64 {
        formulas::type_mb_s(self.n, self.bytes, self.open, self.patterns, self.close)
    }
}

/// What one rank measured. Rank 0 takes part in every partition, so its
/// measurements are the run's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurements {
    /// Every pattern run, in running order.
    pub patterns: Vec<PatternRecord>,
    /// Every type run, in running order.
    pub types: Vec<TypeRecord>,
    /// Per partition (index as in `Config::partitions`) and pass, the time of the pass.
    pub partition_times: Vec<[f64; 3]>,
    /// Per partition, the segment plan of types 3/4.
    pub segments: Vec<Option<SegmentPlan>>,
    /// This rank's first error reports (at most `max_errors` per pattern).
    pub error_messages: Vec<String>,
    /// Time from the first to the last world barrier, seconds.
    pub total_time: f64,
}

impl Measurements {
    /// Errors over all patterns of partition `n`.
    pub fn errors_of(&self, n: usize) -> u64 {
        self.patterns
            .iter()
            .filter(|p| p.n == n)
            .map(|p| p.errors)
            .sum()
    }
}

/// Progress on stderr: a bar on a terminal, else one line per pattern.
struct Progress {
    enabled: bool,
    bar: Option<indicatif::ProgressBar>,
    total: u64,
}

impl Progress {
    fn new(enabled: bool, total: u64) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("b_eff_io {bar:30} {pos}/{len} {msg}")
            {
                b.set_style(style);
            }
            b
        });
        Progress {
            enabled,
            bar,
            total,
        }
    }

    fn starting(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    fn done(&self, k: u64, line: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(k);
                if k == self.total {
                    b.finish_and_clear();
                }
            }
            None if self.enabled => eprintln!("b_eff_io [{k}/{}] {line}", self.total),
            None => {}
        }
    }
}

/// The benchmark as a per-rank program. Output: this rank's [`Measurements`].
pub struct BeffIo {
    /// The resolved settings.
    pub cfg: Config,
}

/// The check value carried by the first (`last = false`) and last double of chunk
/// `chunk` in repetition `rep` of pattern `pattern` written in `pass`. Distinct for
/// every argument combination (while rep < 2^32), and never 0, so a zeroed buffer
/// never verifies.
pub fn check_value(rep: u64, pattern: usize, pass: Pass, chunk: u64, last: bool) -> f64 {
    let v = (((rep * 2048 + chunk) * 64 + pattern as u64) * 4 + pass.index() as u64) * 2
        + last as u64
        + 1;
    v as f64
}

/// Positions (in doubles) of the first and last double of each chunk of `l` bytes
/// in a buffer of `big_l` bytes.
fn chunk_ends(l: u64, big_l: u64) -> impl Iterator<Item = (u64, usize, usize)> {
    let chunks = big_l.checked_div(l).unwrap_or(0);
    (0..chunks).map(move |j| {
        let first = (j * l / ETYPE_BYTES) as usize;
        (j, first, first + (l / ETYPE_BYTES) as usize - 1)
    })
}

fn put(bytes: &mut [u8], index: usize, v: f64) {
    bytes[index * 8..index * 8 + 8].copy_from_slice(&v.to_ne_bytes());
}

fn get(bytes: &[u8], index: usize) -> f64 {
    f64::from_ne_bytes(bytes[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
}

/// Writes the check values of repetition `rep` into `buf` (no-op where the buffer
/// holds no data).
fn fill<B: IoBuf>(buf: &mut B, rep: u64, pattern: usize, pass: Pass, l: u64, big_l: u64) {
    if let Some(bytes) = buf.bytes_mut() {
        for (j, first, last) in chunk_ends(l, big_l) {
            put(bytes, first, check_value(rep, pattern, pass, j, false));
            put(bytes, last, check_value(rep, pattern, pass, j, true));
        }
    }
}

/// Checks the values of repetition `rep` written in `pass`; returns the wrong
/// chunks as `(chunk, found first, found last, expected first, expected last)`.
fn verify<B: IoBuf>(
    buf: &B,
    rep: u64,
    pattern: usize,
    pass: Pass,
    l: u64,
    big_l: u64,
) -> Vec<(u64, f64, f64, f64, f64)> {
    let Some(bytes) = buf.bytes() else {
        return Vec::new();
    };
    chunk_ends(l, big_l)
        .filter_map(|(j, first, last)| {
            let (ef, el) = (
                check_value(rep, pattern, pass, j, false),
                check_value(rep, pattern, pass, j, true),
            );
            let (f, g) = (get(bytes, first), get(bytes, last));
            (f != ef || g != el).then_some((j, f, g, ef, el))
        })
        .collect()
}

/// The data-path operation of `ptype` in `pass` at `offset` etypes.
fn op_for(ptype: PatternType, pass: Pass, shared: bool, offset: u64) -> Op {
    let access = if pass == Pass::Read {
        Access::Read
    } else {
        Access::Write
    };
    match ptype {
        PatternType::Shared if shared => {
            if access == Access::Read {
                Op::read_ordered()
            } else {
                Op::write_ordered()
            }
        }
        PatternType::Scatter | PatternType::Shared | PatternType::SegColl => {
            Op::at(access, Coordination::Collective, offset)
        }
        PatternType::Separated | PatternType::Segmented => {
            Op::at(access, Coordination::Independent, offset)
        }
    }
}

/// The strided view of type 0: process `rank` of `n` owns the `rank`-th `l`-byte
/// chunk of every `n·l` bytes from `disp` (`MPI_Type_create_darray` over an
/// n × l/8 array of doubles, block-distributed over the first dimension).
pub fn scatter_view(n: usize, rank: usize, l: u64, disp: u64) -> Result<View, BeffIoError> {
    let ft = Datatype::darray(
        n as u64,
        rank as u64,
        vec![n as u64, l / ETYPE_BYTES],
        vec![Distrib::Block, Distrib::None],
        vec![DARG_DEFAULT, DARG_DEFAULT],
        vec![n as u64, 1],
        Order::C,
        Datatype::Double,
    )
    .map_err(|e| BeffIoError::View(e.to_string()))?;
    View::new(disp, Datatype::Double, ft).map_err(|e| BeffIoError::View(e.to_string()))
}

/// The scratch file of a type on a partition (type 2: one per process).
fn file_name(cfg: &Config, i_n: usize, n: usize, ptype: PatternType, rank: usize) -> String {
    let base = format!(
        "{}/b_eff_io_data_i{:02}_{:03}_{}",
        cfg.path,
        i_n,
        n,
        ptype.index()
    );
    if ptype == PatternType::Separated {
        format!("{base}.{rank:03}")
    } else {
        base
    }
}

impl RankProgram for BeffIo {
    type Output = Result<Measurements, BeffIoError>;

    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
        let cfg = &self.cfg;
        if let Some(&bad) = cfg.partitions.iter().find(|&&n| n > ctx.size()) {
            // Options were checked against the launcher's announced size; the job disagrees.
            return Err(BeffIoError::Option {
                option: "-N",
                value: bad.to_string(),
                reason: format!("the job has only {} processes", ctx.size()),
            });
        }
        let np = cfg.partitions.len();
        let root = ctx.rank() == 0;
        let progress = Progress::new(cfg.progress && root, cfg.total_patterns());
        let mut m = Measurements {
            patterns: Vec::new(),
            types: Vec::new(),
            partition_times: vec![[0.0; 3]; np],
            segments: vec![None; np],
            error_messages: Vec::new(),
            total_time: 0.0,
        };
        // Repetition counts per partition and pattern, from the write pass.
        let mut reps = vec![[0u64; schedule::PATTERNS.len()]; np];
        let mut done = 0u64;
        ctx.barrier().await;
        let t_total = ctx.wtime();
        for pass in Pass::ALL {
            for (i_n, &n) in cfg.partitions.iter().enumerate() {
                ctx.barrier().await;
                let color = (ctx.rank() < n).then_some(0);
                let Some(sub) = ctx.split(color, 0).await else {
                    continue;
                };
                sub.barrier().await;
                let t0 = sub.wtime();
                let mut run = PartitionRun {
                    cfg,
                    ctx: &sub,
                    pass,
                    i_n,
                    n,
                    reps: &mut reps[i_n],
                    m: &mut m,
                    progress: &progress,
                    done: &mut done,
                };
                for ptype in PatternType::ALL {
                    if pass == Pass::Rewrite && !cfg.rewrite && ptype != PatternType::Scatter {
                        continue;
                    }
                    run.run_type(ptype).await?;
                }
                sub.barrier().await;
                m.partition_times[i_n][pass.index()] = sub.wtime() - t0;
            }
        }
        ctx.barrier().await;
        m.total_time = ctx.wtime() - t_total;
        Ok(m)
    }
}

/// One pass over one partition.
struct PartitionRun<'a, C: IoCtx> {
    cfg: &'a Config,
    ctx: &'a C,
    pass: Pass,
    i_n: usize,
    n: usize,
    reps: &'a mut [u64; 43],
    m: &'a mut Measurements,
    progress: &'a Progress,
    done: &'a mut u64,
}

impl<C: IoCtx> PartitionRun<'_, C> {
    async fn run_type(&mut self, ptype: PatternType) -> Result<(), BeffIoError> {
        let (cfg, ctx, pass, n) = (self.cfg, self.ctx, self.pass, self.n);
        let rank = ctx.rank();
        let lmax = cfg.lmax();
        let mut filler = 0;
        let mut lseg = 0;
        if ptype >= PatternType::Segmented {
            let plan = schedule::segment_plan(&self.reps[..], lmax);
            for (k, def) in ptype.patterns().iter().enumerate() {
                self.reps[def.id] = plan.reps[k];
            }
            filler = plan.filler;
            lseg = plan.lseg;
            self.m.segments[self.i_n] = Some(plan);
        }
        let path = file_name(cfg, self.i_n, n, ptype, rank);
        let scope = if ptype == PatternType::Separated {
            Scope::Private
        } else {
            Scope::Shared
        };
        let owner = scope == Scope::Private || rank == 0;
        if pass == Pass::Write && owner {
            ctx.delete(&path).await?;
        }
        let opts = OpenOptions {
            mode: if pass == Pass::Read {
                OpenMode::Read
            } else {
                OpenMode::CreateReadWrite
            },
            scope,
            api: Api::MpiIo,
            hints: cfg
                .common_hints
                .merged(&cfg.pattern_hints.open_hints(n, pass, ptype)),
            unique_open: cfg.unique,
        };
        ctx.barrier().await;
        let t = ctx.wtime();
        let mut file = ctx.open(&path, &opts).await?;
        ctx.barrier().await;
        let open = ctx.wtime() - t;
        let hints = ctx.hints_in_effect(&file);

        let (mut disp, mut pos, mut bytes, mut t_patterns) = (0u64, 0u64, 0u64, 0.0);
        for def in ptype.patterns() {
            let (l, big_l) = def.sizes(lmax, filler);
            let tp = cfg.tp(def);
            let what = format!(
                "n={n} {} type={} ({}) pattern {} l={l} L={big_l}",
                pass.name(),
                ptype.index(),
                ptype.name(),
                def.number
            );
            self.progress.starting(&what);
            let policy = if pass == Pass::Write && ptype <= PatternType::Separated {
                Repeat::TimeBudget { budget: tp }
            } else {
                Repeat::Count(self.reps[def.id])
            };
            let mut buf = ctx.alloc(big_l as usize);
            let expect = if pass == Pass::Read {
                cfg.last_writer(ptype)
            } else {
                pass
            };
            ctx.barrier().await;
            let t0 = ctx.wtime();
            if cfg.strided(ptype) {
                ctx.set_view(&mut file, &scatter_view(n, rank, l, disp)?)
                    .await?;
            } else if def.is_first() {
                let d = if ptype >= PatternType::Segmented {
                    rank as u64 * lseg
                } else {
                    0
                };
                ctx.set_view(
                    &mut file,
                    &View {
                        disp: d,
                        etype: Datatype::Double,
                        filetype: Datatype::Double,
                    },
                )
                .await?;
            }
            let ph = cfg.pattern_hints.pattern_hints(n, pass, def);
            if !ph.is_empty() {
                ctx.set_info(&mut file, &ph).await?;
            }
            // The repetition body: one xfer, offsets affine in the repetition number.
            let base = if cfg.strided(ptype) { 0 } else { pos };
            let per_call = big_l / ETYPE_BYTES;
            let mut errors = 0u64;
            let mut messages = Vec::new();
            let max_errors = cfg.max_errors;
            let (file_ref, buf_ref) = (&mut file, &mut buf);
            let r = ctx
                .repeat(policy, async |rep: u64| {
                    let op = op_for(ptype, pass, cfg.shared, base + rep * per_call);
                    if pass != Pass::Read {
                        fill(buf_ref, rep, def.id, pass, l, big_l);
                    }
                    let mut report = |msg: String| {
                        errors += 1;
                        if (errors as usize) <= max_errors {
                            messages.push(format!(
                                "rank {rank}: n={n} {} pattern {}: {msg}",
                                pass.name(),
                                def.id
                            ));
                        }
                    };
                    match ctx.xfer(file_ref, op, buf_ref).await {
                        Ok(moved) if moved as u64 == big_l => {}
                        Ok(moved) => {
                            report(format!("repetition {rep}: moved {moved} of {big_l} bytes"))
                        }
                        Err(e) => report(format!("repetition {rep}: {e}")),
                    }
                    if pass == Pass::Read {
                        for (j, f, g, ef, el) in verify(buf_ref, rep, def.id, expect, l, big_l) {
                            report(format!(
                                "repetition {rep} chunk {j}: read ({f}, {g}), expected ({ef}, {el})"
                            ));
                        }
                    }
                    Ok(())
                })
                .await?;
            if pass != Pass::Read {
                ctx.barrier().await;
                ctx.sync(&mut file).await?;
            }
            ctx.barrier().await;
            let time = ctx.wtime() - t0;
            let pbytes = r * big_l;
            if cfg.strided(ptype) {
                disp += n as u64 * pbytes;
            } else {
                pos += r * per_call;
            }
            self.reps[def.id] = r;
            bytes += pbytes;
            t_patterns += time;
            self.m.error_messages.extend(messages);
            let errors = ctx.allreduce_f64(errors as f64, ReduceOp::Sum).await as u64;
            let rec = PatternRecord {
                n,
                pass,
                ptype,
                pattern: def.id,
                tp,
                l,
                big_l,
                reps: r,
                bytes: pbytes,
                time,
                errors,
            };
            *self.done += 1;
            self.progress.done(
                *self.done,
                &format!(
                    "{what}: Tp={tp:.2}s r={r} t={time:.3}s bw={:.3} MB/s{}",
                    rec.mb_s(),
                    if errors > 0 {
                        format!(" {errors} ERRORS")
                    } else {
                        String::new()
                    }
                ),
            );
            self.m.patterns.push(rec);
        }
        let t = ctx.wtime();
        ctx.close(file).await?;
        if pass == Pass::Read && !cfg.keep && owner {
            ctx.delete(&path).await?;
        }
        ctx.barrier().await;
        let close = ctx.wtime() - t;
        self.m.types.push(TypeRecord {
            n,
            pass,
            ptype,
            open,
            patterns: t_patterns,
            close,
            bytes,
            hints,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mem::MemCtx;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BeffIoArgs,
    }

    fn parse(words: &[&str]) -> BeffIoArgs {
        let argv = normalize_beff_io_args(std::iter::once("b_eff_io").chain(words.iter().copied()));
        Cli::try_parse_from(argv).unwrap().args
    }

    #[test]
    fn original_option_names() {
        let a = parse(&[
            "-MB",
            "1024",
            "-MT",
            "2048",
            "-T",
            "60",
            "-p",
            "/tmp/x",
            "-N",
            "1,2",
            "-rewrite",
            "-noshared",
            "-nounique",
            "-keep",
            "-f",
            "run1",
            "-e",
            "3",
        ]);
        assert_eq!((a.mb, a.mt, a.time), (Some(1024), Some(2048), 60));
        assert_eq!(a.partitions, vec![1, 2]);
        assert_eq!(a.path, PathBuf::from("/tmp/x"));
        assert!(a.rewrite && a.noshared && a.nounique && a.keep);
        assert_eq!((a.prefix.as_str(), a.max_errors), ("run1", 3));
        let d = parse(&[]);
        assert_eq!(
            (d.mb, d.time, d.prefix.as_str(), d.rewrite),
            (None, 1800, "b_eff_io", false)
        );
        // Words after `--` and values are left alone.
        let n = normalize_beff_io_args(["-p", "-keep", "--", "-MB"]);
        assert_eq!(n, vec!["-p", "--keep", "--", "-MB"]);
    }

    #[test]
    fn resolve_defaults_and_errors() {
        let c = Config::resolve(&parse(&["-T", "90"]), 8, 512, Hints::new()).unwrap();
        assert_eq!(
            (c.mb, c.mt, c.partitions.clone()),
            (512, 4096, vec![2, 4, 8])
        );
        assert_eq!((c.tn(), c.usum(), c.lmax()), (30, 150, 4 << 20));
        assert!(c.shared && c.unique && !c.keep);
        for (words, needle) in [
            (vec!["-N", "3,9"], "partition size 9"),
            (vec!["-N", "2,2"], "once"),
            (vec!["-T", "2", "-N", "1,2,4"], "at least 1 second"),
            (vec!["-MB", "0"], "-MB"),
        ] {
            let e = Config::resolve(&parse(&words), 8, 512, Hints::new())
                .unwrap_err()
                .to_string();
            assert!(e.contains(needle), "{e} lacks {needle}");
        }
        let e = Config::resolve(&parse(&["-i", "/nonexistent/hints"]), 8, 512, Hints::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/nonexistent/hints") && e.contains("cannot read"),
            "{e}"
        );
    }

    #[test]
    fn check_values_are_distinct_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for rep in [0, 1, 7, 1 << 20] {
            for pattern in [0, 1, 42] {
                for pass in Pass::ALL {
                    for chunk in [0, 1, 1023] {
                        for last in [false, true] {
                            let v = check_value(rep, pattern, pass, chunk, last);
                            assert!(v > 0.0 && v.fract() == 0.0);
                            assert!(seen.insert(v.to_bits()));
                        }
                    }
                }
            }
        }
    }

    /// A buffer with data, as real mode has.
    struct Bytes(Vec<u8>);
    impl IoBuf for Bytes {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn bytes(&self) -> Option<&[u8]> {
            Some(&self.0)
        }
        fn bytes_mut(&mut self) -> Option<&mut [u8]> {
            Some(&mut self.0)
        }
    }

    #[test]
    fn fill_then_verify_every_chunk() {
        // 1 KiB + 8 chunks in a 1 MiB + 8 KiB call: 1024 chunks.
        let (l, big_l) = (1032, 1024 * 1032);
        let mut b = Bytes(vec![0; big_l as usize]);
        assert_eq!(
            verify(&b, 0, 7, Pass::Write, l, big_l).len(),
            1024,
            "a zeroed buffer never verifies"
        );
        fill(&mut b, 3, 7, Pass::Rewrite, l, big_l);
        assert!(verify(&b, 3, 7, Pass::Rewrite, l, big_l).is_empty());
        assert_eq!(verify(&b, 4, 7, Pass::Rewrite, l, big_l).len(), 1024);
        assert_eq!(verify(&b, 3, 7, Pass::Write, l, big_l).len(), 1024);
        // Corrupt the last double of chunk 5 only.
        let idx = (5 * l + l - 8) as usize;
        b.0[idx] ^= 1;
        let bad = verify(&b, 3, 7, Pass::Rewrite, l, big_l);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 5);
        // A zero-byte filler has no chunks.
        assert_eq!(chunk_ends(0, 0).count(), 0);
    }

    #[test]
    fn operations_per_type() {
        use crate::ctx::Position;
        let w = op_for(PatternType::Shared, Pass::Write, true, 99);
        assert_eq!(w, Op::write_ordered());
        assert_eq!(
            op_for(PatternType::Shared, Pass::Read, true, 0),
            Op::read_ordered()
        );
        assert_eq!(
            op_for(PatternType::Shared, Pass::Write, false, 5),
            Op::write_at_all(5)
        );
        assert_eq!(
            op_for(PatternType::Scatter, Pass::Rewrite, true, 5),
            Op::write_at_all(5)
        );
        assert_eq!(
            op_for(PatternType::Separated, Pass::Read, true, 5),
            Op::read_at(5)
        );
        assert_eq!(
            op_for(PatternType::Segmented, Pass::Write, true, 5),
            Op::write_at(5)
        );
        assert_eq!(
            op_for(PatternType::SegColl, Pass::Read, true, 5).pos,
            Position::At(5)
        );
        assert_eq!(
            op_for(PatternType::SegColl, Pass::Read, true, 5).coord,
            Coordination::Collective
        );
    }

    #[test]
    fn scatter_view_owns_one_chunk_per_stride() {
        // 3 processes, l = 1 KiB + 8: rank 1 owns bytes [1032, 2064) of every 3096.
        let v = scatter_view(3, 1, 1032, 4096).unwrap();
        let ext: Vec<(u64, u64)> = v.extents(0, 2 * 1032).collect();
        assert_eq!(ext, vec![(4096 + 1032, 1032), (4096 + 3096 + 1032, 1032)]);
        // Offsets are in doubles: the second call of L = 2 chunks starts two chunks on.
        let ext: Vec<(u64, u64)> = v.extents(2 * 1032 / 8, 1032).collect();
        assert_eq!(ext, vec![(4096 + 2 * 3096 + 1032, 1032)]);
    }

    #[test]
    fn last_writer_of_each_type() {
        let c = Config::resolve(&parse(&[]), 4, 256, Hints::new()).unwrap();
        assert_eq!(c.last_writer(PatternType::Scatter), Pass::Rewrite);
        assert_eq!(c.last_writer(PatternType::Shared), Pass::Write);
        let r = Config::resolve(&parse(&["-rewrite"]), 4, 256, Hints::new()).unwrap();
        assert_eq!(r.last_writer(PatternType::SegColl), Pass::Rewrite);
        assert_eq!(c.total_patterns(), 3 * (43 + 9 + 43));
        assert_eq!(r.total_patterns(), 3 * 3 * 43);
    }

    fn mem_run(words: &[&str], ctx: &MemCtx) -> (Config, Measurements) {
        let mut c = Config::resolve(&parse(words), 1, 1, Hints::new()).unwrap();
        c.progress = false;
        let m = crate::ctx::block_on(BeffIo { cfg: c.clone() }.run(ctx)).unwrap();
        (c, m)
    }

    #[test]
    fn whole_schedule_on_one_in_memory_rank() {
        // Every call costs 5 ms of fake time; T = 2 s on one partition gives
        // Tp = U·2/150 s, and the rule 0.005·k·(k+1)/k ≤ Tp stops after k calls with
        // k + 1 ≤ Tp/0.005: U = 4 → 10, U = 2 → 5, U = 1 → 2, U = 0 → 1.
        let ctx = MemCtx {
            xfer_cost: 0.005,
            ..Default::default()
        };
        let (c, m) = mem_run(&["-T", "2", "-p", "/mem"], &ctx);
        assert_eq!(c.partitions, vec![1]);
        assert_eq!(m.patterns.len(), 43 + 9 + 43);
        assert!(m.error_messages.is_empty(), "{:?}", m.error_messages);
        assert!(m.patterns.iter().all(|p| p.errors == 0));
        let reps = |pass: Pass, id: usize| {
            m.patterns
                .iter()
                .find(|p| p.pass == pass && p.pattern == id)
                .unwrap()
                .reps
        };
        let expected = |u: u64| match u {
            4 => 10,
            2 => 5,
            1 => 2,
            _ => 1,
        };
        for def in &schedule::PATTERNS[..25] {
            assert_eq!(
                reps(Pass::Write, def.id),
                expected(def.u),
                "pattern {}",
                def.id
            );
            assert_eq!(reps(Pass::Read, def.id), reps(Pass::Write, def.id));
        }
        // Types 3/4 from the write counts; the filler once.
        let plan = m.segments[0].clone().unwrap();
        assert_eq!(
            plan,
            schedule::segment_plan(
                &m.patterns
                    .iter()
                    .filter(|p| p.pass == Pass::Write)
                    .map(|p| p.reps)
                    .collect::<Vec<_>>(),
                c.lmax()
            )
        );
        for (k, def) in PatternType::Segmented.patterns().iter().enumerate() {
            assert_eq!(reps(Pass::Write, def.id), plan.reps[k]);
            assert_eq!(reps(Pass::Write, def.id + 9), plan.reps[k]);
        }
        // The read pass deleted every file.
        assert!(ctx.files.borrow().is_empty());
        let a = output::Analysis::new(&c, &m);
        assert!(a.b_eff_io() > 0.0 && a.b_eff_io_paper() > 0.0);
    }

    #[test]
    fn keep_leaves_files_of_the_expected_sizes() {
        let ctx = MemCtx {
            xfer_cost: 0.005,
            ..Default::default()
        };
        let (c, m) = mem_run(&["-T", "2", "-p", "/mem", "-keep", "-rewrite"], &ctx);
        assert!(m.patterns.iter().all(|p| p.errors == 0));
        assert_eq!(m.patterns.len(), 3 * 43);
        let files = ctx.files.borrow();
        let size = |t: usize| files[&format!("/mem/b_eff_io_data_i00_001_{t}")].len() as u64;
        let written = |t: PatternType| {
            m.types
                .iter()
                .find(|r| r.pass == Pass::Write && r.ptype == t)
                .unwrap()
                .bytes
        };
        for t in [PatternType::Scatter, PatternType::Shared] {
            assert_eq!(size(t.index()), written(t));
        }
        assert_eq!(
            files["/mem/b_eff_io_data_i00_001_2.000"].len() as u64,
            written(PatternType::Separated)
        );
        // One process: the segment is the whole file.
        assert_eq!(size(3), m.segments[0].as_ref().unwrap().lseg);
        assert_eq!(size(4), size(3));
        assert_eq!(written(PatternType::Segmented), size(3));
        let _ = c;
    }

    #[test]
    fn corrupted_reads_are_counted() {
        let mut ctx = MemCtx {
            xfer_cost: 0.005,
            ..Default::default()
        };
        ctx.corrupt_reads = true;
        let (c, m) = mem_run(&["-T", "2", "-p", "/mem", "-e", "2"], &ctx);
        // Every read call's first chunk is wrong: one error per read call.
        let calls: u64 = m
            .patterns
            .iter()
            .filter(|p| p.pass == Pass::Read && p.big_l > 0)
            .map(|p| p.reps)
            .sum();
        assert_eq!(m.errors_of(1), calls);
        // At most 2 messages per pattern.
        assert!(!m.error_messages.is_empty());
        assert!(m.error_messages.len() as u64 <= 2 * 43);
        let a = output::Analysis::new(&c, &m);
        assert!(!a.partitions[0].validity.errors_ok);
    }
}
