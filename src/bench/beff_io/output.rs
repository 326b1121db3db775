//! b_eff_io's results: the analysis of rank 0's [`Measurements`] (per type, per
//! access method, per partition under both definitions, validity), the summary
//! table in release 2.1's layout (`PREFIX.sum`), the per-pattern protocol
//! (`PREFIX.prot`), the [`RunReport`] (JSON, CSV) and a plot per partition in the
//! paper's style (PNG, SVG). Every file is written atomically.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

use super::formulas::{self, Validity};
use super::schedule::{self, MIB, PATTERNS, Pass, PatternType, Row};
use super::{Config, Measurements};
use crate::report::plot::{Figure, Panel, Series};
use crate::report::{Mode, RunReport, Table, headline_among};

/// The headline metrics of b_eff_io, most important first.
pub const HEADLINE: &[&str] = &["b_eff_io_mb_s", "write_mb_s", "rewrite_mb_s", "read_mb_s"];

/// The value the release prints for a pattern with errors.
const FAILED_MB_S: f64 = -999.999;

/// One partition's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartitionResult {
    /// Partition size.
    pub n: usize,
    /// Scheduled time Tn in seconds.
    pub tn: u64,
    /// Per pass and type, the type's bandwidth in MB/s (`None`: not run).
    pub types: [[Option<f64>; 5]; 3],
    /// Per pass, the access-method average in MB/s (type 0 weighted double).
    pub access: [f64; 3],
    /// WR of release 2.1: (Σ write types + rewrite type 0) / 6, MB/s.
    pub wr: f64,
    /// b_eff_io of the partition, release 2.1 definition √(WR·RD), MB/s.
    pub rel21: f64,
    /// b_eff_io of the partition, paper definition 0.25·W + 0.25·RW + 0.5·R, MB/s.
    pub paper: f64,
    /// Errors over all passes.
    pub errors: u64,
    /// The three criteria.
    pub validity: Validity,
    /// Bytes moved by all processes in one access method (the read pass), bytes.
    pub bytes_per_access: u64,
}

/// The whole run's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// Per partition, in running order.
    pub partitions: Vec<PartitionResult>,
    /// Index of the partition with the largest release 2.1 value.
    pub best: usize,
    /// Index of the partition with the largest paper value.
    pub best_paper: usize,
}

impl Analysis {
    /// Analyses rank 0's measurements of a run with settings `cfg`.
    pub fn new(cfg: &Config, m: &Measurements) -> Analysis {
        let mut partitions = Vec::new();
        for &n in &cfg.partitions {
            let mut types = [[None; 5]; 3];
            for t in m.types.iter().filter(|t| t.n == n) {
                types[t.pass.index()][t.ptype.index()] = Some(t.mb_s());
            }
            let access = types.map(|row| formulas::access_mb_s(&row));
            let write_types = types[0].map(|x| x.unwrap_or(0.0));
            let rw0 = types[1][0].unwrap_or(0.0);
            let wr = (write_types.iter().sum::<f64>() + rw0) / 6.0;
            let rel21 = formulas::rel21_mb_s(&write_types, rw0, access[2]);
            let paper = formulas::paper_mb_s(access[0], access[1], access[2]);
            let errors = m.errors_of(n);
            let bytes_per_access = m
                .types
                .iter()
                .filter(|t| t.n == n && t.pass == Pass::Read)
                .map(|t| t.bytes * n as u64)
                .sum();
            partitions.push(PartitionResult {
                n,
                tn: cfg.tn(),
                types,
                access,
                wr,
                rel21,
                paper,
                errors,
                validity: Validity::new(cfg.tn(), cfg.shared, errors, m.checked_of(n)),
                bytes_per_access,
            });
        }
        let argmax = |f: fn(&PartitionResult) -> f64| {
            (0..partitions.len()).fold(0, |best, i| {
                if f(&partitions[i]) > f(&partitions[best]) {
                    i
                } else {
                    best
                }
            })
        };
        let best = argmax(|p| p.rel21);
        let best_paper = argmax(|p| p.paper);
        Analysis {
            partitions,
            best,
            best_paper,
        }
    }

    /// The system's b_eff_io, release 2.1 definition (maximum over partitions), MB/s.
    pub fn b_eff_io(&self) -> f64 {
        self.partitions.get(self.best).map_or(0.0, |p| p.rel21)
    }

    /// The system's b_eff_io, paper definition (maximum over partitions), MB/s.
    pub fn b_eff_io_paper(&self) -> f64 {
        self.partitions
            .get(self.best_paper)
            .map_or(0.0, |p| p.paper)
    }
}

