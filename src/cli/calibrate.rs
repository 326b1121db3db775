//! `piotwin calibrate`: runs the probes for real on this machine, fits the twin's
//! parameters and writes a calibrated scenario (see `piotwin::calibrate`).
//!
//! Every input is checked before anything runs (exit 2, nothing written). The
//! probes run in a directory this command creates inside `--dir` and removes at
//! the end. A probe step that fails is reported and its parameters keep the base
//! scenario's values (say so in `[source]`); the scenario and the raw results are
//! still written, and the exit code is 1.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use piotwin::calibrate::fits::{self, Fitted};
use piotwin::calibrate::plan::{Plan, Scale, Step};
use piotwin::calibrate::probes::{ProbeResults, StepFailure};
use piotwin::calibrate::{Machine, discrepancy, freshness, memcpy, writer};
use piotwin::report::write_atomic;
use piotwin_sim::Scenario;

use super::launcher::{Launcher, Relayed};
use piotwin::run::{CliError, check_output, install_stop_handlers};
use piotwin_types::stop;
use std::process::Stdio;

/// The scenario whose values calibration does not fit are kept from, unless `--base`.
const DEFAULT_BASE: &str = include_str!("../../scenarios/default.toml");

pub(super) const LONG_ABOUT: &str = "\
Calibrate the twin from this machine: run the probes for real (memcpy, file
deletes and rewrites after a delete in this process; b_eff at 2 and N ranks, IOR-style MPI-IO at 1..N ranks and IOzone-style
under mpiexec), fit every model parameter with its 95 % interval, the probe it came
from and the fit's quality, and write a scenario the twin runs, plus the raw
probe results next to it (<out>.probes.json). b_eff_io is never run, and the IOR
shapes run are listed in the scenario's [source] (calibration.ior_shapes), so
that other shapes and b_eff_io stay held out for `compare`. --quick takes under
5 minutes on a 2-core workstation, the full run under 30.";

pub(super) const AFTER_HELP: &str = "\
Examples:
  piotwin calibrate --dir /tmp --quick
  piotwin calibrate --check scenarios/calibrated/$(hostname).toml
  piotwin calibrate --dir /scratch --out scenarios/calibrated/ws.toml --ranks 4
  piotwin calibrate --dir /tmp --quick --mpiexec 'mpiexec.mpich'
  piotwin calibrate --refit scenarios/calibrated/vm.toml.probes.json --out scenarios/calibrated/vm.toml";

/// How much probing (hidden test knob: `tiny` runs the same steps at the smallest sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ScaleArg {
    Tiny,
    Quick,
    Full,
}

/// `piotwin calibrate`'s options.
#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
    /// Scratch directory: probe files go in a new directory inside it, removed at the end.
    #[arg(long, value_name = "DIR", required_unless_present_any = ["check", "refit"])]
    dir: Option<PathBuf>,
    /// Fit again from an earlier calibration's raw results (its <out>.probes.json) instead of probing: the same measurements through this version's fits, e.g. after the model gained a parameter.
    #[arg(long, value_name = "PROBES", conflicts_with_all = ["dir", "check", "quick", "ranks", "mpiexec"])]
    refit: Option<PathBuf>,
    /// Check instead whether the calibrated scenario FILE still describes this machine (the host, processor, cores and memory its probes file recorded, its age, and calibration's largest memcpy run again against what it measured): exit 0 when fresh, 1 (with the reasons) when stale.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["out", "quick", "ranks", "base"])]
    check: Option<PathBuf>,
    /// With --check: the oldest calibration still taken as fresh, in days.
    #[arg(long, value_name = "DAYS", default_value_t = 30, requires = "check")]
    max_age_days: u32,
    /// The calibrated scenario (default scenarios/calibrated/<hostname>.toml, its directory created if missing).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Fewer sizes and repetitions: under 5 minutes.
    #[arg(long)]
    quick: bool,
    /// Most ranks of the MPI probes (default: cores + 2, to see oversubscription).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..256))]
    ranks: Option<u64>,
    /// The MPI launcher, split like a shell's words (e.g. 'mpiexec.openmpi --mca io romio321'); `-n N` is appended. Default: the launcher of this binary's MPI (or $PIOTWIN_MPIEXEC).
    #[arg(long, value_name = "CMD")]
    mpiexec: Option<String>,
    /// The scenario whose unfitted values are kept (default: the shipped default.toml).
    #[arg(long, value_name = "SCENARIO")]
    base: Option<PathBuf>,
    #[arg(long, value_enum, hide = true)]
    probe_scale: Option<ScaleArg>,
}

