//! Tests of the BTIO programs (both modes' logic on the in-memory and null back ends).

//! The programs on one rank over an in-memory test context (no back end is
//! needed): what they write must be the canonical layout, checked here by an
//! independent reader, and a flipped byte must fail verification.

use std::collections::BTreeMap;

use super::program::*;
use super::*;
use crate::backend::mem::MemCtx;
use crate::bench::btio::output::{btio_report, kernel_block, npb_block};
use crate::bench::btio::params::{BtioArgs, BtioKernelArgs, Grid};
use crate::ctx::block_on;
use crate::ctx::{Hints, RankProgram};

/// The in-memory test context, its clock moving 1 ms per reading.
fn mem() -> MemCtx {
    MemCtx {
        wtime_tick: 0.001,
        ..Default::default()
    }
}

/// An independent reader of the kernel's canonical layout: the i-th double is i + 1.
fn assert_canonical(data: &[u8], doubles: usize) {
    assert_eq!(data.len(), doubles * 8);
    for (i, chunk) in data.chunks_exact(8).enumerate() {
        let v = f64::from_le_bytes(chunk.try_into().unwrap());
        assert_eq!(v, (i + 1) as f64, "double {i}");
    }
}

/// The contents of a Fortran sequential file's records, one after another (each
/// record's 4-byte length before and after it checked).
fn fortran_records(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let len = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let end = at + 4 + len;
        assert_eq!(
            &data[end..end + 4],
            &data[at..at + 4],
            "record at {at}: trailing marker"
        );
        out.extend_from_slice(&data[at + 4..end]);
        at = end + 4;
    }
    out
}

fn btio_args(subtype: Subtype) -> BtioArgs {
    BtioArgs {
        class: crate::bench::btio::Class::S,
        grid: None,
        steps: None,
        wr_interval: None,
        subtype,
        input: None,
        path: "/mem".into(),
    }
}

/// Class S: 12³ points, 12 dumps.
const N: usize = 12;
const DUMPS: usize = 12;

/// Canonical element index of component `m` of point `(x, y, z)` in `dump`.
fn element(dump: usize, [x, y, z]: [usize; 3], m: usize) -> usize {
    ((dump * N * N * N) + (z * N + y) * N + x) * 5 + m
}

/// The file of a subtype as the canonical stream (epio's record markers dropped).
fn canonical(ctx: &MemCtx, cfg: &BtioConfig) -> Vec<u8> {
    match cfg.subtype {
        Subtype::Epio => fortran_records(&ctx.files.borrow()[&cfg.epio_path(0)]),
        _ => ctx.files.borrow()[&cfg.file_path()].clone(),
    }
}

