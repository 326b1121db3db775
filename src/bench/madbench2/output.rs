//! MADbench2's results: the original's timing block (mean [min:max] over
//! ranks of each function's `_cc`, `_bw`, `_r`, `_w` and `_total`), the run
//! report with each function's bytes, times and bandwidths, and its bar chart.
//!
//! Aggregation as the original's `report_time`: each timer is averaged over
//! ranks, with its minimum and maximum. A function's bandwidth is the bytes all
//! ranks moved over the mean time of that kind (the timers end at a barrier,
//! so every rank's time is about the slowest rank's).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Function, FunctionTimes, Madbench2Args, Madbench2Outcome, Madbench2Plan, RankOutput};
use crate::bench::common::stats::stats;
use crate::report::plot::BarChart;
use crate::report::{Mode, RunReport, Table, headline_among};

/// The headline metrics, most important first: the time of the whole run,
/// the I/O time, and the four I/O phases of the I/O-phase paper.
pub const HEADLINE: &[&str] = &[
    "total_time_s",
    "io_time_s",
    "s_w_s",
    "w_r_s",
    "w_w_s",
    "c_r_s",
];

const MIB: f64 = 1048576.0;

/// The timers of the report, in the original's order: (suffix, name).
const TIMERS: [(&str, &str); 5] = [
    ("cc", "other"),
    ("bw", "busy-work"),
    ("r", "read"),
    ("w", "write"),
    ("total", "total"),
];

fn timer(t: &FunctionTimes, k: usize) -> f64 {
    match k {
        0 => t.cc_s,
        1 => t.bw_s,
        2 => t.r_s,
        3 => t.w_s,
        _ => t.total_s(),
    }
}

/// Mean, minimum and maximum of `f` over the ranks that completed function `k`.
fn spread(ranks: &[RankOutput], k: usize, f: impl Fn(&FunctionTimes) -> f64) -> (f64, f64, f64) {
    let xs: Vec<f64> = ranks
        .iter()
        .filter_map(|r| r.functions.get(k))
        .map(f)
        .collect();
    let (max, min, mean, _) = stats(&xs);
    (mean, min, max)
}