/// Summary-table cells of one partition, keyed by (pass, row 1..=7, type index), MB/s.
type Cells = BTreeMap<(Pass, usize, usize), f64>;

/// Per partition, pass, type and summary row: the pattern's bandwidth in MB/s
/// (−999.999 where it had errors), and the L = 2 MiB scatter pattern per pass.
fn table_values(m: &Measurements, n: usize) -> (Cells, [Option<f64>; 3]) {
    let mut cells = BTreeMap::new();
    let mut pat2 = [None; 3];
    for p in m.patterns.iter().filter(|p| p.n == n) {
        let bw = if p.errors > 0 { FAILED_MB_S } else { p.mb_s() };
        match PATTERNS[p.pattern].row {
            Row::Chunk(r) => {
                cells.insert((p.pass, r, p.ptype.index()), bw);
            }
            Row::ScatterTwoMib => pat2[p.pass.index()] = Some(bw),
            Row::Hidden => {}
        }
    }
    (cells, pat2)
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "        -".to_string(), |x| format!(" {x:8.3}"))
}

/// The options line of the headers (release 2.1's `-N … T=…, MT=… MBytes, -rewrite …`).
fn options_line(cfg: &Config) -> String {
    let list = cfg
        .partitions
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut s = format!("-N {list} T={}, MT={} MBytes", cfg.t, cfg.mt);
    if let Some(f) = &cfg.hints_file {
        let _ = write!(s, " -i {f}");
    }
    for (on, name) in [
        (!cfg.shared, "-noshared"),
        (!cfg.unique, "-nounique"),
        (cfg.rewrite, "-rewrite"),
        (cfg.keep, "-keep"),
    ] {
        if on {
            let _ = write!(s, ", {name}");
        }
    }
    s
}

fn header(cfg: &Config, mode: Mode, environment: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "piotwin b_eff_io ({}), release 2.1 schedule and formulas\n",
        if mode == Mode::Real {
            "measured"
        } else {
            "predicted by the twin"
        }
    );
    let _ = writeln!(
        s,
        "MEMORY_PER_PROCESSOR = {:4} MBytes  [1MBytes = 1024*1024 bytes, 1MB = 1e6 bytes]",
        cfg.mb
    );
    let _ = writeln!(
        s,
        "Maximum chunk size   = {:8.3} MBytes\n",
        cfg.lmax() as f64 / MIB as f64
    );
    let _ = writeln!(s, "{}", options_line(cfg));
    let _ = writeln!(s, "PATH={}, PREFIX={}", cfg.path, cfg.prefix);
    for (k, v) in environment {
        let _ = writeln!(s, "       {k:<12}: {v}");
    }
    s.push('\n');
    s
}

/// The system string of the release's last line (its `uname` fields): the
/// environment's `system` entry, else the scenario or host.
fn system_name(environment: &BTreeMap<String, String>) -> String {
    ["system", "scenario", "host"]
        .iter()
        .find_map(|k| environment.get(*k).cloned())
        .unwrap_or_else(|| "unknown system".to_string())
}

