//! Tests of the beff_io benchmark.

use super::*;
use crate::backend::mem::{MemBuf, MemCtx};
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BeffIoArgs,
}

fn parse(words: &[&str]) -> BeffIoArgs {
    let argv = normalize_beff_io_args(std::iter::once("b_eff_io").chain(words.iter().copied()));
    Cli::try_parse_from(argv).unwrap().args
}

#[test]
fn original_option_names() {
    let a = parse(&[
        "-MB",
        "1024",
        "-MT",
        "2048",
        "-T",
        "60",
        "-p",
        "/tmp/x",
        "-N",
        "1,2",
        "-rewrite",
        "-noshared",
        "-nounique",
        "-keep",
        "-f",
        "run1",
        "-e",
        "3",
    ]);
    assert_eq!((a.mb, a.mt, a.time), (Some(1024), Some(2048), 60));
    assert_eq!(a.partitions, vec![1, 2]);
    assert_eq!(a.path, PathBuf::from("/tmp/x"));
    assert!(a.rewrite && a.noshared && a.nounique && a.keep);
    assert_eq!((a.prefix.as_str(), a.max_errors), ("run1", 3));
    let d = parse(&[]);
    assert_eq!(
        (d.mb, d.time, d.prefix.as_str(), d.rewrite),
        (None, 1800, "b_eff_io", false)
    );
    // Words after `--` and values are left alone.
    let n = normalize_beff_io_args(["-p", "-keep", "--", "-MB"]);
    assert_eq!(n, vec!["-p", "--keep", "--", "-MB"]);
}

#[test]
fn resolve_defaults_and_errors() {
    let c = Config::resolve(&parse(&["-T", "90"]), 8, 512, Hints::new()).unwrap();
    assert_eq!(
        (c.mb, c.mt, c.partitions.clone()),
        (512, 4096, vec![2, 4, 8])
    );
    assert_eq!((c.tn(), c.usum(), c.lmax()), (30, 150, 4 << 20));
    assert!(c.shared && c.unique && !c.keep);
    for (words, needle) in [
        (vec!["-N", "3,9"], "partition size 9"),
        (vec!["-N", "2,2"], "once"),
        (vec!["-T", "2", "-N", "1,2,4"], "at least 1 second"),
        (vec!["-MB", "0"], "-MB"),
    ] {
        let e = Config::resolve(&parse(&words), 8, 512, Hints::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{e} lacks {needle}");
    }
    let e = Config::resolve(&parse(&["-i", "/nonexistent/hints"]), 8, 512, Hints::new())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/nonexistent/hints") && e.contains("cannot read"),
        "{e}"
    );
}

#[test]
fn check_values_are_distinct_and_round_trip() {
    let mut seen = std::collections::BTreeSet::new();
    for rep in [0, 1, 7, 1 << 20] {
        for pattern in [0, 1, 42] {
            for pass in Pass::ALL {
                for chunk in [0, 1, 1023] {
                    for last in [false, true] {
                        let v = check_value(rep, pattern, pass, chunk, last);
                        assert!(v > 0.0 && v.fract() == 0.0);
                        assert!(seen.insert(v.to_bits()));
                    }
                }
            }
        }
    }
}

#[test]
fn fill_then_verify_every_chunk() {
    // 1 KiB + 8 chunks in a 1 MiB + 8 KiB call: 1024 chunks.
    let (l, big_l) = (1032, 1024 * 1032);
    let mut b = MemBuf(vec![0; big_l as usize]);
    assert_eq!(
        verify(&b, 0, 7, Pass::Write, l, big_l).len(),
        1024,
        "a zeroed buffer never verifies"
    );
    fill(&mut b, 3, 7, Pass::Rewrite, l, big_l);
    assert!(verify(&b, 3, 7, Pass::Rewrite, l, big_l).is_empty());
    assert_eq!(verify(&b, 4, 7, Pass::Rewrite, l, big_l).len(), 1024);
    assert_eq!(verify(&b, 3, 7, Pass::Write, l, big_l).len(), 1024);
    // Corrupt the last double of chunk 5 only.
    let idx = (5 * l + l - 8) as usize;
    b.0[idx] ^= 1;
    let bad = verify(&b, 3, 7, Pass::Rewrite, l, big_l);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].0, 5);
    // A zero-byte filler has no chunks.
    assert_eq!(chunk_ends(0, 0).count(), 0);
}

