//! IOR's own JSON summary (`ior -O summaryFormat=JSON`), so that scripts
//! written for IOR read piotwin's runs: `Version`, `Began`, `Command line`,
//! `Machine`, `tests[]` (each with `Parameters`, `Options`, `Results[]` — one
//! array per repetition of `access, bwMiB, blockKiB, xferKiB, iops, latency,
//! openTime, wrRdTime, closeTime, totalTime` — and `Finished`), `summary[]`
//! (per access: `bwMaxMIB` … `MeanTime`, `xsizeMiB`) and `Finished`. The keys
//! and their meaning are IOR 4's (`src/ior-output.c`); `Version` names piotwin.
//! Times of day are when the summary is written (`Began`: minus the
//! repetitions' total time), as `ctime` prints them.

use serde_json::{Value, json};

use super::output::summary;
use super::*;

const KIB: f64 = 1024.0;

/// IOR's `HumanReadable(value, BASE_TWO)`: `16 MiB`, `1.50 GiB`, `4096 bytes`.
pub fn human_readable(value: u64) -> String {
    const M: u64 = 1 << 20;
    const G: u64 = 1 << 30;
    const T: u64 = 1 << 40;
    for (unit, name) in [(T, "TiB"), (G, "GiB"), (M, "MiB")] {
        if value >= unit {
            return match value % unit {
                0 => format!("{} {name}", value / unit),
                _ => format!("{:.2} {name}", value as f64 / unit as f64),
            };
        }
    }
    format!("{value} bytes")
}

