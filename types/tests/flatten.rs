//! Flattening of datatypes and views: hand-computed cases, a large lazy case, and
//! a comparison against a slow byte-by-byte reference on generated types.
//! The hand-computed subarray and darray cases were also checked against MPICH 4
//! (`MPI_Unpack` into a buffer typed with the same MPI datatype).

use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Order, View};

fn b(t: Datatype) -> Box<Datatype> {
    Box::new(t)
}

fn ext(t: &Datatype) -> Vec<(i64, u64)> {
    let v: Vec<_> = t.extents().collect();
    assert_eq!(
        t.extent_count(),
        v.len() as u64,
        "extent_count disagrees with extents() for {t:?}"
    );
    assert_eq!(
        t.size(),
        v.iter().map(|e| e.1).sum::<u64>(),
        "size disagrees with extents() for {t:?}"
    );
    v
}

fn sub(sizes: &[u64], subsizes: &[u64], starts: &[u64], order: Order, inner: Datatype) -> Datatype {
    Datatype::subarray(
        sizes.to_vec(),
        subsizes.to_vec(),
        starts.to_vec(),
        order,
        inner,
    )
    .unwrap()
}

fn darray2x2(rank: u64, gsizes: &[u64], distrib: Distrib, darg: i64, order: Order) -> Datatype {
    Datatype::darray(
        4,
        rank,
        gsizes.to_vec(),
        vec![distrib; 2],
        vec![darg; 2],
        vec![2, 2],
        order,
        Datatype::Byte,
    )
    .unwrap()
}

#[test]
fn basic_types() {
    assert_eq!(ext(&Datatype::Double), vec![(0, 8)]);
    assert_eq!((Datatype::Double.lb(), Datatype::Double.extent()), (0, 8));
    // vector(3, 2, stride 4) of doubles: blocks of 16 bytes every 32 bytes.
    let v = Datatype::Vector {
        count: 3,
        blocklen: 2,
        stride: 4,
        inner: b(Datatype::Double),
    };
    assert_eq!(ext(&v), vec![(0, 16), (32, 16), (64, 16)]);
    assert_eq!((v.lb(), v.extent(), v.size()), (0, 80, 48));
    // Negative stride: type-map order runs backwards, lb is negative.
    let h = Datatype::Hvector {
        count: 3,
        blocklen: 1,
        stride_bytes: -10,
        inner: b(Datatype::Double),
    };
    assert_eq!(ext(&h), vec![(0, 8), (-10, 8), (-20, 8)]);
    assert_eq!((h.lb(), h.extent()), (-20, 28));
    // Contiguous of doubles is one run.
    let c = Datatype::Contiguous {
        count: 5,
        inner: b(Datatype::Double),
    };
    assert_eq!(ext(&c), vec![(0, 40)]);
    // Hindexed: abutting blocks merge; zero-length blocks vanish.
    let hi = Datatype::Hindexed {
        blocks: vec![(0, 2), (16, 1), (100, 0), (40, 1)],
        inner: b(Datatype::Double),
    };
    assert_eq!(ext(&hi), vec![(0, 24), (40, 8)]);
    assert_eq!((hi.lb(), hi.extent(), hi.size()), (0, 48, 32));
}

#[test]
fn struct_bounds_follow_mpich() {
    // Values checked against MPICH 4 (MPI_Type_get_extent) on this machine.
    let s = Datatype::Struct {
        fields: vec![(0, 1, Datatype::Double), (8, 1, Datatype::Byte)],
    };
    assert_eq!((s.lb(), s.extent(), s.size()), (0, 16, 9));
    let s = Datatype::Struct {
        fields: vec![(0, 1, Datatype::Double), (5, 1, Datatype::Double)],
    };
    assert_eq!((s.lb(), s.extent()), (0, 13));
    let r = Datatype::Resized {
        lb: 0,
        extent: 16,
        inner: b(Datatype::Double),
    };
    let s = Datatype::Struct {
        fields: vec![(0, 1, r), (32, 1, Datatype::Double)],
    };
    assert_eq!((s.lb(), s.extent()), (0, 40));
    assert_eq!(ext(&s), vec![(0, 8), (32, 8)]);
    let s = Datatype::Struct {
        fields: vec![(4, 1, Datatype::Double), (12, 1, Datatype::Byte)],
    };
    assert_eq!((s.lb(), s.extent()), (4, 16));
    assert_eq!(ext(&s), vec![(4, 9)]);
}

