//! `--trace FILE` on `piotwin run`: every rank's file calls, from the trace
//! layer under every benchmark, for real (`mpiexec`) and in the twin.

mod common;
use common::*;

/// The rows of a trace file as (rank, file, operation, offset, bytes, tick).
fn rows(path: &std::path::Path) -> Vec<(usize, String, String, Option<u64>, u64, u64)> {
    let mut r = csv::Reader::from_path(path).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "rank",
            "file",
            "operation",
            "offset",
            "offset_etypes",
            "bytes",
            "tick",
            "start_s",
            "duration_s"
        ]
    );
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                rec[0].parse().unwrap(),
                rec[1].to_string(),
                rec[2].to_string(),
                rec[3].parse().ok(),
                rec[5].parse().unwrap(),
                rec[6].parse().unwrap(),
            )
        })
        .collect()
}

/// IOR `-b 64k -t 16k -s 2` on 2 ranks, shared file: each rank writes 8
/// transfers at `(s·2 + rank)·64k + k·16k` and reads them back.
fn check_ior(path: &std::path::Path) {
    let rows = rows(path);
    for rank in 0..2usize {
        let mine: Vec<_> = rows.iter().filter(|r| r.0 == rank).collect();
        let ticks: Vec<u64> = mine.iter().map(|r| r.5).collect();
        assert!(
            ticks.windows(2).all(|w| w[0] < w[1]),
            "ticks grow: {ticks:?}"
        );
        let writes: Vec<u64> = mine
            .iter()
            .filter(|r| r.2 == "MPI_File_write_at")
            .map(|r| r.3.unwrap())
            .collect();
        let expected: Vec<u64> = (0..2u64)
            .flat_map(|s| (0..4u64).map(move |k| (s * 2 + rank as u64) * 65536 + k * 16384))
            .collect();
        assert_eq!(writes, expected, "rank {rank}");
        let reads = mine.iter().filter(|r| r.2 == "MPI_File_read_at").count();
        assert_eq!(reads, 8);
        assert!(mine.iter().any(|r| r.2 == "MPI_File_open"));
        assert!(mine.iter().any(|r| r.2 == "MPI_File_close"));
        assert!(
            mine.iter()
                .filter(|r| r.2.contains("_at"))
                .all(|r| r.4 == 16384)
        );
        assert!(mine.iter().all(|r| r.1.ends_with("t.dat")));
    }
}

const IOR: [&str; 13] = [
    "run", "ior", "-a", "MPIIO", "-b", "64k", "-t", "16k", "-s", "2", "-o", "t.dat", "-e",
];

#[test]
fn twin_trace_has_every_call_of_every_rank_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("default.toml");
    let mut args: Vec<&str> = IOR.to_vec();
    args.extend([
        "--sim",
        scn.to_str().unwrap(),
        "--ranks",
        "2",
        "--trace",
        "tr.csv",
    ]);
    let o = piotwin(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_ior(&dir.path().join("tr.csv"));
    // Virtual times: the same run traces the same bytes.
    let first = std::fs::read(dir.path().join("tr.csv")).unwrap();
    let o = piotwin(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(dir.path().join("tr.csv")).unwrap(), first);
}

#[cfg(feature = "mpi")]
#[test]
fn real_trace_gathers_every_ranks_calls_at_rank_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = IOR.to_vec();
    args.extend(["--trace", "tr.csv"]);
    let Some(o) = mpirun(dir.path(), 2, &args) else {
        return;
    };
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    check_ior(&dir.path().join("tr.csv"));
}

#[test]
fn madbench2_traced_in_the_twin_shows_its_five_phases() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("nfs-raid5.toml");
    let args = madbench2_shared_mpi(
        "2048",
        "8",
        "32",
        &[
            "--sim",
            scn.to_str().unwrap(),
            "--ranks",
            "4",
            "--trace",
            "tr.csv",
        ],
    );
    let o = piotwin(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows = rows(&dir.path().join("tr.csv"));
    let kinds: String = rows
        .iter()
        .filter(|r| r.0 == 3)
        .filter_map(|r| match r.2.as_str() {
            "MPI_File_write_at" => Some('w'),
            "MPI_File_read_at" => Some('r'),
            _ => None,
        })
        .collect();
    assert_eq!(
        kinds,
        "wwwwwwwwrr".to_string() + &"wr".repeat(6) + "wwrrrrrrrr"
    );
}

#[test]
fn a_trace_file_in_a_missing_directory_is_refused() {
    bad_input(
        &[
            "run",
            "ior",
            "--dry-run",
            "--ranks",
            "2",
            "--trace",
            "no/such/t.csv",
        ],
        &["--trace", "no/such/t.csv"],
    );
}

/// `--ior-json`: IOR's own JSON summary beside ours, the same numbers.
#[test]
fn ior_json_has_iors_schema_and_our_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let scn = scenario("default.toml");
    let args = [
        "run",
        "ior",
        "-a",
        "MPIIO",
        "-b",
        "1m",
        "-t",
        "256k",
        "-s",
        "2",
        "-i",
        "2",
        "-o",
        "t.dat",
        "--sim",
        scn.to_str().unwrap(),
        "--ranks",
        "4",
        "--json",
        "ours.json",
        "--ior-json",
        "ior.json",
    ];
    let o = piotwin(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let ours = read_json(&dir.path().join("ours.json"));
    let ior = read_json(&dir.path().join("ior.json"));
    for key in ["Version", "Began", "Command line", "Machine", "Finished"] {
        assert!(ior[key].is_string(), "{key}: {ior}");
    }
    let test = &ior["tests"][0];
    assert_eq!(test["Parameters"]["blockSize"], 1 << 20);
    assert_eq!(test["Parameters"]["transferSize"], 256 << 10);
    assert_eq!(test["Parameters"]["segmentCount"], 2);
    assert_eq!(test["Options"]["aggregate filesize"], "8 MiB");
    assert_eq!(
        test["Options"]["xfersize"],
        "256.00 KiB".replace("256.00 KiB", "262144 bytes")
    );
    let results = test["Results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "one array per repetition");
    let rows = &ours["tables"]["repetitions"]["rows"];
    for (k, r) in results
        .iter()
        .flat_map(|rep| rep.as_array().unwrap())
        .enumerate()
    {
        for key in [
            "access",
            "bwMiB",
            "blockKiB",
            "xferKiB",
            "iops",
            "latency",
            "openTime",
            "wrRdTime",
            "closeTime",
            "totalTime",
        ] {
            assert!(!r[key].is_null(), "{key}: {r}");
        }
        assert_eq!(r["bwMiB"], rows[k][1]);
    }
    let summary = ior["summary"].as_array().unwrap();
    assert_eq!(summary[0]["operation"], "write");
    assert_eq!(summary[0]["bwMeanMIB"], ours["metrics"]["write_mib_s"]);
    assert_eq!(summary[1]["bwMaxMIB"], ours["metrics"]["read_mib_s_max"]);
}