/// `time(NULL)` + `secs` as `ctime_r` prints it, without the newline
/// (`Thu Mar 30 16:09:19 2023`), in the local time zone.
fn ctime(offset_s: f64) -> String {
    // SAFETY: time(2), localtime_r(3) and strftime(3) on buffers we own.
    unsafe {
        let t = libc::time(std::ptr::null_mut()) + offset_s.round() as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        let mut buf = [0u8; 64];
        let n = libc::strftime(
            buf.as_mut_ptr() as *mut libc::c_char,
            buf.len(),
            c"%a %b %e %H:%M:%S %Y".as_ptr(),
            &tm,
        );
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

impl Ior {
    /// IOR's JSON summary of `out`, a run on `ranks` ranks.
    pub fn ior_json(&self, out: &IorOutput, ranks: u64) -> Value {
        let p = &self.params;
        let api = self.api_name();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let command: Vec<String> = std::env::args().collect();
        let ran: f64 = out.reps.iter().map(|r| r.total_s).sum();
        let flag = |b: bool| i64::from(b);
        let parameters: serde_json::Map<String, Value> = [
            ("testID", json!(0)),
            ("refnum", json!(0)),
            ("api", json!(api)),
            ("platform", json!(format!("{host}(Linux)"))),
            ("testFileName", json!(p.path)),
            ("deadlineForStonewall", json!(0)),
            ("stoneWallingWearOut", json!(0)),
            ("maxTimeDuration", json!(0)),
            ("outlierThreshold", json!(0)),
            ("options", json!("(null)")),
            ("dryRun", json!(0)),
            ("nodes", json!(1)),
            ("memoryPerTask", json!(0)),
            ("memoryPerNode", json!(0)),
            ("tasksPerNode", json!(p.tasks_per_node)),
            ("repetitions", json!(p.repetitions)),
            ("multiFile", json!(0)),
            ("interTestDelay", json!(0)),
            ("fsync", json!(flag(p.fsync))),
            ("fsyncperwrite", json!(0)),
            ("useExistingTestFile", json!(0)),
            ("uniqueDir", json!(0)),
            ("singleXferAttempt", json!(0)),
            ("readFile", json!(flag(p.read))),
            ("writeFile", json!(flag(p.write))),
            ("filePerProc", json!(flag(p.file_per_proc))),
            ("reorderTasks", json!(flag(p.reorder))),
            ("reorderTasksRandom", json!(0)),
            ("reorderTasksRandomSeed", json!(0)),
            ("randomOffset", json!(flag(p.random))),
            ("checkWrite", json!(0)),
            ("checkRead", json!(0)),
            ("dataPacketType", json!(0)),
            ("keepFile", json!(flag(p.keep_file))),
            ("keepFileWithError", json!(0)),
            ("warningAsErrors", json!(0)),
            ("verbose", json!(0)),
            ("data packet type", json!("g")),
            ("setTimeStampSignature/incompressibleSeed", json!(0)),
            ("collective", json!(flag(p.collective))),
            ("segmentCount", json!(p.segments)),
            ("transferSize", json!(p.transfer)),
            ("blockSize", json!(p.block)),
        ]
        .into_iter()
        .map(|(k, v): (&str, Value)| (k.to_string(), v))
        .collect();
        let aggregate = p.block * p.segments * ranks;
        let options = json!({
            "api": api,
            "apiVersion": "",
            "test filename": p.path,
            "access": if p.file_per_proc { "file-per-process" } else { "single-shared-file" },
            "type": if p.collective { "collective" } else { "independent" },
            "segments": p.segments,
            "ordering in a file": if p.random { "random" } else { "sequential" },
            "ordering inter file": if p.reorder { "constant task offset" } else { "no tasks offsets" },
            "nodes": 1,
            "tasks": ranks,
            "clients per node": ranks,
            "repetitions": p.repetitions,
            "xfersize": human_readable(p.transfer),
            "blocksize": human_readable(p.block),
            "aggregate filesize": human_readable(aggregate),
        });
        let mut results: Vec<Vec<Value>> = Vec::new();
        for r in &out.reps {
            let i = r.iter as usize;
            if results.len() <= i {
                results.resize_with(i + 1, Vec::new);
            }
            results[i].push(json!({
                "access": access_name(r.access),
                "bwMiB": r.bw_mib_s(),
                "blockKiB": p.block as f64 / KIB,
                "xferKiB": p.transfer as f64 / KIB,
                "iops": r.iops(),
                "latency": r.latency_s,
                "openTime": r.open_s,
                "wrRdTime": r.xfer_s,
                "closeTime": r.close_s,
                "totalTime": r.total_s,
            }));
        }
        let summary_rows: Vec<Value> = p
            .accesses()
            .into_iter()
            .filter_map(|access| {
                let s = summary(out, access)?;
                Some(json!({
                    "operation": access_name(access),
                    "API": api,
                    "TestID": 0,
                    "ReferenceNumber": 0,
                    "segmentCount": p.segments,
                    "blockSize": p.block,
                    "transferSize": p.transfer,
                    "numTasks": ranks,
                    "tasksPerNode": p.tasks_per_node,
                    "repetitions": p.repetitions,
                    "filePerProc": flag(p.file_per_proc),
                    "reorderTasks": flag(p.reorder),
                    "taskPerNodeOffset": if p.reorder { p.tasks_per_node } else { 0 },
                    "reorderTasksRandom": 0,
                    "reorderTasksRandomSeed": 0,
                    "bwMaxMIB": s.bw.0,
                    "bwMinMIB": s.bw.1,
                    "bwMeanMIB": s.bw.2,
                    "bwStdMIB": s.bw.3,
                    "OPsMax": s.ops.0,
                    "OPsMin": s.ops.1,
                    "OPsMean": s.ops.2,
                    "OPsSD": s.ops.3,
                    "MeanTime": s.mean_s,
                    "xsizeMiB": aggregate as f64 / MIB,
                }))
            })
            .collect();
        let now = ctime(0.0);
        json!({
            "Version": format!("piotwin {} (IOR 4 JSON summary)", env!("CARGO_PKG_VERSION")),
            "Began": ctime(-ran),
            "Command line": command.join(" "),
            "Machine": format!("Linux {host}"),
            "tests": [{
                "TestID": 0,
                "StartTime": ctime(-ran),
                "Path": p.path,
                "Parameters": parameters,
                "Options": options,
                "Results": results,
                "Finished": now,
            }],
            "summary": summary_rows,
            "Finished": now,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_ior_prints_them() {
        assert_eq!(human_readable(1 << 20), "1 MiB");
        assert_eq!(human_readable(16 << 20), "16 MiB");
        assert_eq!(human_readable(3 << 29), "1.50 GiB");
        assert_eq!(human_readable(4096), "4096 bytes");
        assert_eq!(ctime(0.0).split_whitespace().count(), 5);
    }
}