#[test]
fn subarray_2d_c_and_fortran() {
    // 4 x 6 doubles, rows 1..3, columns 2..5. C: a row is 48 bytes.
    let c = sub(&[4, 6], &[2, 3], &[1, 2], Order::C, Datatype::Double);
    assert_eq!(ext(&c), vec![(64, 24), (112, 24)]);
    assert_eq!((c.lb(), c.extent(), c.size()), (0, 192, 48));
    // Fortran: dimension 0 (4 doubles = 32 bytes) is contiguous; columns 2, 3, 4.
    let f = sub(&[4, 6], &[2, 3], &[1, 2], Order::Fortran, Datatype::Double);
    assert_eq!(ext(&f), vec![(72, 16), (104, 16), (136, 16)]);
    assert_eq!((f.lb(), f.extent(), f.size()), (0, 192, 48));
}

#[test]
fn subarray_3d_c_and_fortran() {
    // 3 x 4 x 5 bytes: strides 20, 5, 1. i in 1..3, j in 1..3, k in 2..5.
    let c = sub(&[3, 4, 5], &[2, 2, 3], &[1, 1, 2], Order::C, Datatype::Byte);
    assert_eq!(ext(&c), vec![(27, 3), (32, 3), (47, 3), (52, 3)]);
    // The same array in Fortran order, dimensions listed the other way round.
    let f = sub(
        &[5, 4, 3],
        &[3, 2, 2],
        &[2, 1, 1],
        Order::Fortran,
        Datatype::Byte,
    );
    assert_eq!(ext(&f), ext(&c));
    assert_eq!((f.lb(), f.extent()), (0, 60));
    // Full rows merge: 2 x 3 x 4 bytes, j in 1..3 with whole rows of 4 bytes.
    let m = sub(&[2, 3, 4], &[2, 2, 4], &[0, 1, 0], Order::C, Datatype::Byte);
    assert_eq!(ext(&m), vec![(4, 8), (16, 8)]);
    // The whole array is one extent.
    let w = sub(
        &[2, 3, 4],
        &[2, 3, 4],
        &[0, 0, 0],
        Order::Fortran,
        Datatype::Double,
    );
    assert_eq!(ext(&w), vec![(0, 192)]);
}

#[test]
fn subarray_errors_name_the_dimension() {
    let e = Datatype::subarray(vec![4, 6], vec![2, 5], vec![1, 2], Order::C, Datatype::Byte)
        .unwrap_err();
    assert!(
        e.to_string().contains("dimension 1") && e.to_string().contains("2 + 5"),
        "{e}"
    );
    let e =
        Datatype::subarray(vec![4, 6], vec![2], vec![1, 2], Order::C, Datatype::Byte).unwrap_err();
    assert!(e.to_string().contains("`subsizes` has 1 entries"), "{e}");
}

