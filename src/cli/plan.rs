//! `piotwin plan BENCH --scenario S --ranks N --target "METRIC >= X" --range
//! KEY=LO..HI …`: the cheapest configuration whose twin prediction meets the
//! target (`piotwin::whatif::plan`), the path of evaluations, the margin, and
//! the chosen scenario written out.

use std::path::{Path, PathBuf};

use clap::Args;
use piotwin::report::write_atomic;
use piotwin::run::{CliError, check_output, install_stop_handlers};
use piotwin::whatif::plan::{Found, Goal, Param, Target, seek};
use piotwin::whatif::runner::run_point;
use piotwin::whatif::sweep::Sweep;
use piotwin_sim::Scenario;
use piotwin_types::stop;

pub(super) const LONG_ABOUT: &str = "\
Find the cheapest configuration whose predicted metric meets a target.

Each --range gives a scenario key and its candidate values; the last one is
searched by binary search (capacity is assumed monotone: more never slower),
the others enumerated. Every twin run is checked against that assumption: a
larger value giving a worse result is reported and the search falls back to a
scan of every value. Cost = sum of value x --cost per unit (1 by default).
With --samples K, a configuration meets the target when the pessimistic end
of its 95 % interval does.

Prints the path of evaluations, the chosen configuration, its cost and the
margin over the target; writes DIR/plan.json and DIR/scenario.toml (the base
scenario with the chosen values). Exit codes: 0 a configuration was found; 1
none in the ranges meets the target; 2 bad input (nothing run).";

pub(super) const AFTER_HELP: &str = "\
Targets: \"METRIC >= VALUE\" or \"METRIC <= VALUE\" on a metric of the run report,
or coffee-cup (b_eff_io only: the b_eff_io paper's balance rule, half of the
system's total memory written in 5 minutes, i.e. b_eff_io_mb_s >= memory / 600 s).

Examples:
  piotwin plan b_eff_io --scenario scenarios/lustre-hdd.toml --ranks 1024 \\
      --target coffee-cup --range server.count=1..64 -- -MB 1024 -T 60
  piotwin plan ior --scenario scenarios/lustre-hdd.toml --ranks 1024 \\
      --target \"write_mib_s >= 20000\" --range filesystem.stripe_count=1,2,4,8,16 \\
      --range server.count=8..64 --cost server.count=50000 -- -a MPIIO -b 16m -t 1m -e";

/// `piotwin plan`'s options.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The benchmark, as for `piotwin run`.
    #[arg(value_name = "BENCH")]
    bench: String,
    /// The base scenario (TOML).
    #[arg(long, value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Ranks of every run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    ranks: u64,
    /// The target: "METRIC >= VALUE", "METRIC <= VALUE", or coffee-cup.
    #[arg(long, value_name = "EXPR")]
    target: String,
    /// A scenario key that may change and its values: KEY=LO..HI (whole numbers) or KEY=V1,V2,… cheapest first (repeatable; the last is searched, the others enumerated).
    #[arg(long = "range", value_name = "KEY=VALUES", required = true)]
    ranges: Vec<String>,
    /// Cost per unit of a key's value, KEY=C (repeatable; 1 by default).
    #[arg(long = "cost", value_name = "KEY=C")]
    costs: Vec<String>,
    /// Judge each configuration by the pessimistic end of its 95 % interval over K sampled twin runs.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
    samples: Option<u64>,
    /// Seed of every twin run (default: the scenario's).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Directory for plan.json and scenario.toml (created if missing). Default: piotwin-plan/<BENCH>-n<N>.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// The benchmark's options, after `--`.
    #[arg(last = true, value_name = "BENCH OPTIONS", allow_hyphen_values = true)]
    options: Vec<String>,
}