#[test]
fn every_subtype_writes_bts_solution_in_canonical_order_and_verifies() {
    let mut files = Vec::new();
    for subtype in [
        Subtype::Full,
        Subtype::Simple,
        Subtype::Fortran,
        Subtype::Epio,
    ] {
        let cfg = btio_args(subtype).resolve(1).unwrap();
        let ctx = mem();
        let out = block_on(BtioProgram::new(cfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        assert_eq!(out.verification, Verification::Successful, "{subtype:?}");
        let norms = out.norms.as_ref().unwrap();
        assert!(norms.verified && norms.over_dumps, "{}", norms.npb_text());
        assert_eq!(
            (out.dumps, out.bytes_written),
            (DUMPS as u64, (DUMPS * 40 * N * N * N) as u64)
        );
        let data = canonical(&ctx, &cfg);
        assert_eq!(data.len(), DUMPS * 40 * N * N * N);
        // BT keeps the exact solution on the grid's faces: the face x = 0 of
        // every dump, read at its canonical offsets, is NPB's exact solution.
        let consts: crate::bench::btio::bt::Consts<f64> =
            crate::bench::btio::bt::Consts::new([N; 3], 0.01);
        let h = 1.0 / (N as f64 - 1.0);
        for dump in 0..DUMPS {
            for z in 0..N {
                for y in 0..N {
                    let exact = consts.exact_solution(0.0, y as f64 * h, z as f64 * h);
                    for (m, want) in exact.iter().enumerate() {
                        let at = 8 * element(dump, [0, y, z], m);
                        let got = f64::from_ne_bytes(data[at..at + 8].try_into().unwrap());
                        assert_eq!(got, *want, "{subtype:?} dump {dump} (0, {y}, {z}) m {m}");
                    }
                }
            }
        }
        files.push(data);
        assert!(out.mops > 0.0 && out.io_time_s > 0.0 && out.effective_output_mb_s > 0.0);
        let report = btio_report(&cfg, &out, crate::report::Mode::Sim, BTreeMap::new());
        for m in [
            "io_rate_mb_s",
            "effective_output_mb_s",
            "io_time_s",
            "io_percent",
            "total_time_s",
            "mops",
        ] {
            assert!(report.metrics.contains_key(m), "{m}");
        }
        assert_eq!(report.metrics["verified"], 1.0);
        let block = npb_block(&cfg, &out);
        assert!(
            block.contains("Verification    =               SUCCESSFUL"),
            "{block}"
        );
        assert!(block.contains(" Verification Successful"), "{block}");
    }
    // The same bytes whichever way they were written.
    assert!(files.windows(2).all(|w| w[0] == w[1]));
    let cfg = btio_args(Subtype::None).resolve(1).unwrap();
    let ctx = mem();
    let out = block_on(BtioProgram::new(cfg, &Hints::new()).run(&ctx)).unwrap();
    // Without I/O, NPB's error norm of the final u and its own reference values.
    assert_eq!((out.verification, out.dumps), (Verification::Successful, 0));
    assert!(!out.norms.unwrap().over_dumps);
    assert!(ctx.files.borrow().is_empty());
}

#[test]
fn a_flipped_byte_fails_verification() {
    for subtype in [Subtype::Full, Subtype::Simple, Subtype::Epio] {
        let cfg = btio_args(subtype).resolve(1).unwrap();
        let path = if subtype == Subtype::Epio {
            cfg.epio_path(0)
        } else {
            cfg.file_path()
        };
        // Byte `byte` of component 4 of point (2, 1, 0) of `dump`; in the epio
        // file behind the record markers of the dumps before and its own.
        let at = |dump: usize, byte: usize| {
            let e = element(dump, [2, 1, 0], 4) * 8 + byte;
            match subtype {
                Subtype::Epio => e + (2 * dump + 1) * 4,
                _ => e,
            }
        };
        // An exponent byte of dump 1: the mean error norm over the dumps is off.
        let ctx = MemCtx {
            corrupt_file: Some((path.clone(), at(1, 7))),
            ..mem()
        };
        let out = block_on(BtioProgram::new(cfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        let Verification::Failed(why) = &out.verification else {
            panic!("{subtype:?} passed")
        };
        assert!(
            why.starts_with("norms outside 1e-8 of NPB's class S"),
            "{why}"
        );
        // A low mantissa byte of the last dump: too small for the norms, found
        // bit for bit against the final u.
        let ctx = MemCtx {
            corrupt_file: Some((path, at(DUMPS - 1, 3))),
            ..mem()
        };
        let out = block_on(BtioProgram::new(cfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        let Verification::Failed(why) = &out.verification else {
            panic!("{subtype:?} passed")
        };
        assert!(
            why.starts_with("the last dump read back differs from the solver's final u: component 4 of point (2, 1, 0)"),
            "{why}"
        );
        assert!(
            why.contains(&format!(
                ", at byte {} (read by rank 0 from ",
                at(DUMPS - 1, 0)
            )),
            "{why}"
        );
        let report = btio_report(&cfg, &out, crate::report::Mode::Real, BTreeMap::new());
        assert_eq!(report.metrics["verified"], 0.0);
        assert_eq!(report.errors.len(), 1);
    }
}

#[test]
fn every_kernel_method_writes_reads_and_verifies() {
    for method in 0..=3u8 {
        let args = |mode: &str| BtioKernelArgs {
            method: Some(method),
            mode: Some(mode.into()),
            records: Some(3),
            grid: Some(Grid([5, 4, 3])),
            input: None,
            path: Some("/mem".into()),
        };
        // A read with no file writes the records first (untimed) and reads them.
        let fresh = mem();
        let rcfg = args("r").resolve(1).unwrap();
        let out = block_on(KernelProgram::new(rcfg.clone(), &Hints::new()).run(&fresh)).unwrap();
        assert!(out.staged, "method {method}");
        assert_eq!(out.verification, Verification::Successful);
        assert_canonical(&fresh.files.borrow()[&rcfg.file_path()], 3 * 5 * 60);
        assert!(kernel_block(&rcfg, &out).contains("written first, untimed"));
        let ctx = mem();
        let cfg = args("w").resolve(1).unwrap();
        let out = block_on(KernelProgram::new(cfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        assert_eq!(
            out.verification,
            Verification::Successful,
            "method {method}"
        );
        assert_canonical(&ctx.files.borrow()[&cfg.file_path()], 3 * 5 * 60);
        let rcfg = args("r").resolve(1).unwrap();
        let out = block_on(KernelProgram::new(rcfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        assert_eq!(
            out.verification,
            Verification::Successful,
            "method {method} read"
        );
        assert_eq!(out.bytes, 3 * 40 * 60);
        assert!(!out.staged);
        let block = kernel_block(&rcfg, &out);
        assert!(
            block.contains("read  operation only") && block.contains("SUCCESSFUL"),
            "{block}"
        );
        // Reading more records than the file holds is an error, not a pass.
        let mut more = args("r");
        more.records = Some(4);
        let e = block_on(KernelProgram::new(more.resolve(1).unwrap(), &Hints::new()).run(&ctx))
            .unwrap_err();
        assert!(e.to_string().contains("fewer than 4 records"), "{e}");
    }
}

#[test]
fn a_dump_failing_on_one_rank_stops_every_rank_with_its_message() {
    use crate::backend::fault::{Call, Fault, WithFault};
    // epio: each rank writes its own file, so rank 1's failed write is its alone.
    let mut args = btio_args(Subtype::Epio);
    args.steps = Some(20);
    let cfg = args.resolve(4).unwrap();
    let program = WithFault {
        inner: BtioProgram::new(cfg, &Hints::new()),
        fault: Fault {
            rank: 1,
            call: Call::Xfer,
            numbers: 1..=1,
        },
    };
    // The null back end reports ranks left waiting in a collective as an error.
    let outs = crate::backend::null::launch(4, &program)
        .expect("every rank returns: none waits for the failed one in a collective");
    for out in outs {
        let why = out.unwrap_err().to_string();
        assert!(
            why.contains("writing the dumps: rank 1:") && why.contains("injected failure"),
            "{why}"
        );
    }
}
