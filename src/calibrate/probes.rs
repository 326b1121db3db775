//! Raw probe results, as read from each probe's JSON run report, and the record
//! of them written next to the calibrated scenario (`<out>.probes.json`) so that
//! every fit can be inspected and redone.
//!
//! Reports are read by column name: a probe's rows are the table whose columns
//! include the ones needed, whatever the table is called.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Machine;
use super::memcpy::CopySample;
use super::plan::{Plan, Probe, Step};
use crate::bench::pingpong::PingRow;

/// One row of the IOzone-style probe (`piotwin run iozone --json`): the
/// benchmark's own row type.
pub use crate::bench::iozone::Row as IozoneRow;

/// One IOzone run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IozoneRun {
    /// True for cold reads (`-I`: the file dropped from the page cache first).
    pub cold: bool,
    /// True for the growing-files run of older calibrations (files growing
    /// past the memory backed); kept out of the cache fits.
    #[serde(default)]
    pub fresh: bool,
    /// MPI-IO runs for the shared-pointer cost: `Some(false)` explicit offsets,
    /// `Some(true)` through the shared file pointer; `None` for POSIX runs.
    #[serde(default)]
    pub mpiio_shared: Option<bool>,
    /// Its rows.
    pub rows: Vec<IozoneRow>,
}

/// One repetition of one access of one IOR run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IorRow {
    /// Ranks in the run.
    pub ranks: usize,
    /// `shared-independent`, `shared-collective` or `file-per-process`.
    pub shape: String,
    /// Transfer size `-t`, bytes.
    pub transfer: u64,
    /// `write` or `read`.
    pub access: String,
    /// Mean over ranks of (transfer time / transfers), seconds: one call's time.
    pub latency_s: f64,
    /// Max over ranks of the open time, seconds.
    pub open_s: f64,
    /// Max over ranks of the close time, seconds.
    pub close_s: f64,
    /// Aggregate bandwidth, MiB/s.
    pub bw_mib_s: f64,
    /// The repetition (`iter`, from 0; each probe step is one process, so
    /// repetition 0's write makes the process's first open). Absent in probes
    /// recorded before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iter: Option<u64>,
}

/// One measurement of a b_eff run: a pattern at a size by a method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeffRow {
    /// Ranks in the run.
    pub ranks: u64,
    /// The pattern's name.
    pub pattern: String,
    /// Message size, bytes.
    pub bytes: u64,
    /// `Sndrcv`, `Alltoal` or `non-blk`.
    pub method: String,
    /// Iterations of the loop.
    pub loops: u64,
    /// The loop's time, maximum over processes, seconds.
    pub seconds: f64,
}

/// A step that did not produce results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFailure {
    /// The command line.
    pub step: String,
    /// Why.
    pub message: String,
}

/// Everything the probes measured, and what failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResults {
    /// The machine.
    pub machine: Machine,
    /// The plan that ran.
    pub plan: Plan,
    /// memcpy samples.
    pub memcpy: Vec<CopySample>,
    /// IOR data-pattern fills (in probes files older than `pattern_check`,
    /// fills and checks alternating).
    #[serde(default)]
    pub pattern: Vec<CopySample>,
    /// IOR data-pattern checks.
    #[serde(default)]
    pub pattern_check: Vec<CopySample>,
    /// File deletions (bytes of the file, seconds of the unlink).
    #[serde(default)]
    pub delete: Vec<CopySample>,
    /// Rewrites after a delete and a wait (the release probe).
    #[serde(default)]
    pub release: Vec<super::memcpy::ReleaseSample>,
    /// Warm rewrites of one file and of a file each (the inode-lock probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inode_lock: Vec<super::memcpy::LockSample>,
    /// Cached reads of a file each by threads at once (the bus-read probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_read: Vec<super::memcpy::LockSample>,
    /// Writes of a new file by one writer and of a file each by threads at
    /// once (the bus-write probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_write: Vec<super::memcpy::LockSample>,
    /// Cached reads into buffers placed past a page (the aliasing probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliased: Vec<super::memcpy::AliasSample>,
    /// Settled writes in requests of several sizes (the huge-page probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub huge: Vec<super::memcpy::HugeSample>,
    /// A settled write in the huge-page probe's largest requests with a
    /// spinning thread per core beside it (the fresh-stall probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fresh_stall: Vec<super::memcpy::HugeSample>,
    /// MADbench2's busy-work loop over loop counts.
    #[serde(default)]
    pub busy_work: Vec<super::memcpy::FlopSample>,
    /// Fortran direct-access `WRITE` statements over statement counts.
    #[serde(default)]
    pub fortran: Vec<super::memcpy::StatementSample>,
    /// BTIO's BT kernel over flop amounts.
    #[serde(default)]
    pub bt: Vec<super::memcpy::FlopSample>,
    /// BTIO's verification of a dump (the error norm) over grids and rank counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_norm: Vec<CopySample>,
    /// FTIO's FFT kernel over Mini-Square sides.
    #[serde(default)]
    pub fft: Vec<super::memcpy::FlopSample>,
    /// FTIO's input computed over band sizes (Mini-Square sides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signal: Vec<CopySample>,
    /// The kernels again, on every core at once (the all-cores probe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_cores: Option<super::memcpy::KernelsTogether>,
    /// Point-to-point rows (barriers), every run.
    pub pingpong: Vec<PingRow>,
    /// b_eff's measurements, every run.
    #[serde(default)]
    pub beff: Vec<BeffRow>,
    /// IOR rows, every run.
    pub ior: Vec<IorRow>,
    /// IOzone runs.
    pub iozone: Vec<IozoneRun>,
    /// Steps that failed.
    pub failures: Vec<StepFailure>,
}