/// `KEY=LO..HI` or `KEY=V1,V2,…`: the key and its values (TOML text).
fn parse_range(text: &str) -> Result<(String, Vec<String>), String> {
    let bad = |why: &str| {
        format!(
            "--range `{text}`: {why}; expected KEY=LO..HI (whole numbers) or KEY=V1,V2,…, e.g. server.count=1..64"
        )
    };
    let (key, values) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(bad("no key"));
    }
    let values: Vec<String> = match values.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi): (u64, u64) = match (lo.trim().parse(), hi.trim().parse()) {
                (Ok(l), Ok(h)) if l <= h => (l, h),
                _ => return Err(bad("LO and HI must be whole numbers with LO <= HI")),
            };
            (lo..=hi).map(|v| v.to_string()).collect()
        }
        None => values
            .split(',')
            .map(|v| {
                let v = v.trim();
                // TOML where it parses as a value, else a word taken as a string (as --set does).
                match toml::from_str::<toml::Table>(&format!("v = {v}")) {
                    Ok(_) => v.to_string(),
                    Err(_) => toml::Value::String(v.to_string()).to_string(),
                }
            })
            .collect(),
    };
    if values.iter().any(|v| v.is_empty() || v == "\"\"") {
        return Err(bad("an empty value"));
    }
    Ok((key.to_string(), values))
}