/// The summary (`PREFIX.sum`) in release 2.1's layout, with both b_eff_io
/// definitions named.
pub fn summary_text(
    cfg: &Config,
    m: &Measurements,
    a: &Analysis,
    mode: Mode,
    environment: &BTreeMap<String, String>,
) -> String {
    let mut s = header(cfg, mode, environment);
    if let Some(why) = &m.stopped {
        let _ = writeln!(
            s,
            "\nSTOPPED EARLY: {why}\nThe tables below hold the patterns that finished (the rest read 0 or -); \
             no b_eff_io value is a measurement of this run.\n"
        );
    }
    let lmax = cfg.lmax();
    let system = system_name(environment);
    for p in &a.partitions {
        let n = p.n;
        let (cells, pat2) = table_values(m, n);
        let _ = writeln!(
            s,
            "\nSummary of file I/O bandwidth accumulated on {n:3} processes with {:4} MByte/PE",
            cfg.mb
        );
        s.push_str(
            "-----------------------------------------------------------------------------\n\n",
        );
        s.push_str(" number pos chunk-   access   type=0   type=1   type=2   type=3   type=4\n");
        s.push_str(" of PEs     size (l) methode scatter  shared  separate segmened seg-coll\n");
        s.push_str("            [bytes]  methode  [MB/s]   [MB/s]   [MB/s]   [MB/s]   [MB/s]\n");
        s.push_str(" -----------------------------------------------------------------------\n\n");
        for pass in Pass::ALL {
            for row in 1..=7 {
                let _ = write!(
                    s,
                    "{n:4} PEs {row:1} {:8} {:<7}",
                    schedule::row_chunk_bytes(row, lmax),
                    pass.name()
                );
                for t in 0..5 {
                    s.push_str(&cell(cells.get(&(pass, row, t)).copied()));
                }
                s.push('\n');
            }
            let _ = write!(s, "{n:4} PEs      total-{:<7}", pass.name());
            for t in 0..5 {
                s.push_str(&cell(p.types[pass.index()][t]));
            }
            s.push_str("\n\n");
        }
        s.push_str(
            "This table shows all results, except pattern 2 (scatter, l=1MBytes, L=2MBytes): \n",
        );
        let f = |v: Option<f64>| v.map_or_else(|| "       -".to_string(), |x| format!("{x:8.3}"));
        let _ = writeln!(
            s,
            "  bw_pat2= {} MB/s write, {} MB/s rewrite, {} MB/s read\n",
            f(pat2[0]),
            f(pat2[1]),
            f(pat2[2])
        );
        s.push_str("(For gnuplot:)\n");
        let _ = writeln!(
            s,
            "  set xtics ( '1k' 1, '+8' 2, '32k' 4, '+8' 5, '1M' 7, '+8' 8, '{}M' 10)",
            lmax / MIB
        );
        let _ = writeln!(s, "  set title '{system}' -4");
        s.push_str("  set label 1 'b_eff_io'  at 10,50000 right\n");
        s.push_str("  set label 2 'rel. 2.1'  at 10,25000 right\n");
        let _ = writeln!(
            s,
            "  set label 3 'T={:3.1}min' at 10,12500 right",
            p.tn as f64 / 60.0
        );
        let _ = writeln!(s, "  set label 4 'n={n}'     at 10,6250  right");
        if !cfg.shared {
            s.push_str("  set label 5 'workaround for type 1:'  at 10,0.50 right\n");
            s.push_str("  set label 6 'individual file pointer' at 10,0.25 right\n");
        }
        s.push('\n');
        for pass in Pass::ALL {
            let _ = writeln!(
                s,
                "weighted average bandwidth for {:<7} : {:8.3} MB/s on {n} processes",
                pass.name(),
                p.access[pass.index()]
            );
        }
        s.push_str("(type=0 is weighted double)\n");
        let _ = writeln!(
            s,
            "\nTotal amount of data written/read with each access method: {:8.3} MBytes",
            p.bytes_per_access as f64 / MIB as f64
        );
        let _ = writeln!(
            s,
            "  = {:4.1} percent of the total memory ({} MBytes)",
            100.0 * p.bytes_per_access as f64 / (cfg.mt as f64 * MIB as f64),
            cfg.mt
        );
        let _ = write!(
            s,
            "\nb_eff_io of these measurements = {:8.3} MB/s on {n} processes with {:3} MByte/PE and scheduled time={:3.1} min",
            p.rel21,
            cfg.mb,
            p.tn as f64 / 60.0
        );
        if p.errors > 0 {
            let _ = write!(s, ", with {} ERRORS --!--!--!--", p.errors);
        }
        s.push('\n');
        let _ = writeln!(
            s,
            "  rel2.1 definition: sqrt(WR * RD) = sqrt({:.3} * {:.3}) = {:8.3} MB/s",
            p.wr, p.access[2], p.rel21
        );
        let _ = writeln!(
            s,
            "  paper definition:  0.25*write + 0.25*rewrite + 0.50*read = {:8.3} MB/s\n",
            p.paper
        );
        let v = p.validity;
        let verdict = if v.valid() {
            "VALID"
        } else if v.unchecked() {
            "VALIDITY NOT CHECKED (criterion 3)"
        } else {
            "NOT VALID"
        };
        let _ = writeln!(s, "{verdict} for comparison of different systems");
        if !v.valid() {
            let reached = |b: bool| if b { "reached" } else { "NOT reached" };
            let _ = writeln!(
                s,
                "  criterion 1: scheduled time {:3.1} min >= {} min -- {}",
                p.tn as f64 / 60.0,
                schedule::T_CRIT / 60,
                reached(v.time_ok)
            );
            let _ = writeln!(
                s,
                "  criterion 2: shared file pointers must be used for pattern type 1 -- {}",
                reached(v.shared_ok)
            );
            let _ = writeln!(
                s,
                "  criterion 3: error count ({}) == 0 -- {}",
                p.errors,
                if v.data_checked {
                    reached(v.errors_ok)
                } else {
                    "not checked (twin: no data)"
                }
            );
        }
    }
    s.push_str("\nMaximum over all number of PEs\n------------------------------\n\n");
    s.push_str(&final_lines(cfg, a, &system));
    s
}