#[test]
fn operations_per_type() {
    use crate::ctx::Position;
    let w = op_for(PatternType::Shared, Pass::Write, true, 99);
    assert_eq!(w, Op::write_ordered());
    assert_eq!(
        op_for(PatternType::Shared, Pass::Read, true, 0),
        Op::read_ordered()
    );
    assert_eq!(
        op_for(PatternType::Shared, Pass::Write, false, 5),
        Op::write_at_all(5)
    );
    assert_eq!(
        op_for(PatternType::Scatter, Pass::Rewrite, true, 5),
        Op::write_at_all(5)
    );
    assert_eq!(
        op_for(PatternType::Separated, Pass::Read, true, 5),
        Op::read_at(5)
    );
    assert_eq!(
        op_for(PatternType::Segmented, Pass::Write, true, 5),
        Op::write_at(5)
    );
    assert_eq!(
        op_for(PatternType::SegColl, Pass::Read, true, 5).pos,
        Position::At(5)
    );
    assert_eq!(
        op_for(PatternType::SegColl, Pass::Read, true, 5).coord,
        Coordination::Collective
    );
}

#[test]
fn scatter_view_owns_one_chunk_per_stride() {
    // 3 processes, l = 1 KiB + 8: rank 1 owns bytes [1032, 2064) of every 3096.
    let v = scatter_view(3, 1, 1032, 4096).unwrap();
    let ext: Vec<(u64, u64)> = v.extents(0, 2 * 1032).collect();
    assert_eq!(ext, vec![(4096 + 1032, 1032), (4096 + 3096 + 1032, 1032)]);
    // Offsets are in doubles: the second call of L = 2 chunks starts two chunks on.
    let ext: Vec<(u64, u64)> = v.extents(2 * 1032 / 8, 1032).collect();
    assert_eq!(ext, vec![(4096 + 2 * 3096 + 1032, 1032)]);
}

#[test]
fn last_writer_of_each_type() {
    let c = Config::resolve(&parse(&[]), 4, 256, Hints::new()).unwrap();
    assert_eq!(c.last_writer(PatternType::Scatter), Pass::Rewrite);
    assert_eq!(c.last_writer(PatternType::Shared), Pass::Write);
    let r = Config::resolve(&parse(&["-rewrite"]), 4, 256, Hints::new()).unwrap();
    assert_eq!(r.last_writer(PatternType::SegColl), Pass::Rewrite);
    assert_eq!(c.total_patterns(), 3 * (43 + 9 + 43));
    assert_eq!(r.total_patterns(), 3 * 3 * 43);
}

fn mem_run(words: &[&str], ctx: &MemCtx) -> (Config, Measurements) {
    let mut c = Config::resolve(&parse(words), 1, 1, Hints::new()).unwrap();
    c.progress = false;
    let m = crate::ctx::block_on(BeffIo { cfg: c.clone() }.run(ctx)).unwrap();
    (c, m)
}

#[test]
fn whole_schedule_on_one_in_memory_rank() {
    // Every call costs 5 ms of fake time; T = 2 s on one partition gives
    // Tp = U·2/150 s, and the rule 0.005·k·(k+1)/k ≤ Tp stops after k calls with
    // k + 1 ≤ Tp/0.005: U = 4 → 10, U = 2 → 5, U = 1 → 2, U = 0 → 1.
    let ctx = MemCtx {
        xfer_cost: 0.005,
        ..Default::default()
    };
    let (c, m) = mem_run(&["-T", "2", "-p", "/mem"], &ctx);
    assert_eq!(c.partitions, vec![1]);
    assert_eq!(m.patterns.len(), 43 + 9 + 43);
    assert!(m.error_messages.is_empty(), "{:?}", m.error_messages);
    assert!(m.patterns.iter().all(|p| p.errors == 0));
    let reps = |pass: Pass, id: usize| {
        m.patterns
            .iter()
            .find(|p| p.pass == pass && p.pattern == id)
            .unwrap()
            .reps
    };
    let expected = |u: u64| match u {
        4 => 10,
        2 => 5,
        1 => 2,
        _ => 1,
    };
    for def in &schedule::PATTERNS[..25] {
        assert_eq!(
            reps(Pass::Write, def.id),
            expected(def.u),
            "pattern {}",
            def.id
        );
        assert_eq!(reps(Pass::Read, def.id), reps(Pass::Write, def.id));
    }
    // Types 3/4 from the write counts; the filler once.
    let plan = m.segments[0].clone().unwrap();
    assert_eq!(
        plan,
        schedule::segment_plan(
            &m.patterns
                .iter()
                .filter(|p| p.pass == Pass::Write)
                .map(|p| p.reps)
                .collect::<Vec<_>>(),
            c.lmax()
        )
    );
    for (k, def) in PatternType::Segmented.patterns().iter().enumerate() {
        assert_eq!(reps(Pass::Write, def.id), plan.reps[k]);
        assert_eq!(reps(Pass::Write, def.id + 9), plan.reps[k]);
    }
    // The read pass deleted every file.
    assert!(ctx.files.borrow().is_empty());
    let a = output::Analysis::new(&c, &m);
    assert!(a.b_eff_io() > 0.0 && a.b_eff_io_paper() > 0.0);
}

