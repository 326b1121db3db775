//! Tests of the ior benchmark.

use super::*;
use crate::backend::fault::{Call, Fault, WithFault};
use crate::bench::common::options::parse_size;

fn params() -> IorParams {
    IorParams {
        api: Api::MpiIo,
        block: 4 << 10,
        transfer: 1 << 10,
        segments: 3,
        file_per_proc: false,
        collective: false,
        reorder: false,
        tasks_per_node: 1,
        fsync: false,
        write: false,
        read: false,
        random: false,
        repetitions: 1,
        keep_file: false,
        path: "f".into(),
        hints: Hints::new(),
        seed: 7,
    }
}

#[test]
fn sizes_parse_like_ior() {
    assert_eq!(parse_size("4k"), Ok(4096));
    assert_eq!(parse_size("1m"), Ok(1 << 20));
    assert_eq!(parse_size("2g"), Ok(2 << 30));
    assert_eq!(parse_size("3MiB"), Ok(3 << 20));
    assert_eq!(parse_size("100"), Ok(100));
    assert!(parse_size("0").unwrap_err().0.contains("at least 1 byte"));
    assert!(parse_size("-4k").unwrap_err().0.contains("positive"));
    assert!(parse_size("4x").unwrap_err().0.contains("unknown unit `x`"));
    assert!(parse_size("k").unwrap_err().0.contains("not a size"));
    assert!(
        parse_size("99999999999t")
            .unwrap_err()
            .0
            .contains("too large")
    );
    assert_eq!(format_size(4 << 20), "4 MiB");
    assert_eq!(format_size(1536), "1.50 KiB");
    assert_eq!(format_size(100), "100 bytes");
}

#[test]
fn shared_file_offsets_follow_ior() {
    let p = params();
    // rank 2 of 4, segment 1, transfer 3: j·t + s·(N·b) + r·b
    let q = p.transfers_per_block() + 3;
    assert_eq!(p.offset(2, 4, q), 3 * 1024 + 4 * 4096 + 2 * 4096);
    // Every byte of the file is covered exactly once over all ranks.
    let mut seen = vec![false; (4 * 4096 * 3 / 1024) as usize];
    for r in 0..4 {
        for q in 0..p.transfers_per_rank() {
            let o = p.offset(r, 4, q);
            assert_eq!(o % 1024, 0);
            assert!(!std::mem::replace(&mut seen[(o / 1024) as usize], true));
        }
    }
    assert!(seen.iter().all(|&s| s));
}

#[test]
fn file_per_process_offsets_follow_ior() {
    let p = IorParams {
        file_per_proc: true,
        ..params()
    };
    let q = 2 * p.transfers_per_block() + 1;
    assert_eq!(p.offset(3, 4, q), 1024 + 2 * 4096);
    assert_eq!(p.file_name(3), "f.00000003");
    assert_eq!(params().file_name(3), "f");
}

#[test]
fn random_order_is_a_permutation_of_the_same_offsets() {
    let seq = params();
    let rnd = IorParams {
        random: true,
        ..params()
    };
    for r in 0..4 {
        let mut a: Vec<u64> = (0..seq.transfers_per_rank())
            .map(|q| seq.offset(r, 4, q))
            .collect();
        let b: Vec<u64> = (0..rnd.transfers_per_rank())
            .map(|q| rnd.offset(r, 4, q))
            .collect();
        assert_ne!(a, b, "rank {r}: -z changed nothing");
        let mut b_sorted = b.clone();
        b_sorted.sort();
        a.sort();
        assert_eq!(a, b_sorted);
    }
    for n in [1u64, 2, 3, 5, 16, 17, 1000, 4097] {
        let mut v: Vec<u64> = (0..n).map(|i| permute(i, n, 42)).collect();
        v.sort();
        assert_eq!(v, (0..n).collect::<Vec<_>>(), "n = {n}");
    }
    // Deterministic from the key, and different keys differ.
    let a: Vec<u64> = (0..100).map(|i| permute(i, 100, 1)).collect();
    assert_eq!(a, (0..100).map(|i| permute(i, 100, 1)).collect::<Vec<_>>());
    assert_ne!(a, (0..100).map(|i| permute(i, 100, 2)).collect::<Vec<_>>());
}

