//! The text and the report.

use super::*;

impl Pingpong {
    /// The human table: one line per row, time in µs and bandwidth in MB/s.
    pub fn render(&self, out: &PingpongOutput, label: &str) -> String {
        let mut s = format!("piotwin point-to-point probe ({label})\n");
        let _ = writeln!(
            s,
            "{:<12} {:>6} {:>12} {:>8} {:>14} {:>12}",
            "test", "ranks", "bytes", "reps", "time/op [us]", "MB/s"
        );
        for r in &out.rows {
            // A bandwidth only where bytes move point to point.
            let mb_s = if r.bytes > 0 && r.test != "allreduce" {
                format!("{:.1}", r.bytes as f64 / r.seconds / 1e6)
            } else {
                "-".into()
            };
            let _ = writeln!(
                s,
                "{:<12} {:>6} {:>12} {:>8} {:>14.3} {:>12}",
                r.test,
                r.ranks,
                r.bytes,
                r.iterations,
                r.seconds * 1e6,
                mb_s
            );
        }
        s
    }

    /// The run report: headline `latency_us` (smallest message), `bandwidth_mb_s`
    /// (largest message), `barrier_us`; table `pingpong` with every row.
    pub fn report(
        &self,
        out: &PingpongOutput,
        mode: Mode,
        ranks: u64,
        environment: std::collections::BTreeMap<String, String>,
    ) -> RunReport {
        let mut metrics = std::collections::BTreeMap::new();
        let sends: Vec<&PingRow> = out.rows.iter().filter(|r| r.test == "sendrecv").collect();
        if let Some(r) = sends.iter().min_by_key(|r| r.bytes) {
            metrics.insert("latency_us".to_string(), r.seconds * 1e6);
        }
        if let Some(r) = sends.iter().max_by_key(|r| r.bytes) {
            metrics.insert(
                "bandwidth_mb_s".to_string(),
                r.bytes as f64 / r.seconds / 1e6,
            );
        }
        if let Some(r) = out.rows.iter().find(|r| r.test == "barrier") {
            metrics.insert("barrier_us".to_string(), r.seconds * 1e6);
        }
        let table = Table {
            columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.test.clone().into(),
                        r.ranks.into(),
                        r.bytes.into(),
                        r.iterations.into(),
                        r.seconds.into(),
                        r.active.into(),
                    ]
                })
                .collect(),
        };
        RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "pingpong".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(&self.params).expect("pingpong options serialise"),
            environment,
            hints: Default::default(),
            headline: default_headline(metrics.keys().map(String::as_str)),
            metrics,
            tables: [("pingpong".to_string(), table)].into_iter().collect(),
            errors: out.mismatches.clone(),
        }
    }
}
