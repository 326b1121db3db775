//! End-to-end tests of `piotwin run btio` and `piotwin run btio-kernel`.
//!
//! Which back end each group needs:
//! * `bad_*`: none (the input is refused before any back end starts), `real_bad_*`
//!   `mpiexec` (the process count comes from the launcher);
//! * `twin_*`: the twin (`backend::sim`, a file in `scenarios/`);
//! * `real_*`: the real back end (`backend::real`) and `mpiexec` (or `PIOTWIN_MPIEXEC`).
//!
//! The real-mode files are checked by a reader written here from the spec
//! (`spec/btio.md`), independent of the benchmark's own layout code: the canonical
//! file holds `u(5, nx, ny, nz)` per dump, and double `e` of it is `e + 1`; an
//! `epio` file holds the rank's cells of BT's multi-partition one after another, one Fortran
//! sequential record per cell and dump (a 4-byte length before and after each),
//! each in Fortran order.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::*;

/// A file with `text` in a directory of its own (so the run's directory stays empty).
fn input_file(text: &str) -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("inputbt.data");
    std::fs::write(&p, text).unwrap();
    let s = p.to_str().unwrap().to_string();
    (d, s)
}

#[test]
fn bad_inputs_exit_2_naming_the_input() {
    let dry = |extra: &[&str], ranks: &str| -> Vec<String> {
        let mut v: Vec<String> = ["run", "btio"].iter().map(|s| s.to_string()).collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.extend(["--dry-run", "--ranks", ranks].map(String::from));
        v
    };
    let run = |args: Vec<String>, expect: &[&str]| {
        bad_input(&args.iter().map(String::as_str).collect::<Vec<_>>(), expect)
    };
    run(
        dry(&["--class", "A"], "8"),
        &["number of processes (8)", "square"],
    );
    run(dry(&["--grid", "64,4,64"], "4"), &["--grid", "at least 3"]);
    run(dry(&["--class", "S"], "25"), &["--class S", "at least 3"]);
    run(dry(&["--steps", "0"], "4"), &["--steps"]);
    run(dry(&["--wr-interval", "0"], "4"), &["--wr-interval"]);
    run(dry(&["--grid", "12,12"], "4"), &["--grid", "NX,NY,NZ"]);
    run(dry(&["--subtype", "hdf5"], "4"), &["hdf5"]);
    let (_keep, f) = input_file("200\n0.0008d0\n64 sixty-four 64\n5 0\n");
    run(
        dry(&["--input", &f], "4"),
        &[&format!("{f}:3"), "sixty-four"],
    );
    let (_keep2, f) = input_file("200\n0.0008d0\n64 64 4\n5 0\n");
    run(dry(&["--input", &f], "4"), &[&format!("{f}:3")]);
    run(
        dry(&["--input", "/nonexistent/inputbt.data"], "4"),
        &["--input /nonexistent/inputbt.data"],
    );
    // The kernel.
    let kernel = |extra: &[&str], ranks: &str| -> Vec<String> {
        let mut v: Vec<String> = ["run", "btio-kernel"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v.extend(["--dry-run", "--ranks", ranks].map(String::from));
        v
    };
    run(kernel(&[], "3"), &["number of processes (3)"]);
    run(kernel(&["--method", "4"], "4"), &["--method", "4"]);
    run(kernel(&["--mode", "x"], "4"), &["--mode"]);
    run(kernel(&["--records", "0"], "4"), &["--records"]);
    let (_keep3, f) = input_file("x\n3\n5\n64 64 64\n.\n");
    run(kernel(&["--input", &f], "4"), &[&format!("{f}:1")]);
    let (_keep4, f) = input_file("w\n3\n5\n64 64\n.\n");
    run(kernel(&["--input", &f], "4"), &[&format!("{f}:4")]);
    // The twin refuses the same way.
    let sc = a_scenario();
    bad_input(
        &["run", "btio", "--sim", sc.to_str().unwrap(), "--ranks", "8"],
        &["number of processes (8)"],
    );
}

// ---------------------------------------------------------------- twin

fn a_scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/default.toml")
}

