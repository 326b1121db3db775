//! A one-rank, in-memory back end for tests: files are byte vectors, views are
//! applied through [`View::extents`], and time is a fake clock. It lets a
//! benchmark's own logic (offsets, views, repetition counts, layouts, data
//! checks) be tested without MPI or the twin. Test code only.
//!
//! The clock moves by `xfer_cost` per data-path call and by `wtime_tick` per
//! `wtime` reading, so time-driven loops give counts computable by hand.
//! Two faults can be injected: a byte of a file flipped when it is opened for
//! reading (a corrupted file) and the first byte of every read buffer flipped (a
//! corrupted transfer).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use piotwin_types::{SEQUENTIAL_MARKERS, SequentialPosition};

use crate::ctx::{
    Access, Api, FortranAccess, Hints, IoBuf, IoCtx, IoError, IoResult, Kernel, Op, OpenMode,
    OpenOptions, Position, ReduceOp, View,
};

/// Bytes of data.
pub(crate) struct MemBuf(pub(crate) Vec<u8>);

impl IoBuf for MemBuf {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self) -> Option<&[u8]> {
        Some(&self.0)
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.0)
    }
    fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.0.capacity(),
            "set_len({len}) beyond the allocation of {} bytes",
            self.0.capacity()
        );
        // Within the capacity: never reallocates, so the buffer stays where it is.
        self.0.resize(len, 0);
    }
}

/// An open file: its path, view and shared file pointer (in etypes).
pub(crate) struct MemFile {
    path: String,
    view: View,
    shared: u64,
    /// A Fortran sequential unit: the records moved so far (each has its length
    /// markers in the file, as the Fortran runtime writes them).
    sequential: Option<SequentialPosition>,
}

/// The context. Clones share files and clock (a sub-communicator of one rank).
#[derive(Clone, Default)]
pub(crate) struct MemCtx {
    /// The files, by path.
    pub(crate) files: Rc<RefCell<BTreeMap<String, Vec<u8>>>>,
    /// The fake clock, in seconds.
    pub(crate) clock: Rc<Cell<f64>>,
    /// Seconds each `xfer` takes.
    pub(crate) xfer_cost: f64,
    /// Seconds each `wtime` reading moves the clock.
    pub(crate) wtime_tick: f64,
    /// Flip bit 2 of this byte of this file when it is opened for reading.
    pub(crate) corrupt_file: Option<(String, usize)>,
    /// Flip bit 0 of the first byte of every read buffer.
    pub(crate) corrupt_reads: bool,
}

impl MemCtx {
    /// Moves `len` bytes at `op`'s position through the file's view; reads stop
    /// at the end of the file, as MPI's do. Returns the bytes moved.
    fn move_data(&self, file: &mut MemFile, op: Op, buf: &mut MemBuf) -> usize {
        let len = buf.0.len() as u64;
        let offset = match op.pos {
            Position::At(o) => o,
            Position::SharedPointer => {
                let o = file.shared;
                file.shared += len / file.view.etype.size();
                o
            }
        };
        let mut files = self.files.borrow_mut();
        let data = files.get_mut(&file.path).expect("an open file exists");
        let offset = match file.sequential.as_mut() {
            None => offset,
            Some(at) => {
                let start = at.advance(len) as usize;
                if op.access == Access::Write {
                    let end = start + 4 + len as usize;
                    data.resize(data.len().max(end + 4), 0);
                    let marker = (len as u32).to_ne_bytes();
                    data[start..start + 4].copy_from_slice(&marker);
                    data[end..end + 4].copy_from_slice(&marker);
                }
                start as u64 + SEQUENTIAL_MARKERS / 2
            }
        };
        let mut at = 0usize;
        for (fo, l) in file.view.extents(offset, len) {
            let (fo, l) = (fo as usize, l as usize);
            match op.access {
                Access::Write => {
                    if data.len() < fo + l {
                        data.resize(fo + l, 0);
                    }
                    data[fo..fo + l].copy_from_slice(&buf.0[at..at + l]);
                }
                Access::Read => {
                    let n = data.len().saturating_sub(fo).min(l);
                    buf.0[at..at + n].copy_from_slice(&data[fo..fo + n]);
                    if n < l {
                        return at + n;
                    }
                }
            }
            at += l;
        }
        if op.access == Access::Read && self.corrupt_reads && !buf.0.is_empty() {
            buf.0[0] ^= 1;
        }
        at
    }
}

