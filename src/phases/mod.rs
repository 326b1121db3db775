//! The I/O-phase model of an application (Méndez, Rexachs, Luque): read a
//! trace of its file calls, made by `piotwin run --trace` or by Darshan's DXT
//! (`darshan-dxt-parser` text), into one list of [`Record`]s per rank, ordered
//! as the rank made them. `shared/spec/io_phases.md` is the method.
//!
//! What it is for: the input of the phase analysis. What it is not: a general
//! trace format converter (only what the phases need is kept).

pub mod dxt;
pub mod model;
pub mod replay;
pub mod trace;

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
}

/// Where a call's offset comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pointer {
    /// An explicit offset (`_at`, `pwrite`).
    Explicit,
    /// The individual file pointer (`MPI_File_write`, `write`).
    Individual,
    /// The shared file pointer (`_shared`, `_ordered`).
    Shared,
    /// Not said by the trace (Darshan's MPI-IO records).
    Unknown,
}

/// What a trace says of one data call (a read or a write).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Record {
    /// The rank (in `MPI_COMM_WORLD`).
    pub rank: usize,
    /// The file, as the trace names it.
    pub file: String,
    /// The call as the trace names it (`MPI_File_write_at_all`, `pwrite`, `X_POSIX write`).
    pub operation: String,
    /// Read or write.
    pub access: Access,
    /// MPI-IO (true) or POSIX.
    pub mpiio: bool,
    /// Collective (`_all`, `_ordered`); `None` where the trace does not say.
    pub collective: Option<bool>,
    /// Blocking (false for `iwrite…`, `iread…`).
    pub blocking: bool,
    /// Where the offset comes from.
    pub pointer: Pointer,
    /// The first byte in the file; `None` where the trace has none.
    pub offset: Option<u64>,
    /// Bytes requested.
    pub bytes: u64,
    /// The rank's logical tick: orders its events (its count of MPI calls for
    /// piotwin traces; the call's place in start-time order for DXT).
    pub tick: u64,
    /// Start, seconds (the rank's clock).
    pub start: f64,
    /// Duration, seconds.
    pub duration: f64,
}

/// A trace read in: every rank's data calls in the order the rank made them,
/// and what the reader could not use.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Trace {
    /// Data calls, by rank then tick.
    pub records: Vec<Record>,
    /// Problems that make parts of the trace unusable (e.g. MPI-IO records
    /// without offsets), one line each.
    pub warnings: Vec<String>,
}

/// A trace that cannot be read: names the file, the line and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TraceError {
    /// The file.
    pub file: String,
    /// The line (1-based; 0: the file as a whole).
    pub line: usize,
    /// What is wrong and what is expected.
    pub message: String,
}

/// Reads `text` (from `file`) as a piotwin trace (its CSV header) or as
/// `darshan-dxt-parser` output (its `# DXT` lines).
pub fn read(file: &str, text: &str) -> Result<Trace, TraceError> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.starts_with(&crate::backend::trace::TRACE_COLUMNS.join(",")) {
        trace::read(file, text)
    } else if text.lines().any(|l| l.starts_with("# DXT")) {
        dxt::read(file, text)
    } else {
        Err(TraceError {
            file: file.into(),
            line: 1,
            message: format!(
                "neither a piotwin trace (a CSV starting `{}`) nor darshan-dxt-parser output (`# DXT, …` lines)",
                crate::backend::trace::TRACE_COLUMNS.join(",")
            ),
        })
    }
}

/// Sorts records by rank, then start time (ties: as read), and numbers each
/// rank's records 0, 1, … as their tick.
pub(crate) fn order_by_start(records: &mut [Record]) {
    records.sort_by(|a, b| a.rank.cmp(&b.rank).then(a.start.total_cmp(&b.start)));
    let mut last = None;
    let mut tick = 0;
    for r in records.iter_mut() {
        if last != Some(r.rank) {
            last = Some(r.rank);
            tick = 0;
        }
        r.tick = tick;
        tick += 1;
    }
}
