//! Ctrl-C and SIGTERM at a random point of every benchmark, real (under the
//! launcher, which forwards the signal to every rank) and in the twin: the run
//! stops within seconds, exits 128 + the signal, keeps its reports marked
//! `interrupted`, and leaves its scratch directory empty.
//!
//! The point is drawn from `PIOTWIN_TEST_SEED` (default: the clock), printed
//! with every case so a failure can be replayed (`PIOTWIN_TEST_CASE=NAME`
//! runs only that benchmark's cases).
#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// One run to interrupt: its ranks (0: the twin, no launcher), arguments
/// (`{S}` is the scratch directory, `{T}` the default scenario, `{SIZES}`
/// 300 message sizes: pingpong's checkpoint is per size) and the window
/// of the signal in seconds after the start, well inside the run.
struct Case {
    name: &'static str,
    ranks: usize,
    args: &'static [&'static str],
    window: (f64, f64),
}

const REAL: &[Case] = &[
    Case {
        name: "b_eff_io",
        ranks: 2,
        args: &["b_eff_io", "-MB", "256", "-T", "60", "-p", "{S}", "-f", "b"],
        window: (1.0, 6.0),
    },
    Case {
        name: "ior",
        ranks: 2,
        args: &[
            "ior",
            "-a",
            "MPIIO",
            "-b",
            "256m",
            "-t",
            "1m",
            "-i",
            "40",
            "-o",
            "{S}/ior.dat",
        ],
        window: (0.5, 4.0),
    },
    Case {
        name: "btio",
        ranks: 4,
        args: &["btio", "--class", "A", "--subtype", "full", "-p", "{S}"],
        window: (1.0, 6.0),
    },
    Case {
        name: "btio-kernel",
        ranks: 4,
        args: &[
            "btio-kernel",
            "--records",
            "40",
            "--grid",
            "128,128,128",
            "-p",
            "{S}",
        ],
        window: (1.0, 6.0),
    },
    Case {
        name: "ftio",
        ranks: 2,
        args: &["ftio", "-i", "96", "-p", "{S}"],
        window: (1.0, 6.0),
    },
    Case {
        name: "iozone",
        ranks: 2,
        args: &["iozone", "-s", "2g", "-r", "4k", "-f", "{S}/ioz.tmp"],
        window: (0.5, 3.0),
    },
    Case {
        name: "madbench2",
        ranks: 4,
        // Busy-work of 1024^3.4 flops (BWEXP 1.7): the run takes about 15 s on
        // a host where the default 1024³ ends it in 2 s, before the window's end.
        args: &[
            "madbench2",
            "1024",
            "8",
            "1",
            "32",
            "4096",
            "1",
            "1",
            "--iomethod",
            "mpi",
            "--bwexp",
            "1.7",
            "-p",
            "{S}",
        ],
        window: (1.0, 6.0),
    },
    Case {
        name: "pingpong",
        ranks: 2,
        args: &["pingpong", "--sizes", "{SIZES}", "--iterations", "60000"],
        window: (0.5, 3.0),
    },
];

