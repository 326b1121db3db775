//! Characterising phases (`shared/spec/io_phases.md` §4): each phase replayed
//! as an IOR-style run — segments 1, block = rep · request size, transfer =
//! request size, np ranks, `-F` for a file per process, `-c` for collective
//! calls — whose bandwidth BW_CH gives the phase's I/O time, weight / BW_CH;
//! and the peak BW_PK of the storage the scenario describes.
//!
//! What it is not: the runs themselves (`piotwin phases --replay-*` makes
//! them, for real or in the twin, as `piotwin run ior` does).

use piotwin_sim::scenario::{Device, Scenario};

use super::Access;
use super::model::Phase;

/// The IOR options that replay `phase` with its file at `file`.
/// A phase that reads writes first (`-w -r`) so that there is data to read;
/// its read bandwidth is the one used.
pub fn ior_options(phase: &Phase, file: &str) -> Vec<String> {
    let rs = phase.replay_request();
    let mut o: Vec<String> = vec![
        "-a".into(),
        if phase.metadata.mpiio {
            "MPIIO"
        } else {
            "POSIX"
        }
        .into(),
        "-b".into(),
        (phase.reps * rs).to_string(),
        "-t".into(),
        rs.to_string(),
        "-s".into(),
        "1".into(),
        "-i".into(),
        "1".into(),
    ];
    if phase.metadata.access_type == "per-process" {
        o.push("-F".into());
    }
    if phase.metadata.collective == Some(true) {
        o.push("-c".into());
    }
    o.push("-w".into());
    if phase.unit.iter().any(|u| u.access == Access::Read) {
        o.push("-r".into());
    }
    o.extend(["-o".into(), file.into()]);
    o
}

/// The replay as a command line for the real IOR (`ior`), which takes the same
/// options (piotwin's IOR probe uses IOR's names).
pub fn ior_command_line(phase: &Phase, file: &str) -> String {
    format!(
        "mpiexec -n {} ior {}",
        phase.ranks.len(),
        ior_options(phase, file).join(" ")
    )
}

/// BW_CH of `phase` from its replay's bandwidths (bytes/s): the write or the
/// read bandwidth, their mean for a phase of both.
pub fn characterised_bandwidth(
    phase: &Phase,
    write: Option<f64>,
    read: Option<f64>,
) -> Option<f64> {
    let has = |a: Access| phase.unit.iter().any(|u| u.access == a);
    match (has(Access::Write), has(Access::Read)) {
        (true, true) => Some((write? + read?) / 2.0),
        (true, false) => write,
        (false, _) => read,
    }
}

/// The write and read bandwidths of an IOR replay's report over its data
/// calls, bytes/s: all ranks' bytes over IOR's wr/rd time (the slowest rank's
/// time in its writes or reads), the mean over repetitions. The measure of
/// BW_MD, which counts a phase's data calls only: IOR's own bandwidth also
/// counts its open and close, which an application pays once, not per phase
/// (tens of ms for an MPI-IO open here, more than a small phase's data).
pub fn data_bandwidths(report: &crate::report::RunReport) -> (Option<f64>, Option<f64>) {
    let Some(t) = report.tables.get("repetitions") else {
        return (None, None);
    };
    let col = |name: &str| t.columns.iter().position(|c| c == name);
    let (Some(access), Some(block), Some(wrrd)) = (col("access"), col("block_kib"), col("wrrd_s"))
    else {
        return (None, None);
    };
    let mean = |which: &str| {
        let bws: Vec<f64> = t
            .rows
            .iter()
            .filter(|r| r[access].as_str() == Some(which))
            .filter_map(|r| {
                let bytes = r[block].as_f64()? * 1024.0 * report.ranks as f64;
                let s = r[wrrd].as_f64()?;
                (s > 0.0).then_some(bytes / s)
            })
            .collect();
        (!bws.is_empty()).then(|| bws.iter().sum::<f64>() / bws.len() as f64)
    };
    (mean("write"), mean("read"))
}

/// The peak bandwidth of the scenario's storage, BW_PK, bytes/s: the device's
/// best streaming rate (the larger of read and write) per I/O server, summed
/// over the servers — what IOzone-style device probes would find.
pub fn peak_bandwidth(scenario: &Scenario) -> f64 {
    device_peak(&scenario.server.device) * scenario.server.count as f64
}

