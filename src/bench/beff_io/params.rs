//! The options, checked.

use super::*;

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
    /// The run stopped because another process did.
    #[error("b_eff_io: {0}")]
    Stopped(String),
    /// A signal asked the run to stop: the pattern it came in is not reported.
    #[error("b_eff_io: interrupted by {}", piotwin_types::stop::signal_name(*.0))]
    Interrupted(i32),
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
    pub(super) fn strided(&self, ptype: PatternType) -> bool {
        ptype == PatternType::Scatter || (ptype == PatternType::Shared && !self.shared)
    }
}
