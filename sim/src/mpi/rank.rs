//! A rank's handle on a communicator and what every layer of it uses:
//! the clock, waits, CPU work.

use std::cell::Cell;
use std::rc::Rc;

use piotwin_types::KernelKind;

use crate::engine::Signal;
use crate::ff::Repetitions;
use crate::mpi::Sim;
use crate::mpi::Wait;
use crate::mpi::comm::Comm;
use crate::mpi::cpu;
use crate::scenario::MpiIo;
use crate::storage::node_flow;
/// A rank's handle on a communicator (`MPI_COMM_WORLD` from [`Twin::rank`], others from [`Rank::split`]).
pub struct Rank {
    pub(crate) sim: Rc<Sim>,
    pub(crate) world_rank: usize,
    pub(crate) comm: Rc<Comm>,
    pub(crate) rank: usize,
    pub(crate) seq: Cell<u64>,
    /// Stop-request checkpoints this rank has passed on its communicator.
    pub(crate) checks: Cell<u64>,
    /// Its repetitions, for the fast-forward.
    pub(crate) reps: Repetitions,
}

impl Rank {
    pub(crate) fn new(sim: Rc<Sim>, world_rank: usize, comm: Rc<Comm>, rank: usize) -> Rank {
        Rank {
            sim,
            world_rank,
            comm,
            rank,
            seq: Cell::new(0),
            checks: Cell::new(0),
            reps: Repetitions::default(),
        }
    }

    /// This rank's number in its communicator.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Size of the communicator.
    pub fn size(&self) -> usize {
        self.comm.members.len()
    }

    /// This rank's number in the world.
    pub fn world_rank(&self) -> usize {
        self.world_rank
    }

    /// Virtual time in seconds.
    pub fn now(&self) -> f64 {
        self.sim.engine.borrow().now()
    }

    pub(crate) async fn wait(&self, s: &Signal, why: Wait) {
        if s.is_fired() {
            return;
        }
        self.sim.model.borrow_mut().waiting[self.world_rank] = why;
        s.wait().await;
        self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Running;
    }

    pub(crate) async fn until(&self, at: f64, why: Wait) {
        let s = Signal::new();
        self.sim.engine.borrow_mut().fire_at(at, s.clone());
        self.wait(&s, why).await;
    }

    /// Waits `seconds` of virtual time.
    pub async fn sleep(&self, seconds: f64) {
        let at = self.now() + seconds.max(0.0);
        self.until(at, Wait::Delay).await;
    }

    /// Computes `amount` of `kind` work (bytes for memcpy, flops otherwise) at the
    /// node's per-core rate for that kind (sharing the cores on an oversubscribed node).
    pub async fn compute(&self, kind: KernelKind, amount: f64) {
        let (t, shared) = {
            let m = self.sim.model.borrow();
            (
                m.platform.compute_time(self.world_rank, kind, amount),
                m.platform.cpu_path(self.world_rank),
            )
        };
        if t == 0.0 {
            // Free work (a kind the scenario gives no rate for) takes no turn.
            return;
        }
        match shared {
            None => self.sleep(t).await,
            Some(path) => {
                self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Delay;
                node_flow(&self.sim, self.world_rank, path, t.max(0.0)).await;
                self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Running;
            }
        }
    }

    /// Charges `cost(mpiio costs)` seconds of CPU work to this rank (nothing when 0).
    pub(crate) async fn call_cost(&self, cost: impl Fn(&MpiIo) -> f64) {
        let t = cost(&self.sim.model.borrow().mpiio);
        self.cpu_work(t).await;
    }

    /// Charges `seconds` of CPU work to this rank (nothing when 0), waiting
    /// as a delay meanwhile.
    pub(crate) async fn cpu_work(&self, seconds: f64) {
        if seconds > 0.0 {
            self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Delay;
            cpu(&self.sim, self.world_rank, seconds).await;
            self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Running;
        }
    }
}
