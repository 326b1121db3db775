//! `piotwin compare <bench> --scenario S --ranks N [bench options]`: runs a
//! benchmark for real (launching `mpiexec -n N piotwin run <bench> …` itself) and
//! in the twin (`piotwin run <bench> … --sim S --ranks N`, a child process too, so
//! both sides take one code path for every benchmark `run` knows), then prints
//! predicted against measured and writes `DIR/compare.json`, both run reports and
//! `DIR/report.html`.
//!
//! Layout of DIR (default `piotwin-compare/<bench>-n<N>`, a new or empty
//! directory; nothing in it is ever deleted):
//!
//! ```text
//! DIR/compare.json     {benchmark, scenario, ranks, options, metrics: {name: {predicted, measured, error}}, summary, …}
//! DIR/measured.json    the real run's report      DIR/predicted.json   the twin's report
//! DIR/measured.txt     the real run's output      DIR/predicted.txt    the twin's output
//! DIR/measured/        working directory of the real run (its scratch and result files)
//! DIR/measured-<i>.json, DIR/measured/run-<i>/   with --repeat K: each real run's report and
//!                      directory; DIR/measured.json is then their median, with min–max bands
//! DIR/predicted/       working directory of the twin run
//! DIR/plots/           bar charts per metric unit (benchmarks that draw no figures)
//! DIR/report.html      the table and both runs' figures side by side
//! ```
//!
//! Both runs start in their own working directory, so relative paths in the
//! benchmark's options (`-o testFile`, `-p .`, `-f run1`) land inside DIR and
//! the two runs' result files never collide; give absolute paths for anything
//! outside DIR. The options are checked before anything runs, as each run will
//! see them (in an empty directory): bad input exits 2 with nothing written.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use clap::{Args, CommandFactory, Parser};
use piotwin::calibrate::probes::ProbeResults;
use piotwin::calibrate::refresh::{self, Refreshed};
use piotwin::report::compare::{Comparison, Kind};
use piotwin::report::html::{self, FigureRow, Page};
use piotwin::report::plot::BarChart;
use piotwin::report::{RunReport, unit_group, write_atomic};
use piotwin_sim::Scenario;
use piotwin_sim::units::fmt_size;

use super::launcher::{Launcher, Relayed};
use piotwin::run::{CliError, MachineDefault, check_output, install_stop_handlers};
use piotwin_types::stop;

use super::{Cli, Command as CliCommand, normalize_args};

