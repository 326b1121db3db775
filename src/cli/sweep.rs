//! `piotwin sweep FILE`: every point of a sweep file run in the twin, in
//! parallel threads (and one share per rank under `mpiexec -n K`), kept as
//! they finish, resumed when the same command runs again; then the table, the
//! plots and the page. See `piotwin::whatif::sweep` for the file.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use piotwin::run::{CliError, install_stop_handlers, job_size};
use piotwin::whatif::output::Results;
use piotwin::whatif::runner::{self, Outcome, Store};
use piotwin::whatif::sweep::Sweep;
use piotwin_types::stop;

pub(super) const LONG_ABOUT: &str = "\
Run every point of a sweep file in the twin: a base scenario, one benchmark
with its options, rank counts, and the scenario keys, benchmark options and
named alternatives (whole device or file-system blocks) to vary. Every point is
checked before anything runs (a bad key or value names the sweep file, its
line, the point and the key; exit 2, nothing written).

Points run on --jobs worker threads; under `mpiexec -n K piotwin sweep FILE`
each rank takes every K-th point and rank 0 gathers the results. Each finished
point is appended to DIR/points.jsonl at once; after a crash or Ctrl-C, the
same command resumes where it stopped (points already stored are not run
again). Then DIR/sweep.csv (parameters and headline metrics, with their 95 %
intervals under --samples), DIR/sweep.json (every metric), DIR/plots/ (each
headline metric over each varied key, SVG and PNG) and DIR/index.html.
Progress and the time left go to stderr.

Exit codes: 0 every point ran; 1 a point failed (the others are kept); 2 bad
input; 128 + signal when stopped (what finished is kept).";

pub(super) const AFTER_HELP: &str = "\
Sweep file (TOML):
  scenario  = \"../scenarios/lustre-hdd.toml\"    # relative to the sweep file
  benchmark = \"ior\"
  options   = \"-a MPIIO -b 16m -t 1m -e\"
  ranks     = [1024]
  [vary]
  \"server.count\"            = [4, 8, 16, 32]  # scenario keys, as --set writes them
  \"filesystem.stripe_count\" = [1, 4, 8]
  \"-t\"                      = [\"1m\", \"4m\"]   # benchmark options
  device                    = [\"raid6\", \"nvme\"]
  [alternatives.device.raid6]
  \"server.device\" = { kind = \"raid\", level = 6, disks = 10, member = { kind = \"hdd\" } }
  [alternatives.device.nvme]
  \"server.device\" = { kind = \"ssd\", read_bw = \"3GB/s\", write_bw = \"2GB/s\" }
([[points]] tables instead of [vary] list the points one by one.)

Examples:
  piotwin sweep examples/sweep-lustre.toml --jobs 2
  mpiexec -n 4 piotwin sweep examples/sweep-lustre.toml --out runs/lustre";

/// `piotwin sweep`'s options.
#[derive(Debug, Args)]
pub(crate) struct SweepArgs {
    /// The sweep file (TOML).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Directory of the results (created if new; a sweep's own earlier results in it are resumed). Default: piotwin-sweep/<FILE's stem>.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Worker threads (per rank under mpiexec). Default: the cores available.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Prediction intervals: K twin runs per point on drawn calibrated parameters (overrides the file's `samples`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
    samples: Option<u64>,
}

/// Progress on stderr: a bar with the time left on a terminal, a line every
/// tenth of the work otherwise (logs).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    total: usize,
    done: usize,
    start: Instant,
    last_tenth: usize,
}

