use super::*;
use crate::backend::mem::MemCtx;
use crate::backend::trace::{CallRecord, Traced};

fn args(words: &[u64], shared: bool) -> Madbench2Args {
    Madbench2Args {
        no_pix: words[0],
        no_bin: words[1],
        no_gang: words[2],
        sblocksize: words[3],
        fblocksize: words[4],
        rmod: words[5],
        wmod: words[6],
        iomethod: IoMethod::Mpi,
        iomode: IoMode::Sync,
        filetype: if shared {
            FileType::Shared
        } else {
            FileType::Unique
        },
        bwexp: None,
        remap: Remap::Custom,
        dir: PathBuf::from("/dry"),
        keep: false,
        zero_data: false,
        plot: None,
    }
}

const MIB32: u64 = 33_554_432;

/// The data-path calls of one rank, in order: (`w` or `r`, offset, bytes).
fn transfers(calls: &[CallRecord]) -> Vec<(char, u64, u64)> {
    calls
        .iter()
        .filter(|c| c.call == "write_at" || c.call == "read_at")
        .map(|c| {
            let field = |k: &str| -> u64 {
                let detail = c.detail();
                let at = detail.find(k).expect("the field") + k.len();
                detail[at..].split(' ').next().unwrap().parse().unwrap()
            };
            (c.call.as_bytes()[0] as char, field("off="), field("len="))
        })
        .collect()
}

/// Every rank's calls on the null back end (zero-cost I/O, real collectives).
fn dry_calls(a: &Madbench2Args, ranks: usize) -> Vec<(Madbench2Outcome, Vec<CallRecord>)> {
    let plan = a.validate(ranks as u64).unwrap();
    let program = Traced {
        inner: Madbench2Program::new(plan),
        files_only: false,
    };
    crate::backend::null::launch(ranks, &program).expect("no deadlock")
}

#[test]
fn numroc_deals_blocks_round_robin() {
    // 10 rows in blocks of 3 over 2 processes: blocks 0, 2 (and the last row) on 0.
    assert_eq!(numroc(10, 3, 0, 2), 6);
    assert_eq!(numroc(10, 3, 1, 2), 4);
    assert_eq!(numroc(10, 3, 0, 3), 4);
    assert_eq!(numroc(10, 3, 1, 3), 3);
    assert_eq!(numroc(10, 3, 2, 3), 3);
    assert_eq!(numroc(8192, 32, 3, 4), 2048);
}

/// The I/O-phase paper's run: P = 16, NO_PIX = 8192 (8KPIX), B = 8, G = 1,
/// SHARED, 32 MiB per call, in its five phases.
#[test]
fn eight_kpix_on_sixteen_ranks_shared_gives_the_five_phases() {
    let a = args(&[8192, 8, 1, 32, 1024, 1, 1], true);
    let plan = a.validate(16).unwrap();
    // M1 = (8192 / 4)² doubles = 32 MiB; FBLOCKSIZE 1024 = 128 doubles divides it.
    assert_eq!(plan.elements(Matrix::M1, 0), Some(4_194_304));
    assert_eq!((plan.offcount1, plan.offcount2), (4_194_304, 4_194_304));
    let outs = dry_calls(&a, 16);
    for (rank, (out, calls)) in outs.iter().enumerate() {
        assert_eq!(out.failure, None);
        // Rank r's 8 slots start at r · 8 · 32 MiB: 0, 268435456, …, 4026531840.
        let base = rank as u64 * 268_435_456;
        let w = |k: u64| ('w', base + k * MIB32, MIB32);
        let r = |k: u64| ('r', base + k * MIB32, MIB32);
        let mut expected = Vec::new();
        // 1: 8 writes (S), 4 GiB over the 16 ranks.
        expected.extend((0..8).map(w));
        // 2: 2 reads (W's r0, r1), 1 GiB.
        expected.extend([r(0), r(1)]);
        // 3: 6 writes and 6 reads alternating, each read 2 slots ahead of the write, 6 GiB.
        for k in 0..6 {
            expected.extend([w(k), r(k + 2)]);
        }
        // 4: 2 writes (w6, w7), 1 GiB.
        expected.extend([w(6), w(7)]);
        // 5: 8 reads (C), 4 GiB.
        expected.extend((0..8).map(r));
        assert_eq!(transfers(calls), expected, "rank {rank}");
    }
    let rank5 = transfers(&outs[5].1);
    assert_eq!(rank5[0], ('w', 1_342_177_280, 33_554_432));
    assert_eq!(rank5[31], ('r', 1_342_177_280 + 7 * 33_554_432, 33_554_432));
}