#[test]
fn darray_block_on_2x2() {
    // 4 x 4 bytes, default block = 2; grid coordinates row-major: rank 1 = (0, 1).
    assert_eq!(
        ext(&darray2x2(
            0,
            &[4, 4],
            Distrib::Block,
            DARG_DEFAULT,
            Order::C
        )),
        vec![(0, 2), (4, 2)]
    );
    assert_eq!(
        ext(&darray2x2(
            1,
            &[4, 4],
            Distrib::Block,
            DARG_DEFAULT,
            Order::C
        )),
        vec![(2, 2), (6, 2)]
    );
    assert_eq!(
        ext(&darray2x2(
            3,
            &[4, 4],
            Distrib::Block,
            DARG_DEFAULT,
            Order::C
        )),
        vec![(10, 2), (14, 2)]
    );
    // Fortran: dimension 0 is contiguous; rank 1 owns i0 in 0..2, i1 in 2..4,
    // at byte i0 + 4·i1.
    let f = darray2x2(1, &[4, 4], Distrib::Block, DARG_DEFAULT, Order::Fortran);
    assert_eq!(ext(&f), vec![(8, 2), (12, 2)]);
    // Rank 2 = (1, 0) owns i0 in 2..4, i1 in 0..2: (2,2) and (6,2).
    let f = darray2x2(2, &[4, 4], Distrib::Block, DARG_DEFAULT, Order::Fortran);
    assert_eq!(ext(&f), vec![(2, 2), (6, 2)]);
    assert_eq!((f.lb(), f.extent(), f.size()), (0, 16, 4));
    // Uneven block: 5 x 5, block 3: rank 3 = (1, 1) owns rows and columns 3..5.
    assert_eq!(
        ext(&darray2x2(
            3,
            &[5, 5],
            Distrib::Block,
            DARG_DEFAULT,
            Order::C
        )),
        vec![(18, 2), (23, 2)]
    );
    // Block too small to cover the dimension is refused with the minimum.
    let e = Datatype::darray(
        2,
        0,
        vec![5],
        vec![Distrib::Block],
        vec![2],
        vec![2],
        Order::C,
        Datatype::Byte,
    )
    .unwrap_err();
    assert!(e.to_string().contains("darg >= 3"), "{e}");
}

#[test]
fn darray_cyclic_on_2x2() {
    // cyclic(1) on 4 x 4: rank 1 = (0, 1) owns rows {0, 2}, columns {1, 3}.
    let c = darray2x2(1, &[4, 4], Distrib::Cyclic, DARG_DEFAULT, Order::C);
    assert_eq!(ext(&c), vec![(1, 1), (3, 1), (9, 1), (11, 1)]);
    assert_eq!((c.lb(), c.extent(), c.size()), (0, 16, 4));
    // cyclic(2) on 8 x 8: rank 2 = (1, 0) owns rows {2,3,6,7}, columns {0,1,4,5}.
    let k = darray2x2(2, &[8, 8], Distrib::Cyclic, 2, Order::C);
    let want: Vec<(i64, u64)> = [2, 3, 6, 7]
        .iter()
        .flat_map(|r| [(r * 8, 2), (r * 8 + 4, 2)])
        .collect();
    assert_eq!(ext(&k), want);
    // cyclic(2) on 5 x 5 with a short last block: rank 0 owns rows and columns
    // {0, 1, 4}; (4,1) and (5,2) abut across rows and merge.
    let t = darray2x2(0, &[5, 5], Distrib::Cyclic, 2, Order::C);
    assert_eq!(ext(&t), vec![(0, 2), (4, 3), (9, 1), (20, 2), (24, 1)]);
    // Same in Fortran order for rank 1 = (0, 1): i0 in {0, 1, 4}, i1 in {2, 3}.
    let t = darray2x2(1, &[5, 5], Distrib::Cyclic, 2, Order::Fortran);
    assert_eq!(ext(&t), vec![(10, 2), (14, 3), (19, 1)]);
    // A process with no indices in a dimension owns nothing.
    let e = Datatype::darray(
        4,
        3,
        vec![3],
        vec![Distrib::Cyclic],
        vec![1],
        vec![4],
        Order::C,
        Datatype::Byte,
    )
    .unwrap();
    assert_eq!(ext(&e), vec![]);
    assert_eq!((e.size(), e.extent()), (0, 3));
    // Not distributed: every process owns the whole dimension.
    let n = Datatype::darray(
        2,
        1,
        vec![2, 4],
        vec![Distrib::None, Distrib::Block],
        vec![DARG_DEFAULT; 2],
        vec![1, 2],
        Order::C,
        Datatype::Double,
    )
    .unwrap();
    assert_eq!(ext(&n), vec![(16, 16), (48, 16)]);
}

