//! The options, checked.

use super::*;

/// IOzone's kilobyte: 1024 bytes.
pub(super) const KB: f64 = 1024.0;

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

pub(super) fn opt_err(
    option: &str,
    value: impl ToString,
    reason: impl Into<String>,
) -> OptionError {
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
    pub(super) fn header(self) -> (&'static str, &'static str) {
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
    pub(super) fn doublings(lo: u64, hi: u64) -> Vec<u64> {
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
    pub(super) fn files(&self) -> Vec<u64> {
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
    pub(super) fn records(&self) -> Vec<u64> {
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
    pub(super) fn random_key(&self, rank: u64, which: u64) -> u64 {
        self.seed
            .wrapping_add(rank)
            .wrapping_add(which.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}
