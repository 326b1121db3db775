//! Tests of FTIO that need no back end: validation, the whole algorithm over
//! in-memory regions with the same layout and data functions the rank program
//! uses (only the I/O calls are replaced by slice copies), and the report; and,
//! on the null back end, a failure injected into one rank.

use std::collections::BTreeMap;

use clap::Parser;
use rustfft::num_complex::Complex64;

use super::layout::{get, put};
use super::*;
use crate::backend::fault::{self, Call, WithFault};
use crate::report::Mode;

/// Every process's region as bytes in memory, addressed as the rank program addresses its file.
struct Regions {
    geo: Geometry,
    data: Vec<Vec<u8>>,
}

/// A deliberately broken transposition, to show verification catches it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Skip the Square exchange.
    NoExchange,
    /// Skip the local Mini-Square transpose.
    NoLocalTranspose,
    /// Transpose Mini-Squares but write each back in its own place.
    NoMiniSwap,
}

impl Regions {
    fn new(geo: Geometry) -> Regions {
        Regions {
            geo,
            data: vec![vec![0u8; geo.region_bytes() as usize]; geo.c as usize],
        }
    }
    fn read(&self, p: u64, off: u64, len: usize) -> Vec<u8> {
        self.data[p as usize][off as usize..off as usize + len].to_vec()
    }
    fn write(&mut self, p: u64, off: u64, bytes: &[u8]) {
        self.data[p as usize][off as usize..off as usize + bytes.len()].copy_from_slice(bytes);
    }
    /// Byte offset of matrix element (m, col) in its owner's region, and the owner.
    fn locate(&self, m: u64, col: u64) -> (u64, u64) {
        let (s, i) = (self.geo.square_side(), self.geo.i);
        let (p, q, r, cl) = (col / s, m / s, m % s, col % s);
        (
            p,
            self.geo.band_offset(q, cl / i) + self.geo.band_index(r, cl % i) * ELEM_BYTES,
        )
    }
    fn element(&self, m: u64, col: u64) -> Complex64 {
        let (p, off) = self.locate(m, col);
        get(&self.data[p as usize][off as usize..], 0)
    }

    fn init(&mut self, sig: &Signal) {
        let geo = self.geo;
        let len = (geo.band_elems() * ELEM_BYTES) as usize;
        for p in 0..geo.c {
            for b in 0..geo.i {
                for q in 0..geo.c {
                    let mut buf = vec![0u8; len];
                    fill_band(&mut buf, geo, sig, p, q, b);
                    self.write(p, geo.band_offset(q, b), &buf);
                }
            }
        }
    }

    fn dft_series(&mut self, fft: &mut LineFft) {
        let geo = self.geo;
        let len = (geo.band_elems() * ELEM_BYTES) as usize;
        for p in 0..geo.c {
            for b in 0..geo.i {
                let mut bands: Vec<Vec<u8>> = (0..geo.c)
                    .map(|q| self.read(p, geo.band_offset(q, b), len))
                    .collect();
                let mut slices: Vec<&mut [u8]> =
                    bands.iter_mut().map(|v| v.as_mut_slice()).collect();
                fft_band(&mut slices, geo, fft);
                for (q, band) in bands.iter().enumerate() {
                    self.write(p, geo.band_offset(q as u64, b), band);
                }
            }
        }
    }

    fn transpose(&mut self, fault: Fault) {
        let geo = self.geo;
        let (i, mini) = (geo.i as usize, (geo.mini_elems() * ELEM_BYTES) as usize);
        if fault != Fault::NoLocalTranspose {
            for p in 0..geo.c {
                for q in 0..geo.c {
                    for (a, b) in mini_square_pairs(geo.i) {
                        let (ab, ba) = (geo.mini_offset(q, a, b), geo.mini_offset(q, b, a));
                        let (mut x, mut y) = (self.read(p, ab, mini), self.read(p, ba, mini));
                        transpose_mini(&mut x, i);
                        if a == b {
                            self.write(p, ab, &x);
                            continue;
                        }
                        transpose_mini(&mut y, i);
                        let swap = fault != Fault::NoMiniSwap;
                        self.write(p, if swap { ba } else { ab }, &x);
                        self.write(p, if swap { ab } else { ba }, &y);
                    }
                }
            }
        }
        if fault != Fault::NoExchange {
            let sq = (geo.square_elems() * ELEM_BYTES) as usize;
            for d in 0..geo.c {
                // sendrecv_replace: every rank sends its Square (q, p) and receives q's (p, q).
                let sent: Vec<Option<(u64, Vec<u8>)>> = (0..geo.c)
                    .map(|p| {
                        diagonal_partner(p, d, geo.c)
                            .map(|q| (q, self.read(p, geo.square_offset(q), sq)))
                    })
                    .collect();
                for p in 0..geo.c {
                    if let Some((q, _)) = &sent[p as usize] {
                        let (back_to, from_q) =
                            sent[*q as usize].as_ref().expect("partner exchanges too");
                        assert_eq!(*back_to, p);
                        self.write(p, geo.square_offset(*q), from_q);
                    }
                }
            }
        }
    }