/// BTIO-like filetype for rank 0 of 4 on a 4³ grid: p = 2 cells of 2³ points,
/// one point = 5 doubles (40 bytes), Fortran order u(5, x, y, z). Cell 0 starts
/// at (0,0,0), cell 1 at (2,2,2) (x = (r mod p + c) mod p, y = (r div p − c) mod p, z = c).
fn btio_filetype() -> Datatype {
    let point = Datatype::Contiguous {
        count: 5,
        inner: b(Datatype::Double),
    };
    let cell = |s: u64| {
        sub(
            &[4, 4, 4],
            &[2, 2, 2],
            &[s, s, s],
            Order::Fortran,
            point.clone(),
        )
    };
    Datatype::Struct {
        fields: vec![(0, 1, cell(0)), (0, 1, cell(2))],
    }
}

const BTIO_TILE: [(i64, u64); 8] = [
    (0, 80),
    (160, 80),
    (640, 80),
    (800, 80),
    (1680, 80),
    (1840, 80),
    (2320, 80),
    (2480, 80),
];

#[test]
fn btio_struct_of_subarrays() {
    let ft = btio_filetype();
    assert_eq!(ext(&ft), BTIO_TILE.to_vec());
    assert_eq!((ft.lb(), ft.extent(), ft.size()), (0, 2560, 640));
}

#[test]
fn view_mid_tile_over_several_tiles_resized() {
    // Resized to two records (5120 bytes), as PnetCDF-BTIO's method 0 resizes to one.
    let ft = Datatype::Resized {
        lb: 0,
        extent: 5120,
        inner: b(btio_filetype()),
    };
    assert_eq!(ft.extent_count(), 8);
    let etype = Datatype::Contiguous {
        count: 5,
        inner: b(Datatype::Double),
    };
    let v = View::new(1000, etype, ft).unwrap();
    // Start at etype 3 = data byte 120: 40 bytes into the second run (160, 80).
    let got: Vec<_> = v.extents(3, 1200).collect();
    let mut want = vec![(200, 40)];
    want.extend(BTIO_TILE[2..].iter().copied());
    want.extend(BTIO_TILE.iter().map(|&(d, l)| (d + 5120, l)));
    want.push((10240, 40));
    let want: Vec<(u64, u64)> = want
        .into_iter()
        .map(|(d, l)| (d as u64 + 1000, l))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got.iter().map(|e| e.1).sum::<u64>(), 1200);
}

#[test]
fn view_merges_across_tiles() {
    // Unresized, tiles are 2560 apart: the last run of tile 0 (2480, 80) abuts the
    // first run of tile 1 (2560, 80), so they merge.
    let etype = Datatype::Contiguous {
        count: 5,
        inner: b(Datatype::Double),
    };
    let v = View::new(0, etype, btio_filetype()).unwrap();
    let got: Vec<_> = v.extents(14, 160).collect();
    assert_eq!(got, vec![(2480, 160)]);
    // Starting exactly at a tile boundary (16 etypes = one tile).
    let got: Vec<_> = v.extents(16, 100).collect();
    assert_eq!(got, vec![(2560, 80), (2720, 20)]);
}

#[test]
fn default_view_is_one_extent() {
    let v = View::bytes();
    assert_eq!(v.extents(100, 50).collect::<Vec<_>>(), vec![(100, 50)]);
    assert_eq!(v.extents(7, 0).count(), 0);
    // A contiguous filetype of doubles behaves the same, offsets in etypes.
    let v = View::new(
        16,
        Datatype::Double,
        Datatype::Contiguous {
            count: 4,
            inner: b(Datatype::Double),
        },
    )
    .unwrap();
    assert_eq!(
        v.extents(3, 1 << 30).collect::<Vec<_>>(),
        vec![(40, 1 << 30)]
    );
}