/// The checked inputs of probing.
struct Inputs {
    dir: PathBuf,
    scale: Scale,
    max_ranks: usize,
    launcher: Launcher,
    machine: Machine,
}

/// The checked outputs and the base scenario.
struct Outputs {
    out: PathBuf,
    probes_out: PathBuf,
    create_out_dir: bool,
    base_text: String,
    base_name: String,
    base: Scenario,
}

fn usage<T>(m: String) -> Result<T, CliError> {
    Err(CliError::Usage(m))
}

impl CalibrateArgs {
    fn check(&self) -> Result<Inputs, CliError> {
        let mut machine = Machine::detect().map_err(CliError::Runtime)?;
        let dir = self
            .dir
            .clone()
            .expect("clap requires --dir without --check");
        if !dir.is_dir() {
            return usage(format!(
                "--dir `{}`: not an existing directory",
                dir.display()
            ));
        }
        machine.detect_readahead(&dir);
        check_output(&dir.join("probe"), "--dir")?;
        let scale = match (self.probe_scale, self.quick) {
            (Some(ScaleArg::Tiny), _) => Scale::Tiny,
            (Some(ScaleArg::Quick), _) | (None, true) => Scale::Quick,
            (Some(ScaleArg::Full), _) | (None, false) => Scale::Full,
        };
        let max_ranks = self.ranks.map(|r| r as usize).unwrap_or(machine.cores + 2);
        let launcher = Launcher::resolve(self.mpiexec.as_deref())?;
        Ok(Inputs {
            dir,
            scale,
            max_ranks,
            launcher,
            machine,
        })
    }

    /// The outputs (the default named after `host`) and the base scenario.
    fn outputs(&self, host: &str) -> Result<Outputs, CliError> {
        let (out, create_out_dir) = match &self.out {
            Some(o) => {
                check_output(o, "--out")?;
                (o.clone(), false)
            }
            None => {
                let o = Path::new("scenarios/calibrated").join(format!("{host}.toml"));
                let missing = !o.parent().expect("has a parent").exists();
                if !missing {
                    check_output(&o, "--out (default)")?;
                }
                (o, missing)
            }
        };
        let probes_out = PathBuf::from(format!("{}.probes.json", out.display()));
        if probes_out.is_dir() {
            return usage(format!(
                "`{}` (the raw results next to --out) is a directory",
                probes_out.display()
            ));
        }
        let (base_text, base_name) = match &self.base {
            Some(p) => (
                std::fs::read_to_string(p).map_err(|e| {
                    CliError::Usage(format!("--base `{}`: cannot read it: {e}", p.display()))
                })?,
                p.display().to_string(),
            ),
            None => (
                DEFAULT_BASE.to_string(),
                "scenarios/default.toml".to_string(),
            ),
        };
        let base = Scenario::from_str(&base_text, &base_name)
            .map_err(|e| CliError::Usage(format!("--base `{base_name}`: {e}")))?;
        Ok(Outputs {
            out,
            probes_out,
            create_out_dir,
            base_text,
            base_name,
            base,
        })
    }
}

/// The raw results of a calibration's probes file (given by `option`).
pub(super) fn read_probes(path: &Path, option: &str) -> Result<ProbeResults, CliError> {
    let bad = |why: String| CliError::Usage(format!("{option} `{}`: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let raw: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    serde_json::from_value(raw["results"].clone()).map_err(|e| {
        bad(format!(
            "its `results` are not a calibration's probe results: {e}"
        ))
    })
}

