use super::super::decomp::Decomposition;
use super::verify::{Norms, rms};
use super::*;

/// All ranks of a run in one process: NPB's `adi` with the messages handed
/// over directly.
struct AllRanks<T> {
    decomp: Decomposition,
    ranks: Vec<BtRank<T>>,
}

impl<T: Real> AllRanks<T> {
    fn new(n: u64, nprocs: usize, dt: f64) -> AllRanks<T> {
        let decomp = Decomposition::new([n; 3], nprocs).unwrap();
        let p = decomp.p as usize;
        let ranks = (0..nprocs)
            .map(|r| BtRank::new([n; 3], dt, &decomp.cells(r), p))
            .collect();
        AllRanks { decomp, ranks }
    }

    fn copy_faces(&mut self) {
        let n = self.ranks.len();
        if n > 1 {
            for dir in 0..3 {
                for forward in [true, false] {
                    let msgs: Vec<Vec<f64>> = self
                        .ranks
                        .iter()
                        .map(|r| r.pack_faces(dir, forward))
                        .collect();
                    for (r, msg) in msgs.into_iter().enumerate() {
                        let to = if forward {
                            self.decomp.successor(r, dir)
                        } else {
                            self.decomp.predecessor(r, dir)
                        };
                        self.ranks[to].unpack_faces(dir, forward, &msg);
                    }
                }
            }
        }
        for r in &mut self.ranks {
            r.compute_rhs();
        }
    }

    fn adi(&mut self) {
        self.copy_faces();
        let n = self.ranks.len();
        let p = self.decomp.p as usize;
        for dir in 0..3 {
            let mut inbox = vec![Vec::new(); n];
            for stage in 0..p {
                let outs: Vec<Vec<f64>> = (0..n)
                    .map(|r| {
                        let c = self.ranks[r].slice(dir, stage);
                        self.ranks[r].solve_cell(dir, c, &inbox[r])
                    })
                    .collect();
                for (r, out) in outs.into_iter().enumerate() {
                    inbox[self.decomp.successor(r, dir)] = out;
                }
            }
            for stage in (0..p).rev() {
                let outs: Vec<Vec<f64>> = (0..n)
                    .map(|r| {
                        let c = self.ranks[r].slice(dir, stage);
                        self.ranks[r].backsubstitute_cell(dir, c, &inbox[r])
                    })
                    .collect();
                for (r, out) in outs.into_iter().enumerate() {
                    inbox[self.decomp.predecessor(r, dir)] = out;
                }
            }
        }
        for r in &mut self.ranks {
            r.add();
        }
    }

    /// NPB's `bt.f` without I/O: warm-up step, initialize, `niter` steps, verify.
    fn run(&mut self, niter: u64) -> Norms {
        self.adi();
        for r in &mut self.ranks {
            r.initialize();
        }
        for _ in 0..niter {
            self.adi();
        }
        self.norms(niter)
    }

    fn norms(&mut self, niter: u64) -> Norms {
        let grid = [self.ranks[0].grid[0] as u64; 3];
        let sum = |v: Vec<[f64; 5]>| {
            v.into_iter().fold([0.0; 5], |mut a, s| {
                add5(&mut a, s);
                a
            })
        };
        let xce = rms(
            sum(self.ranks.iter().map(|r| r.error_sums()).collect()),
            grid,
        );
        self.copy_faces();
        let dt = self.ranks[0].consts.dt.to_f64();
        let xcr = rms(sum(self.ranks.iter().map(|r| r.rhs_sums()).collect()), grid).map(|v| v / dt);
        Norms::check(grid, niter, dt, xcr, xce, false)
    }
}

#[test]
fn class_s_verifies_on_1_4_and_9_ranks() {
    for nprocs in [1, 4, 9] {
        let mut all: AllRanks<f64> = AllRanks::new(12, nprocs, 0.01);
        let norms = all.run(60);
        assert!(norms.verified, "{nprocs} ranks:\n{}", norms.npb_text());
        assert_eq!(norms.class.as_deref(), Some("S"));
    }
}

#[test]
fn a_perturbed_solution_fails_verification() {
    let mut all: AllRanks<f64> = AllRanks::new(12, 4, 0.01);
    all.run(60);
    // One component of one interior point of one rank, by one part in 10⁶.
    let u = all.ranks[3].cells[1].u[all.ranks[3].cells[1].at(2, 2, 2)][4];
    all.ranks[3].perturb(4, u * 1e-6);
    let norms = all.norms(60);
    assert!(!norms.verified, "{}", norms.npb_text());
    assert!(norms.npb_text().contains(" FAILURE: "));
    // The same run with the wrong step count is not class S at all.
    let mut all: AllRanks<f64> = AllRanks::new(12, 1, 0.01);
    let norms = all.run(59);
    assert_eq!((norms.class, norms.verified), (None, false));
}

mod counted {
    use std::cell::Cell as StdCell;
    use std::ops::{Add, Div, Mul, Neg, Sub};

    use super::Real;

    thread_local! {
        static FLOPS: StdCell<u64> = const { StdCell::new(0) };
    }

