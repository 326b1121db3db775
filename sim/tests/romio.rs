//! ROMIO semantics of the twin's MPI-IO layer: the file-system request stream of
//! collective and independent accesses against the two-phase and data-sieving
//! algorithms computed independently here (brute force over each rank's extents).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use piotwin_sim::{FsRequest, Scenario, SimOptions, Twin};
use piotwin_types::{Access, Api, Coordination, Op, OpenMode, Position};
use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Hints, Order, View};

/// 8 nodes × 2 cores (ranks 2k and 2k+1 share node k).
fn cluster() -> Scenario {
    Scenario::from_str(
        include_str!("../../scenarios/nfs-raid5.toml"),
        "nfs-raid5.toml",
    )
    .unwrap()
}

fn hints(kv: &[(&str, &str)]) -> Hints {
    let mut h = Hints::new();
    for (k, v) in kv {
        h.set(*k, *v);
    }
    h
}

/// Every rank opens one shared file with `h` (rank 0 first fills its first 1 MiB,
/// so windows have data to read), sets its view and does one `coord` write of
/// its whole view share; returns the recorded requests of that write (sorted)
/// and the hints in effect on rank 0.
fn run(
    ranks: usize,
    h: &Hints,
    views: &[View],
    lens: &[u64],
    coord: Coordination,
) -> (Vec<(usize, Access, u64, u64)>, Hints) {
    const FILL: u64 = 1 << 20;
    let scn = cluster();
    let twin = Twin::new(&scn, ranks, SimOptions::seeded(1)).unwrap();
    twin.record_requests();
    let rs: Vec<_> = (0..ranks).map(|r| twin.rank(r)).collect();
    let eff = RefCell::new(Hints::new());
    let tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = rs
        .iter()
        .map(|r| {
            let eff = &eff;
            Box::pin(async move {
                let me = r.rank();
                let mut f = r
                    .open_with_hints("/f", OpenMode::CreateReadWrite, true, Api::MpiIo, h)
                    .await
                    .unwrap();
                if me == 0 {
                    r.xfer(
                        &mut f,
                        Op {
                            access: Access::Write,
                            coord: Coordination::Independent,
                            pos: Position::At(0),
                        },
                        FILL,
                    )
                    .await
                    .unwrap();
                }
                r.barrier().await;
                r.set_view(&mut f, &views[me]).await.unwrap();
                r.xfer(
                    &mut f,
                    Op {
                        access: Access::Write,
                        coord: coord,
                        pos: Position::At(0),
                    },
                    lens[me],
                )
                .await
                .unwrap();
                if me == 0 {
                    *eff.borrow_mut() = f.hints_in_effect();
                }
                r.close(f).await;
            }) as Pin<Box<dyn Future<Output = ()> + '_>>
        })
        .collect();
    twin.run(tasks).unwrap();
    let mut got: Vec<_> = twin
        .trace()
        .iter()
        .skip(1)
        .map(|q: &FsRequest| (q.rank, q.access, q.offset, q.len))
        .collect();
    got.sort_by_key(|g| (g.0, g.2, g.1 == Access::Write));
    (got, eff.into_inner())
}

/// Two-phase write as Thakur & Choudhary describe it, brute force: domains of
/// ⌈range / aggregators⌉ bytes; in each, windows of `cb` bytes from the first
/// byte of data to the last; a window with data is written whole, read first
/// when the data leaves a hole.
fn two_phase_reference(
    exts: &[Vec<(u64, u64)>],
    aggs: &[usize],
    cb: u64,
) -> Vec<(usize, Access, u64, u64)> {
    let all: Vec<(u64, u64)> = exts.iter().flatten().copied().collect();
    let lo = all.iter().map(|e| e.0).min().unwrap();
    let hi = all.iter().map(|e| e.0 + e.1).max().unwrap();
    let fd = (hi - lo).div_ceil(aggs.len() as u64);
    let clip = |a: u64, b: u64| -> Vec<(u64, u64)> {
        all.iter()
            .filter_map(|&(o, l)| {
                let (x, y) = (o.max(a), (o + l).min(b));
                (x < y).then_some((x, y))
            })
            .collect()
    };
    let mut out = Vec::new();
    for (i, &agg) in aggs.iter().enumerate() {
        let (d0, d1) = (lo + i as u64 * fd, (lo + (i as u64 + 1) * fd).min(hi));
        let inside = clip(d0, d1);
        let (Some(st), Some(en)) = (
            inside.iter().map(|p| p.0).min(),
            inside.iter().map(|p| p.1).max(),
        ) else {
            continue;
        };
        let mut w = st;
        while w < en {
            let wl = cb.min(en - w);
            let covered: u64 = clip(w, w + wl).iter().map(|p| p.1 - p.0).sum();
            if covered > 0 {
                if covered < wl {
                    out.push((agg, Access::Read, w, wl));
                }
                out.push((agg, Access::Write, w, wl));
            }
            w += wl;
        }
    }
    out.sort_by_key(|g| (g.0, g.2, g.1 == Access::Write));
    out
}