/// One line per probe step on stderr; a bar above them on a terminal.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    done: usize,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
                    .expect("a valid template"),
            );
            b
        });
        Progress {
            bar,
            total,
            done: 0,
        }
    }
    fn step(&mut self, what: &str, outcome: &str) {
        self.done += 1;
        let line = format!("calibrate [{}/{}] {what}: {outcome}", self.done, self.total);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs one launched step; its JSON report text, or why not.
pub(super) fn launch(launcher: &Launcher, step: &Step, json: &Path) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut run = Relayed::spawn(
        launcher
            .command(step.ranks as u64)
            .arg(&exe)
            .arg("run")
            .arg(step.probe.command())
            .args(&step.args)
            .arg("--json")
            .arg(json)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .map_err(|e| format!("cannot start the launcher: {e}"))?;
    let mut stderr = Vec::new();
    if let Some(mut e) = run.child.stderr.take() {
        let _ = e.read_to_end(&mut stderr);
    }
    let status = run
        .wait()
        .map_err(|e| format!("cannot wait for the launcher: {e}"))?;
    if let Some(signal) = stop::requested() {
        return Err(format!("interrupted by {}", stop::signal_name(signal)));
    }
    if !status.success() {
        let err = String::from_utf8_lossy(&stderr);
        let line = err
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| err.lines().rev().find(|l| !l.trim().is_empty()))
            .unwrap_or("");
        return Err(format!("{status}: {}", line.trim()));
    }
    std::fs::read_to_string(json).map_err(|e| format!("no report `{}`: {e}", json.display()))
}

/// `piotwin calibrate --check FILE`: whether FILE's calibration still
/// describes this machine (see [`freshness`]); prints the verdict.
fn check_freshness(file: &Path, max_age_days: u32) -> Result<(), CliError> {
    // FILE must be a scenario; what is checked is in its probes file.
    Scenario::load(file)
        .map_err(|e| CliError::Usage(format!("--check `{}`: {e}", file.display())))?;
    let probes = PathBuf::from(format!("{}.probes.json", file.display()));
    let results = std::fs::read_to_string(&probes)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| v["results"].clone());
    let field = |name: &str| results.as_ref().map(|r| r[name].clone());
    let then: Option<Machine> = field("machine").and_then(|m| serde_json::from_value(m).ok());
    let copies: Option<Vec<memcpy::CopySample>> =
        field("memcpy").and_then(|m| serde_json::from_value(m).ok());
    let now = Machine::detect().map_err(CliError::Runtime)?;
    // The quick check: calibration's largest memcpy (at most 256 MiB) again.
    let quick = copies.as_ref().and_then(|recorded| {
        let size = recorded
            .iter()
            .map(|s| s.bytes)
            .filter(|&b| b <= 256 << 20)
            .max()?;
        let rates = |samples: &[memcpy::CopySample]| -> Vec<f64> {
            let mut v: Vec<f64> = samples
                .iter()
                .filter(|s| s.bytes == size)
                .map(|s| s.bytes as f64 / s.seconds)
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let then = rates(recorded);
        let now = rates(&memcpy::measure(&[size], 7));
        Some(freshness::QuickCheck {
            key: format!("memcpy of {size} bytes"),
            measured: now[now.len() / 2],
            low: then[0],
            high: then[then.len() - 1],
        })
    });
    let why = freshness::stale_reasons(
        then.as_ref(),
        &now,
        &freshness::today(),
        max_age_days,
        quick.as_ref(),
    );
    let shown = file.display();
    if why.is_empty() {
        let date = then.and_then(|m| m.date).unwrap_or_default();
        let check = quick.map_or(String::new(), |q| {
            format!(
                "; quick check {} {:.4e} B/s (calibration measured [{:.4e}, {:.4e}])",
                q.key, q.measured, q.low, q.high
            )
        });
        println!(
            "calibration `{shown}`: fresh (host {}, {} cores, calibrated on {date}{check})",
            now.host, now.cores
        );
        Ok(())
    } else {
        Err(CliError::Runtime(format!(
            "calibration `{shown}` is stale: {}",
            why.join("; ")
        )))
    }
}

