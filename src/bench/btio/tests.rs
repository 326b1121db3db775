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

/// An independent reader of the canonical layout: the i-th double is i + 1.
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
        grid: Some(Grid([6, 7, 8])),
        steps: Some(7),
        wr_interval: Some(5),
        subtype,
        input: None,
        path: "/mem".into(),
    }
}

#[test]
fn every_subtype_writes_the_canonical_file_and_verifies() {
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
        assert_eq!((out.dumps, out.bytes_written), (2, 2 * 40 * 6 * 7 * 8));
        let path = if subtype == Subtype::Epio {
            cfg.epio_path(0)
        } else {
            cfg.file_path()
        };
        let data = ctx.files.borrow()[&path].clone();
        let data = match subtype {
            Subtype::Epio => fortran_records(&data),
            _ => data,
        };
        assert_canonical(&data, 2 * 5 * 6 * 7 * 8);
        assert!(out.mops > 0.0 && out.io_time_s > 0.0 && out.effective_output_mb_s > 0.0);
        let report = btio_report(&cfg, &out, crate::report::Mode::Sim, BTreeMap::new());
        for m in [
            "io_rate_mb_s",
            "effective_output_mb_s",
            "io_time_s",
            "io_percent",
            "total_time_s",
            "stand_in_mops",
        ] {
            assert!(report.metrics.contains_key(m), "{m}");
        }
        assert_eq!(report.metrics["verified"], 1.0);
        assert!(npb_block(&cfg, &out).contains("Verification    =               SUCCESSFUL"));
    }
    let cfg = btio_args(Subtype::None).resolve(1).unwrap();
    let ctx = mem();
    let out = block_on(BtioProgram::new(cfg, &Hints::new()).run(&ctx)).unwrap();
    assert_eq!(
        (out.verification, out.dumps),
        (Verification::NotPerformed, 0)
    );
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
        // Byte 3 of the double of dump 1, point (2, 1, 0), component 4; in the
        // epio file behind the record markers of dump 0's record and its own.
        let element = 5 * (6 * 7 * 8) + 5 * (2 + 6) + 4;
        let at = match subtype {
            Subtype::Epio => element * 8 + 8 + 4,
            _ => element * 8,
        };
        let ctx = MemCtx {
            corrupt_file: Some((path, at + 3)),
            ..mem()
        };
        let out = block_on(BtioProgram::new(cfg.clone(), &Hints::new()).run(&ctx)).unwrap();
        let Verification::Failed(why) = &out.verification else {
            panic!("{subtype:?} passed")
        };
        assert!(
            why.starts_with("record 1, component 4, point (2, 1, 0)"),
            "{why}"
        );
        assert!(why.contains(&format!("at byte {at}")), "{why}");
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