fn extents_of(views: &[View], lens: &[u64]) -> Vec<Vec<(u64, u64)>> {
    views
        .iter()
        .zip(lens)
        .map(|(v, &l)| v.extents(0, l).collect())
        .collect()
}

/// IOR's segmented layout as a view: rank r's block of `b` bytes in each of
/// `s` segments of `n · b` bytes.
fn ior_views(n: usize, b: u64, s: u64) -> (Vec<View>, Vec<u64>) {
    let views = (0..n)
        .map(|r| {
            let ft = Datatype::Resized {
                lb: 0,
                extent: n as u64 * b,
                inner: Box::new(Datatype::Contiguous {
                    count: b,
                    inner: Box::new(Datatype::Byte),
                }),
            };
            View::new(r as u64 * b, Datatype::Byte, ft).unwrap()
        })
        .collect();
    (views, vec![b * s; n])
}

/// The first rank of each node: ROMIO's default aggregators (`cb_config_list=*:1`).
const NODE_LEADERS: [usize; 8] = [0, 2, 4, 6, 8, 10, 12, 14];

#[test]
fn ior_segmented_interleaved_collective_is_two_phase_by_default() {
    let (views, lens) = ior_views(16, 4096, 8);
    let (got, eff) = run(16, &Hints::new(), &views, &lens, Coordination::Collective);
    let want = two_phase_reference(&extents_of(&views, &lens), &NODE_LEADERS, 16 << 20);
    assert_eq!(got, want);
    // 512 KiB over 8 aggregators: one 64 KiB window each, no holes, writes only.
    assert_eq!(got.len(), 8);
    assert!(got.iter().all(|g| g.1 == Access::Write && g.3 == 64 << 10));
    assert_eq!(eff.get("cb_nodes"), Some("8"));
    assert_eq!(
        eff.get("romio_aggregator_list"),
        Some("0 2 4 6 8 10 12 14 ")
    );
    assert_eq!(eff.get("cb_buffer_size"), Some("16777216"));
    assert_eq!(eff.get("romio_cb_write"), Some("automatic"));
    assert_eq!(eff.get("romio_filesystem_type"), Some("NFS:"));
}

#[test]
fn cb_nodes_and_cb_buffer_size_change_the_stream() {
    let (views, lens) = ior_views(16, 4096, 8);
    let exts = extents_of(&views, &lens);
    let h = hints(&[("cb_nodes", "2")]);
    let (got, eff) = run(16, &h, &views, &lens, Coordination::Collective);
    assert_eq!(got, two_phase_reference(&exts, &[0, 2], 16 << 20));
    assert_eq!(got.len(), 2);
    assert_eq!(eff.get("romio_aggregator_list"), Some("0 2 "));
    let h = hints(&[("cb_nodes", "2"), ("cb_buffer_size", "65536")]);
    let (got, _) = run(16, &h, &views, &lens, Coordination::Collective);
    assert_eq!(got, two_phase_reference(&exts, &[0, 2], 65536));
    assert_eq!(got.len(), 8, "256 KiB per aggregator in 64 KiB rounds");
    // Four aggregators on the first node only (`cb_config_list=*:4`, cb_nodes=4).
    let h = hints(&[("cb_config_list", "*:4"), ("cb_nodes", "4")]);
    let (got, eff) = run(16, &h, &views, &lens, Coordination::Collective);
    assert_eq!(eff.get("romio_aggregator_list"), Some("0 1 2 3 "));
    assert_eq!(got, two_phase_reference(&exts, &[0, 1, 2, 3], 16 << 20));
}

#[test]
fn contiguous_collective_calls_stay_independent_unless_enabled() {
    // One contiguous block per rank: nothing interleaves, so `automatic` does
    // what ROMIO does: independent writes, one per rank.
    let views = vec![View::bytes(); 16];
    let lens = vec![4096; 16];
    let offs: Vec<View> = (0..16)
        .map(|r| View::new(r as u64 * 4096, Datatype::Byte, Datatype::Byte).unwrap())
        .collect();
    let (got, _) = run(16, &Hints::new(), &offs, &lens, Coordination::Collective);
    let want: Vec<_> = (0..16)
        .map(|r| (r, Access::Write, r as u64 * 4096, 4096))
        .collect();
    assert_eq!(got, want);
    let (got, _) = run(
        16,
        &hints(&[("romio_cb_write", "enable")]),
        &offs,
        &lens,
        Coordination::Collective,
    );
    assert_eq!(
        got,
        two_phase_reference(&extents_of(&offs, &lens), &NODE_LEADERS, 16 << 20)
    );
    assert_eq!(got.len(), 8);
    drop(views);
}