#[test]
fn twin_btio_every_subtype_runs_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let sc = a_scenario();
    for subtype in ["full", "simple", "fortran", "epio", "none"] {
        let json = format!("{subtype}.json");
        let o = piotwin(
            dir.path(),
            &[
                "run",
                "btio",
                "--class",
                "W",
                "--steps",
                "20",
                "--subtype",
                subtype,
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "16",
                "--json",
                &json,
                "--csv",
                &format!("{subtype}.csv"),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{subtype}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("BT Benchmark Completed."), "{out}");
        let r = read_json(&dir.path().join(&json));
        assert_eq!(
            (&r["benchmark"], &r["mode"], &r["ranks"]),
            (&"btio".into(), &"sim".into(), &16.into())
        );
        let m = &r["metrics"];
        assert!(m["mops"].as_f64().unwrap() > 0.0 && m["total_time_s"].as_f64().unwrap() > 0.0);
        assert!(
            r["params"]["compute"]
                .as_str()
                .unwrap()
                .starts_with("NPB BT (copy_faces")
        );
        // The twin holds no data: nothing is verified, and nothing claims it was.
        assert!(
            out.contains("NOT PERFORMED") && !out.contains("SUCCESSFUL"),
            "{out}"
        );
        assert!(m.get("verified").is_none(), "{subtype}: {m}");
        let csv = std::fs::read_to_string(dir.path().join(format!("{subtype}.csv"))).unwrap();
        assert!(!csv.contains("verified"), "{csv}");
        if subtype != "none" {
            assert!(out.contains("NOT PERFORMED (no data)"), "{out}");
            assert_eq!(m["bytes_written"], 4.0 * 40.0 * 24.0 * 24.0 * 24.0);
            for k in [
                "io_rate_mb_s",
                "effective_output_mb_s",
                "io_time_s",
                "io_percent",
            ] {
                assert!(m[k].as_f64().unwrap() > 0.0, "{subtype} {k}: {}", m[k]);
            }
        }
        assert!(csv.starts_with("metric,value"), "{csv}");
    }
}

