//! The published systems (`scenarios/published/`): every scenario loads and
//! cites its sources, every experiment (a sweep file) checks against its
//! scenario and benchmark, and `scripts/reproduce.sh` runs experiments into
//! one table each and `tables.md`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::BIN;
use piotwin::whatif::sweep::Sweep;
use piotwin_sim::Scenario;

fn published() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/published")
}

fn tomls(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// Nine systems, each loading, each with its sources: the description's
/// general note and notes on the nodes, the servers and their devices.
#[test]
fn every_published_scenario_loads_and_cites_its_sources() {
    let files = tomls(&published());
    assert_eq!(files.len(), 9, "{files:?}");
    for f in files {
        let s = Scenario::load(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for topic in ["general", "nodes", "server", "server.device", "filesystem"] {
            assert!(
                s.source.contains_key(topic),
                "{}: no [source] note `{topic}`",
                f.display()
            );
        }
        assert!(
            s.source.values().any(|n| n.contains("ASSUMED")),
            "{}: assumptions are marked ASSUMED",
            f.display()
        );
    }
}

/// Every experiment is a sweep over a published scenario that checks (its
/// benchmark options parsed, its scenario read with each point's overrides).
#[test]
fn every_experiment_checks_against_its_scenario_and_benchmark() {
    let files = tomls(&published().join("experiments"));
    assert!(files.len() >= 12, "{files:?}");
    for f in files {
        let s = Sweep::load(&f).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            s.scenario.starts_with(published().join("experiments/..")),
            "{}: scenario {}",
            f.display(),
            s.scenario.display()
        );
        s.check(None).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Two quick experiments end to end: one table per experiment (a row per
/// process count, the headline metrics filled) and `tables.md` with both.
#[test]
fn reproduce_writes_one_table_per_experiment_and_all_of_them_in_tables_md() {
    let out = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reproduce.sh");
    let st = Command::new("bash")
        .arg(script)
        .arg(BIN)
        .arg(out.path())
        .args(["ftio-origin2000", "madbench2-aohyper-b"])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let ftio = std::fs::read_to_string(out.path().join("ftio-origin2000/sweep.csv")).unwrap();
    let rows: Vec<&str> = ftio.lines().collect();
    assert_eq!(rows.len(), 5, "{ftio}");
    assert!(rows[0].contains("io_fraction"), "{ftio}");
    for (row, n) in rows[1..].iter().zip([4, 8, 16, 32]) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[1], n.to_string(), "{row}");
        let frac: f64 = cells[3].parse().unwrap();
        assert!(frac > 0.0 && frac < 1.0, "{row}");
    }
    let mad = std::fs::read_to_string(out.path().join("madbench2-aohyper-b/sweep.csv")).unwrap();
    assert!(mad.lines().next().unwrap().contains("w_r_s"), "{mad}");
    let tables = std::fs::read_to_string(out.path().join("tables.md")).unwrap();
    assert!(
        tables.contains("## ftio-origin2000") && tables.contains("## madbench2-aohyper-b"),
        "{tables}"
    );
    assert!(tables.contains("| point | ranks |"), "{tables}");
}