#[test]
fn view_validation() {
    let e = View::new(
        0,
        Datatype::Double,
        Datatype::Contiguous {
            count: 3,
            inner: b(Datatype::Byte),
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a positive multiple"), "{e}");
    let e = View::new(
        0,
        Datatype::Contiguous {
            count: 0,
            inner: b(Datatype::Byte),
        },
        Datatype::Byte,
    )
    .unwrap_err();
    assert!(e.to_string().contains("etype holds no data"), "{e}");
}

#[test]
fn large_subarray_is_lazy() {
    // 10^6 rows of 8 doubles out of a 1100 x 1100 x 16 array.
    let t = sub(
        &[1100, 1100, 16],
        &[1000, 1000, 8],
        &[10, 20, 4],
        Order::C,
        Datatype::Double,
    );
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut last_end = i64::MIN;
    for (d, l) in t.extents() {
        assert!(d > last_end, "extents must be increasing and not abut");
        last_end = d + l as i64;
        n += 1;
        bytes += l;
    }
    assert_eq!(n, 1_000_000);
    assert_eq!(t.extent_count(), n);
    assert_eq!(bytes, t.size());
    // 10^8 rows: counted structurally, and the first extents come at once.
    let huge = sub(
        &[20_000, 10_000, 16],
        &[10_000, 10_000, 4],
        &[0, 0, 1],
        Order::C,
        Datatype::Double,
    );
    assert_eq!(huge.extent_count(), 100_000_000);
    assert_eq!(
        huge.extents().take(2).collect::<Vec<_>>(),
        vec![(8, 32), (136, 32)]
    );
    // Seeking far into a view over it is O(depth).
    let v = View::new(0, Datatype::Double, huge).unwrap();
    let row = 77_777_777u64;
    let got: Vec<_> = v.extents(row * 4 + 1, 40).collect();
    let at = (row * 16 + 1 + 1) * 8;
    assert_eq!(got, vec![(at, 24), (at + 128 - 8, 16)]);
}

// ---- slow reference: every byte of the type map, in order ----------------

fn ref_bytes(t: &Datatype) -> Vec<i64> {
    match t {
        Datatype::Byte => vec![0],
        Datatype::Double => (0..8).collect(),
        Datatype::Contiguous { count, inner } => rep(
            &ref_bytes(inner),
            (0..*count as i64).map(|i| i * inner.extent() as i64),
        ),
        Datatype::Vector {
            count,
            blocklen,
            stride,
            inner,
        } => {
            let e = inner.extent() as i64;
            let offs = (0..*count as i64)
                .flat_map(move |i| (0..*blocklen as i64).map(move |j| (i * stride + j) * e));
            rep(&ref_bytes(inner), offs)
        }
        Datatype::Hvector {
            count,
            blocklen,
            stride_bytes,
            inner,
        } => {
            let e = inner.extent() as i64;
            let offs = (0..*count as i64)
                .flat_map(move |i| (0..*blocklen as i64).map(move |j| i * stride_bytes + j * e));
            rep(&ref_bytes(inner), offs)
        }
        Datatype::Hindexed { blocks, inner } => {
            let e = inner.extent() as i64;
            rep(
                &ref_bytes(inner),
                blocks
                    .iter()
                    .flat_map(|&(d, n)| (0..n as i64).map(move |j| d + j * e)),
            )
        }
        Datatype::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            inner,
        } => {
            let owned: Vec<Vec<u64>> = (0..sizes.len())
                .map(|d| (starts[d]..starts[d] + subsizes[d]).collect())
                .collect();
            ref_grid(sizes, &owned, *order, inner)
        }
        Datatype::Darray {
            size: _,
            rank,
            gsizes,
            distribs,
            dargs,
            psizes,
            order,
            inner,
        } => {
            let nd = gsizes.len();
            let mut coords = vec![0; nd];
            let mut r = *rank;
            for d in (0..nd).rev() {
                coords[d] = r % psizes[d];
                r /= psizes[d];
            }
            let owned: Vec<Vec<u64>> = (0..nd)
                .map(|d| {
                    let (g, p) = (gsizes[d], psizes[d]);
                    (0..g)
                        .filter(|&i| match distribs[d] {
                            Distrib::None => true,
                            Distrib::Block => {
                                let bs = if dargs[d] == DARG_DEFAULT {
                                    g.div_ceil(p)
                                } else {
                                    dargs[d] as u64
                                };
                                i / bs == coords[d]
                            }
                            Distrib::Cyclic => {
                                let k = if dargs[d] == DARG_DEFAULT {
                                    1
                                } else {
                                    dargs[d] as u64
                                };
                                (i / k) % p == coords[d]
                            }
                        })
                        .collect()
                })
                .collect();
            ref_grid(gsizes, &owned, *order, inner)
        }
        Datatype::Struct { fields } => fields
            .iter()
            .flat_map(|(d, n, ft)| {
                rep(
                    &ref_bytes(ft),
                    (0..*n as i64).map(move |j| d + j * ft.extent() as i64),
                )
            })
            .collect(),
        Datatype::Resized { inner, .. } => ref_bytes(inner),
    }
}

fn rep(inner: &[i64], offs: impl Iterator<Item = i64>) -> Vec<i64> {
    offs.flat_map(|o| inner.iter().map(move |x| x + o))
        .collect()
}

/// All owned index tuples, slowest dimension first, as element offsets.
fn ref_grid(sizes: &[u64], owned: &[Vec<u64>], order: Order, inner: &Datatype) -> Vec<i64> {
    let nd = sizes.len();
    let dims: Vec<usize> = match order {
        Order::C => (0..nd).collect(),
        Order::Fortran => (0..nd).rev().collect(),
    };
    let mut stride = vec![1i64; nd];
    let mut s = 1i64;
    for &d in dims.iter().rev() {
        stride[d] = s;
        s *= sizes[d] as i64;
    }
    let mut offs = vec![0i64];
    for &d in &dims {
        let sd = stride[d];
        offs = offs
            .iter()
            .flat_map(|&o| owned[d].iter().map(move |&i| o + i as i64 * sd))
            .collect();
    }
    let e = inner.extent() as i64;
    rep(&ref_bytes(inner), offs.into_iter().map(|o| o * e))
}

fn merge(bytes: impl Iterator<Item = i64>) -> Vec<(i64, u64)> {
    let mut out: Vec<(i64, u64)> = Vec::new();
    for x in bytes {
        match out.last_mut() {
            Some((d, l)) if *d + *l as i64 == x => *l += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn gen_type(r: &mut Lcg, depth: u32) -> Datatype {
    let leaf = if r.below(2) == 0 {
        Datatype::Byte
    } else {
        Datatype::Double
    };
    if depth == 0 {
        return leaf;
    }
    let inner = Box::new(gen_type(r, depth - 1));
    let order = if r.below(2) == 0 {
        Order::C
    } else {
        Order::Fortran
    };
    match r.below(8) {
        0 => Datatype::Contiguous {
            count: r.below(4),
            inner,
        },
        1 => Datatype::Vector {
            count: r.below(4),
            blocklen: r.below(3),
            stride: r.below(7) as i64 - 2,
            inner,
        },
        2 => Datatype::Hvector {
            count: r.below(4),
            blocklen: 1 + r.below(2),
            stride_bytes: r.below(40) as i64 - 8,
            inner,
        },
        3 => Datatype::Hindexed {
            blocks: (0..r.below(4))
                .map(|_| (r.below(60) as i64, r.below(3)))
                .collect(),
            inner,
        },
        4 => {
            let nd = 1 + r.below(3) as usize;
            let sizes: Vec<u64> = (0..nd).map(|_| 1 + r.below(5)).collect();
            let subsizes: Vec<u64> = sizes.iter().map(|&s| 1 + r.below(s)).collect();
            let starts = sizes
                .iter()
                .zip(&subsizes)
                .map(|(&s, &u)| r.below(s - u + 1))
                .collect();
            Datatype::Subarray {
                sizes,
                subsizes,
                starts,
                order,
                inner,
            }
        }
        5 => {
            let nd = 1 + r.below(3) as usize;
            let psizes: Vec<u64> = (0..nd).map(|_| 1 + r.below(3)).collect();
            let size = psizes.iter().product();
            let gsizes: Vec<u64> = (0..nd).map(|_| 1 + r.below(7)).collect();
            let distribs: Vec<Distrib> = (0..nd)
                .map(|d| {
                    if psizes[d] == 1 && r.below(3) == 0 {
                        Distrib::None
                    } else if r.below(2) == 0 {
                        Distrib::Block
                    } else {
                        Distrib::Cyclic
                    }
                })
                .collect();
            let dargs = (0..nd)
                .map(|d| match (distribs[d], r.below(2)) {
                    (_, 0) | (Distrib::None, _) => DARG_DEFAULT,
                    (Distrib::Block, _) => (gsizes[d].div_ceil(psizes[d]) + r.below(2)) as i64,
                    (Distrib::Cyclic, _) => 1 + r.below(3) as i64,
                })
                .collect();
            Datatype::Darray {
                size,
                rank: r.below(size),
                gsizes,
                distribs,
                dargs,
                psizes,
                order,
                inner,
            }
        }
        6 => Datatype::Struct {
            fields: (0..1 + r.below(3))
                .map(|_| (r.below(50) as i64, r.below(3), gen_type(r, depth - 1)))
                .collect(),
        },
        _ => Datatype::Resized {
            lb: r.below(8) as i64 - 4,
            extent: r.below(64),
            inner,
        },
    }
}

#[test]
fn generated_types_match_the_reference() {
    let mut r = Lcg(42);
    let mut nonempty = 0;
    for case in 0..3000 {
        let t = gen_type(&mut r, 1 + (case % 3));
        t.validate()
            .unwrap_or_else(|e| panic!("generator made an invalid type {t:?}: {e}"));
        let want = merge(ref_bytes(&t).into_iter());
        assert_eq!(ext(&t), want, "case {case}: {t:?}");
        nonempty += usize::from(!want.is_empty());
        // As a filetype with non-negative data: tile it and read a window.
        let min = want.iter().map(|e| e.0).min().unwrap_or(0);
        if t.size() == 0 || t.extent() == 0 || min < 0 {
            continue;
        }
        let v = View {
            disp: r.below(5),
            etype: Datatype::Byte,
            filetype: t.clone(),
        };
        let (off, len) = (r.below(3 * t.size()), 1 + r.below(3 * t.size()));
        let tile: Vec<i64> = ref_bytes(&t);
        let (te, vd) = (t.extent() as i64, v.disp as i64);
        let stream = (0..).flat_map(|k| tile.iter().map(move |x| x + k * te + vd));
        let want: Vec<(u64, u64)> = merge(stream.skip(off as usize).take(len as usize))
            .into_iter()
            .map(|(d, l)| (d as u64, l))
            .collect();
        assert_eq!(
            v.extents(off, len).collect::<Vec<_>>(),
            want,
            "case {case}: view {v:?} at {off}+{len}"
        );
    }
    assert!(
        nonempty > 1500,
        "generator too often makes empty types: {nonempty}"
    );
}