fn device_peak(d: &Device) -> f64 {
    match d {
        Device::Ssd(s) => s.read_bw.max(s.write_bw),
        Device::Hdd(h) => h.transfer_rate,
        Device::Raid(r) => {
            let data = match r.level {
                0 => r.disks,
                5 => r.disks.saturating_sub(1),
                _ => r.disks.saturating_sub(2),
            };
            device_peak(&r.member) * data.max(1) as f64
        }
    }
}

/// One phase characterised and estimated.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The phase's id.
    pub phase: usize,
    /// BW_CH, bytes/s.
    pub bw_ch: f64,
    /// Time_io = weight / BW_CH, seconds.
    pub time_io: f64,
    /// BW_MD: the traced run's bandwidth in the phase, bytes/s.
    pub bw_md: f64,
    /// The traced run's I/O time in the phase with every rank in, seconds
    /// ([`Phase::io_time_all_in`]): the time BW_MD is measured over.
    pub traced_time: f64,
    /// The traced run's I/O time in the phase as its slowest rank paid it,
    /// waits for other ranks in collective calls included, seconds.
    pub traced_time_with_waits: f64,
    /// 100 · |BW_CH − BW_MD| / BW_MD.
    pub error_rel: f64,
    /// BW_MD / BW_PK · 100, where the peak is known.
    pub usage: Option<f64>,
    /// The replay's options.
    pub ior: Vec<String>,
}

/// The estimate of `phase` from its BW_CH and the peak.
pub fn estimate(phase: &Phase, bw_ch: f64, peak: Option<f64>, ior: Vec<String>) -> Estimate {
    let bw_md = phase.traced_bandwidth();
    Estimate {
        phase: phase.id,
        bw_ch,
        time_io: if bw_ch > 0.0 {
            phase.weight as f64 / bw_ch
        } else {
            f64::INFINITY
        },
        bw_md,
        traced_time: phase.io_time_all_in,
        traced_time_with_waits: phase.io_time,
        error_rel: if bw_md > 0.0 {
            100.0 * (bw_ch - bw_md).abs() / bw_md
        } else {
            f64::NAN
        },
        usage: peak.filter(|&p| p > 0.0).map(|p| 100.0 * bw_md / p),
        ior,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phases::Pointer;
    use crate::phases::model::{InitialOffset, Metadata, UnitCall};

    fn phase(unit: Vec<UnitCall>, per_process: bool, collective: bool) -> Phase {
        Phase {
            id: 3,
            file: "/f".into(),
            unit,
            ranks: vec![0, 1, 2, 3],
            reps: 6,
            displacement: Some(1 << 20),
            weight: 0,
            request_range: None,
            initial_offset: InitialOffset::Linear { a: 0, b: 1 << 23 },
            tick: 0,
            span: (0.0, 1.0),
            io_time: 0.5,
            io_time_all_in: 0.5,
            metadata: Metadata {
                access_mode: "sequential".into(),
                access_type: if per_process { "per-process" } else { "shared" }.into(),
                collective: Some(collective),
                blocking: true,
                pointer: Pointer::Explicit,
                mpiio: true,
            },
        }
    }

    #[test]
    fn a_phase_becomes_the_ior_run_of_the_method() {
        let w = UnitCall {
            access: Access::Write,
            bytes: 1 << 20,
        };
        let r = UnitCall {
            access: Access::Read,
            bytes: 1 << 20,
        };
        let p = phase(vec![w, r], false, true);
        assert_eq!(
            ior_command_line(&p, "/s/p3"),
            "mpiexec -n 4 ior -a MPIIO -b 6291456 -t 1048576 -s 1 -i 1 -c -w -r -o /s/p3"
        );
        assert_eq!(characterised_bandwidth(&p, Some(2.0), Some(4.0)), Some(3.0));
        let p = phase(vec![w], true, false);
        assert!(ior_options(&p, "x").contains(&"-F".to_string()));
        assert_eq!(characterised_bandwidth(&p, Some(2.0), None), Some(2.0));
    }

    #[test]
    fn the_peak_sums_the_servers_streaming_rates() {
        let s = Scenario::from_str(
            include_str!("../../scenarios/nfs-raid5.toml"),
            "nfs-raid5.toml",
        )
        .unwrap();
        // RAID 5 of 5 disks at 78 MB/s outer: 4 data disks, one server.
        assert_eq!(peak_bandwidth(&s), 4.0 * 78e6);
    }
}