/// `piotwin calibrate`.
pub(super) fn run(args: &CalibrateArgs) -> Result<(), CliError> {
    if let Some(file) = &args.check {
        return check_freshness(file, args.max_age_days);
    }
    let (inp, results, removed) = match &args.refit {
        Some(probes) => {
            let results = read_probes(probes, "--refit")?;
            (args.outputs(&results.machine.host)?, results, Ok(()))
        }
        None => {
            let probing = args.check()?;
            let inp = args.outputs(&probing.machine.host)?;
            let scratch = probing
                .dir
                .join(format!("piotwin-calibrate-{}", std::process::id()));
            std::fs::create_dir(&scratch).map_err(|e| {
                CliError::Runtime(format!(
                    "cannot create the scratch directory `{}`: {e}",
                    scratch.display()
                ))
            })?;
            let plan = Plan::new(
                probing.scale,
                probing.machine.cores,
                probing.max_ranks,
                &scratch.display().to_string(),
            );
            install_stop_handlers()?;
            let results = probe(&probing, plan, &scratch);
            let removed = std::fs::remove_dir_all(&scratch).map_err(|e| {
                format!(
                    "cannot remove the scratch directory `{}`: {e}",
                    scratch.display()
                )
            });
            (inp, results, removed)
        }
    };
    let fitted = fits::fit_all(&results, &inp.base);
    let text = writer::render(&inp.base_text, &inp.base_name, &fitted, &results, None)
        .map_err(CliError::Runtime)?;
    if inp.create_out_dir {
        let d = inp.out.parent().expect("has a parent");
        std::fs::create_dir_all(d)
            .map_err(|e| CliError::Runtime(format!("cannot create `{}`: {e}", d.display())))?;
    }
    let raw = serde_json::json!({ "results": results, "fitted": fitted });
    write_atomic(
        &inp.probes_out,
        (serde_json::to_string_pretty(&raw).expect("results serialise") + "\n").as_bytes(),
    )
    .map_err(|e| CliError::Runtime(format!("`{}`: cannot write: {e}", inp.probes_out.display())))?;
    let write_out = |text: &str| {
        write_atomic(&inp.out, text.as_bytes()).map_err(|e| {
            CliError::Runtime(format!("--out `{}`: cannot write: {e}", inp.out.display()))
        })
    };
    write_out(&text)?;
    // The twin just written, judged on the IOR probes it was calibrated from:
    // its model error goes into the same file (the nominal values stay as they are).
    let run_to_run = fitted.run_to_run.as_ref().map_or(0.0, |r| r.spread);
    let judged = match stop::requested() {
        // Stopped: what finished is written as it is; no more twin runs.
        Some(_) => Ok(None),
        None => discrepancy::model_error(
            &inp.out,
            &results.machine,
            &results.plan,
            &results.ior,
            run_to_run,
        ),
    };
    match judged {
        Ok(Some(e)) => {
            let text = writer::render(&inp.base_text, &inp.base_name, &fitted, &results, Some(&e))
                .map_err(CliError::Runtime)?;
            write_out(&text)?;
            println!(
                "model error on the IOR probes: spread {:.3} (rms {:.3}, bias {:+.3} over {} shapes)",
                e.spread, e.rms, e.bias, e.shapes
            );
        }
        Ok(None) => {}
        Err(e) => eprintln!(
            "piotwin calibrate: no model error: the twin could not predict the IOR probes: {e}"
        ),
    }
    print!("{}", summary(&fitted));
    println!(
        "wrote {} and {}",
        inp.out.display(),
        inp.probes_out.display()
    );
    removed.map_err(CliError::Runtime)?;
    if let Some(signal) = stop::requested() {
        return Err(CliError::interrupted(
            signal,
            "the steps not measured keep the base values, as the scenario's [source] says",
        ));
    }
    match results.failures.len() {
        0 => Ok(()),
        n => Err(CliError::Runtime(format!(
            "{n} probe step(s) failed (first: {}: {}); their parameters keep the base values, as the scenario's [source] says",
            results.failures[0].step, results.failures[0].message
        ))),
    }
}