    fn verify(&self, sig: &Signal) -> Verification {
        let geo = self.geo;
        let len = (geo.band_elems() * ELEM_BYTES) as usize;
        let mut v = Verification::default();
        for p in 0..geo.c {
            for q in 0..geo.c {
                for b in 0..geo.i {
                    check_band(
                        &self.read(p, geo.band_offset(q, b), len),
                        geo,
                        sig,
                        p,
                        q,
                        b,
                        &mut v,
                    );
                }
            }
        }
        v
    }
}

fn run_in_memory(geo: Geometry, fault: Fault) -> Verification {
    let sig = Signal::new(geo.n());
    let mut fft = LineFft::new(geo.n() as usize);
    let mut files = Regions::new(geo);
    files.init(&sig);
    files.dft_series(&mut fft);
    files.transpose(fault);
    files.dft_series(&mut fft);
    files.verify(&sig)
}

const GEOMETRIES: [(u64, u64); 7] = [(2, 1), (2, 2), (2, 4), (3, 3), (4, 2), (4, 4), (6, 4)];

#[test]
fn out_of_core_transpose_equals_in_memory_transpose() {
    for (i, c) in GEOMETRIES {
        let geo = Geometry { i, c };
        let n = geo.n();
        let value = |m: u64, col: u64| Complex64::new(m as f64, (col * n + m) as f64);
        let mut files = Regions::new(geo);
        for m in 0..n {
            for col in 0..n {
                let (p, off) = files.locate(m, col);
                put(
                    &mut files.data[p as usize][off as usize..],
                    0,
                    value(m, col),
                );
            }
        }
        files.transpose(Fault::None);
        for m in 0..n {
            for col in 0..n {
                assert_eq!(
                    files.element(m, col),
                    value(col, m),
                    "I={i} c={c} at ({m},{col})"
                );
            }
        }
    }
}

#[test]
fn the_whole_algorithm_computes_the_closed_form_transform() {
    for (i, c) in GEOMETRIES {
        let geo = Geometry { i, c };
        let v = run_in_memory(geo, Fault::None);
        assert_eq!(v.checked, geo.n() * geo.n());
        assert_eq!(v.passed(), Some(true), "I={i} c={c}: {v:?}");
        assert!(v.max_rel_error < 1e-12, "I={i} c={c}: {}", v.max_rel_error);
    }
}

#[test]
fn a_wrong_transpose_fails_verification() {
    for (i, c) in [(2, 2), (2, 4), (4, 4), (3, 3)] {
        for fault in [
            Fault::NoExchange,
            Fault::NoLocalTranspose,
            Fault::NoMiniSwap,
        ] {
            let v = run_in_memory(Geometry { i, c }, fault);
            assert_eq!(v.passed(), Some(false), "I={i} c={c} {fault:?} passed");
            assert!(v.first_failure.is_some());
        }
    }
}

fn args(i: u64) -> FtioArgs {
    FtioArgs {
        i,
        shared_file: false,
        dir: "/tmp/ftio-test".into(),
        fsync: false,
        keep: false,
    }
}

#[test]
fn smallest_valid_i_is_the_smallest() {
    for c in 1..=300u64 {
        let brute = (2..)
            .find(|i| (i * i) % c == 0)
            .expect("I = c is always valid");
        assert_eq!(smallest_valid_i(c), brute, "c={c}");
        let step = valid_i_step(c);
        for i in 1..=3 * c {
            assert_eq!((i * i) % c == 0, i % step == 0, "c={c} I={i}");
        }
        let rec = recommended_i(c);
        assert_eq!((rec * rec) % c, 0, "c={c}");
        assert!((rec as f64) >= (c as f64).sqrt() + 1.0, "c={c}: {rec}");
        let lower = (2..rec).find(|i| (i * i) % c == 0 && (*i as f64) >= (c as f64).sqrt() + 1.0);
        assert_eq!(lower, None, "c={c}");
    }
    assert_eq!((smallest_valid_i(4), recommended_i(4)), (2, 4));
    assert_eq!((smallest_valid_i(256), recommended_i(256)), (16, 32));
}

