//! BTIO's output: NPB's statistics block, the PnetCDF kernel's block, and the
//! [`RunReport`] (JSON/CSV) with the metrics `compare` diffs.

use std::collections::BTreeMap;

use serde_json::json;

use crate::report::{Mode, RunReport, Table, headline_among};

use super::params::{BtioConfig, KernelConfig, Subtype};
use super::program::{BtioOutcome, KernelOutcome, Verification};

/// The headline metrics of BTIO, most important first: the write phases' rate
/// and time, and the read phase's time (the I/O-phase papers report both).
pub const HEADLINE: &[&str] = &[
    "io_rate_mb_s",
    "effective_output_mb_s",
    "io_time_s",
    "verify_io_time_s",
];

/// The headline metrics of the PnetCDF BTIO kernel, most important first.
pub const KERNEL_HEADLINE: &[&str] = &["bandwidth_mib_s", "io_rate_mb_s", "io_time_s"];

/// What BTIO's compute is: said in the output and the report.
pub const COMPUTE: &str = "NPB BT (copy_faces, compute_rhs, pipelined x/y/z block-tridiagonal solves, add) \
on the multi-partition cells; Mop/s by NPB's operation count";

/// NPB BT's result block (`bt.f` statistics and `print_results`), for rank 0 to print.
pub fn npb_block(cfg: &BtioConfig, o: &BtioOutcome) -> String {
    let [nx, ny, nz] = cfg.grid;
    let class = cfg.class.map_or("U".to_string(), |c| format!("{c:?}"));
    let mut s = String::new();
    s += "\n\n NAS Parallel Benchmarks 3.4 -- BT Benchmark (piotwin)\n\n";
    s += &format!(" Size: {nx:4}x{ny:4}x{nz:4}  (class {class})\n");
    s += &format!(" Iterations: {:4}    dt: {:11.7}\n", cfg.niter, cfg.dt);
    s += &format!(" Total number of processes: {:6}\n", o.nprocs);
    s += &format!(" Compute: {COMPUTE}\n\n");
    if cfg.subtype != Subtype::None {
        s += &format!(
            " BTIO -- {} write interval: {:3}\n",
            cfg.subtype.npb_name(),
            cfg.wr_interval
        );
        if cfg.rd_interval > 0 {
            s += &format!(
                " (read interval {} from inputbt.data: piotwin reads everything back after the timed region)\n",
                cfg.rd_interval
            );
        }
        s += "\n BTIO -- statistics:\n";
        s += &format!("   I/O timing in seconds   : {:14.2}\n", o.io_time_s);
        s += &format!("   I/O timing (max rank)   : {:14.2}\n", o.io_time_max_s);
        s += &format!("   I/O timing percentage   : {:14.2}\n", io_percent(o));
        s += &format!("   I/O timing in verify    : {:14.2}\n", o.verify_io_time_s);
        s += &format!(
            "   Total data written (MB) : {:14.2}\n",
            o.bytes_written as f64 * 1e-6
        );
        s += &format!("   I/O data rate  (MB/sec) : {:14.2}\n", o.io_rate_mb_s);
        s += &format!(
            "   Effective output (MB/s) : {:14.2}\n",
            o.effective_output_mb_s
        );
    }
    if let Some(n) = &o.norms {
        s += "\n";
        s += &n.npb_text();
    }
    s += "\n\n BT Benchmark Completed.\n";
    s += &format!(" Class           =                        {class}\n");
    s += &format!(" Size            =            {nx:4}x{ny:4}x{nz:4}\n");
    s += &format!(" Iterations      =             {:12}\n", o.steps);
    if o.steps < cfg.niter {
        s += &format!(
            " (interrupted: {} of {} time steps done)\n",
            o.steps, cfg.niter
        );
    }
    s += &format!(" Time in seconds =             {:12.2}\n", o.total_time_s);
    s += &format!(" Total processes =             {:12}\n", o.nprocs);
    s += &format!(" Mop/s total     =             {:12.2}\n", o.mops);
    s += &format!(
        " Mop/s/process   =             {:12.2}\n",
        o.mops / o.nprocs as f64
    );
    s += " Operation type  =           floating point\n";
    s += &format!(
        " Verification    =             {:>12}\n",
        o.verification.word()
    );
    if let Verification::Failed(why) = &o.verification {
        s += &format!(" First mismatch  : {why}\n");
    }
    s
}