/// The spec's check: P = 16, NO_PIX = 25000, B = 8, G = 1 gives requests of
/// 312,500,000 B and 8 writes / 2 reads / 12 alternating / 2 writes / 8 reads.
#[test]
fn twenty_five_thousand_pixels_give_312_5_mb_requests() {
    let a = args(&[25000, 8, 1, 250, 8, 1, 1], false);
    let outs = dry_calls(&a, 16);
    let t = transfers(&outs[0].1);
    assert!(t.iter().all(|&(_, _, len)| len == 312_500_000));
    let kinds: String = t.iter().map(|x| x.0).collect();
    assert_eq!(
        kinds,
        "wwwwwwww".to_string() + "rr" + &"wr".repeat(6) + "ww" + "rrrrrrrr"
    );
}

/// G = 4 on 16 ranks: gangs of 4 on 2×2 grids, M2 = (8192/2)² = 128 MiB per
/// rank, offcount2 = 4 · offcount1.
#[test]
fn four_gangs_read_four_slots_per_step_and_write_one_gang_matrix() {
    let a = args(&[8192, 8, 4, 32, 1024, 1, 1], true);
    let plan = a.validate(16).unwrap();
    assert_eq!(plan.elements(Matrix::M2, 0), Some(16_777_216));
    assert_eq!((plan.offcount1, plan.offcount2), (4_194_304, 16_777_216));
    let outs = dry_calls(&a, 16);
    for (rank, (out, calls)) in outs.iter().enumerate() {
        assert_eq!(out.failure, None);
        let base = rank as u64 * 268_435_456;
        let r1 = |k: u64| ('r', base + k * MIB32, MIB32);
        let mib128 = 4 * MIB32;
        let mut expected: Vec<_> = (0..8).map(|k| ('w', base + k * MIB32, MIB32)).collect();
        // W: slots 0-3 read, then the gang's W_0 (128 MiB) at (4 − 4)·32 MiB = 0;
        // slots 4-7 read, then W_1 at (8 − 4)·32 MiB = 128 MiB.
        expected.extend((0..8).map(r1));
        // (With SYNC the first write comes after the second group of reads: b = 4.)
        let w2 = |q: u64| ('w', base + q * mib128, mib128);
        expected.insert(8 + 8, w2(0));
        expected.push(w2(1));
        // C: B/G = 2 reads of the gang's matrices.
        expected.extend([('r', base, mib128), ('r', base + mib128, mib128)]);
        assert_eq!(transfers(calls), expected, "rank {rank}");
    }
    // The busy-work between: per step of W, 3 + 1 remaps before the pdgemm on the gang.
    let flops: Vec<f64> = outs[0]
        .1
        .iter()
        .filter(|c| c.call == "compute" && c.detail.starts_with("Flops"))
        .map(|c| c.detail[6..].parse().unwrap())
        .collect();
    let s = 2.0 * (8192.0f64 * 8192.0 / (16.0 * 64.0)).floor() * 32.0;
    let gemm = 2.0 * (8192.0f64.powi(3) / (4.0 * 64.0)).floor() * 32.0;
    assert_eq!(s, 4_194_304.0);
    let mut expected = vec![s; 8];
    expected.extend([s, s, s, s, s, s, s, s, gemm, gemm]);
    expected.extend([s, s]);
    let mut got = flops.clone();
    // W's order: 4 remaps, 4 remaps, pdgemm, pdgemm (b = 4 and b = 8).
    got[8..18].sort_by(f64::total_cmp);
    assert_eq!(got, expected);
}

#[test]
fn async_mode_posts_and_waits_each_transfer_once() {
    let mut a = args(&[64, 4, 1, 8, 64, 1, 1], false);
    a.iomode = IoMode::Async;
    let outs = dry_calls(&a, 4);
    for (out, calls) in &outs {
        assert_eq!(out.failure, None);
        let posted = calls
            .iter()
            .filter(|c| c.call.starts_with("iwrite") || c.call.starts_with("iread"))
            .count();
        let waited = calls.iter().filter(|c| c.call == "wait_all").count();
        // S 4 writes, W 4 reads + 4 writes, C 4 reads.
        assert_eq!((posted, waited), (16, 16));
    }
}

#[test]
fn rmod_passes_a_token_in_groups_of_consecutive_ranks() {
    let a = args(&[64, 2, 1, 8, 64, 2, 4], false);
    let outs = dry_calls(&a, 4);
    let count = |rank: usize, call: &str| outs[rank].1.iter().filter(|c| c.call == call).count();
    // Reads: W 2, C 2; writes: S 2, W 2. RMOD = 2: ranks 1 and 3 wait for 0 and 2;
    // WMOD = 4: ranks 1, 2, 3 wait for the rank before.
    assert_eq!((count(0, "recv"), count(0, "send")), (0, 4 + 4));
    assert_eq!((count(1, "recv"), count(1, "send")), (4 + 4, 4));
    assert_eq!((count(2, "recv"), count(2, "send")), (4, 4 + 4));
    assert_eq!((count(3, "recv"), count(3, "send")), (4 + 4, 0));
}