#[test]
fn btio_like_struct_of_subarrays() {
    // 8×8×8 points of 5 doubles; rank r of 4 owns two cells (z halves) at
    // quadrant (r / 2, r % 2) of y and x: a struct of two subarrays.
    let point = Datatype::Contiguous {
        count: 5,
        inner: Box::new(Datatype::Double),
    };
    let views: Vec<View> = (0..4u64)
        .map(|r| {
            let cell = |c: u64| {
                Datatype::subarray(
                    vec![8, 8, 8],
                    vec![4, 4, 4],
                    vec![4 * c, 4 * (r / 2), 4 * (r % 2)],
                    Order::C,
                    point.clone(),
                )
                .unwrap()
            };
            let ft = Datatype::Struct {
                fields: vec![(0, 1, cell(0)), (0, 1, cell(1))],
            };
            View::new(0, point.clone(), ft).unwrap()
        })
        .collect();
    let lens = vec![2 * 64 * 40; 4];
    let exts = extents_of(&views, &lens);
    for (h, aggs, cb) in [
        (
            hints(&[("cb_config_list", "*:2")]),
            vec![0, 1, 2, 3],
            16 << 20,
        ),
        (hints(&[("cb_buffer_size", "4096")]), vec![0, 2], 4096),
    ] {
        let (got, _) = run(4, &h, &views, &lens, Coordination::Collective);
        assert_eq!(got, two_phase_reference(&exts, &aggs, cb));
        assert!(!got.is_empty());
    }
}

#[test]
fn beff_io_like_strided_darray_with_holes() {
    // 16 rows of 1024 bytes, columns dealt cyclically in 64-byte chunks over 4
    // ranks; only ranks 0..3 of 4 write, rank 3 writes nothing: holes force
    // read-modify-write of the aggregators' windows.
    let views: Vec<View> = (0..4u64)
        .map(|r| {
            let ft = Datatype::darray(
                4,
                r,
                vec![16, 1024],
                vec![Distrib::None, Distrib::Cyclic],
                vec![DARG_DEFAULT, 64],
                vec![1, 4],
                Order::C,
                Datatype::Byte,
            )
            .unwrap();
            View::new(0, Datatype::Byte, ft).unwrap()
        })
        .collect();
    let lens = vec![4096, 4096, 4096, 0];
    let exts = extents_of(&views, &lens);
    let h = hints(&[("cb_buffer_size", "2048")]);
    let (got, _) = run(4, &h, &views, &lens, Coordination::Collective);
    let want = two_phase_reference(&exts, &[0, 2], 2048);
    assert_eq!(got, want);
    assert!(
        got.iter().any(|g| g.1 == Access::Read),
        "holes → read-modify-write"
    );
}

#[test]
fn independent_noncontiguous_writes_sieve_under_locks() {
    // Rank 0 alone writes 8 blocks of 4 KiB, 64 KiB apart: data sieving with a
    // 128 KiB write buffer reads and writes windows starting at the first
    // unwritten block, ending at the last byte of the access.
    let (views, lens) = ior_views(16, 4096, 8);
    let h = hints(&[("ind_wr_buffer_size", "131072")]);
    let mut views1 = vec![View::bytes(); 16];
    views1[0] = views[0].clone();
    let mut lens1 = vec![0; 16];
    lens1[0] = lens[0];
    let (got, _) = run(16, &h, &views1, &lens1, Coordination::Independent);
    let end = 7 * 65536 + 4096;
    let mut want = Vec::new();
    let mut w = 0;
    while w < end {
        let l = (131072u64).min(end - w);
        want.push((0, Access::Read, w, l));
        want.push((0, Access::Write, w, l));
        w += l;
    }
    assert_eq!(got, want);
    // With sieving off: one request per block.
    let h = hints(&[("romio_ds_write", "disable")]);
    let (got, _) = run(16, &h, &views1, &lens1, Coordination::Independent);
    let want: Vec<_> = (0..8u64)
        .map(|s| (0, Access::Write, s * 65536, 4096))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn bad_hint_values_are_refused_at_open() {
    let scn = cluster();
    let twin = Twin::new(&scn, 1, SimOptions::seeded(1)).unwrap();
    let r = twin.rank(0);
    let err = RefCell::new(None);
    let task = Box::pin(async {
        let e = r
            .open_with_hints(
                "/f",
                OpenMode::Create,
                false,
                Api::MpiIo,
                &hints(&[("romio_cb_write", "sometimes")]),
            )
            .await
            .err();
        *err.borrow_mut() = e;
    }) as Pin<Box<dyn Future<Output = ()> + '_>>;
    twin.run(vec![task]).unwrap();
    let e = err.into_inner().expect("refused").to_string();
    assert!(
        e.contains("romio_cb_write=sometimes") && e.contains("enable, disable, automatic"),
        "{e}"
    );
}