/// The PnetCDF BTIO kernel's result block (`bt.f90`), for rank 0 to print.
pub fn kernel_block(cfg: &KernelConfig, o: &KernelOutcome) -> String {
    let mib = o.bytes as f64 / 1048576.0;
    let (op, verb) = if cfg.write {
        ("write", "create")
    } else {
        ("read ", "open  ")
    };
    let mut s = String::new();
    s += &format!("-- BT-IO Benchmark ({op} operation only) --\n");
    s += &format!("Number of MPI processes     : {:9}\n", o.nprocs);
    s += &format!("Global array size X         : {:9}\n", cfg.grid[0]);
    s += &format!("Global array size Y         : {:9}\n", cfg.grid[1]);
    s += &format!("Global array size Z         : {:9}\n", cfg.grid[2]);
    s += &format!("Number of I/O iterations    : {:9}\n", o.records);
    if o.staged {
        s += &format!(
            "(no {} to read: its {} records were written first, untimed)\n",
            cfg.file_path(),
            o.records
        );
    }
    s += &format!("Total I/O amount            : {mib:12.2} MiB\n");
    s += &format!("Total I/O time in sec       : {:12.2}\n", o.total_time_s);
    s += &format!("Max file {verb} time in sec : {:12.2}\n", o.open_time_s);
    s += &format!("Max {op} post  time in sec : {:12.2}\n", o.post_time_s);
    s += &format!("Max {op} wait  time in sec : {:12.2}\n", o.wait_time_s);
    s += &format!(
        "I/O bandwidth            : {:12.2} MiB/s\n",
        bandwidth_mib_s(o)
    );
    s += "------------------------------------------\n";
    s += &format!("Using {} method\n", cfg.method_name());
    s += &format!("output file path         : {}\n", cfg.dir);
    s += &format!("Verification             : {}\n", o.verification.word());
    if let Verification::Failed(why) = &o.verification {
        s += &format!("First mismatch           : {why}\n");
    }
    s
}

fn io_percent(o: &BtioOutcome) -> f64 {
    if o.total_time_s > 0.0 {
        100.0 * o.io_time_s / o.total_time_s
    } else {
        0.0
    }
}

fn bandwidth_mib_s(o: &KernelOutcome) -> f64 {
    if o.total_time_s > 0.0 {
        o.bytes as f64 / 1048576.0 / o.total_time_s
    } else {
        0.0
    }
}

fn verified(v: &Verification) -> Option<f64> {
    match v {
        Verification::NotPerformed
        | Verification::NoReference
        | Verification::NoData
        | Verification::Interrupted => None,
        Verification::Successful => Some(1.0),
        Verification::Failed(_) => Some(0.0),
    }
}