#[test]
fn the_original_checks_refuse_bad_parameters_by_name() {
    let refuse = |w: &[u64], p: u64, expect: &str| {
        let e = args(w, false).validate(p).unwrap_err().to_string();
        assert!(e.contains(expect), "{e}");
    };
    refuse(&[64, 8, 1, 8, 64, 1, 1], 8, "P = 8 is not a perfect square");
    refuse(
        &[64, 9, 3, 8, 64, 1, 1],
        9,
        "NO_GANG = 3 is not a perfect square",
    );
    refuse(
        &[64, 8, 4, 8, 64, 1, 1],
        9,
        "NO_GANG = 4 does not divide the process count P = 9",
    );
    refuse(
        &[64, 6, 4, 8, 64, 1, 1],
        16,
        "NO_GANG = 4 does not divide NO_BIN = 6",
    );
    refuse(
        &[64, 8, 1, 8, 100, 1, 1],
        4,
        "FBLOCKSIZE = 100 is not a whole number of doubles",
    );
    refuse(&[64, 8, 1, 8, 64, 3, 1], 4, "RMOD = 3 does not divide");
    refuse(
        &[64, 8, 4, 8, 64, 1, 3],
        16,
        "WMOD = 3 does not divide the gang size P / NO_GANG = 16 / 4 = 4",
    );
    refuse(&[64, 8, 1, 64, 64, 1, 1], 4, "SBLOCKSIZE = 64 is too large");
    refuse(&[0, 8, 1, 8, 64, 1, 1], 4, "NO_PIX = 0");
    refuse(&[u64::MAX / 2, 8, 1, 8, 64, 1, 1], 4, "overflows 64 bits");
    let mut a = args(&[64, 8, 1, 8, 64, 1, 1], false);
    a.iomethod = IoMethod::Posix;
    a.iomode = IoMode::Async;
    assert!(
        a.validate(4)
            .unwrap_err()
            .to_string()
            .contains("needs --iomethod MPI")
    );
}

fn mem_run(ctx: &MemCtx, iomode: IoMode) -> Madbench2Outcome {
    let mut a = args(&[64, 4, 1, 8, 64, 1, 1], false);
    a.iomode = iomode;
    a.dir = PathBuf::from("/mem");
    let plan = a.validate(1).unwrap();
    crate::ctx::block_on(Madbench2Program::new(plan).run(ctx))
}

#[test]
fn one_in_memory_rank_reads_back_every_word_it_wrote() {
    for mode in [IoMode::Sync, IoMode::Async] {
        let out = mem_run(&MemCtx::default(), mode);
        assert_eq!(out.failure, None);
        let v = out.ranks[0].verification;
        // W reads 4 slots of 64² doubles, C reads 4: 8 · 32768 bytes.
        assert_eq!((v.checked_bytes, v.failed_words), (8 * 32768, 0));
    }
}

#[test]
fn zero_data_writes_zeros_and_checks_nothing() {
    let ctx = MemCtx::default();
    let mut a = args(&[64, 4, 1, 8, 64, 1, 1], false);
    a.zero_data = true;
    a.keep = true;
    a.dir = PathBuf::from("/mem");
    let out = crate::ctx::block_on(Madbench2Program::new(a.validate(1).unwrap()).run(&ctx));
    assert_eq!(out.failure, None);
    assert_eq!(out.ranks[0].verification, Verification::default());
    let files = ctx.files.borrow();
    let data = &files["/mem/madbench2.data_0"];
    assert_eq!(data.len(), 4 * 32768);
    assert!(data.iter().all(|&b| b == 0));
}

#[test]
fn a_corrupted_read_is_caught_with_its_place() {
    let ctx = MemCtx {
        corrupt_reads: true,
        ..Default::default()
    };
    let out = mem_run(&ctx, IoMode::Sync);
    let v = out.ranks[0].verification;
    // The first byte of each of the 8 reads is flipped.
    assert_eq!(v.failed_words, 8);
    let m = v.first.unwrap();
    assert_eq!((m.offset, m.expected ^ m.got), (0, 1));
}

#[test]
fn the_twin_run_is_deterministic() {
    let a = args(&[2048, 8, 4, 32, 1024, 2, 2], true);
    let plan = a.validate(16).unwrap();
    let scenario = piotwin_sim::Scenario::from_str(
        include_str!("../../../scenarios/nfs-raid5.toml"),
        "nfs-raid5.toml",
    )
    .unwrap();
    let run = || {
        crate::backend::sim::launch(
            &scenario,
            16,
            piotwin_sim::SimOptions::seeded(7),
            &Madbench2Program::new(plan.clone()),
        )
        .unwrap()
        .0
    };
    let (one, two) = (run(), run());
    assert_eq!(one, two);
    assert!(one[0].ranks.iter().all(|r| r.functions.len() == 3));
    assert!(one[0].ranks[0].functions[1].r_s > 0.0);
}
