//! [`Comm`]: a communicator with the few collectives a benchmark driver needs,
//! over rsmpi's safe API.

use mpi::collective::SystemOperation;
use mpi::ffi;
use mpi::point_to_point as p2p;
use mpi::raw::AsRaw;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::*;

use piotwin_types::ReduceOp;

use crate::error::{RealResult, to_int};

/// A communicator: `MPI_COMM_WORLD`, `MPI_COMM_SELF` or one made by [`Comm::split`]
/// (freed with `MPI_Comm_free` on drop). Create one only after [`crate::init`].
pub struct Comm {
    inner: SimpleCommunicator,
}

impl Comm {
    /// `MPI_COMM_WORLD`.
    pub fn world() -> Comm {
        Comm {
            inner: SimpleCommunicator::world(),
        }
    }

    /// `MPI_COMM_SELF`: this process alone (file per process).
    pub fn self_comm() -> Comm {
        Comm {
            inner: SimpleCommunicator::self_comm(),
        }
    }

    /// This process's rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.inner.rank() as usize
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        self.inner.size() as usize
    }

    pub(crate) fn raw(&self) -> ffi::MPI_Comm {
        self.inner.as_raw()
    }

    /// `MPI_Barrier`.
    pub fn barrier(&self) {
        self.inner.barrier();
    }

    /// `MPI_Bcast` of one `u64` from `root`.
    pub fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        let mut v = value;
        self.inner
            .process_at_rank(root as i32)
            .broadcast_into(&mut v);
        v
    }

    /// `MPI_Allreduce` of one `f64`.
    pub fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        let mut out = 0.0f64;
        self.inner.all_reduce_into(&value, &mut out, system_op(op));
        out
    }

    /// `MPI_Allgather` of one `f64`: every rank's value, indexed by rank.
    pub fn allgather_f64(&self, value: f64) -> Vec<f64> {
        let mut out = vec![0.0f64; self.size()];
        self.inner.all_gather_into(&value, &mut out[..]);
        out
    }

    /// `MPI_Sendrecv_replace` of bytes: sends `buf` to `dest` and replaces it with
    /// what `source` sends (which must be the same length).
    ///
    /// A buffer beyond MPI's `int` count goes as consecutive messages of at
    /// most [`MESSAGE_CHUNK`] bytes (MPI keeps their order between a pair of
    /// processes); both sides pass the same length, so they cut it alike.
    pub fn sendrecv_replace(&self, buf: &mut [u8], dest: usize, source: usize) -> RealResult<()> {
        for chunk in buf.chunks_mut(MESSAGE_CHUNK) {
            to_int(
                chunk.len() as u64,
                "buffer length",
                "MPI_Sendrecv_replace",
                None,
            )?;
            p2p::send_receive_replace_into(
                chunk,
                &self.inner.process_at_rank(dest as i32),
                &self.inner.process_at_rank(source as i32),
            );
        }
        Ok(())
    }

    /// `MPI_Send` of `buf` to `dest`, then `MPI_Recv` on the other side with
    /// [`Comm::recv`]: a buffer beyond MPI's `int` count goes as consecutive
    /// messages of at most [`MESSAGE_CHUNK`] bytes, which `recv` of the same
    /// length takes alike.
    pub fn send(&self, buf: &[u8], dest: usize) {
        let to = self.inner.process_at_rank(dest as i32);
        for chunk in buf.chunks(MESSAGE_CHUNK) {
            to.send(chunk);
        }
    }

    /// `MPI_Recv` from `source` into `buf` (see [`Comm::send`]).
    pub fn recv(&self, buf: &mut [u8], source: usize) {
        let from = self.inner.process_at_rank(source as i32);
        for chunk in buf.chunks_mut(MESSAGE_CHUNK) {
            from.receive_into(chunk);
        }
    }

    /// `MPI_Send` of a message of bytes to `dest` with `tag` (small messages:
    /// a result line, a list of work; under MPI's `int` count).
    pub fn send_bytes(&self, bytes: &[u8], dest: usize, tag: i32) {
        self.inner
            .process_at_rank(dest as i32)
            .send_with_tag(bytes, tag);
    }

    /// A message of bytes with `tag` from any process, if one has arrived
    /// (`MPI_Improbe`, then `MPI_Mrecv`): its source and its bytes.
    pub fn try_receive_bytes(&self, tag: i32) -> Option<(usize, Vec<u8>)> {
        let (message, status) = self
            .inner
            .any_process()
            .immediate_matched_probe_with_tag(tag)?;
        let mut bytes = vec![0u8; status.count(u8::equivalent_datatype()) as usize];
        message.matched_receive_into(&mut bytes[..]);
        Some((status.source_rank() as usize, bytes))
    }

    /// `MPI_Gather` of every process's byte count, then `MPI_Gatherv` of the
    /// bytes: on `root`, every process's bytes by rank; `None` elsewhere. Each
    /// process's bytes must stay under MPI's `int` count (2 GiB).
    pub fn gather_bytes(&self, bytes: &[u8], root: usize) -> RealResult<Option<Vec<Vec<u8>>>> {
        use mpi::datatype::PartitionMut;
        let n = to_int(bytes.len() as u64, "byte count", "MPI_Gatherv", None)?;
        let at = self.inner.process_at_rank(root as i32);
        if self.rank() != root {
            at.gather_into(&n);
            at.gather_varcount_into(bytes);
            return Ok(None);
        }
        let mut counts = vec![0i32; self.size()];
        at.gather_into_root(&n, &mut counts[..]);
        let displs: Vec<i32> = counts
            .iter()
            .scan(0i32, |next, &c| {
                let d = *next;
                *next += c;
                Some(d)
            })
            .collect();
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut parts = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            at.gather_varcount_into_root(bytes, &mut parts);
        }
        let mut out = Vec::with_capacity(counts.len());
        let mut rest = &all[..];
        for &c in &counts {
            let (mine, tail) = rest.split_at(c as usize);
            out.push(mine.to_vec());
            rest = tail;
        }
        Ok(Some(out))
    }

    /// `MPI_Bcast` of bytes from `root` (the length first): every rank returns
    /// `root`'s bytes.
    pub fn bcast_bytes(&self, bytes: Vec<u8>, root: usize) -> Vec<u8> {
        let len = self.bcast_u64(bytes.len() as u64, root) as usize;
        let mut buf = if self.rank() == root {
            bytes
        } else {
            vec![0u8; len]
        };
        self.inner
            .process_at_rank(root as i32)
            .broadcast_into(&mut buf[..]);
        buf
    }

    /// `MPI_Sendrecv`: `send` to `dest` and `recv.len()` bytes from `source` into
    /// `recv` (each at most MPI's `int` count of bytes).
    pub fn sendrecv(
        &self,
        send: &[u8],
        dest: usize,
        recv: &mut [u8],
        source: usize,
    ) -> RealResult<()> {
        to_int(send.len() as u64, "send length", "MPI_Sendrecv", None)?;
        to_int(recv.len() as u64, "receive length", "MPI_Sendrecv", None)?;
        p2p::send_receive_into(
            send,
            &self.inner.process_at_rank(dest as i32),
            recv,
            &self.inner.process_at_rank(source as i32),
        );
        Ok(())
    }

    /// Nonblocking point-to-point: an `MPI_Irecv` for each `(source, buffer)` of
    /// `recvs`, then an `MPI_Isend` for each `(dest, buffer)` of `sends`, then one
    /// `MPI_Waitall` (each buffer at most MPI's `int` count of bytes).
    pub fn exchange(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &mut [(usize, &mut [u8])],
    ) -> RealResult<()> {
        for (_, b) in sends {
            to_int(b.len() as u64, "send length", "MPI_Isend", None)?;
        }
        for (_, b) in recvs.iter() {
            to_int(b.len() as u64, "receive length", "MPI_Irecv", None)?;
        }
        let total = sends.len() + recvs.len();
        mpi::request::multiple_scope(total, |scope, all| {
            for (source, buf) in recvs.iter_mut() {
                all.add(
                    self.inner
                        .process_at_rank(*source as i32)
                        .immediate_receive_into(scope, &mut **buf),
                );
            }
            for (dest, buf) in sends {
                all.add(
                    self.inner
                        .process_at_rank(*dest as i32)
                        .immediate_send(scope, *buf),
                );
            }
            let mut done = Vec::with_capacity(total);
            all.wait_all(&mut done);
        });
        Ok(())
    }

    /// `MPI_Alltoallv` of bytes: for each `(r, bytes)` of `sends`, that many bytes
    /// of `send` to rank `r`, and for each of `recvs` from rank `r` into `recv`;
    /// both ascending by rank and packed in that order, ranks not listed move
    /// nothing. MPI takes a count and a displacement for every rank: built here.
    pub fn alltoallv(
        &self,
        send: &[u8],
        sends: &[(usize, usize)],
        recv: &mut [u8],
        recvs: &[(usize, usize)],
    ) -> RealResult<()> {
        use mpi::datatype::{Partition, PartitionMut};
        let size = self.size();
        let ints = |counts: &[(usize, usize)], what: &str| -> RealResult<(Vec<i32>, Vec<i32>)> {
            assert!(
                counts.windows(2).all(|w| w[0].0 < w[1].0) && counts.iter().all(|&(r, _)| r < size),
                "alltoallv: counts ascending by rank, ranks below {size}"
            );
            let (mut c, mut d) = (vec![0; size], vec![0; size]);
            let mut at = 0u64;
            for &(r, n) in counts {
                c[r] = to_int(n as u64, what, "MPI_Alltoallv", None)?;
                d[r] = to_int(at, "displacement", "MPI_Alltoallv", None)?;
                at += n as u64;
            }
            Ok((c, d))
        };
        let (sc, sd) = ints(sends, "send count")?;
        let (rc, rd) = ints(recvs, "receive count")?;
        let parts = Partition::new(send, &sc[..], &sd[..]);
        let mut into = PartitionMut::new(recv, &rc[..], &rd[..]);
        self.inner.all_to_all_varcount_into(&parts, &mut into);
        Ok(())
    }

    /// `MPI_Comm_split`: the processes with the same `Some(color)`, ordered by
    /// `key` then old rank; `None` where this process passes no color.
    pub fn split(&self, color: Option<usize>, key: usize) -> RealResult<Option<Comm>> {
        let color = match color {
            Some(c) => Color::with_value(to_int(c as u64, "color", "MPI_Comm_split", None)?),
            None => Color::undefined(),
        };
        let key = to_int(key as u64, "key", "MPI_Comm_split", None)?;
        Ok(self
            .inner
            .split_by_color_with_key(color, key)
            .map(|inner| Comm { inner }))
    }
}

/// The largest message [`Comm::sendrecv_replace`] sends at once: 1 GiB, inside
/// MPI's `int` count of bytes.
const MESSAGE_CHUNK: usize = 1 << 30;

fn system_op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Min => SystemOperation::min(),
        ReduceOp::Max => SystemOperation::max(),
    }
}
