//! Tests of the iozone benchmark.

use super::*;
use crate::backend::fault::{Call, Fault, WithFault};
use crate::backend::mem::MemCtx;
use crate::ctx::block_on;

fn params() -> IozoneParams {
    IozoneParams {
        tests: vec![Test::Write, Test::Read, Test::Random, Test::Stride],
        file_sizes: vec![64 << 10],
        record_sizes: vec![4 << 10, 16 << 10],
        stride: 3,
        ..IozoneParams::new(7)
    }
}

#[test]
fn sizes_are_kb_by_default() {
    assert_eq!(parse_kb_size("512"), Ok(512 << 10));
    assert_eq!(parse_kb_size("4k"), Ok(4 << 10));
    assert_eq!(parse_kb_size("64m"), Ok(64 << 20));
    assert_eq!(parse_kb_size("100b"), Ok(100));
    assert!(
        parse_kb_size("0")
            .unwrap_err()
            .0
            .contains("at least 1 byte")
    );
    assert!(
        parse_kb_size("4x")
            .unwrap_err()
            .0
            .contains("a bare number is kB")
    );
}

#[test]
fn strided_order_visits_every_record_once_k_apart() {
    for n in [1u64, 2, 5, 16, 17, 100, 257] {
        for k in [1u64, 2, 3, 17, 300] {
            let v: Vec<u64> = (0..n).map(|q| stride_index(q, n, k)).collect();
            let mut sorted = v.clone();
            sorted.sort();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "n {n} k {k}");
        }
    }
    let v: Vec<u64> = (0..10).map(|q| stride_index(q, 10, 3)).collect();
    assert_eq!(v, vec![0, 3, 6, 9, 1, 4, 7, 2, 5, 8]);
}

#[test]
fn random_orders_are_seeded_permutations() {
    let p = params();
    let (n, r) = (64u64, 1024u64);
    let order =
        |pass, rank| -> Vec<u64> { (0..n).map(|q| p.offset(pass, rank, n, r, q)).collect() };
    let rr = order(Pass::RandomRead, 0);
    let mut sorted = rr.clone();
    sorted.sort();
    assert_eq!(sorted, (0..n).map(|i| i * r).collect::<Vec<_>>());
    assert_eq!(rr, order(Pass::RandomRead, 0), "deterministic");
    assert_ne!(rr, order(Pass::RandomWrite, 0));
    assert_ne!(rr, order(Pass::RandomRead, 1));
    assert_ne!(rr, order(Pass::Read, 0));
    assert_eq!(
        order(Pass::Reread, 3),
        (0..n).map(|i| i * r).collect::<Vec<_>>()
    );
}

#[test]
fn auto_mode_spans_powers_of_two_with_records_within_the_file() {
    let p = IozoneParams {
        auto: true,
        auto_file: (64 << 10, 64 << 20),
        ..IozoneParams::new(0)
    };
    let c = p.combos();
    // Files 64k..64m (11 sizes); records 4k..min(file, 16m).
    let expected: usize = (0..11).map(|i| (5 + i).min(13)).sum();
    assert_eq!(c.len(), expected);
    assert_eq!(c[0], (64 << 10, 4 << 10));
    assert_eq!(*c.last().unwrap(), (64 << 20, 16 << 20));
    assert!(c.iter().all(|&(s, r)| r <= s && s % r == 0));
    assert!(p.validate(1).is_ok());
    let defaults = IozoneParams::new(0);
    assert_eq!(defaults.combos(), vec![(DEFAULT_FILE, DEFAULT_RECORD)]);
    assert_eq!(
        defaults.passes(),
        vec![
            Pass::Write,
            Pass::Rewrite,
            Pass::Read,
            Pass::Reread,
            Pass::RandomRead,
            Pass::RandomWrite
        ]
    );
    let only_reads = IozoneParams {
        tests: vec![Test::Stride, Test::Read],
        ..IozoneParams::new(0)
    };
    assert_eq!(
        only_reads.passes(),
        vec![
            Pass::Write,
            Pass::Rewrite,
            Pass::Read,
            Pass::Reread,
            Pass::StrideRead
        ]
    );
}