#[test]
fn keep_leaves_files_of_the_expected_sizes() {
    let ctx = MemCtx {
        xfer_cost: 0.005,
        ..Default::default()
    };
    let (c, m) = mem_run(&["-T", "2", "-p", "/mem", "-keep", "-rewrite"], &ctx);
    assert!(m.patterns.iter().all(|p| p.errors == 0));
    assert_eq!(m.patterns.len(), 3 * 43);
    let files = ctx.files.borrow();
    let size = |t: usize| files[&format!("/mem/b_eff_io_data_i00_001_{t}")].len() as u64;
    let written = |t: PatternType| {
        m.types
            .iter()
            .find(|r| r.pass == Pass::Write && r.ptype == t)
            .unwrap()
            .bytes
    };
    for t in [PatternType::Scatter, PatternType::Shared] {
        assert_eq!(size(t.index()), written(t));
    }
    assert_eq!(
        files["/mem/b_eff_io_data_i00_001_2.000"].len() as u64,
        written(PatternType::Separated)
    );
    // One process: the segment is the whole file.
    assert_eq!(size(3), m.segments[0].as_ref().unwrap().lseg);
    assert_eq!(size(4), size(3));
    assert_eq!(written(PatternType::Segmented), size(3));
    let _ = c;
}

#[test]
fn corrupted_reads_are_counted() {
    let mut ctx = MemCtx {
        xfer_cost: 0.005,
        ..Default::default()
    };
    ctx.corrupt_reads = true;
    let (c, m) = mem_run(&["-T", "2", "-p", "/mem", "-e", "2"], &ctx);
    // Every read call's first chunk is wrong: one error per read call.
    let calls: u64 = m
        .patterns
        .iter()
        .filter(|p| p.pass == Pass::Read && p.big_l > 0)
        .map(|p| p.reps)
        .sum();
    assert_eq!(m.errors_of(1), calls);
    // At most 2 messages per pattern.
    assert!(!m.error_messages.is_empty());
    assert!(m.error_messages.len() as u64 <= 2 * 43);
    let a = output::Analysis::new(&c, &m);
    assert!(!a.partitions[0].validity.errors_ok);
}

#[test]
fn an_open_failing_on_one_rank_stops_every_rank_with_its_message() {
    use crate::backend::fault::{Call, Fault, WithFault};
    // Rank 1's third open is its own type-2 (separated) file in the write pass
    // (rank 0 alone probes the shared file pointer): a call it makes alone.
    let mut cfg = Config::resolve(
        &parse(&["-N", "2", "-T", "2", "-p", "/null"]),
        2,
        1,
        Hints::new(),
    )
    .unwrap();
    cfg.progress = false;
    let program = WithFault {
        inner: BeffIo { cfg },
        fault: Fault {
            rank: 1,
            call: Call::Open,
            numbers: 3..=3,
        },
    };
    // The null back end reports ranks left waiting in a collective as an error.
    let outs = crate::backend::null::launch(2, &program)
        .expect("every rank returns: none waits for the failed one in a collective");
    for out in &outs {
        let m = out.as_ref().unwrap();
        let why = m.stopped.as_deref().unwrap();
        assert!(
            why.contains("opening the file: rank 1:") && why.contains("injected failure"),
            "{why}"
        );
        // Types 0 and 1 of the write pass finished and are kept.
        assert!(m.patterns.iter().any(|p| p.ptype == PatternType::Scatter));
        assert!(m.patterns.iter().any(|p| p.ptype == PatternType::Shared));
        assert!(m.patterns.iter().all(|p| p.ptype < PatternType::Separated));
    }
}