/// Where the all-cores aliasing probe places its buffers past a page: where
/// glibc's `malloc` places a large block, as the benchmarks' buffers lie.
const ALIASED_PLACE: u64 = 16;

/// Runs the plan's steps; what they measured and what failed.
fn probe(inp: &Inputs, plan: Plan, scratch: &Path) -> ProbeResults {
    let mut results = ProbeResults::with_kernels(inp.machine.clone(), plan.clone());
    results.add_all_cores();
    let mut progress = Progress::new(plan.steps.len() + 1);
    #[cfg(feature = "mpi")]
    let fortran = memcpy::measure_fortran(scratch, &memcpy::FORTRAN_PROBE_COUNTS, plan.memcpy_reps);
    #[cfg(not(feature = "mpi"))]
    let fortran = Err("this piotwin was built without MPI, so without the Fortran runtime".into());
    match fortran {
        Ok(s) => results.fortran = s,
        Err(e) => results.failures.push(StepFailure {
            step: "fortran: timed Fortran WRITE statements in the scratch directory".into(),
            message: e,
        }),
    }
    if plan.lock_bytes > 0 {
        match memcpy::measure_inode_lock(scratch, 2, plan.lock_bytes, plan.lock_reps) {
            Ok(l) => results.inode_lock = l,
            Err(e) => results.failures.push(StepFailure {
                step: "inode lock: rewrites of one file and of a file each by 2 writers in the scratch directory".into(),
                message: e.to_string(),
            }),
        }
        match memcpy::measure_bus_read(scratch, 2, plan.lock_bytes, plan.lock_reps) {
            Ok(b) => results.bus_read = b,
            Err(e) => results.failures.push(StepFailure {
                step: "bus read: cached reads of a file each by 2 readers in the scratch directory"
                    .into(),
                message: e.to_string(),
            }),
        }
        match memcpy::measure_bus_write(scratch, 2, plan.lock_bytes, plan.lock_reps) {
            Ok(b) => results.bus_write = b,
            Err(e) => results.failures.push(StepFailure {
                step: "bus write: writes of a new file by 1 and of a file each by 2 writers in the scratch directory"
                    .into(),
                message: e.to_string(),
            }),
        }
    }
    if plan.alias_bytes > 0 {
        match memcpy::measure_aliased(scratch, plan.alias_bytes, &plan.alias_places, 3) {
            Ok(a) => results.aliased = a,
            Err(e) => results.failures.push(StepFailure {
                step: "aliasing: cached reads into buffers placed past a page in the scratch directory"
                    .into(),
                message: e.to_string(),
            }),
        }
        if let Some(together) = results.all_cores.as_mut() {
            match memcpy::measure_aliased_together(
                scratch,
                together.threads,
                plan.alias_bytes,
                ALIASED_PLACE,
            ) {
                Ok(k) => together.kernels.push(k),
                Err(e) => results.failures.push(StepFailure {
                    step: "aliasing on all cores: cached reads into buffers 16 B past a page by every thread at once in the scratch directory".into(),
                    message: e.to_string(),
                }),
            }
        }
    }
    match memcpy::measure_delete(scratch, &plan.delete_sizes, 2) {
        Ok(d) => results.delete = d,
        Err(e) => results.failures.push(StepFailure {
            step: "delete: timed file deletions in the scratch directory".into(),
            message: e.to_string(),
        }),
    }
    // Last of the in-process probes, so that the host reclaiming what it
    // freed cannot slow the kernels timed before it; it settles before the
    // MPI probes.
    match memcpy::measure_release(scratch, &plan.release_steps) {
        Ok(r) => results.release = r,
        Err(e) => results.failures.push(StepFailure {
            step: "release: rewrites after a delete and a wait in the scratch directory".into(),
            message: e.to_string(),
        }),
    }
    let settle = plan.release_steps.iter().map(|s| s.1).fold(0.0, f64::max);
    match memcpy::measure_huge(
        scratch,
        plan.huge_bytes,
        &plan.huge_requests,
        plan.huge_rounds,
        settle,
    ) {
        Ok(h) => results.huge = h,
        Err(e) => results.failures.push(StepFailure {
            step: "huge: settled writes in requests of several sizes in the scratch directory"
                .into(),
            message: e.to_string(),
        }),
    }
    if let Some(&request) = plan.huge_requests.iter().max() {
        let spinners = results.machine.cores;
        match memcpy::measure_fresh_stall(scratch, plan.huge_bytes, request, spinners, settle) {
            Ok(h) => results.fresh_stall = vec![h],
            Err(e) => results.failures.push(StepFailure {
                step: format!(
                    "fresh-stall: a settled write in {request} B requests beside {spinners} spinning threads in the scratch directory"
                ),
                message: e.to_string(),
            }),
        }
    }
    progress.step(
        "memcpy",
        &format!(
            "{} copies, {} data-pattern fills and {} checks, {} busy-work loops, {} BT, {} error-norm, {} FFT and {} FTIO-input kernel runs ({} kernels again on every core at once), {} Fortran runs, {} rewrites after a delete, {} settled writes ({} beside spinning threads), {} lock-probe rewrites, {} bus-probe reads, {} bus-probe writes, {} placed reads",
            results.memcpy.len(),
            results.pattern.len(),
            results.pattern_check.len(),
            results.busy_work.len(),
            results.bt.len(),
            results.error_norm.len(),
            results.fft.len(),
            results.signal.len(),
            results.all_cores.as_ref().map_or(0, |t| t.kernels.len()),
            results.fortran.len(),
            results.release.len(),
            results.huge.len(),
            results.fresh_stall.len(),
            results.inode_lock.len(),
            results.bus_read.len(),
            results.bus_write.len(),
            results.aliased.len()
        ),
    );
    for (i, step) in plan.steps.iter().enumerate() {
        let json = scratch.join(format!("step-{i}.json"));
        let what = step.describe();
        if let Some(signal) = stop::requested() {
            results.failures.push(StepFailure {
                step: what,
                message: format!("not run: interrupted by {}", stop::signal_name(signal)),
            });
            continue;
        }
        let t0 = std::time::Instant::now();
        let outcome =
            launch(&inp.launcher, step, &json).and_then(|text| results.add_report(step, &text));
        match outcome {
            Ok(()) => progress.step(&what, &format!("ok, {:.1} s", t0.elapsed().as_secs_f64())),
            Err(message) => {
                progress.step(&what, &format!("FAILED: {message}"));
                results.failures.push(StepFailure {
                    step: what,
                    message,
                });
            }
        }
    }
    progress.finish();
    results
}

/// The fitted values as a table for stdout.
fn summary(f: &Fitted) -> String {
    let mut s = format!(
        "{:<30} {:>14} {:>28}  {}\n",
        "parameter", "value", "95 % interval", "fit"
    );
    for p in &f.params {
        let _ = std::fmt::Write::write_fmt(
            &mut s,
            format_args!(
                "{:<30} {:>14} {:>28}  {}\n",
                p.key,
                writer::format_value(p.unit, p.value),
                format!(
                    "[{}, {}]",
                    writer::format_value(p.unit, p.low),
                    writer::format_value(p.unit, p.high)
                ),
                p.quality
            ),
        );
    }
    for (k, why) in &f.skipped {
        let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{k:<30} not calibrated: {why}\n"));
    }
    s
}
