//! BT's time step (`adi`) through [`IoCtx`]: the computation of [`bt`] with its
//! messages, written once for both modes.
//!
//! Every piece of arithmetic is an [`IoCtx::compute`] of [`KernelKind::BtStep`]
//! costed by its counted flops ([`bt::flops`]); packing and unpacking
//! messages is a memory copy. Real mode runs the solver inside those calls on
//! the rank's [`BtRank`] (allocated in [`Solver::setup`], never in the twin);
//! the twin advances the rank's clock by the modelled cost. Messages are
//! NPB's: `copy_faces` sends six face messages at once (`MPI_Isend`/`Irecv`,
//! waited together), and each line sweep is a pipeline over the `p` stages in
//! which stage `s` receives from the predecessor while the result of stage
//! `s − 1` goes to the successor (NPB posts the receive, waits for the previous
//! send, then solves).

use std::cell::RefCell;

use crate::ctx::{IoBuf, IoCtx, Kernel, KernelKind};

use super::bt::{self, BtRank, flops::Shape};
use super::decomp::Decomposition;

/// Bytes of `n` doubles.
fn bytes(n: usize) -> usize {
    8 * n
}

/// Doubles into a buffer (real mode; nothing in the twin).
fn put<B: IoBuf>(buf: &mut B, values: &[f64]) {
    if let Some(out) = buf.bytes_mut() {
        for (chunk, v) in out.chunks_exact_mut(8).zip(values) {
            chunk.copy_from_slice(&v.to_ne_bytes());
        }
    }
}