#[test]
fn validation_names_the_option() {
    let opt = |p: IozoneParams| p.validate(1).unwrap_err().option;
    assert_eq!(
        opt(IozoneParams {
            record_sizes: vec![3 << 10],
            ..params()
        }),
        "-r"
    );
    assert_eq!(
        opt(IozoneParams {
            record_sizes: vec![1 << 20],
            ..params()
        }),
        "-r"
    );
    assert_eq!(
        opt(IozoneParams {
            file_sizes: vec![1000],
            record_sizes: vec![1000],
            ..params()
        }),
        "-s"
    );
    assert_eq!(
        opt(IozoneParams {
            stride: 0,
            ..params()
        }),
        "-j"
    );
    assert_eq!(
        opt(IozoneParams {
            path: String::new(),
            ..params()
        }),
        "-f"
    );
    assert_eq!(
        opt(IozoneParams {
            auto: true,
            auto_file: (1 << 20, 1 << 10),
            ..params()
        }),
        "-n"
    );
    assert_eq!(
        opt(IozoneParams {
            auto: true,
            auto_record: (1 << 20, 1 << 10),
            ..params()
        }),
        "-y"
    );
    let mut hints = Hints::new();
    hints.set("cb_nodes", "2");
    assert_eq!(
        opt(IozoneParams {
            hints: hints.clone(),
            ..params()
        }),
        "--hint"
    );
    assert!(
        IozoneParams {
            hints,
            api: Api::MpiIo,
            ..params()
        }
        .validate(1)
        .is_ok()
    );
    assert_eq!(params().validate(0).unwrap_err().option, "--ranks");
    assert_eq!(params().file_name(3, 1), "iozone.tmp");
    assert_eq!(params().file_name(3, 4), "iozone.tmp.3");
}

#[test]
fn pattern_round_trips_and_catches_errors() {
    let pat = Pattern::new(5, 2);
    let mut buf = vec![0u8; 4096];
    pat.fill_bodies(&mut buf);
    pat.stamp(&mut buf, 8192);
    assert_eq!(pat.check(&buf, 8192, true), (0, None));
    // Read at the wrong offset, or another rank's data: every stamp differs.
    assert!(pat.check(&buf, 4096, false).0 >= 8);
    assert!(Pattern::new(5, 3).check(&buf, 8192, false).0 >= 8);
    // A body byte: only the full check sees it.
    buf[700] ^= 0x10;
    assert_eq!(pat.check(&buf, 8192, false).0, 0);
    let (n, first) = pat.check(&buf, 8192, true);
    assert_eq!(n, 1);
    let m = first.unwrap();
    assert_eq!((m.offset, m.got), (8192 + 700, m.expected ^ 0x10));
    // A zeroed buffer fails.
    assert!(pat.check(&[0u8; 1024], 0, true).0 > 500);
}

fn mem_run(p: IozoneParams, ctx: &MemCtx) -> IozoneOutput {
    block_on(Iozone::new(p).run(ctx))
}

#[test]
fn every_pass_on_one_in_memory_rank_verifies_and_times() {
    // Every xfer costs 1 ms of fake time and the clock moves only then: a pass
    // of n records takes n ms (the fsync costs nothing here).
    let ctx = MemCtx {
        xfer_cost: 1e-3,
        ..Default::default()
    };
    let p = params();
    let out = mem_run(p.clone(), &ctx);
    assert_eq!(out.failure, None);
    assert!(out.verify_errors.is_empty(), "{:?}", out.verify_errors);
    assert_eq!(out.rows.len(), 2 * 7);
    for row in &out.rows {
        let n = row.file_bytes / row.record_bytes;
        assert_eq!((row.bytes, row.ops), (row.file_bytes, n));
        assert!((row.seconds - n as f64 * 1e-3).abs() < 1e-12, "{row:?}");
        assert!((row.kb_s - row.bytes as f64 / 1024.0 / row.seconds).abs() < 1e-6);
        match row.test.access() {
            Access::Write => {
                assert_eq!(row.fsync_s, Some(0.0));
                assert_eq!(row.dirty_bytes, row.bytes);
            }
            Access::Read => assert_eq!((row.fsync_s, row.dirty_bytes), (None, 0)),
        }
    }
    assert_eq!(out.rows[0].test, Pass::Write);
    assert_eq!(out.rows[13].test, Pass::StrideRead);
    // Deleted at the end unless -w.
    assert!(ctx.files.borrow().is_empty());
    let kept = MemCtx::default();
    mem_run(
        IozoneParams {
            keep: true,
            ..params()
        },
        &kept,
    );
    assert_eq!(kept.files.borrow()["iozone.tmp"].len(), 64 << 10);
}