/// The closing b_eff_io lines: release 2.1's line, then the paper definition's.
pub fn final_lines(cfg: &Config, a: &Analysis, system: &str) -> String {
    let mut s = String::new();
    let Some(b) = a.partitions.get(a.best) else {
        return s;
    };
    let _ = write!(
        s,
        " b_eff_io = {:8.3} MB/s on {} processes with {:3} MByte/PE, scheduled time={:3.1} Min, on {system}",
        b.rel21,
        b.n,
        cfg.mb,
        b.tn as f64 / 60.0
    );
    if b.validity.unchecked() {
        s.push_str(", validity not checked (see above)");
    } else if !b.validity.valid() {
        s.push_str(", NOT VALID (see above)");
    }
    if b.errors > 0 {
        let _ = write!(s, ", with {} ERRORS --!--!--!--", b.errors);
    }
    s.push('\n');
    let bp = &a.partitions[a.best_paper];
    let _ = writeln!(
        s,
        " b_eff_io (paper definition 0.25*write + 0.25*rewrite + 0.50*read) = {:8.3} MB/s on {} processes",
        bp.paper, bp.n
    );
    s
}

/// The per-pattern protocol (`PREFIX.prot`): one line per pattern, a total per
/// type, per access method and per partition.
pub fn protocol_text(
    cfg: &Config,
    m: &Measurements,
    a: &Analysis,
    mode: Mode,
    environment: &BTreeMap<String, String>,
) -> String {
    let mut s = header(cfg, mode, environment);
    for pass in Pass::ALL {
        s.push_str("\n num.  access   type       pat  Tp[s]          l          L   repeat   transferred[MB]    time[s]  bandwidth[MB/s]\n");
        for (i_n, &n) in cfg.partitions.iter().enumerate() {
            let mut total_bytes = 0u64;
            for t in m.types.iter().filter(|t| t.n == n && t.pass == pass) {
                for p in m
                    .patterns
                    .iter()
                    .filter(|p| p.n == n && p.pass == pass && p.ptype == t.ptype)
                {
                    let _ = write!(
                        s,
                        "n={n:<4} a={} {:<7} type={} {:<9} p={:2} Tp={:7.2} l={:10} L={:10} r={:7} S={:12.3} MB t={:9.3} bw={:10.3} MB/s",
                        pass.index(),
                        pass.name(),
                        t.ptype.index(),
                        t.ptype.name(),
                        p.pattern,
                        p.tp,
                        p.l,
                        p.big_l,
                        p.reps,
                        1e-6 * (p.bytes * n as u64) as f64,
                        p.time,
                        p.measured_mb_s().unwrap_or(FAILED_MB_S)
                    );
                    if p.errors > 0 {
                        let _ = write!(s, " {} ERRORS", p.errors);
                    }
                    s.push('\n');
                }
                let _ = write!(
                    s,
                    " total pattern type:  S={:10.3} MB  t={:8.3} t_op={:6.3} t_cl={:6.3} b_eff_io_{}_{}={:10.3} MB/s",
                    1e-6 * (t.bytes * n as u64) as f64,
                    t.open + t.patterns + t.close,
                    t.open,
                    t.close,
                    pass.name(),
                    t.ptype.name(),
                    t.mb_s()
                );
                if t.ptype >= PatternType::Segmented
                    && let Some(plan) = &m.segments[i_n]
                {
                    let _ = write!(s, " Lseg={} MBytes", plan.lseg / MIB);
                }
                s.push('\n');
                total_bytes += t.bytes * n as u64;
            }
            let p = &a.partitions[i_n];
            let t = m.partition_times[i_n][pass.index()];
            let _ = writeln!(
                s,
                " total access method: S={:10.3} MB  t={:8.3} (Tn={}sec) bw={:10.3} MB/s, b_eff_io_{}={:10.3} MB/s{}",
                1e-6 * total_bytes as f64,
                t,
                p.tn,
                1e-6 * total_bytes as f64 / t,
                pass.name(),
                p.access[pass.index()],
                if p.errors > 0 {
                    format!(" ----- with {} ERRORS --!--!--!--!--", p.errors)
                } else {
                    String::new()
                }
            );
        }
    }
    s.push('\n');
    for p in &a.partitions {
        let _ = writeln!(
            s,
            " total partition: n={:<4} b_eff_io rel2.1={:10.3} MB/s, paper={:10.3} MB/s, errors={}",
            p.n, p.rel21, p.paper, p.errors
        );
    }
    let _ = writeln!(s, " total execution time is {:9.2} sec", m.total_time);
    for e in &m.error_messages {
        let _ = writeln!(s, "ERROR {e}");
    }
    let _ = writeln!(
        s,
        "\n b_eff_io := maximum over all partitions = {:8.3} MB/s",
        a.b_eff_io()
    );
    s
}