/// The run report of a BTIO run. `params` are the options as resolved (the
/// configuration), `environment` says where it ran; the hints are rank 0's in effect.
pub fn btio_report(
    cfg: &BtioConfig,
    o: &BtioOutcome,
    mode: Mode,
    environment: BTreeMap<String, String>,
) -> RunReport {
    let mut metrics = BTreeMap::new();
    metrics.insert("total_time_s".into(), o.total_time_s);
    metrics.insert("mops".into(), o.mops);
    metrics.insert("io_time_s".into(), o.io_time_s);
    metrics.insert("io_percent".into(), io_percent(o));
    if cfg.subtype != Subtype::None {
        metrics.insert("io_time_max_s".into(), o.io_time_max_s);
        metrics.insert("io_rate_mb_s".into(), o.io_rate_mb_s);
        if o.verification != Verification::Interrupted {
            metrics.insert("verify_io_time_s".into(), o.verify_io_time_s);
            metrics.insert("effective_output_mb_s".into(), o.effective_output_mb_s);
        }
        metrics.insert("bytes_written".into(), o.bytes_written as f64);
    }
    if o.steps < cfg.niter {
        metrics.insert("steps_done".into(), o.steps as f64);
    }
    if let Some(v) = verified(&o.verification) {
        metrics.insert("verified".into(), v);
    }
    let mut tables = BTreeMap::new();
    if let Some(n) = &o.norms {
        // NPB's verification: each norm, its reference and the relative difference.
        tables.insert(
            "norms".into(),
            Table {
                columns: [
                    "norm",
                    "component",
                    "value",
                    "reference",
                    "relative_difference",
                ]
                .map(String::from)
                .to_vec(),
                rows: [("xcr", n.xcr, n.xcr_ref), ("xce", n.xce, n.xce_ref)]
                    .iter()
                    .flat_map(|(name, got, want)| {
                        (0..5).map(move |m| {
                            let r = want.map(|w| w[m]);
                            vec![
                                json!(name),
                                json!(m + 1),
                                json!(got[m]),
                                json!(r),
                                json!(r.map(|w| ((got[m] - w) / w).abs())),
                            ]
                        })
                    })
                    .collect(),
            },
        );
    }
    if cfg.subtype != Subtype::None {
        tables.insert(
            "ranks".into(),
            Table {
                columns: vec!["rank".into(), "io_time_s".into()],
                rows: o
                    .io_times_s
                    .iter()
                    .enumerate()
                    .map(|(r, t)| vec![json!(r), json!(t)])
                    .collect(),
            },
        );
    }
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: "btio".into(),
        mode,
        ranks: o.nprocs,
        params: {
            let mut p = serde_json::to_value(cfg).expect("a BtioConfig serialises");
            p["compute"] = json!(COMPUTE);
            p
        },
        environment,
        hints: o.hints.clone(),
        headline: headline_among(&metrics, HEADLINE),
        metrics,
        tables,
        errors: match &o.verification {
            Verification::Failed(why) => vec![format!("verification FAILED: {why}")],
            _ => Vec::new(),
        },
    }
}

/// The run report of a BTIO-kernel run.
pub fn kernel_report(
    cfg: &KernelConfig,
    o: &KernelOutcome,
    mode: Mode,
    environment: BTreeMap<String, String>,
) -> RunReport {
    let mb = o.bytes as f64 * 1e-6;
    let per = |t: f64| if t > 0.0 { mb / t } else { 0.0 };
    let mut metrics = BTreeMap::new();
    metrics.insert("total_time_s".into(), o.total_time_s);
    metrics.insert("io_time_s".into(), o.total_time_s);
    metrics.insert("io_percent".into(), 100.0);
    metrics.insert("io_rate_mb_s".into(), per(o.total_time_s));
    metrics.insert("bandwidth_mib_s".into(), bandwidth_mib_s(o));
    metrics.insert("effective_output_mb_s".into(), per(o.wall_to_verified_s));
    metrics.insert("open_time_s".into(), o.open_time_s);
    metrics.insert("post_time_s".into(), o.post_time_s);
    metrics.insert("wait_time_s".into(), o.wait_time_s);
    metrics.insert("bytes".into(), o.bytes as f64);
    if let Some(v) = verified(&o.verification) {
        metrics.insert("verified".into(), v);
    }
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: "btio-kernel".into(),
        mode,
        ranks: o.nprocs,
        params: serde_json::to_value(cfg).expect("a KernelConfig serialises"),
        environment,
        hints: o.hints.clone(),
        headline: headline_among(&metrics, KERNEL_HEADLINE),
        metrics,
        tables: BTreeMap::new(),
        errors: match &o.verification {
            Verification::Failed(why) => vec![format!("verification FAILED: {why}")],
            _ => Vec::new(),
        },
    }
}