pub(super) fn run(args: &PlanArgs) -> Result<(), CliError> {
    install_stop_handlers()?;
    let usage = |m: String| CliError::Usage(m);
    let base = Scenario::load(&args.scenario)
        .map_err(|e| usage(format!("--scenario `{}`: {e}", args.scenario.display())))?;
    let target = match args.target.trim() {
        "coffee-cup" if args.bench == "b_eff_io" => {
            let memory: u64 = base.nodes.iter().map(|g| g.memory * g.count as u64).sum();
            Target::coffee_cup(memory as f64)
        }
        "coffee-cup" => {
            return Err(usage(format!(
                "--target coffee-cup is b_eff_io's rule (b_eff_io_mb_s >= memory / 600 s); for {} give \"METRIC >= VALUE\"",
                args.bench
            )));
        }
        t => Target::parse(t).map_err(usage)?,
    };
    let mut params = Vec::new();
    for r in &args.ranges {
        let (key, values) = parse_range(r).map_err(usage)?;
        if params.iter().any(|p: &Param| p.key == key) {
            return Err(usage(format!("--range `{r}`: `{key}` is given twice")));
        }
        params.push(Param {
            key,
            values,
            cost: 1.0,
        });
    }
    for c in &args.costs {
        let (key, cost) = c
            .split_once('=')
            .and_then(|(k, v)| {
                Some((
                    k.trim(),
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x >= 0.0)?,
                ))
            })
            .ok_or_else(|| {
                usage(format!(
                    "--cost `{c}`: expected KEY=C with C a number >= 0, e.g. server.count=50000"
                ))
            })?;
        let p = params
            .iter_mut()
            .find(|p| p.key == key)
            .ok_or_else(|| usage(format!("--cost `{c}`: `{key}` has no --range")))?;
        p.cost = cost;
    }
    let keys: Vec<String> = params.iter().map(|p| p.key.clone()).collect();
    let sweep = Sweep::base(
        Path::new("piotwin plan"),
        args.scenario.clone(),
        args.bench.clone(),
        args.options.clone(),
        args.seed,
        &keys,
    );
    let samples = args.samples.map(|k| k as usize);
    // Every candidate value checked on the base scenario before anything runs;
    // combinations the scenario refuses (more stripes than servers) are left out
    // of the search as they come.
    for p in &params {
        for v in &p.values {
            Scenario::load_with(&args.scenario, &[format!("{}={v}", p.key)])
                .map_err(|e| usage(format!("--range {}: value {v}: {e}", p.key)))?;
        }
    }
    let first = sweep.point(
        0,
        args.ranks,
        &params
            .iter()
            .map(|p| p.values[0].clone())
            .collect::<Vec<_>>(),
    );
    sweep
        .bench(&first, samples)
        .and_then(|b| b.check().map_err(|e| e.message().unwrap_or("").to_string()))
        .map_err(|e| {
            usage(format!(
                "{} options `{}`: {e}",
                args.bench,
                args.options.join(" ")
            ))
        })?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("piotwin-plan").join(format!("{}-n{}", args.bench, args.ranks))
    });
    std::fs::create_dir_all(&out)
        .map_err(|e| usage(format!("--out `{}`: cannot create it: {e}", out.display())))?;
    check_output(&out.join("plan.json"), "--out")?;

    println!(
        "piotwin plan: {} on `{}`, {} ranks",
        args.bench,
        args.scenario.display(),
        args.ranks
    );
    println!("target: {}", target.origin);
    let mut runs = 0usize;
    // What finished, kept for plan.json should the search stop early.
    let mut seen: Vec<serde_json::Value> = Vec::new();
    let found = seek(&params, &target, |idx| {
        let values: Vec<String> = idx
            .iter()
            .zip(&params)
            .map(|(&i, p)| p.values[i].clone())
            .collect();
        let point = sweep.point(runs, args.ranks, &values);
        runs += 1;
        let shown = values
            .iter()
            .zip(&params)
            .map(|(v, p)| format!("{}={v}", p.key))
            .collect::<Vec<_>>()
            .join(" ");
        if let Err(e) = Scenario::load_with(&args.scenario, &sweep.overrides(&point)) {
            println!(
                "  run {runs:>3}: {shown:<40} not a valid scenario: {}",
                e.message
            );
            seen.push(serde_json::json!({"values": values, "judged": null}));
            return Ok(None);
        }
        let o = run_point(&sweep, &point, samples).ok_or("stopped")?;
        if let Some(f) = &o.failure {
            return Err(format!(
                "{}: the twin run failed: {f}",
                sweep.describe(&point)
            ));
        }
        let judged = match (o.intervals.get(&target.metric), target.goal) {
            (Some(i), Goal::AtLeast(_)) => Some(i.low),
            (Some(i), Goal::AtMost(_)) => Some(i.high),
            (None, _) => o.metrics.get(&target.metric).copied(),
        };
        let x = judged.ok_or_else(|| {
            format!(
                "{} reports no metric `{}`; it reports {}",
                args.bench,
                target.metric,
                o.metrics.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })?;
        println!(
            "  run {runs:>3}: {shown:<40} {} = {x:.3}{}  {}",
            target.metric,
            if samples.is_some() {
                " (95 % bound)"
            } else {
                ""
            },
            if target.meets(x) { "meets" } else { "short" }
        );
        seen.push(serde_json::json!({"values": values, "judged": x, "meets": target.meets(x)}));
        Ok(Some(x))
    });
    let found = match found {
        Ok(f) => f,
        Err(e) => {
            // The runs that finished stay on record; nothing is chosen.
            let stopped = stop::requested().map(piotwin_types::stop::signal_name);
            let json = serde_json::json!({
                "benchmark": args.bench,
                "scenario": args.scenario.display().to_string(),
                "ranks": args.ranks,
                "target": target,
                "path": seen,
                "chosen": null,
                "stopped": stopped.unwrap_or_else(|| e.clone()),
            });
            let plan_json = out.join("plan.json");
            write_atomic(
                &plan_json,
                (serde_json::to_string_pretty(&json).expect("JSON") + "\n").as_bytes(),
            )
            .map_err(|e| {
                CliError::Runtime(format!("cannot write `{}`: {e}", plan_json.display()))
            })?;
            return Err(match stop::requested() {
                Some(signal) => CliError::interrupted(
                    signal,
                    &format!(
                        "the search did not finish, nothing chosen; the runs made are in {}",
                        plan_json.display()
                    ),
                ),
                None => CliError::Runtime(format!(
                    "plan: {e}; the runs made are in {}",
                    plan_json.display()
                )),
            });
        }
    };
    report(args, &params, &target, &found, samples, &out)
}

