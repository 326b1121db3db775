//! The text and the report.

use super::*;

impl Iozone {
    /// IOzone's header and table (kB/s per file size × record size × pass), then
    /// each pass's seconds, records and fsync time; `mode` says where it ran.
    pub fn render(&self, out: &IozoneOutput, ranks: u64, mode: &str) -> String {
        let p = &self.params;
        let mut s = String::new();
        let _ = writeln!(s, "\tpiotwin IOzone-style probe ({mode})");
        if p.auto {
            let _ = writeln!(s, "\tAuto Mode");
        }
        if ranks > 1 {
            let _ = writeln!(
                s,
                "\tThroughput test with {ranks} processes, one file each: kB/s are aggregate"
            );
        }
        let api = match p.api {
            Api::Posix => "POSIX",
            Api::MpiIo => "MPI-IO (independent)",
            Api::Fortran(_) => unreachable!("the IOzone probe's --api offers POSIX and MPIIO"),
        };
        let _ = writeln!(s, "\tAPI: {api}, test file `{}`", p.file_name(0, ranks));
        if p.fsync_in_time {
            let _ = writeln!(s, "\tInclude fsync in write timing");
        }
        if p.cold {
            let _ = writeln!(
                s,
                "\tCold reads: the file's cached pages dropped before each read (fsync + POSIX_FADV_DONTNEED)"
            );
        }
        if p.tests.contains(&Test::Stride) {
            let _ = writeln!(s, "\tStride = {} records", p.stride);
        }
        let _ = writeln!(s, "\tData pattern seed {}", p.seed);
        let _ = writeln!(s, "\tOutput is in kBytes/sec\n");
        let passes = p.passes();
        let mut top = format!("{:>16}{:>8}", "", "");
        let mut head = format!("{:>16}{:>8}", "kB", "reclen");
        for pass in &passes {
            let (a, b) = pass.header();
            let _ = write!(top, " {a:>9}");
            let _ = write!(head, " {b:>9}");
        }
        let _ = writeln!(s, "{}", top.trim_end());
        let _ = writeln!(s, "{head}");
        let by_cell: BTreeMap<(u64, u64, Pass), &Row> = out
            .rows
            .iter()
            .map(|r| ((r.file_bytes, r.record_bytes, r.test), r))
            .collect();
        for (fs, rs) in p.combos() {
            if !passes.iter().any(|&x| by_cell.contains_key(&(fs, rs, x))) {
                continue;
            }
            let mut line = format!("{:>16}{:>8}", fs / 1024, rs / 1024);
            for &pass in &passes {
                match by_cell.get(&(fs, rs, pass)) {
                    Some(r) => {
                        // a space before each column, so that a rate too wide for it stays apart
                        let _ = write!(line, " {:>9.0}", r.kb_s);
                    }
                    None => line.push_str(&" ".repeat(10)),
                }
            }
            let _ = writeln!(s, "{}", line.trim_end());
        }
        let _ = writeln!(
            s,
            "\nPer pass (kB = 1024 bytes; fsync s: the pass's final fsync{}):",
            if p.fsync_in_time {
                ", inside the seconds (-e)"
            } else {
                ", after the seconds"
            }
        );
        let _ = writeln!(
            s,
            "{:>12} {:>8} {:<13} {:>12} {:>10} {:>12} {:>10} {:>12}",
            "file kB", "reclen", "test", "seconds", "ops", "kB/s", "fsync s", "dirty kB"
        );
        for r in &out.rows {
            let (fsync, dirty) = match r.fsync_s {
                Some(f) => (format!("{f:.6}"), format!("{}", r.dirty_bytes / 1024)),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                s,
                "{:>12} {:>8} {:<13} {:>12.6} {:>10} {:>12.0} {:>10} {:>12}",
                r.file_bytes / 1024,
                r.record_bytes / 1024,
                r.test.name(),
                r.seconds,
                r.ops,
                r.kb_s,
                fsync,
                dirty
            );
        }
        for e in &out.verify_errors {
            let _ = writeln!(s, "ERROR: {e}");
        }
        if let Some(f) = &out.failure {
            let _ = writeln!(s, "\nERROR: the run stopped: {f}");
        }
        if out.verify_errors.is_empty() && out.failure.is_none() {
            let _ = writeln!(s, "\npiotwin iozone test complete.");
        }
        s
    }

    /// The run report: metrics `<pass>_kb_s@s=<file bytes>,r=<record bytes>` (and
    /// `<pass>_fsync_s@…` for write passes), and the `rows` table ([`ROW_COLUMNS`];
    /// read back with [`rows_from_report`]).
    pub fn report(
        &self,
        out: &IozoneOutput,
        mode: Mode,
        ranks: u64,
        environment: BTreeMap<String, String>,
    ) -> RunReport {
        let mut metrics = BTreeMap::new();
        for r in &out.rows {
            let at = format!("s={},r={}", r.file_bytes, r.record_bytes);
            let name = r.test.name().replace('-', "_");
            metrics.insert(format!("{name}_kb_s@{at}"), r.kb_s);
            if let Some(f) = r.fsync_s {
                metrics.insert(format!("{name}_fsync_s@{at}"), f);
            }
        }
        let verify_bytes: u64 = out.verify_errors.iter().map(|e| e.count).sum();
        metrics.insert("verify_errors".into(), verify_bytes as f64);
        let table = Table {
            columns: ROW_COLUMNS.iter().map(|c| c.to_string()).collect(),
            rows: out
                .rows
                .iter()
                .map(|r| {
                    vec![
                        r.test.name().into(),
                        r.file_bytes.into(),
                        r.record_bytes.into(),
                        r.seconds.into(),
                        r.bytes.into(),
                        r.ops.into(),
                        r.kb_s.into(),
                        r.fsync_s.into(),
                        r.dirty_bytes.into(),
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
            benchmark: "iozone".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(&self.params).expect("IOzone parameters serialise"),
            environment,
            hints: out.hints.clone(),
            headline: default_headline(metrics.keys().map(String::as_str)),
            metrics,
            tables: [("rows".to_string(), table)].into_iter().collect(),
            errors,
        }
    }
}