pub(super) const LONG_ABOUT: &str = "\
Run a benchmark for real and in the twin with the same options, and compare.
The real run is `mpiexec -n N piotwin run <BENCH> <options> --json …`, started
by compare itself (MPICH's mpiexec by default, or the launcher matching this
binary's MPI; --mpiexec overrides it); the twin run is `piotwin run <BENCH>
<options> --sim SCENARIO --ranks N`. Both take the same --seed (default: the
scenario's seed).

Prints each metric predicted, measured and the error
100 * (predicted - measured) / |measured| %, headline metrics first, and the
median and largest |error|. Writes DIR/compare.json, DIR/measured.json,
DIR/predicted.json and DIR/report.html (both runs' figures side by side:
measured left, predicted right), and prints the path of report.html.

With --repeat K the real run is repeated K times: each metric's measured value
is the median, shown with the runs' min-max band, and a prediction inside the
band counts as within goal in `piotwin report validation`.

Each run works in its own directory, DIR/measured and DIR/predicted: relative
paths in the options are taken from there. DIR must be new or empty.
Exit codes: 0 both runs succeeded; 1 a run failed (what it finished is kept and
compared, and the failed side named); 2 bad input (nothing written).";

pub(super) const AFTER_HELP: &str = "\
Examples:
  piotwin compare ior --scenario scenarios/default.toml --ranks 2 -a MPIIO -b 16m -t 64k
  piotwin compare b_eff_io --scenario scenarios/default.toml --ranks 2 -MB 512 -T 60 --out cmp/beff
  piotwin compare ftio --scenario my.toml --ranks 4 --mpiexec 'mpiexec.openmpi --mca io romio321' -i 8";

/// `piotwin compare`'s own options; everything else is the benchmark's.
#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    /// The benchmark, as for `piotwin run` (ior, iozone, b_eff_io, btio, btio-kernel, ftio,
    /// pingpong).
    #[arg(value_name = "BENCH")]
    bench: String,
    /// The twin's scenario file (TOML).
    #[arg(long, value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Ranks of both runs (mpiexec -n N, and the twin's --ranks N).
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = clap::value_parser!(u64).range(1..))]
    ranks: u64,
    /// The MPI launcher, split like a shell's words (e.g. 'mpiexec.openmpi --mca io romio321'); `-n N` is appended. Default: the launcher of this binary's MPI (or $PIOTWIN_MPIEXEC).
    #[arg(long, value_name = "CMD")]
    mpiexec: Option<String>,
    /// Directory for the results, new or empty. Default: piotwin-compare/<BENCH>-n<N>.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Seed of both runs (the twin's RNG, the benchmark's random choices). Default: the scenario's seed.
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Also run the twin K times on calibrated parameters drawn from their 95 % intervals: the predicted interval of each metric, and whether the measured value lies inside it.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
    samples: Option<u64>,
    /// Run the real side K times, one after another: the measured value of each metric is the median of the K runs, with their min–max band (a prediction inside the band is as good as the runs agree with each other).
    #[arg(long, value_name = "K", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    repeat: u64,
    /// Wait this long before each real run (e.g. 20s), so that memory freed by what ran before has gone back to the host and the run starts from the settled machine the twin starts from. Default: 1.5 × the scenario's nodes.cache.release_time where it has one, else no wait.
    #[arg(long, value_name = "TIME", value_parser = parse_settle)]
    settle: Option<f64>,
    /// Measure the machine's rates again before the real runs (calibration's in-process kernels, its warm IOzone step, and the kernels on every core at once, fitted as calibration fits them) and give the twin each calibrated rate, and what a core keeps of it with every core busy, moved as its fit moved: for a guest whose speed and cores' availability drift. Needs the calibration's probes file, SCENARIO.probes.json.
    #[arg(long)]
    refresh_rates: bool,
    /// The benchmark's options, as for `piotwin run <BENCH>`.
    #[arg(last = true, value_name = "BENCH OPTIONS", allow_hyphen_values = true)]
    options: Vec<String>,
}

/// compare's own options that take a value; they may come anywhere on the line.
const OWN_FLAGS: [&str; 8] = [
    "--scenario",
    "--ranks",
    "--mpiexec",
    "--out",
    "--seed",
    "--samples",
    "--repeat",
    "--settle",
];

/// compare's own switches (no value); they may come anywhere on the line too.
const OWN_SWITCHES: [&str; 1] = ["--refresh-rates"];

fn parse_settle(text: &str) -> Result<f64, String> {
    piotwin_sim::units::parse_time(text).map_err(|e| format!("{e} (a time like \"20s\")"))
}

/// Seconds to wait before each real run: `--settle`, else 1.5 × the longest
/// `nodes.cache.release_time` of the scenario (all freed memory handed back, with a margin).
fn settle_time(args: &CompareArgs, scenario: &Scenario) -> f64 {
    args.settle.unwrap_or_else(|| {
        let release = scenario
            .nodes
            .iter()
            .filter_map(|g| g.cache.as_ref())
            .map(|c| c.release_time)
            .filter(|t| t.is_finite())
            .fold(0.0, f64::max);
        1.5 * release
    })
}

/// This host's free memory (`MemFree` of /proc/meminfo), bytes; `None` where
/// there is none to read.
fn mem_free() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    piotwin::calibrate::meminfo_bytes(&text, "MemFree").ok()
}

/// The twin's start in the state the real runs found, for every node group
/// whose page cache pays for fresh memory (on others neither changes
/// anything): their median free memory, and their median warm memory, the
/// free blocks below free page reporting's order that the page cache's small
/// pages take without faulting memory in (`/proc/buddyinfo`; the probes,
/// benchmarks and compares before a run use it up, and freed memory comes
/// back in blocks the kernel hands back). Run after a settle, MemFree holds
/// no recently freed memory: all of it is fresh to the page cache, but for
/// the warm part.
fn start_state(scenario: &Scenario, free: Option<u64>, warm: Option<u64>) -> Vec<String> {
    scenario
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, g)| g.cache.as_ref().is_some_and(|c| c.fresh_bw.is_finite()))
        .flat_map(|(i, _)| {
            let free = free.map(|b| format!("nodes[{i}].cache.free={b}B"));
            let warm = warm.map(|b| format!("nodes[{i}].cache.warm={b}B"));
            free.into_iter().chain(warm)
        })
        .collect()
}

/// `--refresh-rates`: calibration's rate probes run again now (the in-process
/// kernels, then its warm IOzone step under `dir`, its report kept as
/// `dir/<name>.json`, then the kernels on every core at once), and the calibrated rates moved as their fits moved (see
/// `piotwin::calibrate::refresh`). A failed IOzone step leaves the page
/// cache's rates as calibrated, and says so.
fn refresh_rates(
    stored: &ProbeResults,
    scenario: &Scenario,
    launcher: &Launcher,
    dir: &Path,
    name: &str,
) -> Vec<Refreshed> {
    let t0 = Instant::now();
    let mut now = ProbeResults::with_kernels(stored.machine.clone(), stored.plan.clone());
    let file = dir.join(format!("{name}.tmp"));
    let warm = piotwin::calibrate::unreported_free();
    if let Some(step) = refresh::warm_iozone(stored, &file.display().to_string()) {
        let json = dir.join(format!("{name}.json"));
        let outcome = super::calibrate::launch(launcher, &step, &json)
            .and_then(|text| now.add_report(&step, &text));
        if let Err(e) = outcome {
            eprintln!(
                "piotwin compare: --refresh-rates: `{}` failed ({e}); the page cache's rates stay as calibrated",
                step.describe()
            );
        }
        // IOzone removes its file; a stopped one may not have.
        let _ = std::fs::remove_file(&file);
    }
    // Last, so the IOzone step follows the kernels alone as in calibration.
    now.add_all_cores();
    let mut refreshed = refresh::refreshed(stored, &now, scenario);
    if let Some(why) = refresh::writes_unlike_calibration(stored, warm)
        .or_else(|| refresh::writes_took_fresh_memory(&refreshed))
    {
        eprintln!("piotwin compare: --refresh-rates: {why}");
        refresh::drop_writes(&mut refreshed);
    }
    eprintln!(
        "piotwin compare: rates measured again ({:.1} s), the twin takes them: {}",
        t0.elapsed().as_secs_f64(),
        refreshed
            .iter()
            .map(|r| format!(
                "{} {:.4e} -> {:.4e} {} (x{:.3})",
                r.key,
                r.calibrated,
                r.value(),
                r.unit,
                r.now / r.then
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    refreshed
}

/// A side not run because a stop was requested first.
fn interrupted(name: &str, signal: i32) -> Side {
    Side {
        name: name.into(),
        report: None,
        failure: Some(format!(
            "not run: interrupted by {}",
            stop::signal_name(signal)
        )),
        written: Vec::new(),
        wall_s: 0.0,
    }
}

/// Sleeps `seconds` unless a stop is requested meanwhile.
fn settle(seconds: f64) {
    let until = Instant::now() + std::time::Duration::from_secs_f64(seconds);
    while stop::requested().is_none() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
    }
}

/// Options compare sets for each run itself, refused among the benchmark's.
const SET_BY_COMPARE: [(&str, &str); 6] = [
    ("--sim", "the twin's scenario is --scenario"),
    ("--ranks", "both runs take --ranks"),
    ("--dry-run", "compare runs for real and in the twin"),
    (
        "--json",
        "the reports are DIR/measured.json and DIR/predicted.json",
    ),
    (
        "--csv",
        "the reports are DIR/measured.json and DIR/predicted.json",
    ),
    ("--set", "compare runs the scenario as it is"),
];

/// `piotwin compare …` with compare's own options moved before the benchmark's
/// name and the benchmark's options after a `--`, so that clap sees
/// `compare [OWN] BENCH -- [BENCH OPTIONS]`; any other command line unchanged.
pub(super) fn normalize_compare_args(argv: Vec<OsString>) -> Vec<OsString> {
    if argv.len() < 3 || argv[1] != "compare" {
        return argv;
    }
    let words: Vec<String> = match argv[2..].iter().map(|w| w.clone().into_string()).collect() {
        Ok(w) => w,
        // Not UTF-8: leave it to clap, which names the word.
        Err(_) => return argv,
    };
    let mut own: Vec<String> = Vec::new();
    let mut bench: Option<String> = None;
    let mut rest: Vec<String> = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        if w == "--" {
            rest.extend(it.by_ref());
            break;
        }
        let flag = w.split('=').next().unwrap_or_default();
        if OWN_SWITCHES.contains(&w.as_str()) {
            own.push(w);
        } else if OWN_FLAGS.contains(&flag) {
            let takes_next = !w.contains('=');
            own.push(w);
            if takes_next && let Some(v) = it.next() {
                own.push(v);
            }
        } else if bench.is_none() && !w.starts_with('-') {
            bench = Some(w);
        } else if bench.is_none() {
            // Before the benchmark: compare's (--help) or unknown, for clap to judge.
            own.push(w);
        } else {
            rest.push(w);
        }
    }
    let mut out: Vec<OsString> = argv[..2].to_vec();
    out.extend(own.into_iter().map(OsString::from));
    if let Some(b) = bench {
        out.push(b.into());
        out.push("--".into());
        out.extend(rest.into_iter().map(OsString::from));
    }
    out
}

/// The benchmarks `piotwin run` knows (its subcommands).
fn benchmarks() -> Vec<String> {
    let cli = Cli::command();
    cli.find_subcommand("run")
        .map(|run| {
            run.get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs in an empty temporary directory while it lives; back to `home` and the
/// directory removed (it is this process's own) on drop.
struct CheckDir {
    home: PathBuf,
    dir: PathBuf,
}

impl CheckDir {
    fn enter() -> Result<CheckDir, CliError> {
        let home = std::env::current_dir()
            .map_err(|e| CliError::Usage(format!("the current directory is not readable: {e}")))?;
        let dir =
            std::env::temp_dir().join(format!("piotwin-compare-check-{}", std::process::id()));
        std::fs::create_dir(&dir)
            .and_then(|()| std::env::set_current_dir(&dir))
            .map_err(|e| {
                CliError::Usage(format!(
                    "cannot make the empty directory `{}` to check the options in: {e}",
                    dir.display()
                ))
            })?;
        Ok(CheckDir { home, dir })
    }
}

impl Drop for CheckDir {
    fn drop(&mut self) {
        let _ = std::env::set_current_dir(&self.home);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What checking the options found.
enum Checked {
    /// Good: run, with the options left out that default from the machine,
    /// resolved here.
    Run(Vec<MachineDefault>),
    /// The benchmark's help was asked for and printed: stop, successfully.
    HelpShown,
}

/// Parses and checks `piotwin <argv…>` as `run` would (options, scenario,
/// hints, paths), running and writing nothing; resolves the options that
/// default from the machine.
fn check_run(argv: Vec<OsString>, bench: &str, side: &str) -> Result<Checked, CliError> {
    let cli = match Cli::try_parse_from(normalize_args(argv)) {
        Ok(c) => c,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            let _ = e.print();
            return Ok(Checked::HelpShown);
        }
        Err(e) => {
            let text = e.render().to_string();
            let text = text
                .split("\n\nFor more information")
                .next()
                .unwrap_or_default()
                .trim()
                .trim_start_matches("error: ");
            return Err(CliError::Usage(format!(
                "the benchmark's options, for the {side} run: {text} (see `piotwin run {bench} --help`)"
            )));
        }
    };
    let CliCommand::Run { bench } = cli.command else {
        unreachable!("check_run is given `run` command lines")
    };
    bench.check().map_err(|e| match e {
            CliError::Usage(m) => {
                let about_paths = ["does not exist", "cannot read", "cannot create"]
                    .iter()
                    .any(|p| m.contains(p));
                let note = if about_paths {
                    " (note: each run works in its own new directory, DIR/measured or DIR/predicted: \
                     relative paths in the options are taken from there; give absolute paths for files outside DIR)"
                } else {
                    ""
                };
                CliError::Usage(format!("the benchmark's options, for the {side} run: {m}{note}"))
            }
            other => other,
    })?;
    Ok(Checked::Run(bench.machine_defaults()?))
}

/// One side's run: its child process's outcome.
pub(crate) struct Side {
    /// `measured` or `predicted` (`phase3` for `piotwin phases`).
    name: String,
    /// Its report, if it wrote one (a failed run may have: what it finished).
    pub(crate) report: Option<RunReport>,
    /// Why it failed, if it did.
    pub(crate) failure: Option<String>,
    /// Files the run says it wrote (`piotwin: wrote PATH`), as absolute paths.
    written: Vec<PathBuf>,
    /// Wall-clock seconds of the child process.
    wall_s: f64,
}

/// Runs `cmd` (a `piotwin run …` command line, maybe under mpiexec, that
/// writes its report to `DIR/<name>.json`) in `workdir` for the command `who`:
/// its stdout is kept in `DIR/<name>.txt`, its stderr passed through (prefixed
/// with `[name] `) and scanned for the files it wrote and its error.
pub(crate) fn run_side(
    who: &str,
    name: &str,
    mut cmd: Command,
    workdir: &Path,
    dir: &Path,
) -> Result<Side, CliError> {
    let json = dir.join(format!("{name}.json"));
    let started = Instant::now();
    let shown = format!("{cmd:?}");
    eprintln!("piotwin {who}: {name} run: {shown}");
    let mut run = Relayed::spawn(
        cmd.current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .map_err(|e| CliError::Runtime(format!("the {name} run could not start ({shown}): {e}")))?;
    let child = &mut run.child;
    let stderr = child.stderr.take().expect("stderr is piped");
    let tag = name.to_string();
    let reader = std::thread::spawn(move || {
        let mut written = Vec::new();
        let mut errors = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[{tag}] {line}");
            if let Some(p) = line.strip_prefix("piotwin: wrote ") {
                written.push(PathBuf::from(p));
            } else if let Some(m) = line.strip_prefix("piotwin: error: ") {
                errors.push(m.to_string());
            }
        }
        (written, errors)
    });
    let mut out = Vec::new();
    let read = child
        .stdout
        .take()
        .expect("stdout is piped")
        .read_to_end(&mut out);
    let status = run.wait();
    let (written, errors) = reader.join().unwrap_or_default();
    let wall_s = started.elapsed().as_secs_f64();
    let text = dir.join(format!("{name}.txt"));
    write_atomic(&text, &out)
        .map_err(|e| CliError::Runtime(format!("`{}`: cannot write: {e}", text.display())))?;
    let mut failure = match (read, status) {
        (Err(e), _) => Some(format!("its output could not be read: {e}")),
        (_, Err(e)) => Some(format!("it could not be waited for: {e}")),
        (_, Ok(s)) if !s.success() => Some(match errors.last() {
            Some(m) => format!("{m} ({s})"),
            None => format!("it ended with {s} (see its messages above)"),
        }),
        _ => None,
    };
    let report = match std::fs::read_to_string(&json) {
        Ok(t) => match serde_json::from_str::<RunReport>(&t) {
            Ok(r) => Some(r),
            Err(e) => {
                failure.get_or_insert_with(|| {
                    format!("`{}` is not a run report: {e}", json.display())
                });
                None
            }
        },
        Err(_) => {
            if failure.is_none() {
                failure = Some(format!("it wrote no report `{}`", json.display()));
            }
            None
        }
    };
    let written = written
        .into_iter()
        .map(|p| if p.is_absolute() { p } else { workdir.join(p) })
        .collect();
    Ok(Side {
        name: name.to_string(),
        report,
        failure,
        written,
        wall_s,
    })
}

/// The measured side of `k` repeated real runs (`DIR/measured-<i>.json`, all
/// that finished): its report is the median of the runs' reports with their
/// min–max bands ([`RunReport::median_of`]), written as `DIR/measured.json`; its
/// output `DIR/measured.txt` every run's, one after another; its figures the
/// first run's; it failed if any run failed (each failure named by its run).
fn repeated_side(runs: Vec<Side>, k: u64, dir: &Path) -> Result<Side, CliError> {
    let reports: Vec<RunReport> = runs.iter().filter_map(|s| s.report.clone()).collect();
    let report = RunReport::median_of(&reports);
    let write = |path: PathBuf, bytes: &[u8]| {
        write_atomic(&path, bytes)
            .map_err(|e| CliError::Runtime(format!("`{}`: cannot write: {e}", path.display())))
    };
    if let Some(r) = &report {
        write(dir.join("measured.json"), r.to_json().as_bytes())?;
    }
    let mut text = String::new();
    for s in &runs {
        let own = std::fs::read_to_string(dir.join(format!("{}.txt", s.name))).unwrap_or_default();
        text += &format!("== {} of {k}\n{own}", s.name);
    }
    write(dir.join("measured.txt"), text.as_bytes())?;
    let mut failures: Vec<String> = runs
        .iter()
        .filter_map(|s| s.failure.as_ref().map(|f| format!("{}: {f}", s.name)))
        .collect();
    if (runs.len() as u64) < k {
        failures.push(format!("{} of {k} runs done", runs.len()));
    }
    Ok(Side {
        name: "measured".into(),
        report,
        failure: (!failures.is_empty()).then(|| failures.join("; ")),
        written: runs.first().map(|s| s.written.clone()).unwrap_or_default(),
        wall_s: runs.iter().map(|s| s.wall_s).sum(),
    })
}

/// `path` relative to `base` where it lies under it, else as it is.
fn relative_to(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// `(caption, image)` of charts with measured and predicted in one.
type Charts = Vec<(String, String)>;

/// The figures of a comparison: the SVG figures the runs wrote themselves
/// (b_eff_io's plot per partition), paired by file name, measured left and
/// predicted right; and in `DIR/plots/` one chart per unit group of the
/// metrics with measured and predicted in it, bar beside bar, each with its
/// spread: the predicted 95 % interval (`--samples`) and the measured
/// repetitions' min–max (where the report has `<metric>_min`/`_max`). The
/// charts hold the headline metrics, and the detail metrics too for
/// benchmarks that draw no figures of their own.
fn figures(
    c: &Comparison,
    sides: &[&Side],
    dir: &Path,
) -> Result<(Vec<FigureRow>, Charts), CliError> {
    let svgs = |s: &Side| -> Vec<PathBuf> {
        s.written
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "svg"))
            .cloned()
            .collect()
    };
    let (m, p) = (svgs(sides[0]), svgs(sides[1]));
    let own = !m.is_empty() || !p.is_empty();
    let mut names: Vec<String> = m
        .iter()
        .chain(&p)
        .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names.dedup();
    let find = |list: &[PathBuf], name: &str| {
        list.iter()
            .find(|f| f.file_name().is_some_and(|n| n.to_string_lossy() == name))
            .map(|f| relative_to(f, dir))
    };
    let pairs = names
        .iter()
        .map(|n| FigureRow {
            caption: n.clone(),
            measured: find(&m, n),
            predicted: find(&p, n),
        })
        .collect();
    let charted = |k: Kind| k == Kind::Headline || (k == Kind::Detail && !own);
    let mut groups: Vec<(&str, &str, Vec<&piotwin::report::compare::Row>)> = Vec::new();
    for r in c.rows.iter().filter(|r| charted(r.kind)) {
        if let Some((stem, label)) = unit_group(&r.pair.name) {
            match groups.iter_mut().find(|g| g.0 == stem) {
                Some(g) => g.2.push(r),
                None => groups.push((stem, label, vec![r])),
            }
        }
    }
    if groups.is_empty() {
        return Ok((pairs, Vec::new()));
    }
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots)
        .map_err(|e| CliError::Runtime(format!("`{}`: cannot create: {e}", plots.display())))?;
    let measured = sides[0].report.as_ref();
    let spread = |name: &str| {
        let r = measured?;
        Some((
            r.metrics.get(&format!("{name}_min"))?,
            r.metrics.get(&format!("{name}_max"))?,
        ))
        .map(|(lo, hi)| (*lo, *hi))
    };
    let mut charts = Vec::new();
    for (stem, label, members) in groups {
        let mut bars = Vec::new();
        let mut whiskers = Vec::new();
        for r in &members {
            if let Some(v) = r.pair.measured {
                bars.push((format!("{} measured", r.pair.name), v));
                whiskers.push(spread(&r.pair.name));
            }
            if let Some(v) = r.pair.predicted {
                bars.push((format!("{} predicted", r.pair.name), v));
                whiskers.push(r.interval.map(|i| (i.low, i.high)));
            }
        }
        let chart = BarChart {
            title: format!("{} ({label}): measured and predicted", c.benchmark),
            value_label: label.to_string(),
            value_max: 0.0,
            size: (760, 60 + 36 * bars.len() as u32 + 60),
            bars,
            whiskers,
        };
        let path = plots.join(format!("{stem}.svg"));
        chart
            .write_svg(&path)
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        let caption = format!(
            "{label}: measured and predicted{}",
            match members.iter().any(|r| r.interval.is_some()) {
                true =>
                    " (lines: the predicted 95 % interval; the measured repetitions' min-max where there are several)",
                false => " (lines: the measured repetitions' min-max where there are several)",
            }
        );
        charts.push((caption, relative_to(&path, dir)));
    }
    Ok((pairs, charts))
}

/// The machine defaults given to both runs, as one line (`-MB 12052 (from …)`).
fn resolved_line(resolved: &[MachineDefault]) -> Option<String> {
    (!resolved.is_empty()).then(|| {
        resolved
            .iter()
            .map(|d| format!("{} {} ({})", d.flag, d.value, d.from))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Top-level `params` keys whose values differ between the two runs (defaults
/// taken from the environment, such as b_eff_io's memory per process, can).
fn params_differ(m: &RunReport, p: &RunReport) -> Vec<String> {
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (&m.params, &p.params)
    else {
        return if m.params == p.params {
            Vec::new()
        } else {
            vec![format!(
                "params: measured {} against predicted {}",
                m.params, p.params
            )]
        };
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            let show = |v: Option<&serde_json::Value>| v.map_or("-".to_string(), |v| v.to_string());
            format!(
                "parameter `{k}` differs: measured {}, predicted {}",
                show(a.get(k)),
                show(b.get(k))
            )
        })
        .collect()
}

/// The output directory: `--out` or the default, absolute; it must be new or
/// empty, and creatable.
fn out_dir(args: &CompareArgs, cwd: &Path) -> Result<PathBuf, CliError> {
    let given = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("piotwin-compare").join(format!("{}-n{}", args.bench, args.ranks))
    });
    let dir = cwd.join(&given);
    let shown = given.display();
    if dir.exists() {
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            CliError::Usage(format!(
                "--out `{shown}`: exists but is not a readable directory: {e}"
            ))
        })?;
        if entries.count() > 0 {
            return Err(CliError::Usage(format!(
                "--out `{shown}`: exists and is not empty; compare writes into a new or empty directory \
                 (it never overwrites or deletes): give another --out, or move that one away"
            )));
        }
        check_output(&dir.join("compare.json"), "--out")?;
    } else {
        let existing = dir
            .ancestors()
            .find(|a| a.exists())
            .unwrap_or(Path::new("/"));
        if !existing.is_dir() {
            return Err(CliError::Usage(format!(
                "--out `{shown}`: `{}` is not a directory",
                existing.display()
            )));
        }
        check_output(&existing.join("compare.json"), "--out")?;
    }
    Ok(dir)
}

/// Runs `piotwin compare`.
pub(super) fn run(args: &CompareArgs) -> Result<(), CliError> {
    let usage = |m: String| Err(CliError::Usage(m));
    if piotwin::run::job_size().is_some() {
        return usage(
            "compare starts mpiexec itself: run `piotwin compare …` directly, not under mpiexec"
                .into(),
        );
    }
    let known = benchmarks();
    if !known.contains(&args.bench) {
        return usage(format!(
            "unknown benchmark `{}`: piotwin runs {}",
            args.bench,
            known.join(", ")
        ));
    }
    for w in &args.options {
        let flag = w.split('=').next().unwrap_or_default();
        if let Some((f, why)) = SET_BY_COMPARE.iter().find(|(f, _)| *f == flag) {
            return usage(format!(
                "`{f}` among the benchmark's options: compare sets it for each run ({why})"
            ));
        }
    }
    let scenario = Scenario::load(&args.scenario)
        .map_err(|e| CliError::Usage(format!("--scenario `{}`: {e}", args.scenario.display())))?;
    let scenario_path = std::fs::canonicalize(&args.scenario)
        .map_err(|e| CliError::Usage(format!("--scenario `{}`: {e}", args.scenario.display())))?;
    let stored_probes = match args.refresh_rates {
        true => {
            let path = PathBuf::from(format!("{}.probes.json", args.scenario.display()));
            Some(super::calibrate::read_probes(&path, "--refresh-rates")?)
        }
        false => None,
    };
    let seed = args.seed.unwrap_or(scenario.seed);
    let launcher = Launcher::resolve(args.mpiexec.as_deref())?;
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::Usage(format!("the current directory is not readable: {e}")))?;
    let dir = out_dir(args, &cwd)?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Usage(format!("cannot find this program's path: {e}")))?;

    // The two command lines, as `piotwin run` words.
    let mut real: Vec<OsString> = vec!["run".into(), args.bench.clone().into()];
    real.extend(args.options.iter().map(OsString::from));
    real.extend(["--seed".into(), seed.to_string().into()]);
    let mut twin = real.clone();
    twin.extend([
        "--sim".into(),
        scenario_path.clone().into(),
        "--ranks".into(),
        args.ranks.to_string().into(),
    ]);
    if let Some(k) = args.samples {
        twin.extend(["--samples".into(), k.to_string().into()]);
    }
    let resolved = {
        let _in_empty_dir = CheckDir::enter()?;
        let argv = |words: &[OsString]| {
            std::iter::once(OsString::from("piotwin"))
                .chain(words.iter().cloned())
                .collect::<Vec<_>>()
        };
        if let Checked::HelpShown = check_run(argv(&twin), &args.bench, "twin")? {
            return Ok(());
        }
        // Options that default from the machine: the real run's, given to both runs.
        match check_run(argv(&real), &args.bench, "real")? {
            Checked::Run(resolved) => resolved,
            Checked::HelpShown => return Ok(()),
        }
    };
    if let Some(line) = resolved_line(&resolved) {
        eprintln!("piotwin compare: resolved for both runs: {line}");
    }
    for d in &resolved {
        for words in [&mut real, &mut twin] {
            words.extend([d.flag.into(), d.value.clone().into()]);
        }
    }

    // Nothing was written so far; from here on, only inside DIR.
    let measured_dir = dir.join("measured");
    let predicted_dir = dir.join("predicted");
    for d in [&measured_dir, &predicted_dir] {
        std::fs::create_dir_all(d)
            .map_err(|e| CliError::Runtime(format!("`{}`: cannot create: {e}", d.display())))?;
    }
    let json_arg = |name: &str| -> [OsString; 2] {
        ["--json".into(), dir.join(format!("{name}.json")).into()]
    };
    install_stop_handlers()?;
    let settle_s = settle_time(args, &scenario);
    if settle_s > 0.0 {
        eprintln!(
            "piotwin compare: waiting {settle_s:.3} s before each real run, so that freed memory is back with the host (--settle)"
        );
    }
    let mut free_at_start = Vec::new();
    let mut warm_at_start = Vec::new();
    // Before each real run's settle, so the probes' own files are long freed when it starts.
    let mut refreshes: Vec<Vec<Refreshed>> = Vec::new();
    let mut refresh = |i: u64| {
        if let Some(stored) = &stored_probes
            && stop::requested().is_none()
        {
            let file = format!("refresh-iozone-{i}");
            refreshes.push(refresh_rates(
                stored,
                &scenario,
                &launcher,
                &measured_dir,
                &file,
            ));
        }
    };
    let measured = if args.repeat == 1 {
        refresh(1);
        settle(settle_s);
        free_at_start.extend(mem_free());
        warm_at_start.extend(piotwin::calibrate::unreported_free());
        let mut real_cmd = launcher.command(args.ranks);
        real_cmd.arg(&exe).args(&real).args(json_arg("measured"));
        match stop::requested() {
            None => run_side("compare", "measured", real_cmd, &measured_dir, &dir)?,
            Some(signal) => interrupted("measured", signal),
        }
    } else {
        let mut runs = Vec::new();
        for i in 1..=args.repeat {
            if stop::requested().is_some() {
                break;
            }
            let name = format!("measured-{i}");
            let workdir = measured_dir.join(format!("run-{i}"));
            std::fs::create_dir_all(&workdir).map_err(|e| {
                CliError::Runtime(format!("`{}`: cannot create: {e}", workdir.display()))
            })?;
            refresh(i);
            settle(settle_s);
            if stop::requested().is_some() {
                break;
            }
            free_at_start.extend(mem_free());
            warm_at_start.extend(piotwin::calibrate::unreported_free());
            let mut real_cmd = launcher.command(args.ranks);
            real_cmd.arg(&exe).args(&real).args(json_arg(&name));
            runs.push(run_side("compare", &name, real_cmd, &workdir, &dir)?);
        }
        repeated_side(runs, args.repeat, &dir)?
    };
    let start_median = |bytes: &[u64]| {
        piotwin::report::median(&mut bytes.iter().map(|&b| b as f64).collect::<Vec<_>>())
            .map(|m| m as u64)
    };
    let (free_median, warm_median) = (start_median(&free_at_start), start_median(&warm_at_start));
    let start_sets = start_state(&scenario, free_median, warm_median);
    let listed = |bytes: &[u64]| {
        bytes
            .iter()
            .map(|&b| fmt_size(b))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(free) = free_median.filter(|_| !start_sets.is_empty()) {
        eprintln!(
            "piotwin compare: the real runs started with {} of free memory (MemFree; median {}): the twin starts so (nodes.cache.free)",
            listed(&free_at_start),
            fmt_size(free)
        );
    }
    if let Some(warm) = warm_median.filter(|_| !start_sets.is_empty()) {
        eprintln!(
            "piotwin compare: of it {} in blocks below free page reporting's order (median {}): the twin's page cache starts with that much warm (nodes.cache.warm)",
            listed(&warm_at_start),
            fmt_size(warm)
        );
    }
    let refreshed = refresh::median(&refreshes);
    if refreshes.len() > 1 {
        eprintln!(
            "piotwin compare: the twin takes each refreshed rate's median over the {} measurements",
            refreshes.len()
        );
    }
    let twin_sets: Vec<String> = start_sets
        .into_iter()
        .chain(refreshed.iter().map(Refreshed::as_override))
        .collect();
    for set in &twin_sets {
        twin.extend(["--set".into(), set.into()]);
    }
    let mut twin_cmd = Command::new(&exe);
    twin_cmd.args(&twin).args(json_arg("predicted"));
    let predicted = match stop::requested() {
        None => run_side("compare", "predicted", twin_cmd, &predicted_dir, &dir)?,
        Some(signal) => interrupted("predicted", signal),
    };

    let benchmark = measured
        .report
        .as_ref()
        .or(predicted.report.as_ref())
        .map_or(args.bench.clone(), |r| r.benchmark.clone());
    let comparison = Comparison::new(
        &benchmark,
        measured.report.as_ref(),
        predicted.report.as_ref(),
    )
    .map_err(CliError::Runtime)?;
    let failures: Vec<String> = [&measured, &predicted]
        .iter()
        .filter_map(|s| {
            s.failure.as_ref().map(|f| {
                let what = if s.name == "measured" {
                    "the real run (measured)"
                } else {
                    "the twin run (predicted)"
                };
                let kept = if s.report.is_some() {
                    "its report, with what it finished, is compared"
                } else {
                    "it left no report"
                };
                format!("{what} failed: {f}; {kept}")
            })
        })
        .collect();
    let mut warnings: Vec<String> = Vec::new();
    if let (Some(m), Some(p)) = (&measured.report, &predicted.report) {
        warnings.extend(params_differ(m, p));
        for (side, r) in [("measured", m), ("predicted", p)] {
            warnings.extend(r.errors.iter().map(|e| format!("{side} run: {e}")));
        }
    }
    let launcher_words: Vec<String> = launcher
        .words(args.ranks)
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect();
    let headline: Vec<&str> = comparison
        .rows
        .iter()
        .filter(|r| r.kind == Kind::Headline)
        .map(|r| r.pair.name.as_str())
        .collect();
    let failed: Vec<serde_json::Value> = [&measured, &predicted]
        .iter()
        .filter_map(|s| {
            s.failure
                .as_ref()
                .map(|f| serde_json::json!({"side": s.name, "message": f}))
        })
        .collect();
    let compare_json = serde_json::json!({
        "benchmark": benchmark,
        "scenario": args.scenario.display().to_string(),
        "ranks": args.ranks,
        "options": args.options,
        "seed": seed,
        "samples": args.samples,
        "repeat": args.repeat,
        "settle_s": settle_s,
        "mem_free_at_start": free_at_start,
        "warm_at_start": warm_at_start,
        "twin_sets": twin_sets,
        "rates_refreshed": refreshed,
        "resolved": resolved,
        "launcher": launcher_words,
        "metrics": comparison.metrics_json(),
        "headline": headline,
        "summary": {"headline": comparison.headline, "all": comparison.all},
        "failed": failed,
        "warnings": warnings,
        "wall_s": {"measured": measured.wall_s, "predicted": predicted.wall_s},
    });
    let compare_path = dir.join("compare.json");
    let text = serde_json::to_string_pretty(&compare_json).expect("JSON values serialise") + "\n";
    write_atomic(&compare_path, text.as_bytes()).map_err(|e| {
        CliError::Runtime(format!("`{}`: cannot write: {e}", compare_path.display()))
    })?;

    let (rows, charts) = figures(&comparison, &[&measured, &predicted], &dir)?;
    let title = format!(
        "{benchmark} on {} ranks: predicted (twin of {}) against measured",
        args.ranks,
        args.scenario.display()
    );
    let read_text =
        |name: &str| std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap_or_default();
    let page = Page {
        title: title.clone(),
        facts: vec![
            ("scenario".into(), args.scenario.display().to_string()),
            ("ranks".into(), args.ranks.to_string()),
            ("options".into(), args.options.join(" ")),
            ("seed".into(), seed.to_string()),
            (
                "resolved for both runs".into(),
                resolved_line(&resolved).unwrap_or_else(|| "-".into()),
            ),
            ("launcher".into(), launcher_words.join(" ")),
            (
                "wall time".into(),
                format!(
                    "measured run {:.1} s, predicted run {:.1} s",
                    measured.wall_s, predicted.wall_s
                ),
            ),
        ],
        failures: failures.iter().chain(&warnings).cloned().collect(),
        comparison: &comparison,
        charts,
        figures: rows,
        texts: vec![
            ("measured run's output".into(), read_text("measured")),
            ("predicted run's output".into(), read_text("predicted")),
        ],
    };
    let html_path = dir.join("report.html");
    write_atomic(&html_path, html::render(&page).as_bytes())
        .map_err(|e| CliError::Runtime(format!("`{}`: cannot write: {e}", html_path.display())))?;

    print!("{}", comparison.render(&title));
    if let Some(line) = resolved_line(&resolved) {
        println!("resolved for both runs: {line}");
    }
    for w in &warnings {
        println!("warning: {w}");
    }
    println!("report: {}", html_path.display());
    if let Some(signal) = stop::requested() {
        return Err(CliError::interrupted(
            signal,
            "compare.json and report.html hold what finished",
        ));
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(CliError::Runtime(failures.join("\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn own_options_move_before_the_benchmark_and_its_options_after_a_double_dash() {
        let got = normalize_compare_args(os(&[
            "piotwin",
            "compare",
            "ior",
            "--scenario",
            "s.toml",
            "-b",
            "1m",
            "--ranks=2",
            "-t",
            "64k",
            "--refresh-rates",
            "--seed",
            "3",
        ]));
        assert_eq!(
            got,
            os(&[
                "piotwin",
                "compare",
                "--scenario",
                "s.toml",
                "--ranks=2",
                "--refresh-rates",
                "--seed",
                "3",
                "ior",
                "--",
                "-b",
                "1m",
                "-t",
                "64k"
            ])
        );
        // After the user's own `--`, nothing is compare's.
        let got = normalize_compare_args(os(&["piotwin", "compare", "ior", "--", "--out", "x"]));
        assert_eq!(got, os(&["piotwin", "compare", "ior", "--", "--out", "x"]));
        // Help before the benchmark stays compare's; other commands are untouched.
        let help = os(&["piotwin", "compare", "--help"]);
        assert_eq!(normalize_compare_args(help.clone()), help);
        let run = os(&["piotwin", "run", "ior", "--seed", "1"]);
        assert_eq!(normalize_compare_args(run.clone()), run);
    }

    #[test]
    fn metrics_are_grouped_by_unit() {
        assert_eq!(unit_group("write_mib_s").unwrap().0, "bandwidth_mib_s");
        assert_eq!(unit_group("io_rate_mb_s").unwrap().0, "bandwidth_mb_s");
        assert_eq!(unit_group("read_ops_s").unwrap().0, "ops_s");
        assert_eq!(unit_group("io_time_s").unwrap().0, "time_s");
        assert_eq!(unit_group("io_fraction"), None);
    }
}