/// Prints and writes the outcome of the search.
fn report(
    args: &PlanArgs,
    params: &[Param],
    target: &Target,
    found: &Found,
    samples: Option<usize>,
    out: &Path,
) -> Result<(), CliError> {
    let twin_runs = found.path.len() * (1 + samples.unwrap_or(0));
    for v in &found.violations {
        println!("warning: {v}; the search fell back to a scan");
    }
    let chosen = found.chosen.as_ref().map(|idx| {
        let values: Vec<String> = idx
            .iter()
            .zip(params)
            .map(|(&i, p)| p.values[i].clone())
            .collect();
        let judged = found
            .path
            .iter()
            .find(|s| s.values == values)
            .and_then(|s| s.judged)
            .expect("the chosen configuration was evaluated and met the target");
        (values, judged)
    });
    let json = serde_json::json!({
        "benchmark": args.bench,
        "options": args.options.join(" "),
        "scenario": args.scenario.display().to_string(),
        "ranks": args.ranks,
        "target": target,
        "samples": samples,
        "params": params,
        "path": found.path,
        "violations": found.violations,
        "chosen": chosen.as_ref().map(|(v, _)| params.iter().zip(v).map(|(p, v)| (p.key.clone(), v.clone())).collect::<std::collections::BTreeMap<_, _>>()),
        "cost": found.cost,
        "margin_pct": chosen.as_ref().map(|(_, x)| target.margin_pct(*x)),
        "evaluations": found.path.len(),
        "twin_runs": twin_runs,
    });
    let plan_json = out.join("plan.json");
    write_atomic(
        &plan_json,
        (serde_json::to_string_pretty(&json).expect("JSON") + "\n").as_bytes(),
    )
    .map_err(|e| CliError::Runtime(format!("cannot write `{}`: {e}", plan_json.display())))?;
    let Some((values, judged)) = chosen else {
        println!(
            "no configuration in the ranges meets the target ({} evaluations, {twin_runs} twin runs); wrote {}",
            found.path.len(),
            plan_json.display()
        );
        return Err(CliError::Runtime(
            "plan: no configuration in the ranges meets the target".into(),
        ));
    };
    let settings: Vec<String> = params
        .iter()
        .zip(&values)
        .map(|(p, v)| format!("{}={v}", p.key))
        .collect();
    let scenario_out = out.join("scenario.toml");
    write_scenario(&args.scenario, &settings, target, &scenario_out).map_err(CliError::Runtime)?;
    println!(
        "chosen: {}  (cost {}; {} = {judged:.3}, margin {:+.1} % over {:.3})",
        settings.join(" "),
        found.cost.expect("a chosen configuration has a cost"),
        target.metric,
        target.margin_pct(judged),
        target.value()
    );
    println!(
        "{} evaluations ({twin_runs} twin runs); wrote {} and {}",
        found.path.len(),
        plan_json.display(),
        scenario_out.display()
    );
    Ok(())
}

/// The base scenario with `settings` (`KEY=VALUE`) applied, written to `path`
/// and read back (so what is written is a scenario the twin takes).
fn write_scenario(
    base: &Path,
    settings: &[String],
    target: &Target,
    path: &Path,
) -> Result<(), String> {
    let text = std::fs::read_to_string(base).map_err(|e| format!("`{}`: {e}", base.display()))?;
    let mut root: toml::Table =
        toml::from_str(&text).map_err(|e| format!("`{}`: {e}", base.display()))?;
    for s in settings {
        let (key, value) = s.split_once('=').expect("KEY=VALUE");
        let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        piotwin::calibrate::writer::set_path(&mut root, key, value)?;
    }
    let body = toml::to_string(&root).map_err(|e| e.to_string())?;
    let text = format!(
        "# Chosen by `piotwin plan` from `{}` for the target: {}\n# Changed: {}\n\n{body}",
        base.display(),
        target.origin,
        settings.join(" ")
    );
    write_atomic(path, text.as_bytes())
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
    Scenario::load(path).map_err(|e| format!("the chosen scenario does not read back: {e}"))?;
    Ok(())
}