fn f(v: f64) -> Value {
    json!(v)
}

fn opt(v: Option<f64>) -> Value {
    v.map_or(Value::Null, f)
}

/// The run report: metrics named in the issue, per partition, type and pattern.
pub fn run_report(
    cfg: &Config,
    m: &Measurements,
    a: &Analysis,
    mode: Mode,
    ranks: usize,
    environment: BTreeMap<String, String>,
) -> RunReport {
    let mut metrics = BTreeMap::new();
    if let Some(b) = a.partitions.get(a.best) {
        metrics.insert("b_eff_io_mb_s".to_string(), b.rel21);
        metrics.insert("b_eff_io_paper_mb_s".to_string(), a.b_eff_io_paper());
        metrics.insert("write_mb_s".to_string(), b.access[0]);
        metrics.insert("rewrite_mb_s".to_string(), b.access[1]);
        metrics.insert("read_mb_s".to_string(), b.access[2]);
        metrics.insert("b_eff_io_partition".to_string(), b.n as f64);
        // Unknown where the data could not be compared: no value rather than 1.
        if !b.validity.unchecked() {
            metrics.insert(
                "valid".to_string(),
                if b.validity.valid() { 1.0 } else { 0.0 },
            );
        }
    }
    metrics.insert(
        "errors".to_string(),
        a.partitions.iter().map(|p| p.errors).sum::<u64>() as f64,
    );
    metrics.insert("total_time_s".to_string(), m.total_time);
    for p in &a.partitions {
        let k = |name: &str| format!("n{}_{name}", p.n);
        metrics.insert(k("b_eff_io_mb_s"), p.rel21);
        metrics.insert(k("b_eff_io_paper_mb_s"), p.paper);
        metrics.insert(k("wr_mb_s"), p.wr);
        for pass in Pass::ALL {
            metrics.insert(k(&format!("{}_mb_s", pass.name())), p.access[pass.index()]);
            for t in PatternType::ALL {
                if let Some(v) = p.types[pass.index()][t.index()] {
                    metrics.insert(k(&format!("{}_type{}_mb_s", pass.name(), t.index())), v);
                }
            }
        }
    }
    let mut tables = BTreeMap::new();
    let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    tables.insert(
        "patterns".to_string(),
        Table {
            columns: cols(&[
                "n",
                "access",
                "type",
                "pattern",
                "tp_s",
                "l_bytes",
                "big_l_bytes",
                "reps",
                "bytes_per_process",
                "time_s",
                "bw_mb_s",
                "errors",
            ]),
            rows: m
                .patterns
                .iter()
                .map(|p| {
                    vec![
                        json!(p.n),
                        json!(p.pass.name()),
                        json!(p.ptype.index()),
                        json!(p.pattern),
                        f(p.tp),
                        json!(p.l),
                        json!(p.big_l),
                        json!(p.reps),
                        json!(p.bytes),
                        f(p.time),
                        p.measured_mb_s().map_or(Value::Null, f),
                        json!(p.errors),
                    ]
                })
                .collect(),
        },
    );
    tables.insert(
        "types".to_string(),
        Table {
            columns: cols(&[
                "n",
                "access",
                "type",
                "open_s",
                "patterns_s",
                "close_s",
                "bytes_per_process",
                "bw_mb_s",
            ]),
            rows: m
                .types
                .iter()
                .map(|t| {
                    vec![
                        json!(t.n),
                        json!(t.pass.name()),
                        json!(t.ptype.index()),
                        f(t.open),
                        f(t.patterns),
                        f(t.close),
                        json!(t.bytes),
                        f(t.mb_s()),
                    ]
                })
                .collect(),
        },
    );
    tables.insert(
        "partitions".to_string(),
        Table {
            columns: cols(&[
                "n",
                "tn_s",
                "write_mb_s",
                "rewrite_mb_s",
                "read_mb_s",
                "wr_mb_s",
                "b_eff_io_mb_s",
                "b_eff_io_paper_mb_s",
                "errors",
                "valid",
                "time_ok",
                "shared_ok",
                "errors_ok",
                "lseg_bytes",
            ]),
            rows: a
                .partitions
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    vec![
                        json!(p.n),
                        json!(p.tn),
                        f(p.access[0]),
                        f(p.access[1]),
                        f(p.access[2]),
                        f(p.wr),
                        f(p.rel21),
                        f(p.paper),
                        json!(p.errors),
                        if p.validity.unchecked() {
                            Value::Null
                        } else {
                            json!(p.validity.valid())
                        },
                        json!(p.validity.time_ok),
                        json!(p.validity.shared_ok),
                        if p.validity.data_checked {
                            json!(p.validity.errors_ok)
                        } else {
                            Value::Null
                        },
                        m.segments[i]
                            .as_ref()
                            .map_or(Value::Null, |s| json!(s.lseg)),
                    ]
                })
                .collect(),
        },
    );
    let mut summary = Vec::new();
    for p in &a.partitions {
        let (cells, _) = table_values(m, p.n);
        for pass in Pass::ALL {
            for row in 1..=7 {
                let mut r = vec![
                    json!(p.n),
                    json!(row),
                    json!(schedule::row_chunk_bytes(row, cfg.lmax())),
                    json!(pass.name()),
                ];
                r.extend((0..5).map(|t| opt(cells.get(&(pass, row, t)).copied())));
                summary.push(r);
            }
            let mut r = vec![json!(p.n), json!("total"), Value::Null, json!(pass.name())];
            r.extend(p.types[pass.index()].iter().map(|&v| opt(v)));
            summary.push(r);
        }
    }
    tables.insert(
        "summary".to_string(),
        Table {
            columns: cols(&[
                "n",
                "row",
                "chunk_bytes",
                "access",
                "type0_mb_s",
                "type1_mb_s",
                "type2_mb_s",
                "type3_mb_s",
                "type4_mb_s",
            ]),
            rows: summary,
        },
    );
    let mut errors = m.error_messages.clone();
    if let Some(why) = &m.stopped {
        // The schedule did not finish: no aggregate is a measurement of it. The
        // pattern and type tables keep what finished.
        metrics.retain(|k, _| k == "errors" || k == "total_time_s");
        errors.insert(0, format!("stopped early: {why}"));
    }
    for p in a.partitions.iter().filter(|p| p.errors > 0) {
        errors.push(format!(
            "partition n={}: {} errors (failed calls, short transfers or wrong data)",
            p.n, p.errors
        ));
    }
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: "b_eff_io".to_string(),
        mode,
        ranks,
        params: serde_json::to_value(cfg).unwrap_or(Value::Null),
        environment,
        hints: m.types.first().map(|t| t.hints.clone()).unwrap_or_default(),
        headline: headline_among(&metrics, HEADLINE),
        metrics,
        tables,
        errors,
    }
}