impl IoCtx for MemCtx {
    type Buf = MemBuf;
    type File = MemFile;
    type Request = (Op, MemBuf);

    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn wtime(&self) -> f64 {
        self.clock.set(self.clock.get() + self.wtime_tick);
        self.clock.get()
    }
    fn alloc(&self, len: usize) -> MemBuf {
        MemBuf(vec![0; len])
    }
    async fn barrier(&self) {}
    async fn bcast_u64(&self, value: u64, _root: usize) -> u64 {
        value
    }
    async fn allreduce_f64(&self, value: f64, _op: ReduceOp) -> f64 {
        value
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        vec![value]
    }
    async fn sendrecv_replace(&self, _buf: &mut MemBuf, _dest: usize, _source: usize) {}
    async fn send(&self, _buf: &MemBuf, _dest: usize) {}
    async fn sendrecv(&self, _send: &MemBuf, _dest: usize, _recv: &mut MemBuf, _source: usize) {}
    async fn exchange(&self, _sends: &[(usize, &MemBuf)], _recvs: &mut [(usize, &mut MemBuf)]) {}
    async fn alltoallv(
        &self,
        _send: &MemBuf,
        _sends: &[(usize, usize)],
        _recv: &mut MemBuf,
        _recvs: &[(usize, usize)],
    ) {
    }
    async fn recv(&self, _buf: &mut MemBuf, _source: usize) {}
    async fn split(&self, color: Option<usize>, _key: usize) -> Option<MemCtx> {
        color.map(|_| self.clone())
    }
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<MemFile> {
        let mut files = self.files.borrow_mut();
        if opts.mode == OpenMode::Read {
            let data = files
                .get_mut(path)
                .ok_or_else(|| IoError::Invalid(format!("{path}: no such file")))?;
            if let Some((p, at)) = &self.corrupt_file
                && p == path
            {
                data[*at] ^= 0x04;
            }
        } else {
            files.entry(path.to_string()).or_default();
        }
        Ok(MemFile {
            path: path.to_string(),
            view: View::bytes(),
            shared: 0,
            sequential: (opts.api == Api::Fortran(FortranAccess::Sequential))
                .then(SequentialPosition::default),
        })
    }
    async fn set_view(&self, file: &mut MemFile, view: &View) -> IoResult<()> {
        file.view = view.clone();
        file.shared = 0;
        Ok(())
    }
    async fn xfer(&self, file: &mut MemFile, op: Op, buf: &mut MemBuf) -> IoResult<usize> {
        self.clock.set(self.clock.get() + self.xfer_cost);
        Ok(self.move_data(file, op, buf))
    }
    async fn post(&self, _file: &mut MemFile, op: Op, buf: MemBuf) -> IoResult<(Op, MemBuf)> {
        Ok((op, buf))
    }
    async fn wait_all(
        &self,
        file: &mut MemFile,
        requests: Vec<(Op, MemBuf)>,
    ) -> IoResult<Vec<MemBuf>> {
        Ok(requests
            .into_iter()
            .map(|(op, mut b)| {
                self.move_data(file, op, &mut b);
                b
            })
            .collect())
    }
    async fn sync(&self, _file: &mut MemFile) -> IoResult<()> {
        Ok(())
    }
    async fn file_size(&self, file: &mut MemFile) -> IoResult<u64> {
        Ok(self.files.borrow()[&file.path].len() as u64)
    }
    fn hints_in_effect(&self, _file: &MemFile) -> Hints {
        Hints::new()
    }
    async fn close(&self, _file: MemFile) -> IoResult<()> {
        Ok(())
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.files.borrow_mut().remove(path);
        Ok(())
    }
    async fn compute<R>(&self, _kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        Some(work())
    }
}
