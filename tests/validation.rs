//! Validation as CI: the live runs stored under `validation/<machine>/` (measured
//! reports of `piotwin compare` runs on a machine kind, with the calibrated
//! scenario they were compared with) are predicted again by today's twin, and
//! every headline metric's |error| must stay within its gate: the |error| recorded
//! with the run plus the machine's stated margin (`machine.toml`). A model change
//! that makes these predictions worse fails here; one that makes them better
//! passes (refresh the runs to tighten the gates: `validation/README.md`).

mod common;

use std::path::{Path, PathBuf};

use common::{piotwin, read_json, stderr, stdout};

/// The stored machines: every directory under `validation/` with a `machine.toml`.
fn machines() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("validation");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("machine.toml").is_file())
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no validation/<machine>/machine.toml");
    v
}

/// The stored runs of a machine: its subdirectories holding a `compare.json`.
fn runs(machine: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(machine)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("compare.json").is_file())
        .collect();
    v.sort();
    v
}

/// The margin (percentage points) a headline |error| may grow by.
fn margin_pct(machine: &Path) -> f64 {
    let text = std::fs::read_to_string(machine.join("machine.toml")).unwrap();
    let t: toml::Table = text.parse().unwrap();
    t["margin_pct"]
        .as_float()
        .unwrap_or_else(|| panic!("{}: margin_pct", machine.display()))
}

/// The twin side of a stored compare run, run again: its metrics.
fn predict_again(run: &Path, scenario: &Path) -> serde_json::Value {
    let c = read_json(&run.join("compare.json"));
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec!["run".into(), c["benchmark"].as_str().unwrap().into()];
    args.extend(
        c["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string()),
    );
    for r in c["resolved"].as_array().into_iter().flatten() {
        args.push(r["flag"].as_str().unwrap().into());
        args.push(r["value"].as_str().unwrap().into());
    }
    // The start state compare gave the twin (the free memory the real runs found).
    for set in c["twin_sets"].as_array().into_iter().flatten() {
        args.extend(["--set".into(), set.as_str().unwrap().into()]);
    }
    args.extend([
        "--seed".into(),
        c["seed"].to_string(),
        "--sim".into(),
        scenario.display().to_string(),
        "--ranks".into(),
        c["ranks"].to_string(),
        "--json".into(),
        "predicted.json".into(),
    ]);
    let o = piotwin(dir.path(), &args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}: {args:?}\n{}{}",
        run.display(),
        stdout(&o),
        stderr(&o)
    );
    read_json(&dir.path().join("predicted.json"))["metrics"].clone()
}

#[test]
fn stored_live_runs_stay_within_their_gates() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for machine in machines() {
        let scenario = machine.join("scenario.toml");
        let margin = margin_pct(&machine);
        let runs = runs(&machine);
        assert!(!runs.is_empty(), "{}: no stored runs", machine.display());
        for run in runs {
            let c = read_json(&run.join("compare.json"));
            let measured = read_json(&run.join("measured.json"))["metrics"].clone();
            let predicted = predict_again(&run, &scenario);
            let name = run.file_name().unwrap().to_string_lossy().into_owned();
            for metric in c["headline"].as_array().unwrap() {
                let metric = metric.as_str().unwrap();
                let Some(recorded) = c["metrics"][metric]["error"].as_f64() else {
                    continue;
                };
                let m = measured[metric].as_f64().unwrap();
                let p = predicted[metric].as_f64().unwrap_or(f64::NAN);
                let error = 100.0 * (p - m) / m.abs();
                let gate = recorded.abs() + margin;
                eprintln!(
                    "{name:<22} {metric:<16} predicted {p:>10.2} measured {m:>10.2} error {error:+7.1} % (gate {gate:.1} %)"
                );
                checked += 1;
                if error.is_nan() || error.abs() > gate {
                    failures.push(format!(
                        "{}/{name} {metric}: |error| {:.1} % is past its gate {gate:.1} % \
                         (recorded {recorded:+.1} % + margin {margin} points; predicted {p}, measured {m})",
                        machine.file_name().unwrap().to_string_lossy(),
                        error.abs()
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "no headline metric was checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `piotwin report validation DIR --limit X` summarises the stored runs and
/// fails (exit 1) when their median |error| is above X.
#[test]
fn report_validation_exits_non_zero_above_the_limit() {
    let machine = &machines()[0];
    let dir = tempfile::tempdir().unwrap();
    for run in runs(machine) {
        let to = dir.path().join(run.file_name().unwrap());
        std::fs::create_dir(&to).unwrap();
        std::fs::copy(run.join("compare.json"), to.join("compare.json")).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let o = piotwin(dir.path(), &["report", "validation", d, "--limit", "1000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("median |error|"), "{}", stdout(&o));
    let o = piotwin(dir.path(), &["report", "validation", d, "--limit", "0.01"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("is above --limit 0.01 %"),
        "{}",
        stderr(&o)
    );
}
