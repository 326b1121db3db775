//! `piotwin phases`: traces (piotwin's, Darshan DXT text) to I/O phases.

mod common;
use common::*;

#[test]
fn a_twin_madbench2_trace_gives_five_phases_json_and_plot() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("pvfs2-jbod.toml");
    let run = madbench2_shared_mpi(
        "1024",
        "4",
        "32",
        &[
            "--sim",
            scn.to_str().unwrap(),
            "--ranks",
            "4",
            "--trace",
            "t.csv",
        ],
    );
    let o = piotwin(dir.path(), &run);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = piotwin(dir.path(), &["phases", "t.csv", "--out", "ph"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // B = 4: 4 writes; 2 reads; (write, read) twice; 2 writes; 4 reads.
    let rows: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[1].to_string(), w[4].to_string())
        })
        .collect();
    let expect = [
        ("write", "4"),
        ("read", "2"),
        ("write+read", "2"),
        ("write", "2"),
        ("read", "4"),
    ];
    assert_eq!(
        rows,
        expect.map(|(a, b)| (a.to_string(), b.to_string())).to_vec(),
        "{text}"
    );
    let j = read_json(&dir.path().join("ph/phases.json"));
    assert_eq!(j["phases"].as_array().unwrap().len(), 5);
    assert_eq!(
        j["phases"][0]["initial_offset"]["linear"]["b"],
        4 * 512 * 512 * 8
    );
    assert!(dir.path().join("ph/offsets.svg").is_file());
    // Without a replay: each phase's IOR command line.
    assert!(
        text.contains(
            "phase 1: mpiexec -n 4 ior -a MPIIO -b 8388608 -t 2097152 -s 1 -i 1 -w -o phase1.dat"
        ),
        "{text}"
    );
    // Replayed in the twin: BW_CH, Time_io and the error per phase, the peak from the scenario.
    let o = piotwin(
        dir.path(),
        &[
            "phases",
            "t.csv",
            "--out",
            "ph",
            "--replay-sim",
            scn.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("total Time_io"), "{}", stdout(&o));
    let j = read_json(&dir.path().join("ph/phases.json"));
    let e = j["estimates"].as_array().unwrap();
    assert_eq!(e.len(), 5);
    for (x, p) in e.iter().zip(j["phases"].as_array().unwrap()) {
        let (w, bw, t) = (
            p["weight"].as_f64().unwrap(),
            x["bw_ch"].as_f64().unwrap(),
            x["time_io"].as_f64().unwrap(),
        );
        assert!(bw > 0.0 && ((w / bw) - t).abs() <= 1e-9 * t, "{x}");
        assert!(x["usage"].as_f64().unwrap() > 0.0);
    }
    assert!(j["peak_bytes_per_s"].as_f64().unwrap() > 0.0);
    assert!(dir.path().join("ph/estimate.svg").is_file());
    let page = std::fs::read_to_string(dir.path().join("ph/index.html")).unwrap();
    assert!(
        page.contains("estimate.svg") && page.contains("mpiexec -n 4 ior"),
        "{page}"
    );
}

#[test]
fn darshan_dxt_text_is_read_and_unusable_offsets_are_said() {
    let dir = tempfile::tempdir().unwrap();
    // darshan-dxt-parser of Darshan 3.1: MPI-IO rows without offsets.
    let dxt = "\
# DXT, file_id: 12, file_name: /scratch/a
# DXT, rank: 0, hostname: n1
# DXT, write_count: 3, read_count: 0
# DXT, mnt_pt: /scratch, fs_type: ext4
# Module    Rank  Wt/Rd  Segment          Length    Start(s)      End(s)
 X_MPIIO       0  write        0          4096      0.0010      0.0020
 X_MPIIO       0  write        1          4096      0.0030      0.0040
 X_MPIIO       0  write        2          4096      0.0050      0.0060
";
    std::fs::write(dir.path().join("a.dxt"), dxt).unwrap();
    let o = piotwin(dir.path(), &["phases", "a.dxt", "--out", "ph"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("3 X_MPIIO rows have no offset column"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("unknown"), "{}", stdout(&o));
}

#[test]
fn a_file_that_is_no_trace_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.txt"), "hello\n").unwrap();
    let o = piotwin(dir.path(), &["phases", "x.txt", "--out", "ph"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("x.txt:1: neither a piotwin trace"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("ph").exists());
}

/// A real 4-rank trace replayed for real: every phase's IOR run kept in --out,
/// its file removed from the scratch directory.
#[cfg(feature = "mpi")]
#[test]
fn real_trace_replayed_for_real_keeps_every_phase_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scratch")).unwrap();
    let run = madbench2_shared_mpi("256", "4", "16", &["-p", "scratch", "--trace", "t.csv"]);
    let Some(o) = mpirun(dir.path(), 4, &run) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = piotwin(
        dir.path(),
        &[
            "phases",
            "t.csv",
            "--out",
            "ph",
            "--replay-real",
            "--dir",
            "scratch",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j = read_json(&dir.path().join("ph/phases.json"));
    let n = j["phases"].as_array().unwrap().len();
    assert_eq!(n, 5, "{j}");
    assert_eq!(j["estimates"].as_array().unwrap().len(), n);
    for k in 1..=n {
        let r = read_json(&dir.path().join(format!("ph/phase{k}.json")));
        assert_eq!(r["benchmark"], "ior");
        assert_eq!(r["mode"], "real");
        // BW_CH is over the replay's data calls (IOR's wr/rd time), as BW_MD:
        // phase 1 writes only, so it is all ranks' bytes over that time.
        if k == 1 {
            let t = &r["tables"]["repetitions"];
            let at = |row: &serde_json::Value, c: &str| row[column(t, c)].as_f64().unwrap();
            let row = &t["rows"][0];
            let bw = at(row, "block_kib") * 1024.0 * 4.0 / at(row, "wrrd_s");
            let bw_ch = j["estimates"][0]["bw_ch"].as_f64().unwrap();
            assert!((bw_ch - bw).abs() <= 1e-9 * bw, "{bw_ch} against {bw}");
        }
    }
    assert_eq!(files_in(&dir.path().join("scratch")), Vec::<String>::new());
}