#[test]
fn corrupted_reads_are_counted_and_reported() {
    let ctx = MemCtx {
        corrupt_reads: true,
        ..Default::default()
    };
    let out = mem_run(params(), &ctx);
    assert_eq!(out.failure, None);
    // Every read pass of both record sizes: one flipped stamp byte per record.
    assert_eq!(out.verify_errors.len(), 2 * 4);
    let e = &out.verify_errors[0];
    assert_eq!((e.test, e.record_bytes, e.count), (Pass::Read, 4 << 10, 16));
    assert_eq!((e.first.offset, e.first.got), (0, e.first.expected ^ 1));
    let report = Iozone::new(params()).report(&out, Mode::Real, 1, BTreeMap::new());
    assert_eq!(report.errors.len(), 8);
    assert!(
        report.errors[0].contains("16 bytes differ"),
        "{}",
        report.errors[0]
    );
    assert_eq!(
        report.metrics["verify_errors"],
        (4 * 16 + 4 * 4) as f64,
        "one byte per record read"
    );
}

#[test]
fn ranks_agree_and_bytes_are_aggregate() {
    let p = IozoneParams {
        cold: true,
        ..params()
    };
    let outs = crate::backend::null::launch(3, &Iozone::new(p)).expect("no deadlock");
    assert!(outs.iter().all(|o| *o == outs[0]), "ranks disagree");
    assert_eq!(outs[0].failure, None);
    for row in &outs[0].rows {
        assert_eq!(row.bytes, 3 * row.file_bytes);
        assert_eq!(row.ops, 3 * row.file_bytes / row.record_bytes);
    }
}

#[test]
fn a_failed_open_stops_every_rank_and_keeps_earlier_rows() {
    // Rank 1's 3rd open fails: write and rewrite of the first combination are kept.
    let outs = crate::backend::null::launch(
        2,
        &WithFault {
            inner: Iozone::new(params()),
            fault: Fault {
                rank: 1,
                call: Call::Open,
                numbers: 3..=3,
            },
        },
    )
    .unwrap();
    for o in &outs {
        assert_eq!(o.rows.len(), 2);
    }
    let f = outs[0].failure.as_deref().unwrap();
    assert!(
        f.starts_with("read of file 64 KiB record 4 KiB: rank 1: injected"),
        "{f}"
    );
    // Every rank holds the failing rank's own message.
    assert_eq!(outs[1].failure.as_deref(), Some(f));
}

#[test]
fn report_rows_round_trip_and_text_has_iozone_table() {
    let ctx = MemCtx {
        xfer_cost: 1e-3,
        ..Default::default()
    };
    let io = Iozone::new(params());
    let out = block_on(io.run(&ctx));
    let report = io.report(&out, Mode::Sim, 1, BTreeMap::new());
    assert_eq!(report.benchmark, "iozone");
    assert_eq!(rows_from_report(&report).unwrap(), out.rows);
    let json: RunReport = serde_json::from_str(&report.to_json()).unwrap();
    // JSON keeps every field (floats to within their last bits).
    let back = rows_from_report(&json).unwrap();
    assert_eq!(back.len(), out.rows.len());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    for (a, b) in back.iter().zip(&out.rows) {
        assert_eq!(
            (
                a.test,
                a.file_bytes,
                a.record_bytes,
                a.bytes,
                a.ops,
                a.dirty_bytes
            ),
            (
                b.test,
                b.file_bytes,
                b.record_bytes,
                b.bytes,
                b.ops,
                b.dirty_bytes
            )
        );
        assert!(close(a.seconds, b.seconds) && close(a.kb_s, b.kb_s));
        assert_eq!(a.fsync_s.is_some(), b.fsync_s.is_some());
    }
    assert!(close(
        report.metrics["write_kb_s@s=65536,r=4096"],
        64.0 / 16e-3
    ));
    assert!(
        report
            .metrics
            .contains_key("random_write_fsync_s@s=65536,r=16384")
    );
    let text = io.render(&out, 1, "test");
    assert!(
        text.contains(
            "kB  reclen     write   rewrite      read    reread      read     write      read"
        ),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("64       4 ")),
        "{text}"
    );
    assert!(text.contains("piotwin iozone test complete."));
}
