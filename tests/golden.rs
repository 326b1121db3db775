//! Golden virtual-time transcripts (SimGrid's `.tesh` habit): small twin runs
//! on `tests/golden/golden.toml`, every call of every rank with its begin and
//! end time, compared line by line with `tests/golden/<name>.txt`. Each file
//! starts with the hand calculation of its times (`#` lines); a model change
//! that moves any time fails here. After an intended change, regenerate with
//! `PIOTWIN_BLESS=1 cargo test --test golden`, check the new times against a
//! new hand calculation, and update the comment.

use std::path::PathBuf;

use piotwin::backend::sim::launch;
use piotwin::backend::trace::{CallRecord, Traced};
use piotwin::ctx::RankProgram;
use piotwin_sim::{Scenario, SimOptions};

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Every rank's calls of `program` on `ranks` ranks, ordered by begin time, then rank.
fn transcript<P: RankProgram>(program: P, ranks: usize) -> String {
    let scn = Scenario::load(&golden_dir().join("golden.toml")).expect("golden.toml loads");
    let (outs, _) = launch(
        &scn,
        ranks,
        SimOptions::seeded(1),
        &Traced {
            inner: program,
            files_only: false,
        },
    )
    .expect("the golden run finishes");
    let mut calls: Vec<(usize, CallRecord)> = outs
        .into_iter()
        .flat_map(|(_, calls)| calls.into_iter().enumerate())
        .collect();
    calls.sort_by(|(i, a), (j, b)| {
        a.start
            .total_cmp(&b.start)
            .then(a.rank.cmp(&b.rank))
            .then(i.cmp(j))
    });
    let mut out = format!(
        "{:>3} {:<14} {:<28} {:>16} {:>16}\n",
        "rk", "call", "detail", "begin µs", "end µs"
    );
    for (_, c) in calls {
        out.push_str(c.line().trim_end());
        out.push('\n');
    }
    out
}

/// Compares `got` with `tests/golden/<name>.txt` (its `#` lines are the hand
/// calculation, not compared); writes it under `PIOTWIN_BLESS=1`, keeping them.
fn check(name: &str, got: &str) {
    let path = golden_dir().join(format!("{name}.txt"));
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    let comment: String = stored
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let expected: String = stored
        .lines()
        .skip_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    if std::env::var_os("PIOTWIN_BLESS").is_some() {
        std::fs::write(&path, comment + got).expect("write the golden file");
        return;
    }
    if got != expected {
        let first = got
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(expected.lines().count()));
        panic!(
            "{name}: the transcript drifted from {} at line {} (after the header):\n  got:      {}\n  expected: {}\n\
             (an intended change: PIOTWIN_BLESS=1 cargo test --test golden, then redo the hand calculation)",
            path.display(),
            first + 1,
            got.lines().nth(first).unwrap_or("<end>"),
            expected.lines().nth(first).unwrap_or("<end>")
        );
    }
}

#[test]
fn ior_4_ranks_shared_file() {
    use piotwin::bench::ior::{Ior, IorParams};
    use piotwin::ctx::{Api, Hints};
    let params = IorParams {
        api: Api::MpiIo,
        block: 1 << 20,
        transfer: 1 << 20,
        segments: 1,
        file_per_proc: false,
        collective: false,
        reorder: false,
        tasks_per_node: 1,
        fsync: false,
        write: true,
        read: true,
        random: false,
        repetitions: 1,
        keep_file: false,
        path: "/golden/ior.dat".into(),
        hints: Hints::new(),
        seed: 1,
    };
    check("ior_4_ranks", &transcript(Ior::new(params), 4));
}

#[test]
fn btio_one_dump_full() {
    use clap::Parser;
    use piotwin::bench::btio::{BtioArgs, BtioProgram};
    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        btio: BtioArgs,
    }
    let args = Args::parse_from([
        "btio",
        "--grid",
        "8,8,8",
        "--steps",
        "1",
        "--wr-interval",
        "1",
        "--subtype",
        "full",
        "-p",
        "/golden",
    ]);
    let cfg = args.btio.resolve(4).expect("a valid BTIO configuration");
    let program = BtioProgram::new(cfg, &piotwin::ctx::Hints::new());
    check("btio_one_dump", &transcript(program, 4));
}

/// The calls of b_eff_io's first pattern (type 0, scatter, l = L = 1 MiB: a
/// collective write through a view of doubles, run once as its Tp is 0) on
/// 2 ranks: the transcript up to the first pattern's end.
#[test]
fn b_eff_io_first_pattern() {
    use clap::Parser;
    use piotwin::bench::beff_io::{BeffIo, BeffIoArgs, Config};
    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        beff: BeffIoArgs,
    }
    let args = Args::parse_from([
        "b_eff_io", "--mb", "256", "-T", "60", "-N", "2", "-p", "/golden",
    ]);
    let mut cfg = Config::resolve(&args.beff, 2, 256, piotwin::ctx::Hints::new())
        .expect("a valid b_eff_io configuration");
    cfg.progress = false;
    let full = transcript(BeffIo { cfg }, 2);
    let first: String = full
        .lines()
        .take(FIRST_PATTERN_LINES)
        .map(|l| format!("{l}\n"))
        .collect();
    check("b_eff_io_first_pattern", &first);
}

/// Lines of the b_eff_io transcript that hold its set-up and first pattern.
const FIRST_PATTERN_LINES: usize = 30;
