//! A one-rank, in-memory [`IoCtx`] for testing the b_eff_io program's logic
//! (offsets, views, repetition counts, the data check) without a back end. Each
//! data-path call advances a fake clock by a fixed cost, so the time-driven loop
//! gives known repetition counts. Test code only.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use piotwin_types::{Hints, View};

use crate::ctx::{
    Access, IoBuf, IoCtx, IoError, IoResult, Kernel, Op, OpenMode, OpenOptions, Position, ReduceOp,
};

/// Bytes of data.
pub(super) struct MemBuf(Vec<u8>);

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
}

/// An open file: its path, view and shared file pointer (in etypes).
pub(super) struct MemFile {
    path: String,
    view: View,
    shared: u64,
}

/// The context: files by path, a clock, a per-call cost, and an optional fault.
#[derive(Clone)]
pub(super) struct MemCtx {
    pub(super) files: Rc<RefCell<BTreeMap<String, Vec<u8>>>>,
    clock: Rc<Cell<f64>>,
    cost: f64,
    /// Flip a bit of every read buffer's first byte (a corrupted read).
    pub(super) corrupt_reads: bool,
}

impl MemCtx {
    pub(super) fn new(cost: f64) -> MemCtx {
        MemCtx {
            files: Rc::default(),
            clock: Rc::default(),
            cost,
            corrupt_reads: false,
        }
    }
}

impl IoCtx for MemCtx {
    type Buf = MemBuf;
    type File = MemFile;
    type Request = ();

    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn wtime(&self) -> f64 {
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
    async fn split(&self, color: Option<usize>, _key: usize) -> Option<MemCtx> {
        color.map(|_| self.clone())
    }
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<MemFile> {
        let mut files = self.files.borrow_mut();
        if opts.mode == OpenMode::Read && !files.contains_key(path) {
            return Err(IoError::Invalid(format!("{path}: no such file")));
        }
        files.entry(path.to_string()).or_default();
        Ok(MemFile {
            path: path.to_string(),
            view: View::bytes(),
            shared: 0,
        })
    }
    async fn set_view(&self, file: &mut MemFile, view: &View) -> IoResult<()> {
        file.view = view.clone();
        file.shared = 0;
        Ok(())
    }
    async fn xfer(&self, file: &mut MemFile, op: Op, buf: &mut MemBuf) -> IoResult<usize> {
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
        let data = files.get_mut(&file.path).expect("open file");
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
                    for i in 0..l {
                        buf.0[at + i] = data.get(fo + i).copied().unwrap_or(0);
                    }
                }
            }
            at += l;
        }
        if op.access == Access::Read && self.corrupt_reads && !buf.0.is_empty() {
            buf.0[0] ^= 1;
        }
        self.clock.set(self.clock.get() + self.cost);
        Ok(len as usize)
    }
    async fn post(&self, _file: &mut MemFile, _op: Op, _buf: MemBuf) -> IoResult<()> {
        Err(IoError::Invalid("memctx: no nonblocking I/O".into()))
    }
    async fn wait_all(&self, _file: &mut MemFile, _requests: Vec<()>) -> IoResult<Vec<MemBuf>> {
        Err(IoError::Invalid("memctx: no nonblocking I/O".into()))
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