const TWIN: &[Case] = &[
    Case {
        name: "b_eff_io",
        ranks: 0,
        args: &[
            "b_eff_io", "--sim", "{T}", "--ranks", "16", "-MB", "256", "-T", "120", "-f", "b",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "ior",
        ranks: 0,
        args: &[
            "ior",
            "-a",
            "MPIIO",
            "-b",
            "64m",
            "-t",
            "4k",
            "-i",
            "40",
            "-o",
            "{S}/ior.dat",
            "--sim",
            "{T}",
            "--ranks",
            "16",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "btio",
        ranks: 0,
        args: &[
            "btio",
            "--class",
            "B",
            "--subtype",
            "simple",
            "-p",
            "{S}",
            "--sim",
            "{T}",
            "--ranks",
            "64",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "btio-kernel",
        ranks: 0,
        args: &[
            "btio-kernel",
            "--records",
            "8000",
            "--grid",
            "256,256,256",
            "-p",
            "{S}",
            "--sim",
            "{T}",
            "--ranks",
            "16",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "ftio",
        ranks: 0,
        args: &[
            "ftio", "-i", "300", "-p", "{S}", "--sim", "{T}", "--ranks", "4",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "iozone",
        ranks: 0,
        args: &[
            "iozone",
            "-s",
            "1g",
            "-r",
            "4k",
            "-f",
            "{S}/ioz.tmp",
            "--sim",
            "{T}",
            "--ranks",
            "4",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "madbench2",
        ranks: 0,
        args: &[
            "madbench2",
            "4096",
            "4096",
            "1",
            "16",
            "1024",
            "1",
            "1",
            "-p",
            "{S}",
            "--sim",
            "{T}",
            "--ranks",
            "256",
        ],
        window: (0.5, 3.0),
    },
    Case {
        name: "pingpong",
        ranks: 0,
        args: &[
            "pingpong",
            "--sizes",
            "{SIZES}",
            "--iterations",
            "20000",
            "--sim",
            "{T}",
            "--ranks",
            "16",
        ],
        window: (0.5, 3.0),
    },
];

/// A fraction in [0, 1) from the seed and the case (splitmix64).
fn fraction(seed: u64, case: &str) -> f64 {
    let mut z = case
        .bytes()
        .fold(seed, |h, b| h.rotate_left(5) ^ u64::from(b))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as f64 / 2f64.powi(64)
}

fn seed() -> u64 {
    std::env::var("PIOTWIN_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

fn start(case: &Case, out: &Path, scratch: &Path) -> Option<Child> {
    let scenario = scenario("default.toml");
    let sizes = (1..=300)
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("{S}", scratch.to_str().unwrap())
                .replace("{T}", scenario.to_str().unwrap())
                .replace("{SIZES}", &sizes)
        })
        .chain(["--json", "r.json", "--csv", "r.csv"].map(String::from))
        .collect();
    let mut cmd = if case.ranks > 0 {
        let launcher = mpiexec()?;
        let mut c = Command::new(&launcher[0]);
        c.args(&launcher[1..])
            .args(["-n", &case.ranks.to_string(), BIN, "run"]);
        c
    } else {
        let mut c = Command::new(BIN);
        c.arg("run");
        c
    };
    let child = cmd
        .args(&args)
        .current_dir(out)
        .stdout(std::fs::File::create(out.join("stdout")).unwrap())
        .stderr(std::fs::File::create(out.join("stderr")).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("the run starts");
    Some(child)
}

/// Sends `signal` to `pid` at `at` seconds after `child` started (which must
/// still run then), and waits for `child` to end: its status and the seconds
/// it took after the signal. A child still running 120 s later is killed and
/// the test fails.
fn signal_and_wait(
    child: &mut Child,
    pid: impl FnOnce() -> i32,
    signal: i32,
    at: f64,
    what: &str,
) -> (ExitStatus, f64) {
    std::thread::sleep(Duration::from_secs_f64(at));
    assert!(
        child.try_wait().unwrap().is_none(),
        "{what}: the run ended before the signal; its window is too late"
    );
    // SAFETY: kill(2) on a process of this test's child run.
    assert_eq!(unsafe { libc::kill(pid(), signal) }, 0, "{what}");
    let sent = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s, sent.elapsed().as_secs_f64());
        }
        if sent.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{what}: still running 120 s after the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `case`, sends `signal` at a random point of its window, and checks
/// the exit status, the reports and the scratch directory.
fn interrupted(case: &Case, seed: u64, signal: i32) {
    if std::env::var("PIOTWIN_TEST_CASE").is_ok_and(|only| only != case.name) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, scratch) = (dir.path().join("out"), dir.path().join("scratch"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&scratch).unwrap();
    let (lo, hi) = case.window;
    let at = lo + (hi - lo) * fraction(seed, case.name);
    let what = format!(
        "{} ({}; signal {signal} at {at:.2} s; PIOTWIN_TEST_SEED={seed})",
        case.name,
        if case.ranks > 0 {
            format!("{} ranks", case.ranks)
        } else {
            "twin".into()
        }
    );
    let Some(mut child) = start(case, &out, &scratch) else {
        return;
    };
    let pid = child.id() as i32;
    let (status, stopped_in) = signal_and_wait(&mut child, || pid, signal, at, &what);
    let printed = std::fs::read_to_string(out.join("stdout")).unwrap();
    eprintln!(
        "{what}: its output ends\n{}",
        printed.lines().rev().take(3).collect::<Vec<_>>().join("\n")
    );
    let err = std::fs::read_to_string(out.join("stderr")).unwrap();
    let name = if signal == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    eprintln!(
        "{what}: exit {:?} {stopped_in:.2} s after the signal",
        status.code()
    );
    // MPICH's launcher (hydra) forwards the signal to every rank, but its own
    // status afterwards is racy: measured here, it returns 0 in about a third
    // of runs whose ranks all exit 128 + signal (a shell script that traps the
    // signal shows the same; fixed in MPICH 4.1, pmodels/mpich#5930). Every
    // rank's status is 128 + signal; the launcher's is required only where it
    // reports one.
    let launcher_race = case.ranks > 0 && status.code() == Some(0);
    if launcher_race {
        eprintln!("{what}: the launcher returned 0 (hydra's race after a forwarded signal)");
    } else {
        assert_eq!(status.code(), Some(128 + signal), "{what}: {err}");
    }
    assert!(
        err.contains(&format!("interrupted by {name}")),
        "{what}: {err}"
    );
    let j = read_json(&out.join("r.json"));
    assert_eq!(j["interrupted"], name, "{what}: {j}");
    let csv = std::fs::read_to_string(out.join("r.csv")).unwrap();
    assert!(
        csv.contains(&format!("\ninterrupted,{name}\n")),
        "{what}: {csv}"
    );
    assert_eq!(
        files_in(&scratch),
        Vec::<String>::new(),
        "{what}: scratch files left behind"
    );
}

#[test]
fn real_runs_stop_on_sigint_keep_their_reports_and_leave_no_scratch() {
    let seed = seed();
    for case in REAL {
        interrupted(case, seed, libc::SIGINT);
    }
}

#[test]
fn twin_runs_stop_on_sigint_keep_their_reports_and_leave_no_scratch() {
    let seed = seed();
    for case in TWIN {
        interrupted(case, seed, libc::SIGINT);
    }
}

#[test]
fn sigterm_stops_a_run_with_exit_status_143() {
    let seed = seed();
    interrupted(&REAL[1], seed, libc::SIGTERM);
    interrupted(&TWIN[0], seed, libc::SIGTERM);
}

/// `compare` passes the signal on to the run it is in (started in a process
/// group of its own, so a terminal's Ctrl-C reaches it once), does not start
/// the other, writes compare.json and report.html with what finished and
/// exits 130.
#[test]
fn compare_passes_sigint_on_and_keeps_what_finished() {
    let Some(_) = mpiexec() else {
        return;
    };
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let (out, scratch) = (dir.path().join("out"), dir.path().join("scratch"));
    std::fs::create_dir_all(&scratch).unwrap();
    let at = 1.0 + 3.0 * fraction(seed, "compare");
    let what = format!("compare b_eff_io (signal at {at:.2} s; PIOTWIN_TEST_SEED={seed})");
    let mut child = Command::new(BIN)
        .args(["compare", "b_eff_io", "--ranks", "2", "--scenario"])
        .arg(scenario("default.toml"))
        .arg("--out")
        .arg(&out)
        .args(["-MB", "256", "-T", "60", "-p"])
        .arg(&scratch)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (status, _) = signal_and_wait(&mut child, || pid, libc::SIGINT, at, &what);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert_eq!(status.code(), Some(130), "{what}: {err}");
    assert!(
        err.contains("compare.json and report.html hold what finished"),
        "{what}: {err}"
    );
    let c = read_json(&out.join("compare.json"));
    let failed = c["failed"].as_array().unwrap();
    assert!(
        failed
            .iter()
            .any(|f| f["side"] == "predicted" && f["message"] == "not run: interrupted by SIGINT"),
        "{what}: {c}"
    );
    assert_eq!(
        read_json(&out.join("measured.json"))["interrupted"],
        "SIGINT",
        "{what}"
    );
    assert!(out.join("report.html").is_file(), "{what}");
    assert_eq!(
        files_in(&scratch),
        Vec::<String>::new(),
        "{what}: scratch left"
    );
}

/// The process of rank `rank` whose command line holds `marker`, if running.
fn rank_pid(marker: &str, rank: u32) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        let has = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        (has(&cmdline, BIN.as_bytes())
            && has(&cmdline, marker.as_bytes())
            && environ.split(|&b| b == 0).any(|v| {
                // MPICH's and Open MPI's names of the rank.
                v == format!("PMI_RANK={rank}").as_bytes()
                    || v == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes()
            }))
        .then_some(pid)
    })
}

/// A rank killed outright (SIGKILL: nothing can be kept) ends the whole job
/// within seconds with a non-zero status instead of leaving its partners
/// waiting in a collective.
#[test]
fn a_killed_rank_ends_the_job_with_a_failure() {
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let marker = scratch.to_str().unwrap().to_string();
    let Some(mut child) = start(&REAL[0], dir.path(), &scratch) else {
        return;
    };
    let at = 1.0 + 3.0 * fraction(seed, "sigkill");
    let what = format!("rank 1 killed at {at:.2} s (PIOTWIN_TEST_SEED={seed})");
    let rank1 = || rank_pid(&marker, 1).expect("rank 1 is running");
    let (status, after) = signal_and_wait(&mut child, rank1, libc::SIGKILL, at, &what);
    eprintln!("{what}: the job ended {after:.2} s later with {status}");
    assert!(!status.success(), "{status}");
}

/// `calibrate` passes the signal on to the probe run it is in, runs no more,
/// writes the scenario and its probe results (the steps not measured keep the
/// base values, named under [source]), removes its scratch directory and
/// exits 130.
#[test]
fn calibrate_stops_on_sigint_and_writes_what_it_measured() {
    let Some(launcher) = mpiexec() else {
        return;
    };
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let at = 0.8 + 1.7 * fraction(seed, "calibrate");
    let what = format!("calibrate (signal at {at:.2} s; PIOTWIN_TEST_SEED={seed})");
    let mut child = Command::new(BIN)
        .args([
            "calibrate",
            "--dir",
            ".",
            "--out",
            "cal.toml",
            "--ranks",
            "2",
        ])
        .args(["--probe-scale", "tiny", "--mpiexec", &launcher.join(" ")])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let (status, _) = signal_and_wait(&mut child, || pid, libc::SIGINT, at, &what);
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert_eq!(status.code(), Some(130), "{what}: {err}");
    assert!(err.contains("interrupted by SIGINT"), "{what}: {err}");
    let text = std::fs::read_to_string(dir.path().join("cal.toml")).unwrap();
    assert!(text.contains("interrupted by SIGINT"), "{what}: {text}");
    assert!(dir.path().join("cal.toml.probes.json").is_file(), "{what}");
    let mut left = files_in(dir.path());
    left.retain(|f| f.starts_with("piotwin-calibrate-"));
    assert_eq!(left, Vec::<String>::new(), "{what}: scratch left");
}