#[test]
fn reorder_shifts_by_tasks_per_node() {
    let p = IorParams {
        reorder: true,
        tasks_per_node: 2,
        ..params()
    };
    assert_eq!(p.role_rank(Access::Write, 3, 4), 3);
    assert_eq!(p.role_rank(Access::Read, 3, 4), 1);
    assert_eq!(params().role_rank(Access::Read, 3, 4), 3);
}

#[test]
fn pattern_verifies_at_any_alignment_and_catches_errors() {
    let mut buf = vec![0u8; 37];
    fill(&mut buf, 5, 9, 1003);
    assert_eq!(verify(&buf, 5, 9, 1003), (0, None));
    // The same bytes seen as two unaligned pieces.
    let mut a = vec![0u8; 10];
    fill(&mut a, 5, 9, 1003);
    assert_eq!(a[..], buf[..10]);
    // Another file or offset is different data.
    assert!(verify(&buf, 5, 8, 1003).0 > 30);
    assert!(verify(&buf, 5, 9, 1004).0 > 30);
    buf[20] ^= 0xff;
    buf[30] ^= 0x01;
    let (n, first) = verify(&buf, 5, 9, 1003);
    assert_eq!(n, 2);
    let m = first.unwrap();
    assert_eq!(m.offset, 1023);
    assert_eq!(m.got, m.expected ^ 0xff);
}

#[test]
fn validation_names_the_option() {
    let bad = IorParams {
        transfer: 3000,
        ..params()
    };
    let e = bad.validate(4).unwrap_err();
    assert_eq!(e.option, "-t");
    assert!(e.to_string().contains("must divide the block size"));
    let e = IorParams {
        collective: true,
        api: Api::Posix,
        ..params()
    }
    .validate(4)
    .unwrap_err();
    assert_eq!(e.option, "-c");
    assert_eq!(params().validate(0).unwrap_err().option, "--ranks");
    let huge = IorParams {
        block: 1 << 40,
        segments: 1 << 20,
        ..params()
    };
    assert_eq!(huge.validate(4096).unwrap_err().option, "-s");
    assert!(params().validate(4).is_ok());
}

#[test]
fn accesses_default_to_both() {
    assert_eq!(params().accesses(), vec![Access::Write, Access::Read]);
    assert_eq!(
        IorParams {
            read: true,
            ..params()
        }
        .accesses(),
        vec![Access::Read]
    );
    assert_eq!(
        IorParams {
            write: true,
            ..params()
        }
        .accesses(),
        vec![Access::Write]
    );
}

