//! The CLI side of the client-CPU model terms and the `[calibration]` table:
//! `scenario check` prints the calibrated entries, a bad entry is refused with
//! file, line and key, and `--set` turns the terms on in a run. Twin only.

mod common;

use common::{bad_input, piotwin, read_json, scenario, stderr, stdout};

const CALIBRATED: &str = r#"
[calibration."mpiio.independent_call"]
value = "5.2us"
low = "4.9us"
high = "5.5us"
probe = "ior mpiio independent 1 KiB-1 MiB, 1-2 ranks"
quality = "r2=0.998 n=24"
"#;

#[test]
fn scenario_check_prints_the_calibration_and_refuses_a_bad_entry() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(scenario("default.toml")).unwrap();
    let good = dir.path().join("cal.toml");
    std::fs::write(&good, format!("{base}{CALIBRATED}")).unwrap();
    let o = piotwin(dir.path(), &["scenario", "check", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "calibrated mpiio.independent_call = 5.2us [4.9us .. 5.5us] from `ior mpiio independent 1 KiB-1 MiB, 1-2 ranks` (r2=0.998 n=24)"
        ),
        "{}",
        stdout(&o)
    );
    let bad = dir.path().join("bad.toml");
    let lines = base.lines().count();
    std::fs::write(
        &bad,
        format!(
            "{base}{}",
            CALIBRATED.replace("independent_call\"", "independent_cal\"")
        ),
    )
    .unwrap();
    let o = piotwin(dir.path(), &["scenario", "check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let want = format!(
        "bad.toml:{}: calibration.\"mpiio.independent_cal\": not a scenario key",
        lines + 2
    );
    assert!(stderr(&o).contains(&want), "{want} in {}", stderr(&o));
}

/// IOR at 64 KiB on the workstation: per-call costs and page-cache rates set
/// with `--set` lower the predicted bandwidth; a bad value is refused.
#[test]
fn set_turns_the_terms_on() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario("default.toml");
    let run = |json: &str, set: &[&str]| {
        let mut args = vec![
            "run",
            "ior",
            "-a",
            "MPIIO",
            "-b",
            "4m",
            "-t",
            "64k",
            "-o",
            "f",
            "--sim",
            sc.to_str().unwrap(),
            "--ranks",
            "2",
            "--json",
            json,
        ];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = piotwin(dir.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        read_json(&dir.path().join(json))["metrics"]["write_mib_s_max"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}", stdout(&o)))
    };
    let off = run("off.json", &[]);
    let on = run(
        "on.json",
        &[
            "mpiio.independent_call=5us",
            "nodes[0].cache.write_bw=1.7GB/s",
        ],
    );
    assert!(on < 0.5 * off, "{on} vs {off} MiB/s");
    // IOR's data pattern (filled before every write) costs its own rate: at 1 GB/s
    // it adds 64 KiB / 1 GB/s per transfer to an otherwise free 10 GB/s path, so
    // the bandwidth falls to about 1 / (1/10 + 1/1) GB/s, under a tenth of `off`.
    let patterned = run("pattern.json", &["nodes[0].compute.pattern=1GB/s"]);
    assert!(patterned < 0.2 * off, "{patterned} vs {off} MiB/s");
    assert!(patterned > 0.05 * off, "{patterned} vs {off} MiB/s");
    bad_input(
        &[
            "run",
            "ior",
            "--sim",
            sc.to_str().unwrap(),
            "--ranks",
            "2",
            "--set",
            "mpiio.independent_call=5",
        ],
        &["mpiio.independent_call = 5: missing unit"],
    );
}