#[test]
fn invalid_i_and_c_are_rejected_with_the_smallest_valid_i() {
    // c ∤ I².
    let err = args(3).validate(4).unwrap_err();
    assert!(
        matches!(
            err,
            FtioError::InvalidSize {
                i: 3,
                c: 4,
                smallest: 2,
                recommended: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("c = 4 does not divide I² = 9"), "{msg}");
    assert!(
        msg.contains("smallest valid I for 4 processes is 2"),
        "{msg}"
    );
    assert!(msg.contains("valid I are the multiples of 2"), "{msg}");
    let err = args(16).validate(12).unwrap_err();
    assert!(
        matches!(err, FtioError::InvalidSize { smallest: 6, .. }),
        "{err:?}"
    );
    // I too small, no processes, too large for 64-bit offsets.
    assert!(matches!(
        args(1).validate(1),
        Err(FtioError::InvalidSize { smallest: 2, .. })
    ));
    assert!(matches!(
        args(0).validate(4),
        Err(FtioError::InvalidSize { .. })
    ));
    assert!(matches!(
        args(4).validate(0),
        Err(FtioError::InvalidSize { .. })
    ));
    assert!(matches!(
        args(1 << 20).validate(1),
        Err(FtioError::TooLarge { .. })
    ));
    assert!(matches!(
        args(u64::MAX).validate(1),
        Err(FtioError::TooLarge { .. })
    ));
}

#[test]
fn valid_sizes_give_the_plan() {
    for (i, c, n) in [
        (8u64, 4usize, 256u64),
        (16, 4, 1024),
        (16, 256, 65536),
        (8, 32, 2048),
        (2, 1, 4),
    ] {
        let plan = args(i).validate(c).expect("valid");
        assert_eq!((plan.geo.n(), plan.geo.c), (n, c as u64));
    }
    let plan = args(8).validate(4).unwrap();
    assert_eq!(plan.path(3), "/tmp/ftio-test/ftio.0003");
    assert_eq!(plan.region_base(3), 0);
    let shared = FtioArgs {
        shared_file: true,
        ..args(8)
    }
    .validate(4)
    .unwrap();
    assert_eq!(shared.path(3), "/tmp/ftio-test/ftio.shared");
    assert_eq!(shared.region_base(3), 3 * 4 * 8u64.pow(4) * 16);
}

#[test]
fn command_line_options_parse() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        ftio: FtioArgs,
    }
    let cli = Cli::try_parse_from([
        "ftio",
        "-i",
        "16",
        "--shared-file",
        "-p",
        "/data",
        "--fsync",
    ])
    .unwrap();
    assert_eq!(
        (
            cli.ftio.i,
            cli.ftio.shared_file,
            cli.ftio.fsync,
            cli.ftio.keep
        ),
        (16, true, true, false)
    );
    assert_eq!(cli.ftio.dir, std::path::PathBuf::from("/data"));
    assert!(Cli::try_parse_from(["ftio"]).is_err(), "-i is required");
}

fn rank_output(rank: usize, io: f64, total: f64, verification: Verification) -> FtioRankOutput {
    let stats = PhaseStats {
        wall_s: total / 5.0,
        io_s: io / 5.0,
        compute_s: 0.1,
        comm_s: 0.01,
        bytes_read: 100,
        bytes_written: 200,
        comm_bytes: 10,
    };
    FtioRankOutput {
        rank,
        phases: vec![stats; 5],
        total_s: total,
        verification,
    }
}