    /// An `f64` that counts every addition, subtraction, multiplication and division.
    #[derive(Clone, Copy, Debug)]
    pub struct Counted(pub f64);

    fn tick() {
        FLOPS.with(|f| f.set(f.get() + 1));
    }

    /// Operations counted since the last call.
    pub fn take() -> u64 {
        FLOPS.with(|f| f.replace(0))
    }

    macro_rules! counted_op {
        ($tr:ident, $f:ident, $op:tt) => {
            impl $tr for Counted {
                type Output = Counted;
                fn $f(self, o: Counted) -> Counted {
                    tick();
                    Counted(self.0 $op o.0)
                }
            }
        };
    }
    counted_op!(Add, add, +);
    counted_op!(Sub, sub, -);
    counted_op!(Mul, mul, *);
    counted_op!(Div, div, /);

    impl Neg for Counted {
        type Output = Counted;
        fn neg(self) -> Counted {
            Counted(-self.0)
        }
    }

    impl Real for Counted {
        fn lit(v: f64) -> Counted {
            Counted(v)
        }
        fn to_f64(self) -> f64 {
            self.0
        }
    }
}

/// Every part of a step costs what [`flops`] says, on every cell of every rank,
/// for even and uneven partitions.
#[test]
fn flop_counts_are_the_operations_done() {
    use counted::{Counted, take};
    for (n, nprocs) in [(12u64, 1usize), (12, 4), (13, 4), (12, 9), (14, 9), (5, 1)] {
        let mut all: AllRanks<Counted> = AllRanks::new(n, nprocs, 0.01);
        let p = all.decomp.p;
        for (rank, r) in all.ranks.iter_mut().enumerate() {
            let shapes: Vec<flops::Shape> = all
                .decomp
                .cells(rank)
                .iter()
                .map(|c| flops::Shape::of(c, p))
                .collect();
            let mut total = 0;
            for (c, shape) in shapes.iter().enumerate() {
                take();
                r.cells[c].compute_rhs(&r.consts);
                let counted = take();
                assert_eq!(
                    counted as f64,
                    flops::rhs(shape),
                    "rhs, n {n}, rank {rank}, cell {c}"
                );
                total += counted;
                for dir in 0..3 {
                    let len = r.solve_info_len(dir, c);
                    r.solve_cell(dir, c, &vec![1.0; len]);
                    let blen = r.backsub_info_len(dir, c);
                    r.backsubstitute_cell(dir, c, &vec![0.0; blen]);
                    let counted = take();
                    assert_eq!(
                        counted as f64,
                        flops::solve(shape, dir),
                        "solve {dir}, n {n}, rank {rank}, cell {c}"
                    );
                    total += counted;
                }
            }
            take();
            r.add();
            total += take();
            assert_eq!(total as f64, flops::step(&shapes), "n {n}, rank {rank}");
        }
    }
}

/// The solver's work per step is NPB's operation count to within 3 % on the
/// classes (NPB's formula is a fit to its own count).
#[test]
fn the_step_count_is_npbs() {
    for (n, nprocs) in [
        (12u64, 1usize),
        (24, 1),
        (24, 4),
        (64, 1),
        (64, 4),
        (64, 16),
        (102, 9),
        (162, 1),
        (162, 16),
    ] {
        let d = Decomposition::new([n; 3], nprocs).unwrap();
        let ours: f64 = (0..nprocs)
            .map(|r| {
                let shapes: Vec<_> = d
                    .cells(r)
                    .iter()
                    .map(|c| flops::Shape::of(c, d.p))
                    .collect();
                flops::step(&shapes)
            })
            .sum();
        let npb = flops::npb_step([n; 3]);
        eprintln!("n {n} np {nprocs}: ours/npb {:.4}", ours / npb);
        assert!(
            (ours / npb - 1.0).abs() < 0.03,
            "n {n}: {ours} vs NPB's {npb}"
        );
    }
}

/// Norms print in Fortran's `E20.13`, a diverged run's too (a grid whose
/// time step is too long for it blows up to NaN).
#[test]
fn norms_print_as_fortran_does() {
    use super::verify::fortran_e;
    assert_eq!(fortran_e(0.0), " 0.0000000000000E+00");
    assert_eq!(fortran_e(1.0), " 0.1000000000000E+01");
    assert_eq!(fortran_e(-2.5e-3), "-0.2500000000000E-02");
    assert_eq!(fortran_e(f64::NAN), "                 NaN");
    assert_eq!(fortran_e(f64::INFINITY), "            Infinity");
    assert_eq!(fortran_e(f64::NEG_INFINITY), "           -Infinity");
    // A grid with no reference values whose solution blew up says so.
    let diverged = Norms::check([20; 3], 7, 0.01, [f64::NAN; 5], [1.0; 5], true);
    let text = diverged.npb_text();
    assert!(text.contains("                 NaN"), "{text}");
    assert!(text.contains(" The solution diverged"), "{text}");
    let finite = Norms::check([20; 3], 7, 0.01, [1.0; 5], [1.0; 5], true);
    assert!(!finite.npb_text().contains("diverged"));
}
