//! The text and the report.

use super::*;

pub(super) const REP_COLUMNS: [&str; 11] = [
    "access",
    "bw_mib_s",
    "iops",
    "latency_s",
    "block_kib",
    "xfer_kib",
    "open_s",
    "wrrd_s",
    "close_s",
    "total_s",
    "iter",
];

impl Ior {
    pub(super) fn api_name(&self) -> &'static str {
        match self.params.api {
            Api::Posix => "POSIX",
            Api::MpiIo => "MPIIO",
            Api::Fortran(_) => unreachable!("IOR's -a offers POSIX and MPIIO"),
        }
    }

    /// IOR's header, per-repetition lines and "Summary of all tests" for `out`,
    /// from a run on `ranks` ranks; `mode` says where it ran (one line).
    pub fn render(&self, out: &IorOutput, ranks: u64, mode: &str) -> String {
        let p = &self.params;
        let mut s = String::new();
        let aggregate = p.bytes_per_rank() * ranks;
        let _ = writeln!(s, "piotwin IOR-style probe ({mode})");
        let _ = writeln!(s, "Options:");
        let kv = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "{k:<20}: {v}");
        };
        kv(&mut s, "api", self.api_name().into());
        kv(&mut s, "test filename", p.path.clone());
        kv(
            &mut s,
            "access",
            if p.file_per_proc {
                "file-per-process".into()
            } else {
                "single-shared-file".into()
            },
        );
        kv(
            &mut s,
            "type",
            if p.collective {
                "collective".into()
            } else {
                "independent".into()
            },
        );
        kv(&mut s, "segments", p.segments.to_string());
        kv(
            &mut s,
            "ordering in a file",
            if p.random {
                "random".into()
            } else {
                "sequential".into()
            },
        );
        kv(
            &mut s,
            "ordering inter file",
            if p.reorder {
                format!("constant task offset {}", p.tasks_per_node % ranks)
            } else {
                "no tasks offsets".into()
            },
        );
        kv(
            &mut s,
            "tasks",
            format!("{ranks} ({} per node)", p.tasks_per_node),
        );
        kv(&mut s, "repetitions", p.repetitions.to_string());
        kv(&mut s, "xfersize", format_size(p.transfer));
        kv(&mut s, "blocksize", format_size(p.block));
        kv(&mut s, "aggregate filesize", format_size(aggregate));
        kv(
            &mut s,
            "fsync",
            if p.fsync { "yes".into() } else { "no".into() },
        );
        kv(&mut s, "seed", p.seed.to_string());
        let hints: Vec<String> = out.hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        kv(
            &mut s,
            "hints in effect",
            if hints.is_empty() {
                "(none)".into()
            } else {
                hints.join(" ")
            },
        );
        let _ = writeln!(s, "\nResults:\n");
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>4}",
            "access",
            "bw(MiB/s)",
            "IOPS",
            "Latency(s)",
            "block(KiB)",
            "xfer(KiB)",
            "open(s)",
            "wr/rd(s)",
            "close(s)",
            "total(s)",
            "iter"
        );
        let _ = writeln!(
            s,
            "{:<6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>4}",
            "------",
            "---------",
            "----",
            "----------",
            "----------",
            "---------",
            "--------",
            "--------",
            "--------",
            "--------",
            "----"
        );
        for r in &out.reps {
            let _ = writeln!(
                s,
                "{:<6} {:>10.2} {:>10.2} {:>10.6} {:>10.2} {:>10.2} {:>10.6} {:>10.6} {:>10.6} {:>10.6} {:>4}",
                access_name(r.access),
                r.bw_mib_s(),
                r.iops(),
                r.latency_s,
                p.block as f64 / 1024.0,
                p.transfer as f64 / 1024.0,
                r.open_s,
                r.xfer_s,
                r.close_s,
                r.total_s,
                r.iter
            );
        }
        for e in &out.verify_errors {
            let _ = writeln!(s, "ERROR: {e}");
        }
        let _ = writeln!(s, "\nSummary of all tests:");
        let _ = writeln!(
            s,
            "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>6} {:>4} {:>4} {:>3} {:>5} {:>6} {:>12} {:>10} {:>9} {:>5}",
            "Operation",
            "Max(MiB)",
            "Min(MiB)",
            "Mean(MiB)",
            "StdDev",
            "Max(OPs)",
            "Min(OPs)",
            "Mean(OPs)",
            "StdDev",
            "Mean(s)",
            "#Tasks",
            "tPN",
            "reps",
            "fPP",
            "reord",
            "segcnt",
            "blksiz",
            "xsize",
            "aggs(MiB)",
            "API"
        );
        for access in p.accesses() {
            let Some(sum) = summary(out, access) else {
                continue;
            };
            let _ = writeln!(
                s,
                "{:<9} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.5} {:>6} {:>4} {:>4} {:>3} {:>5} {:>6} {:>12} {:>10} {:>9.1} {:>5}",
                access_name(access),
                sum.bw.0,
                sum.bw.1,
                sum.bw.2,
                sum.bw.3,
                sum.ops.0,
                sum.ops.1,
                sum.ops.2,
                sum.ops.3,
                sum.mean_s,
                ranks,
                p.tasks_per_node,
                p.repetitions,
                p.file_per_proc as u8,
                p.reorder as u8,
                p.segments,
                p.block,
                p.transfer,
                aggregate as f64 / MIB,
                self.api_name()
            );
        }
        if let Some(f) = &out.failure {
            let _ = writeln!(s, "\nERROR: the run stopped: {f}");
        }
        s
    }

    /// The run report for `out` from a run on `ranks` ranks in `mode`.
    pub fn report(
        &self,
        out: &IorOutput,
        mode: Mode,
        ranks: u64,
        environment: std::collections::BTreeMap<String, String>,
    ) -> RunReport {
        let p = &self.params;
        let mut metrics = std::collections::BTreeMap::new();
        for access in p.accesses() {
            let Some(sum) = summary(out, access) else {
                continue;
            };
            let a = access_name(access);
            for (name, (max, min, mean, sd)) in [("mib_s", sum.bw), ("ops_s", sum.ops)] {
                metrics.insert(format!("{a}_{name}"), mean);
                metrics.insert(format!("{a}_{name}_max"), max);
                metrics.insert(format!("{a}_{name}_min"), min);
                metrics.insert(format!("{a}_{name}_stddev"), sd);
            }
            metrics.insert(format!("{a}_mean_s"), sum.mean_s);
        }
        let table = Table {
            columns: REP_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .reps
                .iter()
                .map(|r| {
                    vec![
                        access_name(r.access).into(),
                        r.bw_mib_s().into(),
                        r.iops().into(),
                        r.latency_s.into(),
                        (p.block as f64 / 1024.0).into(),
                        (p.transfer as f64 / 1024.0).into(),
                        r.open_s.into(),
                        r.xfer_s.into(),
                        r.close_s.into(),
                        r.total_s.into(),
                        r.iter.into(),
                    ]
                })
                .collect(),
        };
        let mut errors: Vec<String> = out.verify_errors.iter().map(|e| e.to_string()).collect();
        errors.extend(out.failure.iter().cloned());
        RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "ior".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(p).expect("IOR parameters serialise"),
            environment,
            hints: out.hints.clone(),
            headline: headline_among(&metrics, HEADLINE),
            metrics,
            tables: [("repetitions".to_string(), table)].into_iter().collect(),
            errors,
        }
    }
}

/// The summary of one access over all repetitions.
pub(super) struct Summary {
    /// Bandwidth MiB/s: max, min, mean, stddev.
    pub(super) bw: (f64, f64, f64, f64),
    /// Operations per second: max, min, mean, stddev.
    pub(super) ops: (f64, f64, f64, f64),
    /// Mean total time, s.
    pub(super) mean_s: f64,
}

pub(super) fn summary(out: &IorOutput, access: Access) -> Option<Summary> {
    let reps: Vec<&RepResult> = out.reps.iter().filter(|r| r.access == access).collect();
    if reps.is_empty() {
        return None;
    }
    let bw: Vec<f64> = reps.iter().map(|r| r.bw_mib_s()).collect();
    let ops: Vec<f64> = reps.iter().map(|r| r.iops()).collect();
    let times: Vec<f64> = reps.iter().map(|r| r.total_s).collect();
    Some(Summary {
        bw: stats(&bw),
        ops: stats(&ops),
        mean_s: stats(&times).2,
    })
}
