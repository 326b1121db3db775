//! FTIO's results: the [`RunReport`] built from every rank's output, and the
//! human summary in the style of the NAS benchmarks' statistics block.
//!
//! Aggregation: per-rank bucket times (I/O, compute, communication) are
//! **averaged** over ranks; the total time is the **longest** rank's time from
//! the start barrier to the end barrier. The I/O fraction is the mean I/O time
//! over the total time, so it is the share of the run an average process spends
//! in I/O; `other_time_s` is what no bucket holds (barrier waits, imbalance).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{FtioArgs, FtioOutcome, FtioPlan, FtioRankOutput, Phase, Verification};
use crate::report::{Mode, RunReport, Table, headline_among};

/// The headline metrics of FTIO, most important first.
pub const HEADLINE: &[&str] = &["io_time_s", "io_fraction", "total_time_s"];

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut k) = (0.0, 0usize);
    for x in xs {
        sum += x;
        k += 1;
    }
    if k == 0 { 0.0 } else { sum / k as f64 }
}

/// The flop count FTIO credits for an N×N complex 2-D FFT: 5·N²·log2(N²).
pub fn flop_count(n: u64) -> f64 {
    let n2 = (n as f64) * (n as f64);
    5.0 * n2 * n2.log2()
}

/// Build the run report from the program's outcome (any rank's: all hold every rank's measurements).
/// `environment` is what the caller knows of where it ran (MPI library and host,
/// or scenario and seed).
pub fn build_report(
    args: &FtioArgs,
    plan: &FtioPlan,
    mode: Mode,
    environment: BTreeMap<String, String>,
    outcome: &FtioOutcome,
) -> RunReport {
    let outputs = &outcome.ranks;
    let geo = plan.geo;
    let n = geo.n();
    let rank_sum = |o: &FtioRankOutput, f: &dyn Fn(&super::PhaseStats) -> f64| {
        o.phases.iter().map(f).sum::<f64>()
    };
    let io = mean(outputs.iter().map(|o| rank_sum(o, &|s| s.io_s)));
    let compute = mean(outputs.iter().map(|o| rank_sum(o, &|s| s.compute_s)));
    let comm = mean(outputs.iter().map(|o| rank_sum(o, &|s| s.comm_s)));
    let total = outputs.iter().map(|o| o.total_s).fold(0.0, f64::max);
    let sum_u64 = |f: &dyn Fn(&super::PhaseStats) -> u64| {
        outputs
            .iter()
            .flat_map(|o| o.phases.iter())
            .map(f)
            .sum::<u64>()
    };
    let mut verification = Verification::default();
    for o in outputs {
        verification.merge(&o.verification);
    }

    let mut metrics = BTreeMap::new();
    let ratio = |x: f64| if total > 0.0 { x / total } else { 0.0 };
    metrics.insert("io_fraction".to_string(), ratio(io));
    metrics.insert("mflops".to_string(), ratio(flop_count(n)) / 1e6);
    metrics.insert("io_time_s".to_string(), io);
    metrics.insert("compute_time_s".to_string(), compute);
    metrics.insert("comm_time_s".to_string(), comm);
    metrics.insert(
        "other_time_s".to_string(),
        (total - io - compute - comm).max(0.0),
    );
    metrics.insert("total_time_s".to_string(), total);
    metrics.insert("bytes_read".to_string(), sum_u64(&|s| s.bytes_read) as f64);
    metrics.insert(
        "bytes_written".to_string(),
        sum_u64(&|s| s.bytes_written) as f64,
    );
    metrics.insert("comm_bytes".to_string(), sum_u64(&|s| s.comm_bytes) as f64);
    metrics.insert("verified_elements".to_string(), verification.checked as f64);
    metrics.insert(
        "verification_failures".to_string(),
        verification.failed as f64,
    );
    if verification.checked > 0 {
        metrics.insert("max_rel_error".to_string(), verification.max_rel_error);
    }

    let mut phases = Table {
        columns: [
            "phase",
            "wall_s",
            "io_s",
            "compute_s",
            "comm_s",
            "io_fraction",
            "bytes_read",
            "bytes_written",
            "comm_bytes",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for (k, phase) in Phase::ALL.iter().enumerate() {
        let at = |o: &FtioRankOutput| o.phases.get(k).copied().unwrap_or_default();
        let wall = outputs.iter().map(|o| at(o).wall_s).fold(0.0, f64::max);
        let pio = mean(outputs.iter().map(|o| at(o).io_s));
        phases.rows.push(vec![
            json!(phase.name()),
            json!(wall),
            json!(pio),
            json!(mean(outputs.iter().map(|o| at(o).compute_s))),
            json!(mean(outputs.iter().map(|o| at(o).comm_s))),
            json!(if wall > 0.0 { pio / wall } else { 0.0 }),
            json!(outputs.iter().map(|o| at(o).bytes_read).sum::<u64>()),
            json!(outputs.iter().map(|o| at(o).bytes_written).sum::<u64>()),
            json!(outputs.iter().map(|o| at(o).comm_bytes).sum::<u64>()),
        ]);
    }
    let mut ranks = Table {
        columns: [
            "rank",
            "total_s",
            "io_s",
            "compute_s",
            "comm_s",
            "bytes_read",
            "bytes_written",
            "verified_elements",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for o in outputs {
        ranks.rows.push(vec![
            json!(o.rank),
            json!(o.total_s),
            json!(rank_sum(o, &|s| s.io_s)),
            json!(rank_sum(o, &|s| s.compute_s)),
            json!(rank_sum(o, &|s| s.comm_s)),
            json!(o.phases.iter().map(|s| s.bytes_read).sum::<u64>()),
            json!(o.phases.iter().map(|s| s.bytes_written).sum::<u64>()),
            json!(o.verification.checked),
        ]);
    }

    let mut errors: Vec<String> = outcome.failure.iter().cloned().collect();
    if verification.failed > 0 {
        let mut msg = format!(
            "verification failed: {} of {} elements beyond the relative tolerance 1e-9·log2 N; \
             max relative error {:e}",
            verification.failed, verification.checked, verification.max_rel_error
        );
        if let Some(f) = &verification.first_failure {
            msg += &format!(
                "; first mismatch at stored element (row {}, col {}): got ({:e}, {:e}), expected ({:e}, {:e})",
                f.row, f.col, f.got[0], f.got[1], f.expected[0], f.expected[1]
            );
        }
        errors.push(msg);
    }

    let mut params = serde_json::to_value(args).expect("FtioArgs serialise");
    if let Value::Object(map) = &mut params {
        map.insert("c".into(), json!(geo.c));
        map.insert("n".into(), json!(n));
        map.insert("square_side".into(), json!(geo.square_side()));
        map.insert("mini_squares_per_rank".into(), json!(geo.c * geo.i * geo.i));
    }
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: "ftio".to_string(),
        mode,
        ranks: outputs.len(),
        params,
        environment,
        hints: outcome.hints.clone(),
        headline: headline_among(&metrics, HEADLINE),
        metrics,
        tables: BTreeMap::from([("phases".to_string(), phases), ("ranks".to_string(), ranks)]),
        errors,
    }
}

/// The human summary of an FTIO report, in the style of the NAS benchmarks'
/// "Benchmark Completed" block, followed by the per-phase table. `dry_run`
/// marks a report of the null back end (zero-cost I/O), whose mode is not real.
pub fn nas_block(report: &RunReport, dry_run: bool) -> String {
    let metric = |k: &str| report.metrics.get(k).copied().unwrap_or(f64::NAN);
    let param = |k: &str| {
        report
            .params
            .get(k)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".to_string())
    };
    let line = |label: &str, value: String| format!(" {label:<24}= {value:>28}\n");
    let n = param("n");
    let mut out = String::from("\n FTIO Benchmark Completed.\n");
    out += &line(
        "Mode",
        match (dry_run, report.mode) {
            (true, _) => "dry run (zero-cost I/O)".to_string(),
            (false, Mode::Real) => "real (MPI-IO)".to_string(),
            (false, Mode::Sim) => "twin (predicted)".to_string(),
        },
    );
    out += &line("Size", format!("{n} x {n}"));
    out += &line("I (Mini-Square side)", param("i"));
    out += &line("Processes", report.ranks.to_string());
    let shared = report
        .params
        .get("shared_file")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    out += &line(
        "Files",
        if shared {
            "one shared file"
        } else {
            "file per process"
        }
        .to_string(),
    );
    out += &line("Time in seconds", format!("{:.6}", metric("total_time_s")));
    out += &line("I/O time (s)", format!("{:.6}", metric("io_time_s")));
    out += &line(
        "Compute time (s)",
        format!("{:.6}", metric("compute_time_s")),
    );
    out += &line("Comm. time (s)", format!("{:.6}", metric("comm_time_s")));
    out += &line("I/O fraction", format!("{:.4}", metric("io_fraction")));
    out += &line("Mop/s total", format!("{:.2}", metric("mflops")));
    out += &line(
        "Mop/s/process",
        format!("{:.2}", metric("mflops") / report.ranks.max(1) as f64),
    );
    out += &line("Operation type", "5 N^2 log2(N^2) flops".to_string());
    out += &line(
        "MiB read",
        format!("{:.2}", metric("bytes_read") / (1u64 << 20) as f64),
    );
    out += &line(
        "MiB written",
        format!("{:.2}", metric("bytes_written") / (1u64 << 20) as f64),
    );
    let verification = if metric("verified_elements") > 0.0 {
        if metric("verification_failures") == 0.0 {
            "SUCCESSFUL"
        } else {
            "UNSUCCESSFUL"
        }
    } else {
        "NOT PERFORMED (no data)"
    };
    out += &line("Verification", verification.to_string());
    if let Some(e) = report.metrics.get("max_rel_error") {
        out += &line("Max. relative error", format!("{e:.3e}"));
    }
    if let Some(t) = report.tables.get("phases") {
        out += &format!(
            "\n {:<20} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
            "Phase", "wall (s)", "I/O (s)", "compute (s)", "comm (s)", "I/O frac"
        );
        for row in &t.rows {
            let f = |k: usize| row.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            out += &format!(
                // A space between columns: long runs' seconds outgrow 12 characters.
                " {:<20} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>10.4}\n",
                row.first().and_then(Value::as_str).unwrap_or("?"),
                f(1),
                f(2),
                f(3),
                f(4),
                f(5)
            );
        }
    }
    for e in &report.errors {
        out += &format!("\n error: {e}\n");
    }
    out
}
