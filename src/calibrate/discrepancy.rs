//! The calibrated twin judged on calibration's own IOR probes: every probe
//! shape predicted with the scenario calibration wrote, against the mean of
//! its measured repetitions. What the twin gets wrong there beyond the
//! machine's run-to-run noise is its model error, `[model_error]`:
//!
//! `spread² = mean over shapes of ln(measured / predicted)² − run_to_run² / n`
//!
//! (the root mean square includes any bias; `n` is the repetitions a
//! measured mean averages, whose noise is not the model's). `--samples` draws
//! one factor `exp(spread · z)` per sampled run and applies it to the run's
//! rates and times: a prediction interval then covers what the twin is known
//! to miss on this machine, as measured on data calibration had, not on the
//! held-out runs it is judged on.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Machine;
use super::plan::{Plan, Probe};
use super::probes::{IorRow, ProbeResults};

/// The twin's error on calibration's own IOR probes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelError {
    /// The spread beyond run-to-run noise (standard deviation of a log ratio).
    pub spread: f64,
    /// Root mean square of ln(measured / predicted) over the shapes.
    pub rms: f64,
    /// Mean of ln(measured / predicted): the twin's bias (positive: it predicts low).
    pub bias: f64,
    /// Shapes (ranks, access pattern, transfer size, write or read) compared.
    pub shapes: usize,
}

/// The rows' mean bandwidth per (ranks, shape, transfer, access).
fn means(rows: &[IorRow]) -> BTreeMap<(usize, String, u64, String), f64> {
    let mut sums: BTreeMap<(usize, String, u64, String), (f64, usize)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.bw_mib_s > 0.0) {
        let e = sums
            .entry((r.ranks, r.shape.clone(), r.transfer, r.access.clone()))
            .or_default();
        e.0 += r.bw_mib_s;
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(k, (s, n))| (k, s / n as f64))
        .collect()
}

/// Predicts every IOR step of `plan` with `scenario` and compares with the
/// `measured` rows; `None` where no IOR probe was measured.
pub fn model_error(
    scenario: &Path,
    machine: &Machine,
    plan: &Plan,
    measured: &[IorRow],
    run_to_run: f64,
) -> Result<Option<ModelError>, String> {
    let mut predicted = ProbeResults::new(machine.clone(), plan.clone());
    for step in plan.steps.iter().filter(|s| s.probe == Probe::Ior) {
        let bench = crate::whatif::TwinRun {
            benchmark: "ior",
            options: step.args.clone(),
            scenario,
            ranks: step.ranks as u64,
            seed: None,
            samples: None,
            overrides: Vec::new(),
        }
        .bench()?;
        let (report, _) = bench
            .predict()
            .map_err(|e| format!("{}: {}", step.describe(), e.message().unwrap_or("stopped")))?;
        predicted.add_report(step, &report.to_json())?;
    }
    let rows = measured;
    let (measured, twin) = (means(rows), means(&predicted.ior));
    let logs: Vec<f64> = measured
        .iter()
        .filter_map(|(k, m)| twin.get(k).map(|p| (m / p).ln()))
        .collect();
    if logs.is_empty() {
        return Ok(None);
    }
    let n = logs.len() as f64;
    let rms = (logs.iter().map(|x| x * x).sum::<f64>() / n).sqrt();
    let repetitions = rows.len() as f64 / measured.len().max(1) as f64;
    let noise = run_to_run * run_to_run / repetitions.max(1.0);
    Ok(Some(ModelError {
        spread: (rms * rms - noise).max(0.0).sqrt(),
        rms,
        bias: logs.iter().sum::<f64>() / n,
        shapes: logs.len(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use piotwin_sim::Scenario;

    #[test]
    fn the_stored_calibration_carries_the_model_error_of_its_stored_probes() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        // each calibrated scenario beside the probes it was fitted from
        for file in [
            "scenarios/calibrated/vm.toml",
            "validation/vm-b/scenario.toml",
            "validation/vm-e/scenario.toml",
            "validation/vm-f/scenario.toml",
            "validation/vm-g/scenario.toml",
            "validation/vm-h/scenario.toml",
            "validation/vm-i/scenario.toml",
            "validation/vm-j/scenario.toml",
            "validation/vm-k/scenario.toml",
            "validation/vm-l/scenario.toml",
            "validation/vm-m/scenario.toml",
            "validation/vm-n/scenario.toml",
            "validation/vm-o/scenario.toml",
            "validation/vm-p/scenario.toml",
            "validation/vm-q/scenario.toml",
            "validation/vm-r/scenario.toml",
            "validation/vm-s/scenario.toml",
            "validation/vm-t/scenario.toml",
            "validation/vm-u/scenario.toml",
            "validation/vm-v/scenario.toml",
            "validation/vm-w/scenario.toml",
            "validation/vm-x/scenario.toml",
            "validation/vm-y/scenario.toml",
        ] {
            let probes = root.join(format!("{file}.probes.json"));
            let raw: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(probes).unwrap()).unwrap();
            let r = &raw["results"];
            let machine: Machine = serde_json::from_value(r["machine"].clone()).unwrap();
            let plan: Plan = serde_json::from_value(r["plan"].clone()).unwrap();
            let rows: Vec<IorRow> = serde_json::from_value(r["ior"].clone()).unwrap();
            let path = root.join(file);
            let s = Scenario::load(&path).unwrap();
            let r2r = s.run_to_run.as_ref().unwrap().spread;
            let e = model_error(&path, &machine, &plan, &rows, r2r)
                .unwrap()
                .unwrap();
            let stored = s
                .model_error
                .unwrap_or_else(|| panic!("{file}: no [model_error]; computed {e:?}"));
            // The writer caps a spread at 0.999 (a factor e) and says so.
            let expected = match stored.quality.contains("capped at 0.999") {
                true => {
                    assert!(e.spread >= 0.999, "{file}: capped, computed {e:?}");
                    0.999
                }
                false => e.spread,
            };
            assert!(
                (stored.spread - expected).abs() < 1e-9,
                "{file}: stored {stored:?}, computed {e:?}"
            );
            assert!(
                stored.quality.contains(&format!("{} shapes", e.shapes)),
                "{stored:?}"
            );
        }
    }
}