impl Progress {
    fn new(total: usize, resumed: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            let style = indicatif::ProgressStyle::with_template(
                "{wide_bar} {pos}/{len} points, {elapsed} elapsed, about {eta} left",
            )
            .expect("a valid template");
            b.set_style(style);
            b
        });
        eprintln!(
            "piotwin sweep: {total} point(s) to run{}",
            match resumed {
                0 => String::new(),
                n => format!(" ({n} already stored, not run again)"),
            }
        );
        Progress {
            bar,
            total,
            done: 0,
            start: Instant::now(),
            last_tenth: 0,
        }
    }

    fn tick(&mut self) {
        self.done += 1;
        if let Some(b) = &self.bar {
            b.inc(1);
            return;
        }
        let tenth = self.done * 10 / self.total.max(1);
        if tenth > self.last_tenth {
            self.last_tenth = tenth;
            let elapsed = self.start.elapsed().as_secs_f64();
            let left = elapsed / self.done as f64 * (self.total - self.done) as f64;
            eprintln!(
                "piotwin sweep: {}/{} points, {elapsed:.1} s elapsed, about {left:.1} s left",
                self.done, self.total
            );
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

pub(super) fn run(args: &SweepArgs) -> Result<(), CliError> {
    install_stop_handlers()?;
    let sweep = Sweep::load(&args.file).map_err(CliError::Usage)?;
    let samples = args.samples.map(|k| k as usize).or(sweep.samples);
    sweep.check(samples).map_err(CliError::Usage)?;
    let jobs = match args.jobs {
        Some(j) => j as usize,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .file
            .file_stem()
            .map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from("piotwin-sweep").join(stem)
    });
    let distributed = job_size().is_some_and(|n| n > 1);
    let root = !distributed || rank_is_zero();
    let mut store = match root {
        true => Some(Store::open(&out).map_err(CliError::Usage)?),
        false => None,
    };
    let todo: Vec<usize> = match &store {
        Some(s) => sweep
            .points
            .iter()
            .filter(|p| !s.done.contains_key(&sweep.identity(p, samples)))
            .map(|p| p.index)
            .collect(),
        None => Vec::new(),
    };
    let mut progress = root.then(|| Progress::new(todo.len(), sweep.points.len() - todo.len()));
    let started = Instant::now();
    let mut failed = 0usize;
    let keep = |o: Outcome,
                store: &mut Option<Store>,
                progress: &mut Option<Progress>,
                failed: &mut usize| {
        if o.failure.is_some() {
            *failed += 1;
        }
        if let Some(p) = progress {
            p.tick();
        }
        match store {
            Some(s) => s.append(o),
            None => Ok(()),
        }
    };
    let ran = match distributed {
        #[cfg(feature = "mpi")]
        true => runner::run_mpi(&sweep, &todo, jobs, samples, |o| {
            keep(o, &mut store, &mut progress, &mut failed)
        }),
        #[cfg(not(feature = "mpi"))]
        true => {
            Err("this piotwin was built without MPI: run the sweep without mpiexec".to_string())
        }
        false => {
            let points: Vec<_> = todo.iter().map(|&i| &sweep.points[i]).collect();
            runner::run_threads(&sweep, &points, jobs, samples, |o| {
                keep(o, &mut store, &mut progress, &mut failed)
            })
        }
    };
    if let Some(p) = &progress {
        p.finish();
    }
    let Some(store) = store else {
        // Not rank 0: rank 0 writes and reports.
        ran.map_err(|_| CliError::Quiet)?;
        return match stop::requested() {
            Some(signal) => Err(CliError::Interrupted {
                signal,
                message: None,
            }),
            None => Ok(()),
        };
    };
    let outcomes: Vec<&Outcome> = sweep
        .points
        .iter()
        .filter_map(|p| store.done.get(&sweep.identity(p, samples)))
        .collect();
    let results = Results {
        sweep: &sweep,
        missing: sweep.points.len() - outcomes.len(),
        outcomes,
    };
    let page = results.write(&out).map_err(CliError::Runtime)?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "piotwin sweep: {} of {} points finished ({} run now in {seconds:.1} s on {jobs} thread(s){}); {} failed",
        results.outcomes.len(),
        sweep.points.len(),
        todo.len() - results.missing.min(todo.len()),
        match job_size() {
            Some(n) if n > 1 => format!(" per rank, {n} ranks"),
            _ => String::new(),
        },
        results
            .outcomes
            .iter()
            .filter(|o| o.failure.is_some())
            .count(),
    );
    println!(
        "wrote {}/sweep.csv, sweep.json, plots/ and {}",
        out.display(),
        page.display()
    );
    ran.map_err(CliError::Runtime)?;
    if let Some(signal) = stop::requested() {
        return Err(CliError::interrupted(
            signal,
            &format!(
                "{} point(s) not run; the same command resumes the sweep",
                results.missing
            ),
        ));
    }
    match failed {
        0 => Ok(()),
        n => Err(CliError::Runtime(format!(
            "{n} point(s) failed: see the `failure` column of {}/sweep.csv",
            out.display()
        ))),
    }
}

/// Whether this process is rank 0 of its MPI job (initialising MPI).
#[cfg(feature = "mpi")]
fn rank_is_zero() -> bool {
    piotwin_real::init().map(|j| j.rank == 0).unwrap_or(true)
}

#[cfg(not(feature = "mpi"))]
fn rank_is_zero() -> bool {
    true
}