impl ProbeResults {
    /// Empty results for `plan` on `machine`.
    pub fn new(machine: Machine, plan: Plan) -> ProbeResults {
        ProbeResults {
            machine,
            plan,
            memcpy: Vec::new(),
            pattern: Vec::new(),
            pattern_check: Vec::new(),
            delete: Vec::new(),
            release: Vec::new(),
            huge: Vec::new(),
            aliased: Vec::new(),
            fresh_stall: Vec::new(),
            inode_lock: Vec::new(),
            bus_read: Vec::new(),
            bus_write: Vec::new(),
            busy_work: Vec::new(),
            fortran: Vec::new(),
            bt: Vec::new(),
            error_norm: Vec::new(),
            fft: Vec::new(),
            signal: Vec::new(),
            all_cores: None,
            pingpong: Vec::new(),
            beff: Vec::new(),
            ior: Vec::new(),
            iozone: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Results for `plan` on `machine` holding its in-process kernels, timed
    /// now at the plan's sizes and repetitions: memcpy, the data pattern's
    /// fills and checks, busy-work, BT's step, BTIO's error norm, the FFT and
    /// FTIO's input.
    pub fn with_kernels(machine: Machine, plan: Plan) -> ProbeResults {
        use super::memcpy::{
            measure, measure_bt, measure_busy_work, measure_error_norm, measure_fft,
            measure_pattern, measure_signal,
        };
        let mut r = ProbeResults::new(machine, plan);
        let p = &r.plan;
        let memcpy = measure(&p.memcpy_sizes, p.memcpy_reps);
        let (pattern, pattern_check) = measure_pattern(&p.memcpy_sizes, p.memcpy_reps);
        let busy_work = measure_busy_work(&p.busy_loops, p.memcpy_reps);
        let bt = measure_bt(&p.bt_steps, p.kernel_reps);
        let fft = measure_fft(&p.fft_sides, p.kernel_reps);
        (r.memcpy, r.pattern, r.pattern_check) = (memcpy, pattern, pattern_check);
        let signal = measure_signal(&p.fft_sides, p.kernel_reps);
        (r.busy_work, r.bt, r.fft, r.signal) = (busy_work, bt, fft, signal);
        r.error_norm = measure_error_norm(&p.bt_steps, p.kernel_reps);
        r
    }

    /// Where the plan runs kernels on several threads, times them again on
    /// every core at once (the all-cores probe,
    /// `memcpy::measure_kernels_together`).
    pub fn add_all_cores(&mut self) {
        let p = &self.plan;
        if p.kernel_threads > 1 {
            self.all_cores = Some(super::memcpy::measure_kernels_together(
                p.kernel_threads,
                &p.busy_loops,
                &p.bt_steps,
                &p.fft_sides,
                p.memcpy_sizes.iter().copied().min().unwrap_or(0),
            ));
        }
    }

    /// Adds the rows of `step`'s JSON run report (its text).
    pub fn add_report(&mut self, step: &Step, json: &str) -> Result<(), String> {
        let report: Value =
            serde_json::from_str(json).map_err(|e| format!("not a JSON run report: {e}"))?;
        match step.probe {
            Probe::Pingpong => {
                for r in rows(
                    &report,
                    &["test", "ranks", "bytes", "iterations", "seconds"],
                )? {
                    let test = text(&r, "test")?;
                    // A barrier step's few 1-byte exchanges only warm the pairs up.
                    if step.shape == "barrier" && test != "barrier" {
                        continue;
                    }
                    self.pingpong.push(PingRow {
                        test,
                        ranks: num(&r, "ranks")? as u64,
                        bytes: num(&r, "bytes")? as u64,
                        iterations: num(&r, "iterations")? as u64,
                        seconds: num(&r, "seconds")?,
                        // (reports before the polled test have no column)
                        active: r.get("active").and_then(Value::as_u64).unwrap_or(0),
                    });
                }
            }
            Probe::Beff => {
                for r in rows(
                    &report,
                    &["pattern", "bytes", "method", "rep", "loops", "seconds"],
                )? {
                    self.beff.push(BeffRow {
                        ranks: step.ranks as u64,
                        pattern: text(&r, "pattern")?,
                        bytes: num(&r, "bytes")? as u64,
                        method: text(&r, "method")?,
                        loops: num(&r, "loops")? as u64,
                        seconds: num(&r, "seconds")?,
                    });
                }
            }
            Probe::Ior => {
                let transfer = flag_value(&step.args, "-t")
                    .ok_or("IOR step without -t")
                    .and_then(|t| {
                        crate::bench::common::options::parse_size(t).map_err(|_| "bad -t")
                    })?;
                for r in rows(
                    &report,
                    &[
                        "access",
                        "bw_mib_s",
                        "latency_s",
                        "open_s",
                        "close_s",
                        "iter",
                    ],
                )? {
                    self.ior.push(IorRow {
                        ranks: step.ranks,
                        shape: step.shape.clone(),
                        transfer,
                        access: text(&r, "access")?,
                        latency_s: num(&r, "latency_s")?,
                        open_s: num(&r, "open_s")?,
                        close_s: num(&r, "close_s")?,
                        bw_mib_s: num(&r, "bw_mib_s")?,
                        iter: Some(num(&r, "iter")? as u64),
                    });
                }
            }
            Probe::Iozone => {
                let mut run = IozoneRun {
                    cold: step.shape == "cold",
                    fresh: step.shape == "fresh",
                    mpiio_shared: match step.shape.as_str() {
                        "mpiio-at" => Some(false),
                        "mpiio-shared" => Some(true),
                        _ => None,
                    },
                    rows: Vec::new(),
                };
                let report: crate::report::RunReport = serde_json::from_value(report)
                    .map_err(|e| format!("not an iozone run report: {e}"))?;
                run.rows =
                    crate::bench::iozone::rows_from_report(&report).map_err(|e| e.to_string())?;
                self.iozone.push(run);
            }
        }
        Ok(())
    }

    /// True when a step of `probe` failed.
    pub fn probe_failed(&self, probe: Probe) -> bool {
        let cmd = format!("piotwin run {} ", probe.command());
        self.failures.iter().any(|f| f.step.contains(&cmd))
    }
}

fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.windows(2)
        .find(|w| w[0] == flag)
        .map(|w| w[1].as_str())
}

type Row = BTreeMap<String, Value>;

/// The rows of the first table in `report` whose columns include every one of
/// `need`, each as column → value.
fn rows(report: &Value, need: &[&str]) -> Result<Vec<Row>, String> {
    let tables = report
        .get("tables")
        .and_then(Value::as_object)
        .ok_or("the report has no `tables`")?;
    for table in tables.values() {
        let Some(cols) = table.get("columns").and_then(Value::as_array) else {
            continue;
        };
        let cols: Vec<&str> = cols.iter().filter_map(Value::as_str).collect();
        if !need.iter().all(|n| cols.contains(n)) {
            continue;
        }
        let rows = table
            .get("rows")
            .and_then(Value::as_array)
            .ok_or("a table without `rows`")?;
        return rows
            .iter()
            .map(|r| {
                let cells = r.as_array().ok_or("a row that is not an array")?;
                if cells.len() != cols.len() {
                    return Err(format!(
                        "a row of {} cells under {} columns",
                        cells.len(),
                        cols.len()
                    ));
                }
                Ok(cols
                    .iter()
                    .map(|c| c.to_string())
                    .zip(cells.iter().cloned())
                    .collect())
            })
            .collect();
    }
    Err(format!(
        "no table in the report has the columns {}",
        need.join(", ")
    ))
}

fn num(r: &Row, c: &str) -> Result<f64, String> {
    r[c].as_f64()
        .filter(|v| v.is_finite())
        .ok_or_else(|| format!("column `{c}`: `{}` is not a finite number", r[c]))
}

fn text(r: &Row, c: &str) -> Result<String, String> {
    r[c].as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("column `{c}`: `{}` is not text", r[c]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::plan::Scale;

    fn results() -> ProbeResults {
        let machine = Machine {
            host: "h".into(),
            cores: 2,
            mem_total_bytes: 1 << 34,
            cpu_cache_bytes: 1 << 20,
            readahead_bytes: Some(8 << 20),
            date: None,
            cpu: None,
            unreported_free_bytes: None,
            private_cache_bytes: None,
        };
        ProbeResults::new(machine, Plan::new(Scale::Tiny, 2, 4, "/s"))
    }

    /// An IOzone run report as `piotwin run iozone --json` writes it: a `rows`
    /// table in the benchmark's own columns.
    fn iozone_report() -> String {
        use crate::bench::iozone::ROW_COLUMNS;
        let mut report = crate::report::RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "iozone".into(),
            mode: crate::report::Mode::Real,
            ranks: 1,
            params: serde_json::Value::Null,
            environment: Default::default(),
            hints: Default::default(),
            metrics: Default::default(),
            headline: Vec::new(),
            tables: Default::default(),
            errors: Vec::new(),
        };
        report.tables.insert(
            "rows".into(),
            crate::report::Table {
                columns: ROW_COLUMNS.iter().map(|c| c.to_string()).collect(),
                rows: vec![
                    serde_json::json!([
                        "write", 1048576, 4096, 0.002, 1048576, 256, 512000.0, 0.001, 1048576
                    ])
                    .as_array()
                    .unwrap()
                    .clone(),
                    serde_json::json!([
                        "reread", 1048576, 4096, 0.0005, 1048576, 256, 2048000.0, null, 0
                    ])
                    .as_array()
                    .unwrap()
                    .clone(),
                ],
            },
        );
        report.to_json()
    }

    #[test]
    fn reads_iozone_rows_by_column_name() {
        let mut r = results();
        let step = r
            .plan
            .steps
            .iter()
            .find(|s| s.probe == Probe::Iozone && s.shape == "cold")
            .unwrap()
            .clone();
        r.add_report(&step, &iozone_report()).unwrap();
        assert!(r.iozone[0].cold);
        assert_eq!(r.iozone[0].rows.len(), 2);
        assert_eq!(r.iozone[0].rows[0].record_bytes, 4096);
        assert_eq!(r.iozone[0].rows[1].test, crate::bench::iozone::Pass::Reread);
        assert_eq!(r.iozone[0].rows[1].fsync_s, None);
    }

    fn step(r: &ProbeResults, probe: Probe) -> Step {
        r.plan
            .steps
            .iter()
            .find(|s| s.probe == probe)
            .unwrap()
            .clone()
    }

    /// A barrier step of the pingpong probe, as plans before b_eff had them.
    fn barrier_step() -> Step {
        Step {
            probe: Probe::Pingpong,
            ranks: 4,
            args: Vec::new(),
            shape: "barrier".into(),
        }
    }

    #[test]
    fn reads_ior_pingpong_and_b_eff_reports() {
        let mut r = results();
        let ior = r
            .plan
            .steps
            .iter()
            .find(|s| s.probe == Probe::Ior)
            .unwrap()
            .clone();
        let json = r#"{"tables": {"repetitions": {"columns": ["access","bw_mib_s","iops","latency_s","block_kib","xfer_kib","open_s","wrrd_s","close_s","total_s","iter"],
            "rows": [["write", 100.0, 1.0, 2e-5, 256.0, 4.0, 1e-4, 0.01, 2e-5, 0.02, 0]]}}}"#;
        r.add_report(&ior, json).unwrap();
        assert_eq!(r.ior[0].transfer, 4096);
        assert_eq!(r.ior[0].shape, "shared-independent");
        assert_eq!(r.ior[0].latency_s, 2e-5);
        let pp = barrier_step();
        let json = r#"{"tables": {"pingpong": {"columns": ["test","ranks","bytes","iterations","seconds"],
            "rows": [["sendrecv", 2, 1, 1000, 1e-6], ["barrier", 2, 0, 20, 2e-6]]}}}"#;
        r.add_report(&pp, json).unwrap();
        assert_eq!(r.pingpong.len(), 1, "a barrier step keeps its barrier rows");
        let beff = step(&r, Probe::Beff);
        let json = r#"{"tables": {"samples": {"columns": ["pattern","family","bytes","method","rep","loops","seconds","mb_s"],
            "rows": [["ring-1*2fix", "ring", 4096, "Sndrcv", 0, 300, 1e-3, 4.9]]}}}"#;
        r.add_report(&beff, json).unwrap();
        assert_eq!(r.beff.len(), 1);
        assert_eq!(
            (r.beff[0].bytes, r.beff[0].loops, r.beff[0].ranks),
            (4096, 300, 2)
        );
        assert_eq!(r.beff[0].method, "Sndrcv");
    }

    #[test]
    fn malformed_reports_are_named() {
        let mut r = results();
        let pp = barrier_step();
        assert!(r.add_report(&pp, "{").unwrap_err().contains("JSON"));
        assert!(
            r.add_report(&pp, r#"{"tables": {}}"#)
                .unwrap_err()
                .contains("columns test, ranks")
        );
        let bad = r#"{"tables": {"t": {"columns": ["test","ranks","bytes","iterations","seconds"], "rows": [["barrier", 2, 0, 10, "x"]]}}}"#;
        assert!(r.add_report(&pp, bad).unwrap_err().contains("`seconds`"));
    }
}