#[test]
fn stats_are_ior_population_statistics() {
    let (max, min, mean, sd) = stats(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
    assert_eq!((max, min, mean, sd), (9.0, 2.0, 5.0, 2.0));
}

#[test]
fn report_and_text_carry_every_repetition() {
    let ior = Ior::new(params());
    let rep = |iter, access, total_s| RepResult {
        iter,
        access,
        bytes: 4 * 3 * 4096,
        ops: 48,
        open_s: 0.1,
        xfer_s: 0.5,
        close_s: 0.1,
        total_s,
        latency_s: 0.01,
    };
    let out = IorOutput {
        reps: vec![
            rep(0, Access::Write, 1.0),
            rep(0, Access::Read, 0.5),
            rep(1, Access::Write, 0.5),
        ],
        failure: Some("repetition 1, read: rank 2: boom".into()),
        ..Default::default()
    };
    let r = ior.report(&out, Mode::Sim, 4, Default::default());
    let mib = 48.0 * 1024.0 / MIB;
    assert_eq!(r.metrics["write_mib_s_max"], mib / 0.5);
    assert_eq!(r.metrics["write_mib_s_min"], mib);
    assert_eq!(r.metrics["write_mib_s"], (mib + 2.0 * mib) / 2.0);
    assert_eq!(r.metrics["read_mib_s"], mib / 0.5);
    assert_eq!(r.tables["repetitions"].rows.len(), 3);
    assert_eq!(
        r.errors,
        vec!["repetition 1, read: rank 2: boom".to_string()]
    );
    let text = ior.render(&out, 4, "twin");
    assert!(text.contains("Summary of all tests:"));
    assert_eq!(
        text.lines().filter(|l| l.starts_with("write ")).count(),
        2 + 1
    );
    assert!(text.contains("ERROR: the run stopped"));
}

/// Runs the probe on the null back end (zero-cost I/O, real collectives).
fn dry(p: IorParams, ranks: usize) -> Vec<IorOutput> {
    crate::backend::null::launch(ranks, &Ior::new(p)).expect("no deadlock")
}

#[test]
fn every_rank_agrees_on_every_repetition() {
    for (fpp, coll, reorder, random) in [
        (false, false, false, false),
        (true, true, true, true),
        (false, true, true, false),
        (true, false, false, true),
    ] {
        let p = IorParams {
            file_per_proc: fpp,
            collective: coll,
            reorder,
            random,
            repetitions: 3,
            hints: {
                let mut h = Hints::new();
                h.set("cb_nodes", "2");
                h
            },
            ..params()
        };
        let outs = dry(p.clone(), 6);
        assert!(outs.iter().all(|o| *o == outs[0]), "ranks disagree");
        let o = &outs[0];
        assert_eq!(o.failure, None);
        assert_eq!(o.reps.len(), 6);
        for (k, r) in o.reps.iter().enumerate() {
            assert_eq!(r.iter, k as u64 / 2);
            assert_eq!(
                r.access,
                if k % 2 == 0 {
                    Access::Write
                } else {
                    Access::Read
                }
            );
            assert_eq!(r.bytes, 6 * p.bytes_per_rank());
            assert_eq!(r.ops, 6 * p.transfers_per_rank());
            assert!(r.total_s >= r.open_s && r.total_s >= 0.0);
        }
        assert_eq!(o.hints.get("cb_nodes"), Some("2"));
    }
}

#[test]
fn reading_a_missing_file_stops_the_run_on_every_rank() {
    let outs = dry(
        IorParams {
            read: true,
            repetitions: 3,
            ..params()
        },
        4,
    );
    for o in &outs {
        assert!(o.reps.is_empty());
        let f = o.failure.as_deref().unwrap();
        assert!(f.starts_with("repetition 0, read: rank 0"), "{f}");
    }
}

#[test]
fn a_failure_keeps_the_repetitions_before_it() {
    // Every open after the 4th on rank 1 fails: repetition 0 (write + read)
    // and repetition 1 (write + read) complete, repetition 2's write fails.
    // File per process: a rank's open is its own (a failing collective open
    // fails on every rank, as ROMIO's does).
    let outs = crate::backend::null::launch(
        3,
        &WithFault {
            inner: Ior::new(IorParams {
                repetitions: 4,
                file_per_proc: true,
                ..params()
            }),
            fault: Fault {
                rank: 1,
                call: Call::Open,
                numbers: 5..=u64::MAX,
            },
        },
    )
    .unwrap();
    let o = &outs[0];
    assert_eq!(o.reps.len(), 4);
    assert_eq!(o.reps.last().unwrap().iter, 1);
    let f = o.failure.as_deref().unwrap();
    // Rank 0 reports rank 1's own message, as rank 1 does.
    assert!(
        f.starts_with("repetition 2, write: rank 1: injected"),
        "{f}"
    );
    assert_eq!(outs[1].failure.as_deref(), Some(f));
}
