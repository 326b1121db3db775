//! The calibrated scenario: the base scenario's text with every fitted value
//! written over it, a `[calibration."<key path>"]` table per fitted value
//! (`value`, `low`, `high` with units, `probe`, `quality`) and a `[source]`
//! entry per key saying where its number came from — fitted, read from the
//! machine, or kept from the base (and why).
//!
//! Keys the base does not fit (device channels, dirty ratios, network
//! bandwidths, create/delete costs, …) keep the base's values; the base's own
//! `[source]` notes are kept under `base.<topic>`. A key path's `nodes` means
//! the first `[[nodes]]` group (calibration measures one node).

use toml::{Table, Value};

use super::discrepancy::ModelError;
use super::fits::{Fitted, Unit};
use super::probes::ProbeResults;

/// Four significant digits in a fixed-point form the scenario's unit parser
/// takes (no exponent).
fn sig(x: f64) -> String {
    let d = if x >= 100.0 {
        1
    } else if x >= 10.0 {
        2
    } else {
        3
    };
    format!("{x:.d$}")
}

/// `value` in `unit` as a scenario string: `"12.35us"`, `"3.210GB/s"`,
/// `"25276510208B"`, `"2"`; an infinite bound is `"unbounded"`.
pub fn format_value(unit: Unit, v: f64) -> String {
    if v.is_infinite() {
        return "unbounded".into();
    }
    match unit {
        Unit::Time => {
            let (x, u) = if v == 0.0 {
                (0.0, "s")
            } else if v >= 1.0 {
                (v, "s")
            } else if v >= 1e-3 {
                (v * 1e3, "ms")
            } else if v >= 1e-6 {
                (v * 1e6, "us")
            } else {
                (v * 1e9, "ns")
            };
            format!("{}{u}", sig(x))
        }
        Unit::Rate => {
            let (x, u) = if v >= 1e9 {
                (v / 1e9, "GB/s")
            } else if v >= 1e6 {
                (v / 1e6, "MB/s")
            } else if v >= 1e3 {
                (v / 1e3, "kB/s")
            } else {
                (v, "B/s")
            };
            format!("{}{u}", sig(x))
        }
        Unit::FlopRate => {
            let (x, u) = if v >= 1e9 {
                (v / 1e9, "Gflop/s")
            } else if v >= 1e6 {
                (v / 1e6, "Mflop/s")
            } else {
                (v, "flop/s")
            };
            format!("{}{u}", sig(x))
        }
        Unit::Size => {
            let n = v.round() as u64;
            if n > 0 && n.is_multiple_of(1024) {
                format!("{}KiB", n / 1024)
            } else {
                format!("{n}B")
            }
        }
        Unit::Count => format!("{}", v.round() as u64),
        Unit::Number => sig(v),
    }
}