#[test]
fn report_aggregates_ranks_and_flags_failures() {
    let plan = args(2).validate(2).unwrap();
    let ok = Verification {
        checked: 8,
        failed: 0,
        max_rel_error: 1e-15,
        first_failure: None,
    };
    let bad = Verification {
        checked: 8,
        failed: 1,
        max_rel_error: 0.5,
        first_failure: Some(Mismatch {
            row: 1,
            col: 2,
            got: [1.0, 0.0],
            expected: [2.0, 0.0],
            rel_error: 0.5,
        }),
    };
    let outcome = |ranks: Vec<FtioRankOutput>| FtioOutcome {
        ranks,
        hints: Default::default(),
        failure: None,
    };
    let all = outcome(vec![
        rank_output(0, 1.0, 4.0, ok.clone()),
        rank_output(1, 3.0, 5.0, bad),
    ]);
    let r = build_report(&args(2), &plan, Mode::Real, BTreeMap::new(), &all);
    assert_eq!(r.benchmark, "ftio");
    assert_eq!(r.metrics["total_time_s"], 5.0);
    assert!((r.metrics["io_time_s"] - 2.0).abs() < 1e-12);
    assert!((r.metrics["io_fraction"] - 0.4).abs() < 1e-12);
    let flops = 5.0 * 64.0 * 64f64.log2(); // N = 8: 5·N²·log2(N²)
    assert!((r.metrics["mflops"] - flops / 5.0 / 1e6).abs() < 1e-12);
    assert_eq!(r.metrics["bytes_written"], 2.0 * 5.0 * 200.0);
    assert_eq!(r.metrics["max_rel_error"], 0.5);
    assert_eq!(r.tables["phases"].rows.len(), 5);
    assert_eq!(r.tables["ranks"].rows.len(), 2);
    assert_eq!(r.errors.len(), 1);
    assert!(r.errors[0].contains("row 1, col 2"), "{}", r.errors[0]);
    assert_eq!(r.params["n"], 8);
    let text = nas_block(&r, false);
    assert!(
        text.contains("UNSUCCESSFUL")
            && text.contains("I/O fraction")
            && text.contains("transpose_exchange")
    );
    assert!(r.to_json().contains("\"benchmark\": \"ftio\""));
    assert!(r.to_csv().contains("io_fraction,0.4"));

    // The twin: nothing to compare, so no error and no error metric.
    let none = outcome(vec![
        rank_output(0, 1.0, 2.0, Verification::default()),
        rank_output(1, 1.0, 2.0, Verification::default()),
    ]);
    let r = build_report(&args(2), &plan, Mode::Sim, BTreeMap::new(), &none);
    assert!(r.errors.is_empty() && !r.metrics.contains_key("max_rel_error"));
    assert!(nas_block(&r, false).contains("NOT PERFORMED"));
    let one = outcome(vec![rank_output(0, 1.0, 2.0, ok.clone())]);
    let r = build_report(&args(2), &plan, Mode::Real, BTreeMap::new(), &one);
    assert!(nas_block(&r, false).contains("SUCCESSFUL"));
}

#[test]
fn rank_outputs_survive_the_f64_gather_encoding() {
    let bad = Verification {
        checked: 1 << 40,
        failed: 3,
        max_rel_error: 0.25,
        first_failure: Some(Mismatch {
            row: 7,
            col: 9,
            got: [1.5, -2.0],
            expected: [2.0, 0.5],
            rel_error: 0.25,
        }),
    };
    for v in [Verification::default(), bad] {
        let mut o = rank_output(3, 1.25, 6.5, v);
        o.phases[2].bytes_read = (1 << 52) + 1;
        let fields = o.to_fields();
        assert_eq!(fields.len(), FtioRankOutput::FIELDS);
        assert_eq!(FtioRankOutput::from_fields(3, &fields), o);
    }
}

#[test]
fn a_rank_failing_in_the_exchange_stops_every_rank_with_its_message() {
    // c = 4, I = 2: per rank, init writes c·I = 8 bands, a DFT series moves
    // 2·c·I = 16 bands and the local transpose 8 Mini-Squares per Square (32):
    // xfer 57 is rank 1's first read of the Square exchange. Its partners must
    // not wait for it forever: the run ends on every rank with rank 1's error.
    let plan = args(2).validate(4).unwrap();
    let failing = WithFault {
        inner: FtioProgram::new(plan),
        fault: fault::Fault {
            rank: 1,
            call: Call::Xfer,
            numbers: 57..=57,
        },
    };
    let outs = crate::backend::null::launch(4, &failing).unwrap();
    for o in &outs {
        let f = o
            .failure
            .as_deref()
            .expect("every rank reports the failure");
        assert!(
            f.starts_with("transpose_exchange: rank 1: ftio: ") && f.contains("injected"),
            "{f}"
        );
        assert_eq!(o.ranks.len(), 4);
        assert!(o.ranks.iter().all(|r| r.phases.len() == 3), "{:?}", o.ranks);
        assert_eq!(*o, outs[0]);
    }
    let r = build_report(
        &args(2),
        &failing.inner.plan,
        Mode::Sim,
        BTreeMap::new(),
        &outs[0],
    );
    assert_eq!(r.tables["phases"].rows.len(), 5);
    assert!(r.errors[0].contains("injected"), "{:?}", r.errors);
    // The same without a failure: every phase, no message.
    let ok = WithFault {
        fault: fault::Fault {
            numbers: 0..=0,
            ..failing.fault.clone()
        },
        ..failing
    };
    let outs = crate::backend::null::launch(4, &ok).unwrap();
    assert_eq!(outs[0].failure, None);
    assert!(outs[0].ranks.iter().all(|r| r.phases.len() == 5));
}