#[test]
fn twin_kernel_every_method_writes_and_reads() {
    let dir = tempfile::tempdir().unwrap();
    let sc = a_scenario();
    for method in ["0", "1", "2", "3"] {
        for mode in ["w", "r"] {
            let o = piotwin(
                dir.path(),
                &[
                    "run",
                    "btio-kernel",
                    "--method",
                    method,
                    "--mode",
                    mode,
                    "--records",
                    "3",
                    "--grid",
                    "30,30,30",
                    "--sim",
                    sc.to_str().unwrap(),
                    "--ranks",
                    "9",
                    "--json",
                    "k.json",
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{method}{mode}: {}", stderr(&o));
            let out = stdout(&o);
            assert!(
                out.contains("Verification             : NOT PERFORMED (no data)"),
                "{out}"
            );
            let r = read_json(&dir.path().join("k.json"));
            assert_eq!(r["benchmark"], "btio-kernel");
            assert!(r["metrics"].get("verified").is_none(), "{}", r["metrics"]);
            assert_eq!(r["metrics"]["bytes"], 3.0 * 40.0 * 27000.0);
            assert!(r["metrics"]["io_rate_mb_s"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn twin_btio_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let sc = a_scenario();
    for name in ["a.json", "b.json"] {
        let o = piotwin(
            dir.path(),
            &[
                "run",
                "btio",
                "--class",
                "W",
                "--steps",
                "10",
                "--sim",
                sc.to_str().unwrap(),
                "--ranks",
                "64",
                "--json",
                name,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(
        read_json(&dir.path().join("a.json"))["metrics"],
        read_json(&dir.path().join("b.json"))["metrics"]
    );
}

// ---------------------------------------------------------------- real (needs backend::real + mpiexec)

/// `mpiexec -n N piotwin ARGS`: real mode is built, so the launcher must be there.
#[cfg(feature = "mpi")]
fn mpirun(dir: &Path, n: usize, args: &[&str]) -> Output {
    common::mpirun(dir, n, args).expect("real mode is built, so mpiexec must be installed")
}

/// The spec's per-direction cell bounds: coordinate `k` (0-based) of `p` over `n` points.
#[cfg(feature = "mpi")]
fn cell_range(n: u64, p: u64, k: u64) -> (u64, u64) {
    let (size, excess) = (n / p, n % p);
    if k < excess {
        (k * (size + 1), size + 1)
    } else {
        (excess * (size + 1) + (k - excess) * size, size)
    }
}

/// The doubles of the PnetCDF kernel's canonical file, `dumps` records of
/// `grid`: double e is e + 1.
#[cfg(feature = "mpi")]
fn assert_canonical(bytes: &[u8], grid: [u64; 3], dumps: u64) {
    let n = (5 * grid.iter().product::<u64>() * dumps) as usize;
    assert_eq!(bytes.len(), 8 * n, "file size");
    for (e, c) in bytes.chunks_exact(8).enumerate() {
        let v = f64::from_le_bytes(c.try_into().unwrap());
        assert_eq!(v, (e + 1) as f64, "double {e}");
    }
}

/// Rank `r`'s epio file: its cells (x = (r mod p + c) mod p, y = (r div p − c) mod p,
/// z = c) one after another per dump, each in Fortran order, holding the
/// values of the points they cover in the `canonical` file.
#[cfg(feature = "mpi")]
fn assert_epio(bytes: &[u8], canonical: &[u8], grid: [u64; 3], nprocs: u64, r: u64, dumps: u64) {
    let value = |e: u64| {
        let at = 8 * e as usize;
        f64::from_le_bytes(canonical[at..at + 8].try_into().unwrap())
    };
    let p = (nprocs as f64).sqrt() as u64;
    let [nx, ny, nz] = grid;
    let mut expect = Vec::new();
    let mut records = Vec::new();
    for d in 0..dumps {
        for c in 0..p {
            let before = expect.len();
            let kx = (r % p + c) % p;
            let ky = (r / p + p - c) % p;
            let (x0, sx) = cell_range(nx, p, kx);
            let (y0, sy) = cell_range(ny, p, ky);
            let (z0, sz) = cell_range(nz, p, c);
            for z in z0..z0 + sz {
                for y in y0..y0 + sy {
                    for x in x0..x0 + sx {
                        for m in 0..5 {
                            let e = m + 5 * (x + nx * (y + ny * (z + nz * d)));
                            expect.push(value(e));
                        }
                    }
                }
            }
            records.push(8 * (expect.len() - before));
        }
    }
    // One Fortran sequential record per cell and dump: a 4-byte length before and after.
    let mut got = Vec::new();
    let mut at = 0;
    for (i, len) in records.into_iter().enumerate() {
        let marker = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        assert_eq!(marker(at), len, "rank {r}: record {i}'s leading marker");
        assert_eq!(
            marker(at + 4 + len),
            len,
            "rank {r}: record {i}'s trailing marker"
        );
        got.extend(
            bytes[at + 4..at + 4 + len]
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap())),
        );
        at += len + 8;
    }
    assert_eq!(at, bytes.len(), "rank {r}: epio file size");
    assert_eq!(got.len(), expect.len(), "rank {r}: epio file size");
    assert!(
        got.iter()
            .zip(&expect)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "rank {r}: epio content differs"
    );
}

#[cfg(feature = "mpi")]
#[test]
fn real_btio_every_subtype_writes_bts_solution_and_verifies() {
    // Class S (NPB's verification) and an uneven grid with no reference values
    // (13 = 7 + 6, 11 = 6 + 5 points per cell on 2 x 2). The solution does not
    // depend on the partition: one rank's file is the canonical file of four.
    for (grid, size, verdict) in [
        ([12u64, 12, 12], vec!["--class", "S"], "SUCCESSFUL"),
        (
            [13, 11, 12],
            vec!["--grid", "13,11,12", "--steps", "7", "--wr-interval", "5"],
            "NOT PERFORMED (no reference values)",
        ),
    ] {
        let dumps = if grid[0] == 12 { 12 } else { 2 };
        let run = |ranks: usize, subtype: &str| {
            let dir = tempfile::tempdir().unwrap();
            let mut args = vec![
                "run",
                "btio",
                "--subtype",
                subtype,
                "-p",
                ".",
                "--json",
                "r.json",
            ];
            args.extend(&size);
            let o = mpirun(dir.path(), ranks, &args);
            assert_eq!(
                o.status.code(),
                Some(0),
                "{subtype} on {ranks}: {}",
                stderr(&o)
            );
            let out = stdout(&o);
            let line = out.lines().find(|l| l.starts_with(" Verification    ="));
            assert_eq!(
                line.map(|l| l.trim_start_matches(" Verification    =").trim()),
                Some(verdict),
                "{out}"
            );
            let r = read_json(&dir.path().join("r.json"));
            assert_eq!((&r["mode"], &r["ranks"]), (&"real".into(), &ranks.into()));
            if verdict == "SUCCESSFUL" {
                assert_eq!(r["metrics"]["verified"], 1.0);
                assert!(out.contains(" Verification Successful"), "{out}");
            }
            dir
        };
        let one = run(1, "full");
        let canonical = std::fs::read(one.path().join("btio.out")).unwrap();
        assert_eq!(
            canonical.len() as u64,
            40 * grid.iter().product::<u64>() * dumps
        );
        for subtype in ["full", "simple", "fortran", "epio"] {
            let dir = run(4, subtype);
            if subtype == "epio" {
                for rank in 0..4 {
                    let f = dir.path().join(format!("btio.out.{rank:04}"));
                    assert_epio(&std::fs::read(f).unwrap(), &canonical, grid, 4, rank, dumps);
                }
            } else {
                let file = std::fs::read(dir.path().join("btio.out")).unwrap();
                assert!(
                    file == canonical,
                    "{subtype} on 4 ranks differs from 1 rank's file"
                );
            }
        }
    }
}

#[cfg(feature = "mpi")]
#[test]
fn real_kernel_writes_reads_and_catches_a_flipped_byte() {
    let grid = [13u64, 11, 12];
    for method in ["0", "1", "2", "3"] {
        let dir = tempfile::tempdir().unwrap();
        let args = |mode: &'static str| {
            vec![
                "run",
                "btio-kernel",
                "--method",
                method,
                "--mode",
                mode,
                "--records",
                "2",
                "--grid",
                "13,11,12",
                "-p",
                ".",
            ]
        };
        let o = mpirun(dir.path(), 4, &args("w"));
        assert_eq!(o.status.code(), Some(0), "method {method}: {}", stderr(&o));
        let path = dir.path().join("btio.mpi");
        let mut bytes = std::fs::read(&path).unwrap();
        assert_canonical(&bytes, grid, 2);
        let o = mpirun(dir.path(), 4, &args("r"));
        assert_eq!(
            o.status.code(),
            Some(0),
            "method {method} r: {}",
            stderr(&o)
        );
        assert!(stdout(&o).contains("Verification             : SUCCESSFUL"));
        // Byte 3 of record 1, point (2, 1, 3), component 4.
        let e = 5 * (13 * 11 * 12) + 5 * (2 + 13 * (1 + 11 * 3)) + 4;
        bytes[e * 8 + 3] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let o = mpirun(dir.path(), 4, &args("r"));
        assert_eq!(o.status.code(), Some(1), "method {method}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("Verification             : FAILED"),
            "{}",
            stdout(&o)
        );
        let err = stderr(&o);
        assert!(
            err.contains("verification FAILED: record 1, component 4, point (2, 1, 3)")
                && err.contains(&format!("at byte {}", e * 8)),
            "{err}"
        );
    }
}

#[cfg(feature = "mpi")]
#[test]
fn real_bad_inputs_exit_2_and_touch_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = mpirun(
        dir.path(),
        3,
        &["run", "btio", "--grid", "12,12,12", "-p", "."],
    );
    assert_refused(&o, dir.path(), &["number of processes (3)", "square"]);
    let o = mpirun(
        dir.path(),
        4,
        &["run", "btio", "--grid", "4,12,12", "-p", "."],
    );
    assert_refused(&o, dir.path(), &["--grid", "at least 3"]);
    let (_keep, f) = input_file("60\n0.01\n12 12 12x\n5\n");
    let o = mpirun(dir.path(), 4, &["run", "btio", "--input", &f, "-p", "."]);
    assert_refused(&o, dir.path(), &[&format!("{f}:3")]);
    let o = mpirun(dir.path(), 4, &["run", "btio", "-p", "missing"]);
    assert_refused(&o, dir.path(), &["-p `missing`"]);
    let o = mpirun(
        dir.path(),
        4,
        &["run", "btio-kernel", "--mode", "r", "-p", "."],
    );
    assert_refused(&o, dir.path(), &["--mode r", "btio.mpi"]);
}