/// Sets `path` (dot-separated, as `--set` writes it: `nodes[1].memory`; an
/// array on the way without an index means its first element) to `value`,
/// creating tables that are missing.
pub fn set_path(root: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut t = root;
    for p in &parts[..parts.len() - 1] {
        let (name, index) = match p.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (*p, None),
        };
        let entry = t
            .entry(name.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        let next = match entry {
            Value::Array(a) => a.get_mut(index.unwrap_or(0)),
            other => Some(other),
        };
        t = match next {
            Some(Value::Table(t)) => t,
            _ => {
                return Err(format!(
                    "`{path}`: `{p}` in the base scenario is not a table"
                ));
            }
        };
    }
    t.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

fn has_path(root: &Table, path: &str) -> bool {
    let mut v: Option<&Value> = None;
    let mut t = Some(root);
    for p in path.split('.') {
        v = t.and_then(|t| t.get(p));
        t = match v {
            Some(Value::Table(x)) => Some(x),
            Some(Value::Array(a)) => a.first().and_then(Value::as_table),
            _ => None,
        };
    }
    v.is_some()
}

/// The probes `[run_to_run]` is measured over.
pub const RUN_TO_RUN_PROBE: &str =
    "ior: the repetitions (-i) of each probe shape (ranks, access, transfer size, write or read)";

/// The probes `[model_error]` is measured over.
pub const MODEL_ERROR_PROBE: &str = "ior: calibration's own IOR probe shapes predicted with this scenario, against the mean of their measured repetitions";

/// The calibrated scenario's text. `base_text` is the base scenario (already
/// checked by the caller), `base_name` how to name it in `[source]`.
pub fn render(
    base_text: &str,
    base_name: &str,
    fitted: &Fitted,
    results: &ProbeResults,
    model_error: Option<&ModelError>,
) -> Result<String, String> {
    let mut root: Table = base_text
        .parse()
        .map_err(|e| format!("base scenario `{base_name}`: {e}"))?;
    let m = &results.machine;
    let scale = format!("{:?}", results.plan.scale).to_lowercase();
    root.insert(
        "name".into(),
        Value::String(format!("calibrated-{}", m.host)),
    );
    root.insert(
        "description".into(),
        Value::String(format!(
            "{} ({} cores, {} bytes of memory) calibrated by `piotwin calibrate` ({scale} probes){} over the base `{base_name}`",
            m.host,
            m.cores,
            m.mem_total_bytes,
            m.date.as_ref().map_or(String::new(), |d| format!(" on {d}"))
                + &m.cpu.as_ref().map_or(String::new(), |c| format!(" ({c})"))
        )),
    );
    let base_source = match root.remove("source") {
        Some(Value::Table(t)) => t,
        _ => Table::new(),
    };
    let mut source = Table::new();
    for (k, v) in base_source {
        source.insert(format!("base.{k}"), v);
    }
    source.insert(
        "general".into(),
        Value::String(format!(
            "calibrated on {} by `piotwin calibrate` ({scale}): every key listed under [calibration] was measured by the probe named there and fitted as its quality says (intervals at 95 %); every other value is the base scenario `{base_name}`'s (its notes are under base.*)",
            m.host
        )),
    );
    let mut calib = Table::new();
    // Counts are bare TOML integers; quantities are strings with their unit.
    let toml_value = |unit: Unit, x: f64| match unit {
        Unit::Count if x.is_finite() => Value::Integer(x.round() as i64),
        Unit::Number if x.is_finite() => Value::Float(sig(x).parse().unwrap_or(x)),
        u => Value::String(format_value(u, x)),
    };
    for p in &fitted.params {
        set_path(&mut root, &p.key, toml_value(p.unit, p.value))?;
        let mut e = Table::new();
        e.insert("value".into(), toml_value(p.unit, p.value));
        e.insert("low".into(), toml_value(p.unit, p.low));
        e.insert("high".into(), toml_value(p.unit, p.high));
        e.insert("probe".into(), Value::String(p.probe.clone()));
        e.insert("quality".into(), Value::String(p.quality.clone()));
        // The scenario's key path names the node group: the first one.
        let path = match p.key.strip_prefix("nodes.") {
            Some(rest) => format!("nodes[0].{rest}"),
            None => p.key.clone(),
        };
        calib.insert(path, Value::Table(e));
        source.insert(
            p.key.clone(),
            Value::String(format!("measured: {}; {}", p.probe, p.quality)),
        );
    }
    for (k, why) in &fitted.skipped {
        let kept = if has_path(&root, k) {
            format!("the base `{base_name}`'s value is kept")
        } else {
            "absent: the twin's default applies".into()
        };
        source.insert(
            k.clone(),
            Value::String(format!("not calibrated ({why}); {kept}")),
        );
    }
    for (k, (word, why)) in &fitted.choices {
        set_path(&mut root, k, Value::String(word.clone()))?;
        source.insert(
            k.clone(),
            Value::String(format!("measured: `{word}`, as {why}")),
        );
    }
    for (k, note) in &fitted.notes {
        source.insert(k.clone(), Value::String(note.clone()));
    }
    source.insert(
        "calibration.ior_shapes".into(),
        Value::String(results.plan.ior_shapes().join("; ")),
    );
    source.insert(
        "calibration.held_out".into(),
        Value::String(
            "b_eff_io was never run by calibration; IOR shapes other than those in calibration.ior_shapes are held out"
                .into(),
        ),
    );
    if !results.failures.is_empty() {
        source.insert(
            "calibration.failed_steps".into(),
            Value::String(
                results
                    .failures
                    .iter()
                    .map(|f| format!("{}: {}", f.step, f.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        );
    }
    root.insert("source".into(), Value::Table(source));
    root.insert("calibration".into(), Value::Table(calib));
    if let Some(r) = &fitted.run_to_run {
        let mut t = Table::new();
        t.insert("spread".into(), Value::Float(r.spread));
        t.insert("probe".into(), Value::String(RUN_TO_RUN_PROBE.into()));
        t.insert(
            "quality".into(),
            Value::String(format!(
                "pooled standard deviation of ln(bandwidth) within a shape: {} repetitions of {} shapes",
                r.repetitions, r.groups
            )),
        );
        root.insert("run_to_run".into(), Value::Table(t));
    }
    if let Some(m) = model_error {
        let mut t = Table::new();
        // The schema takes a spread below 1 (a factor e): beyond, the cap is said.
        let capped = m.spread >= 1.0;
        t.insert("spread".into(), Value::Float(m.spread.min(0.999)));
        t.insert("probe".into(), Value::String(MODEL_ERROR_PROBE.into()));
        t.insert(
            "quality".into(),
            Value::String(format!(
                "{} shapes: root mean square of ln(measured / predicted) {:.3}, bias {:+.3} ({}), less the run-to-run noise of a repetitions' mean{}",
                m.shapes,
                m.rms,
                m.bias,
                if m.bias > 0.0 { "the twin predicts low" } else { "the twin predicts high" },
                if capped { format!("; {:.3} capped at 0.999", m.spread) } else { String::new() }
            )),
        );
        root.insert("model_error".into(), Value::Table(t));
    }
    let body = toml::to_string(&root).map_err(|e| format!("cannot write the scenario: {e}"))?;
    Ok(format!(
        "# Calibrated by `piotwin calibrate` on {} — measured values with their\n\
         # intervals under [calibration], where each number came from under [source].\n\
         # Raw probe results: the .probes.json file next to this one.\n\n{body}",
        m.host
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_the_scenario_units() {
        assert_eq!(format_value(Unit::Time, 12.3456e-6), "12.35us");
        assert_eq!(format_value(Unit::Time, 0.0), "0.000s");
        assert_eq!(format_value(Unit::Time, 2.5e-3), "2.500ms");
        assert_eq!(format_value(Unit::Time, 3.0e-8), "30.00ns");
        assert_eq!(format_value(Unit::Rate, 3.21e9), "3.210GB/s");
        assert_eq!(format_value(Unit::Rate, 512.0e6), "512.0MB/s");
        assert_eq!(format_value(Unit::Rate, f64::INFINITY), "unbounded");
        assert_eq!(format_value(Unit::Size, 24684092.0 * 1024.0), "24684092KiB");
        assert_eq!(format_value(Unit::Size, 1000.0), "1000B");
        assert_eq!(format_value(Unit::Count, 2.0), "2");
        assert_eq!(format_value(Unit::FlopRate, 11.25e9), "11.25Gflop/s");
        piotwin_sim::units::parse_flops(&format_value(Unit::FlopRate, 3.5e8)).unwrap();
        for (u, v) in [(Unit::Time, 1.5e-5), (Unit::Time, 2.0)] {
            piotwin_sim::units::parse_time(&format_value(u, v)).unwrap();
        }
        piotwin_sim::units::parse_rate(&format_value(Unit::Rate, 1.2345e9)).unwrap();
        piotwin_sim::units::parse_size(&format_value(Unit::Size, 4096.0)).unwrap();
    }

    #[test]
    fn calibrated_scenario_parses_and_carries_the_fitted_values() {
        let results = crate::calibrate::fits::tests::synthetic();
        let base = include_str!("../../scenarios/default.toml");
        let scn = piotwin_sim::Scenario::from_str(base, "default.toml").unwrap();
        let fitted = crate::calibrate::fits::fit_all(&results, &scn);
        let text = render(base, "scenarios/default.toml", &fitted, &results, None).unwrap();
        let s = piotwin_sim::Scenario::from_str(&text, "calibrated.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let p = |k: &str| fitted.get(k).unwrap();
        let memcpy = piotwin_sim::units::parse_rate(&format_value(
            Unit::Rate,
            p("nodes.compute.memcpy").value,
        ))
        .unwrap();
        assert_eq!(s.nodes[0].compute.memcpy, memcpy);
        assert_eq!(s.nodes[0].cores, 2);
        assert_eq!(s.nodes[0].memory, 16 << 30);
        assert_eq!(s.name, "calibrated-synth");
        assert!(s.source["calibration.ior_shapes"].contains("-a MPIIO"));
        assert!(s.source["calibration.held_out"].contains("b_eff_io"));
        assert!(s.source["nodes.compute.memcpy"].starts_with("measured: memcpy"));
        assert!(s.source.contains_key("base.general"));
        // A key set to a word: in the scenario, with where it came from.
        assert_eq!(
            s.nodes[0].waiting_ranks,
            piotwin_sim::scenario::WaitingRanks::Poll
        );
        assert!(
            s.source["nodes.waiting_ranks"].starts_with("measured: `poll`, as pingpong --polled"),
            "{}",
            s.source["nodes.waiting_ranks"]
        );
        // Every fitted key has its [calibration] entry with an interval and a quality.
        let t: Table = text.parse().unwrap();
        let calib = t["calibration"].as_table().unwrap();
        for prm in &fitted.params {
            let key = prm.key.replace("nodes.", "nodes[0].");
            let e = calib[&key].as_table().unwrap();
            for f in ["value", "low", "high", "probe", "quality"] {
                assert!(e.contains_key(f), "{} lacks {f}", prm.key);
            }
        }
        assert_eq!(calib.len(), fitted.params.len());
        // The parser keeps them: the round trip of the intervals.
        assert_eq!(s.calibration.len(), fitted.params.len());
        let m = &s.calibration["nodes[0].compute.memcpy"];
        assert_eq!(m.value, memcpy);
        assert!(m.low <= m.value && m.value <= m.high);
    }

    #[test]
    fn paths_reach_into_the_first_node_group() {
        let mut t: Table = "[[nodes]]\nname = \"a\"\n[nodes.cache]\nx = 1\n"
            .parse()
            .unwrap();
        set_path(
            &mut t,
            "nodes.cache.write_bw",
            Value::String("1GB/s".into()),
        )
        .unwrap();
        set_path(&mut t, "mpiio.open", Value::String("1us".into())).unwrap();
        assert!(has_path(&t, "nodes.cache.write_bw"));
        assert!(has_path(&t, "mpiio.open"));
        assert!(!has_path(&t, "nodes.syscall"));
        assert!(set_path(&mut t, "nodes.name.x", Value::Integer(1)).is_err());
    }
}