/// Doubles out of a buffer (empty in the twin).
fn get<B: IoBuf>(buf: &B) -> Vec<f64> {
    buf.bytes()
        .map(|b| {
            b.chunks_exact(8)
                .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
        .unwrap_or_default()
}

/// Points of a cell's face across `dir`: the points of a sweep message.
fn face_points(s: &Shape, dir: usize) -> usize {
    let (a, b) = bt::others(dir);
    (s.size[a] * s.size[b]) as usize
}

fn bt_kernel(flops: f64) -> Kernel {
    Kernel {
        kind: KernelKind::BtStep,
        amount: flops,
    }
}

/// One face message of `copy_faces`.
struct Face<B> {
    dir: usize,
    forward: bool,
    send: B,
    dest: usize,
    recv: B,
    source: usize,
}

/// A rank's BT solver and the buffers of its messages.
pub struct Solver<B> {
    /// The solver's state: real mode only.
    state: RefCell<Option<BtRank>>,
    dt: f64,
    decomp: Decomposition,
    rank: usize,
    shapes: Vec<Shape>,
    /// `slices[dir][stage]`: the cell at that stage of the sweep along `dir`.
    slices: [Vec<usize>; 3],
    faces: Vec<Face<B>>,
    /// Per direction: the send and the receive buffer of the sweeps.
    sweep: Vec<(B, B)>,
    successor: [usize; 3],
    predecessor: [usize; 3],
}

impl<B: IoBuf> Solver<B> {
    /// The solver of `ctx`'s rank in `decomp` with time step `dt` (buffers
    /// only: the state comes with [`Solver::setup`]).
    pub fn new<C: IoCtx<Buf = B>>(ctx: &C, decomp: &Decomposition, dt: f64) -> Solver<B> {
        let rank = ctx.rank();
        let cells = decomp.cells(rank);
        let p = decomp.p;
        let shapes: Vec<Shape> = cells.iter().map(|c| Shape::of(c, p)).collect();
        let slices = std::array::from_fn(|dir| {
            (0..p)
                .map(|stage| {
                    cells
                        .iter()
                        .position(|c| c.coord[dir] == stage)
                        .expect("one cell per slab")
                })
                .collect()
        });
        let successor = std::array::from_fn(|d| decomp.successor(rank, d));
        let predecessor = std::array::from_fn(|d| decomp.predecessor(rank, d));
        let mut faces = Vec::new();
        if p > 1 {
            for dir in 0..3 {
                for forward in [true, false] {
                    let (dest, source) = if forward {
                        (successor[dir], predecessor[dir])
                    } else {
                        (predecessor[dir], successor[dir])
                    };
                    faces.push(Face {
                        dir,
                        forward,
                        send: ctx.alloc(decomp.face_bytes(rank, dir, forward) as usize),
                        dest,
                        // What comes is what the neighbour sends this way.
                        recv: ctx.alloc(decomp.face_bytes(source, dir, forward) as usize),
                        source,
                    });
                }
            }
        }
        let sweep = (0..3)
            .map(|dir| {
                let largest = shapes
                    .iter()
                    .map(|s| face_points(s, dir))
                    .max()
                    .unwrap_or(0);
                let len = bytes(30 * largest);
                (ctx.alloc(len), ctx.alloc(len))
            })
            .collect();
        Solver {
            state: RefCell::new(None),
            dt,
            decomp: decomp.clone(),
            rank,
            shapes,
            slices,
            faces,
            sweep,
            successor,
            predecessor,
        }
    }

    /// Bytes of the solver's arrays on this rank (46 doubles per point with
    /// the ghost planes).
    fn footprint(&self) -> u64 {
        let per_point = 8 * (5 * 3 + 25 + 6);
        self.shapes
            .iter()
            .map(|s| s.size.iter().map(|n| n + 4).product::<u64>() * per_point)
            .sum()
    }

    /// Allocate and set up the state as NPB does before its steps
    /// (`initialize`, `lhsinit`, `exact_rhs`).
    pub async fn setup<C: IoCtx<Buf = B>>(&self, ctx: &C) {
        let cells = self.decomp.cells(self.rank);
        let p = self.decomp.p as usize;
        ctx.compute(Kernel::memcpy(self.footprint()), || {
            *self.state.borrow_mut() = Some(BtRank::new(self.decomp.grid, self.dt, &cells, p));
        })
        .await;
    }

    /// NPB's second `initialize`, after the untimed warm-up step.
    pub async fn initialize<C: IoCtx<Buf = B>>(&self, ctx: &C) {
        ctx.compute(Kernel::memcpy(self.footprint()), || {
            if let Some(s) = self.state.borrow_mut().as_mut() {
                s.initialize();
            }
        })
        .await;
    }

    /// The state, where real mode has one.
    pub fn state(&self) -> std::cell::Ref<'_, Option<BtRank>> {
        self.state.borrow()
    }

    /// NPB's `copy_faces` then `compute_rhs`.
    pub async fn copy_faces<C: IoCtx<Buf = B>>(&mut self, ctx: &C) {
        let state = &self.state;
        if !self.faces.is_empty() {
            for f in &mut self.faces {
                let len = f.send.len() as u64;
                ctx.compute(Kernel::memcpy(len), || {
                    if let Some(s) = state.borrow().as_ref() {
                        put(&mut f.send, &s.pack_faces(f.dir, f.forward));
                    }
                })
                .await;
            }
            let mut sends = Vec::with_capacity(self.faces.len());
            let mut recvs = Vec::with_capacity(self.faces.len());
            for f in self.faces.iter_mut() {
                sends.push((f.dest, &f.send));
                recvs.push((f.source, &mut f.recv));
            }
            ctx.exchange(&sends, &mut recvs).await;
            for f in &self.faces {
                ctx.compute(Kernel::memcpy(f.recv.len() as u64), || {
                    if let Some(s) = state.borrow_mut().as_mut() {
                        s.unpack_faces(f.dir, f.forward, &get(&f.recv));
                    }
                })
                .await;
            }
        }
        let flops: f64 = self.shapes.iter().map(bt::flops::rhs).sum();
        ctx.compute(bt_kernel(flops), || {
            if let Some(s) = state.borrow_mut().as_mut() {
                s.compute_rhs();
            }
        })
        .await;
    }

    /// One sweep along `dir`: forward elimination through the stages, then
    /// back substitution back through them.
    async fn sweep<C: IoCtx<Buf = B>>(&mut self, ctx: &C, dir: usize) {
        let p = self.slices[dir].len();
        let state = &self.state;
        let (out, inb) = &mut self.sweep[dir];
        let (succ, pred) = (self.successor[dir], self.predecessor[dir]);
        let face = |c: usize| face_points(&self.shapes[c], dir);
        for stage in 0..p {
            let c = self.slices[dir][stage];
            if stage > 0 {
                out.set_len(bytes(30 * face(self.slices[dir][stage - 1])));
                inb.set_len(bytes(30 * face(c)));
                ctx.sendrecv(out, succ, inb, pred).await;
            }
            let flops = bt::flops::solve_forward(&self.shapes[c], dir);
            ctx.compute(bt_kernel(flops), || {
                if let Some(s) = state.borrow_mut().as_mut() {
                    let incoming = if stage > 0 { get(inb) } else { Vec::new() };
                    let msg = s.solve_cell(dir, c, &incoming);
                    if stage + 1 < p {
                        out.set_len(bytes(msg.len()));
                        put(out, &msg);
                    }
                }
            })
            .await;
        }
        for stage in (0..p).rev() {
            let c = self.slices[dir][stage];
            if stage + 1 < p {
                out.set_len(bytes(5 * face(self.slices[dir][stage + 1])));
                inb.set_len(bytes(5 * face(c)));
                ctx.sendrecv(out, pred, inb, succ).await;
            }
            let flops = bt::flops::solve_backward(&self.shapes[c], dir);
            ctx.compute(bt_kernel(flops), || {
                if let Some(s) = state.borrow_mut().as_mut() {
                    let incoming = if stage + 1 < p { get(inb) } else { Vec::new() };
                    let msg = s.backsubstitute_cell(dir, c, &incoming);
                    if stage > 0 {
                        out.set_len(bytes(msg.len()));
                        put(out, &msg);
                    }
                }
            })
            .await;
        }
    }

    /// One time step: NPB's `adi`.
    pub async fn adi<C: IoCtx<Buf = B>>(&mut self, ctx: &C) {
        self.copy_faces(ctx).await;
        for dir in 0..3 {
            self.sweep(ctx, dir).await;
        }
        let flops: f64 = self.shapes.iter().map(bt::flops::add).sum();
        ctx.compute(bt_kernel(flops), || {
            if let Some(s) = self.state.borrow_mut().as_mut() {
                s.add();
            }
        })
        .await;
    }
}