/// The paper-style figure of partition `n`: bandwidth (log) over chunk size, one
/// line per type, one panel per access method.
pub fn partition_figure(cfg: &Config, m: &Measurements, a: &Analysis, n: usize) -> Figure {
    let (cells, _) = table_values(m, n);
    let lmax_label = format!("{}M", cfg.lmax() / MIB);
    let ticks: Vec<(f64, String)> = (1..=7)
        .map(|r| {
            (
                schedule::row_plot_x(r),
                ["1k", "+8", "32k", "+8", "1M", "+8", lmax_label.as_str()][r - 1].to_string(),
            )
        })
        .collect();
    let titles = ["first write", "rewrite", "read"];
    let legends = [
        "scatter - type 0",
        "shared - type 1",
        "separate - type 2",
        "segment - type 3",
        "seg-coll - type 4",
    ];
    let panels = Pass::ALL
        .iter()
        .map(|&pass| Panel {
            title: titles[pass.index()].to_string(),
            x_label: "contiguous chunks on disk [bytes]".into(),
            y_label: format!("bandwidth - {} [MB/s]", titles[pass.index()]),
            x_range: (0.5, 10.5),
            x_ticks: ticks.clone(),
            log_y: true,
            series: PatternType::ALL
                .iter()
                .map(|t| Series {
                    name: legends[t.index()].to_string(),
                    points: (1..=7)
                        .filter_map(|r| {
                            cells
                                .get(&(pass, r, t.index()))
                                .map(|&v| (schedule::row_plot_x(r), v))
                        })
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
        })
        .collect();
    let p = a.partitions.iter().find(|p| p.n == n);
    Figure {
        title: format!(
            "b_eff_io on {n} processes, T={:.1} min: rel2.1 {:.3} MB/s, paper {:.3} MB/s",
            cfg.tn() as f64 / 60.0,
            p.map_or(0.0, |p| p.rel21),
            p.map_or(0.0, |p| p.paper)
        ),
        panels,
        panel_size: (520, 420),
    }
}

/// A result file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct OutputError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub message: String,
}

/// Writes `PREFIX.sum`, `PREFIX.prot`, `PREFIX.json`, `PREFIX.csv` and per
/// partition `PREFIX_nNNN.png` / `.svg`, each atomically; returns the paths written.
pub fn write_outputs(
    cfg: &Config,
    m: &Measurements,
    mode: Mode,
    ranks: usize,
    environment: BTreeMap<String, String>,
) -> Result<Vec<PathBuf>, OutputError> {
    let a = Analysis::new(cfg, m);
    let path = |suffix: &str| PathBuf::from(format!("{}{suffix}", cfg.prefix));
    let mut written = Vec::new();
    let mut text = |suffix: &str, body: String| -> Result<(), OutputError> {
        let p = path(suffix);
        crate::report::write_atomic(&p, body.as_bytes()).map_err(|e| OutputError {
            path: p.clone(),
            message: e.to_string(),
        })?;
        written.push(p);
        Ok(())
    };
    text(".sum", summary_text(cfg, m, &a, mode, &environment))?;
    text(".prot", protocol_text(cfg, m, &a, mode, &environment))?;
    let report = run_report(cfg, m, &a, mode, ranks, environment);
    text(".json", report.to_json())?;
    text(".csv", report.to_csv())?;
    for p in &a.partitions {
        let fig = partition_figure(cfg, m, &a, p.n);
        for (ext, png) in [("png", true), ("svg", false)] {
            let out = path(&format!("_n{:03}.{ext}", p.n));
            let r = if png {
                fig.write_png(&out)
            } else {
                fig.write_svg(&out)
            };
            r.map_err(|e| OutputError {
                path: out.clone(),
                message: e.to_string(),
            })?;
            written.push(out);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::{BeffIoArgs, PatternRecord, TypeRecord};
    use super::*;
    use clap::Parser;
    use piotwin_types::Hints;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BeffIoArgs,
    }

    /// Synthetic measurements: every pattern moves `reps · L` bytes in a time that
    /// makes pattern bandwidth = base · (1 + type) MB/s; open and close take 0 s.
    fn synthetic(cfg: &Config, base: f64) -> Measurements {
        let mut m = Measurements {
            patterns: vec![],
            types: vec![],
            partition_times: vec![[1.0; 3]; cfg.partitions.len()],
            segments: vec![None; cfg.partitions.len()],
            error_messages: vec![],
            total_time: 10.0,
            stopped: None,
        };
        for pass in Pass::ALL {
            for &n in &cfg.partitions {
                for t in PatternType::ALL {
                    if !schedule::patterns_in_pass(pass, cfg.rewrite)
                        .iter()
                        .any(|p| p.ptype == t)
                    {
                        continue;
                    }
                    let bw = base * (1 + t.index()) as f64 * (1 + pass.index()) as f64;
                    let (mut bytes, mut time) = (0, 0.0);
                    for def in t.patterns() {
                        let (l, big_l) = def.sizes(cfg.lmax(), 8 * 1024);
                        let b = 3 * big_l;
                        let tt = n as f64 * b as f64 / (bw * 1e6);
                        m.patterns.push(PatternRecord {
                            n,
                            pass,
                            ptype: t,
                            pattern: def.id,
                            tp: cfg.tp(def),
                            l,
                            big_l,
                            reps: 3,
                            bytes: b,
                            time: tt,
                            errors: 0,
                            checked: true,
                        });
                        bytes += b;
                        time += tt;
                    }
                    m.types.push(TypeRecord {
                        n,
                        pass,
                        ptype: t,
                        open: 0.0,
                        patterns: time,
                        close: 0.0,
                        bytes,
                        hints: Hints::new(),
                    });
                }
            }
        }
        m
    }

    fn cfg(words: &[&str]) -> Config {
        let argv =
            super::super::normalize_beff_io_args(std::iter::once("b").chain(words.iter().copied()));
        let mut c = Config::resolve(
            &Cli::try_parse_from(argv).unwrap().args,
            4,
            256,
            Hints::new(),
        )
        .unwrap();
        c.progress = false;
        c
    }

    /// Every panel of the b_eff_io figure carries readable values and units, the
    /// rewrite panel too (one series, a flat line: a narrow log range).
    #[test]
    fn the_figure_has_readable_axes_in_every_panel() {
        // 2400 MB/s: no power of ten within the rewrite panel's range.
        let c = cfg(&["-N", "2"]);
        let m = synthetic(&c, 2400.0);
        let a = Analysis::new(&c, &m);
        let fig = partition_figure(&c, &m, &a, 2);
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("f.svg");
        fig.write_svg(&svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        crate::report::plot::check_readable_axes(&text, &fig).unwrap();
    }

    #[test]
    fn analysis_of_synthetic_measurements() {
        let c = cfg(&["-N", "2,4"]);
        let m = synthetic(&c, 10.0);
        let a = Analysis::new(&c, &m);
        let p = &a.partitions[1];
        // write: types at 10, 20, 30, 40, 50 → (20 + 20 + 30 + 40 + 50) / 6 = 26.667
        assert!((p.access[0] - 160.0 / 6.0).abs() < 1e-9, "{}", p.access[0]);
        // rewrite: type 0 only at 20
        assert!((p.access[1] - 20.0).abs() < 1e-9);
        // read: 3× write
        assert!((p.access[2] - 3.0 * 160.0 / 6.0).abs() < 1e-9);
        let wr = (150.0 + 20.0) / 6.0;
        assert!((p.rel21 - (wr * 80.0f64).sqrt()).abs() < 1e-9);
        assert!((p.paper - (0.25 * 160.0 / 6.0 + 5.0 + 40.0)).abs() < 1e-9);
        assert!(!p.validity.time_ok && p.validity.valid() == false);
        assert_eq!(a.b_eff_io(), a.partitions[a.best].rel21);
    }

    #[test]
    fn summary_has_the_release_layout() {
        let c = cfg(&["-N", "4", "-T", "3600"]);
        let m = synthetic(&c, 10.0);
        let a = Analysis::new(&c, &m);
        let env = BTreeMap::from([("system".to_string(), "testhost".to_string())]);
        let s = summary_text(&c, &m, &a, Mode::Sim, &env);
        assert!(
            s.contains(
                "Summary of file I/O bandwidth accumulated on   4 processes with  256 MByte/PE"
            ),
            "{s}"
        );
        assert!(s.contains(
            " number pos chunk-   access   type=0   type=1   type=2   type=3   type=4\n"
        ));
        // Row 1 (1 KiB) of the write pass: 10·(1+t) MB/s per type.
        assert!(
            s.contains(
                "   4 PEs 1     1024 write     10.000   20.000   30.000   40.000   50.000\n"
            ),
            "{s}"
        );
        // Rewrite without -rewrite: types 1–4 print "-".
        assert!(
            s.contains(
                "   4 PEs 7  2097152 rewrite   20.000        -        -        -        -\n"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "   4 PEs      total-read      30.000   60.000   90.000  120.000  150.000\n"
            ),
            "{s}"
        );
        assert!(
            s.contains("weighted average bandwidth for write   :   26.667 MB/s on 4 processes")
        );
        assert!(s.contains("VALID for comparison of different systems"));
        assert!(!s.contains("NOT VALID"));
        assert!(s.contains(" b_eff_io =") && s.contains("on testhost"));
        assert!(s.contains("paper definition"));
        let prot = protocol_text(&c, &m, &a, Mode::Sim, &env);
        assert_eq!(
            prot.lines().filter(|l| l.starts_with("n=4 ")).count(),
            43 + 9 + 43
        );
    }

    #[test]
    fn report_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("run").display().to_string();
        let mut c = cfg(&["-N", "2,4", "-rewrite"]);
        c.prefix = prefix;
        let mut m = synthetic(&c, 5.0);
        m.patterns[3].errors = 2;
        let a = Analysis::new(&c, &m);
        let r = run_report(&c, &m, &a, Mode::Sim, 4, BTreeMap::new());
        assert_eq!(r.benchmark, "b_eff_io");
        for k in [
            "b_eff_io_mb_s",
            "b_eff_io_paper_mb_s",
            "write_mb_s",
            "rewrite_mb_s",
            "read_mb_s",
            "n4_read_type3_mb_s",
        ] {
            assert!(r.metrics.contains_key(k), "{k}");
        }
        assert_eq!(r.metrics["errors"], 2.0);
        assert_eq!(r.tables["patterns"].rows.len(), 2 * 3 * 43);
        assert!(!r.errors.is_empty());
        // The failed pattern shows −999.999 in the summary table.
        let s = summary_text(&c, &m, &a, Mode::Sim, &BTreeMap::new());
        assert!(s.contains("-999.999"));
        assert!(s.contains("criterion 3: error count (2) == 0 -- NOT reached"));
        let written = write_outputs(&c, &m, Mode::Sim, 4, BTreeMap::new()).unwrap();
        assert_eq!(written.len(), 4 + 2 * 2);
        for p in &written {
            assert!(std::fs::metadata(p).unwrap().len() > 100, "{}", p.display());
        }
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
                .unwrap();
        assert_eq!(json["benchmark"], "b_eff_io");
    }
}