/// Builds the run report from the outcome (any rank's: all hold every rank's).
pub fn build_report(
    args: &Madbench2Args,
    plan: &Madbench2Plan,
    mode: Mode,
    environment: BTreeMap<String, String>,
    outcome: &Madbench2Outcome,
) -> RunReport {
    let ranks = &outcome.ranks;
    let done = ranks.iter().map(|r| r.functions.len()).min().unwrap_or(0);
    let mut metrics = BTreeMap::new();
    let mut functions = Table {
        columns: [
            "function", "timer", "mean_s", "min_s", "max_s", "bytes", "mib_s",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    let (mut io, mut busy, mut total) = (0.0, 0.0, 0.0);
    let (mut all_read, mut all_written) = (0u64, 0u64);
    for (k, f) in Function::ALL.iter().enumerate().take(done) {
        let name = f.name().to_lowercase();
        let read: u64 = ranks.iter().map(|r| r.functions[k].bytes_read).sum();
        let written: u64 = ranks.iter().map(|r| r.functions[k].bytes_written).sum();
        all_read += read;
        all_written += written;
        for (j, (suffix, _)) in TIMERS.iter().enumerate() {
            let (mean, min, max) = spread(ranks, k, |t| timer(t, j));
            metrics.insert(format!("{name}_{suffix}_s"), mean);
            let bytes = match *suffix {
                "r" => Some(read),
                "w" => Some(written),
                _ => None,
            };
            let rate = bytes
                .filter(|&b| b > 0 && mean > 0.0)
                .map(|b| b as f64 / MIB / mean);
            if let Some(rate) = rate {
                let kind = if *suffix == "r" { "read" } else { "write" };
                metrics.insert(format!("{name}_{kind}_mib_s"), rate);
            }
            if bytes != Some(0) {
                functions.rows.push(vec![
                    json!(f.name()),
                    json!(suffix),
                    json!(mean),
                    json!(min),
                    json!(max),
                    bytes.map_or(Value::Null, |b| json!(b)),
                    rate.map_or(Value::Null, |r| json!(r)),
                ]);
            }
        }
        metrics.insert(format!("{name}_bytes_read"), read as f64);
        metrics.insert(format!("{name}_bytes_written"), written as f64);
        let (bw_mean, ..) = spread(ranks, k, |t| t.bw_s);
        let flops: f64 = ranks.iter().map(|r| r.functions[k].busy_flops).sum();
        if bw_mean > 0.0 && flops > 0.0 {
            metrics.insert(format!("{name}_busy_mflops"), flops / bw_mean / 1e6);
        }
        io += spread(ranks, k, |t| t.r_s + t.w_s).0;
        busy += bw_mean;
        total += spread(ranks, k, FunctionTimes::total_s).0;
    }
    metrics.insert("io_time_s".into(), io);
    metrics.insert("busy_work_s".into(), busy);
    metrics.insert("total_time_s".into(), total);
    if done == Function::ALL.len() {
        let close = ranks.iter().map(|r| r.close_s).sum::<f64>() / ranks.len().max(1) as f64;
        metrics.insert("close_s".into(), close);
    }
    metrics.insert("bytes_read".into(), all_read as f64);
    metrics.insert("bytes_written".into(), all_written as f64);
    let checked: u64 = ranks.iter().map(|r| r.verification.checked_bytes).sum();
    let failed: u64 = ranks.iter().map(|r| r.verification.failed_words).sum();
    metrics.insert("verified_bytes".into(), checked as f64);
    metrics.insert("verification_failures".into(), failed as f64);

    let mut per_rank = Table {
        columns: [
            "rank",
            "function",
            "cc_s",
            "bw_s",
            "r_s",
            "w_s",
            "total_s",
            "bytes_read",
            "bytes_written",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for r in ranks {
        for (f, t) in Function::ALL.iter().zip(&r.functions) {
            per_rank.rows.push(vec![
                json!(r.rank),
                json!(f.name()),
                json!(t.cc_s),
                json!(t.bw_s),
                json!(t.r_s),
                json!(t.w_s),
                json!(t.total_s()),
                json!(t.bytes_read),
                json!(t.bytes_written),
            ]);
        }
    }

    let mut errors: Vec<String> = outcome.failure.iter().cloned().collect();
    if failed > 0 {
        let first = ranks
            .iter()
            .find_map(|r| r.verification.first.map(|m| (r.rank, m)));
        let mut msg = format!(
            "verification failed: {failed} of {} words read back differ from what was written",
            checked / 8
        );
        if let Some((rank, m)) = first {
            msg += &format!(
                "; first: rank {rank}'s file at byte {}: expected {:#018x}, read {:#018x}",
                m.offset, m.expected, m.got
            );
        }
        errors.push(msg);
    }

    let mut params = serde_json::to_value(args).expect("the options serialise");
    if let Value::Object(map) = &mut params {
        map.insert("no_pe".into(), json!(plan.p));
        map.insert("gang_size".into(), json!(plan.p / plan.no_gang));
        map.insert(
            "m1_rank0".into(),
            json!(plan.elements(super::Matrix::M1, 0)),
        );
        map.insert(
            "m2_rank0".into(),
            json!(plan.elements(super::Matrix::M2, 0)),
        );
        map.insert("offcount1".into(), json!(plan.offcount1));
        map.insert("offcount2".into(), json!(plan.offcount2));
    }
    RunReport {
        interrupted: None,
        intervals: Default::default(),
        bands: Default::default(),
        benchmark: "madbench2".to_string(),
        mode,
        ranks: ranks.len(),
        params,
        environment,
        hints: outcome.hints.clone(),
        headline: headline_among(&metrics, HEADLINE),
        metrics,
        tables: BTreeMap::from([
            ("functions".to_string(), functions),
            ("ranks".to_string(), per_rank),
        ]),
        errors,
    }
}

/// The original's output: its banner, parameter lines and, per function, each
/// timer with a nonzero sum as `mean [min:max]` over ranks (`%10.2f`), then
/// `dC[0]` (0 in the I/O mode); then piotwin's lines: bytes and bandwidths per
/// function, and the verification.
pub fn original_text(
    args: &Madbench2Args,
    plan: &Madbench2Plan,
    outcome: &Madbench2Outcome,
) -> String {
    let mut out = String::from("\nMADbench 2.0 IO-mode\n");
    out += &format!(
        "no_pe = {}  no_pix = {}  no_bin = {}  no_gang = {}  sblocksize = {}  fblocksize = {}  r_mod = {}  w_mod = {}\n",
        plan.p,
        args.no_pix,
        args.no_bin,
        args.no_gang,
        args.sblocksize,
        args.fblocksize,
        args.rmod,
        args.wmod
    );
    out += &format!(
        "IOMETHOD = {}  IOMODE = {}  FILETYPE = {}  REMAP = {}",
        env_name(&args.iomethod),
        env_name(&args.iomode),
        env_name(&args.filetype),
        env_name(&args.remap)
    );
    if let Some(x) = args.bwexp {
        out += &format!("  BWEXP = {x:.2}");
    }
    out += "\n\n";
    let ranks = &outcome.ranks;
    let done = ranks.iter().map(|r| r.functions.len()).min().unwrap_or(0);
    for (k, f) in Function::ALL.iter().enumerate().take(done) {
        for (j, (suffix, _)) in TIMERS.iter().enumerate() {
            let (mean, min, max) = spread(ranks, k, |t| timer(t, j));
            if *suffix == "total" {
                out += &format!(
                    "          -------\n{}_total{mean:10.2}   [{min:10.2}:{max:10.2}]\n\n",
                    f.name()
                );
            } else if mean > 0.0 {
                out += &format!(
                    "{}_{suffix:<4} {mean:10.2}   [{min:10.2}:{max:10.2}]\n",
                    f.name()
                );
            }
        }
    }
    if done == Function::ALL.len() {
        out += "\ndC[0] = 0.00000e+00\n";
    }
    out
}

/// piotwin's additions under the original's block: per function the bytes
/// moved and the bandwidths, the busy-work rate, and the verification.
pub fn summary_text(report: &RunReport, dry_run: bool) -> String {
    let metric = |k: &str| report.metrics.get(k).copied();
    let mut out = format!(
        "\n{:<9} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
        "function", "MiB read", "read MiB/s", "MiB written", "write MiB/s", "busy Mflop/s"
    );
    for f in Function::ALL {
        let n = f.name().to_lowercase();
        if metric(&format!("{n}_total_s")).is_none() {
            continue;
        }
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
        let mib = |k: &str| metric(k).filter(|&b| b > 0.0).map(|b| b / MIB);
        out += &format!(
            "{:<9} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
            f.name(),
            cell(mib(&format!("{n}_bytes_read"))),
            cell(metric(&format!("{n}_read_mib_s"))),
            cell(mib(&format!("{n}_bytes_written"))),
            cell(metric(&format!("{n}_write_mib_s"))),
            cell(metric(&format!("{n}_busy_mflops"))),
        );
    }
    out += &format!(
        "\nI/O time {:.3} s, busy-work {:.3} s, total {:.3} s (means over ranks, S + W + C)\n",
        metric("io_time_s").unwrap_or(0.0),
        metric("busy_work_s").unwrap_or(0.0),
        metric("total_time_s").unwrap_or(0.0)
    );
    if let Some(close) = metric("close_s") {
        out += &format!(
            "Close of the data file after C (outside the original's timers): {close:.3} s\n"
        );
    }
    let checked = metric("verified_bytes").unwrap_or(0.0);
    let zeros = report.params.get("zero_data").and_then(Value::as_bool) == Some(true);
    let verification = if zeros {
        "NOT PERFORMED (--zero-data: zeros written, as the original)".to_string()
    } else if dry_run || checked == 0.0 {
        "NOT PERFORMED (no data)".to_string()
    } else if metric("verification_failures") == Some(0.0) {
        format!(
            "SUCCESSFUL ({:.0} bytes read back, every word as written)",
            checked
        )
    } else {
        "UNSUCCESSFUL".to_string()
    };
    out += &format!("Verification: {verification}\n");
    for e in &report.errors {
        out += &format!("error: {e}\n");
    }
    out
}

/// The bar chart: per function and timer (busy-work, read, write, other) the
/// mean time over ranks, with the min-max range as whiskers.
pub fn chart(report: &RunReport) -> BarChart {
    let mut bars = Vec::new();
    let mut whiskers = Vec::new();
    if let Some(t) = report.tables.get("functions") {
        for row in &t.rows {
            let (f, suffix) = (
                row[0].as_str().unwrap_or("?"),
                row[1].as_str().unwrap_or("?"),
            );
            let Some((_, name)) = TIMERS.iter().find(|(s, _)| *s == suffix) else {
                continue;
            };
            if suffix == "total" {
                continue;
            }
            let v = |k: usize| row[k].as_f64().unwrap_or(0.0);
            bars.push((format!("{f} {name}"), v(2)));
            whiskers.push(Some((v(3), v(4))));
        }
    }
    let value_max = bars.iter().map(|b| b.1).fold(0.0, f64::max);
    BarChart {
        title: format!(
            "MADbench2 ({}, {} ranks): time per function [s], mean over ranks, min-max",
            match report.mode {
                Mode::Real => "real",
                Mode::Sim => "twin",
            },
            report.ranks
        ),
        value_label: "time [s]".into(),
        size: (900, 60 + 28 * bars.len().max(1) as u32),
        bars,
        value_max,
        whiskers,
    }
}

/// An option value as the original's environment variable spells it (`POSIX`, `SHARED`).
fn env_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}
