//! [`File`]: an MPI-IO file (`MPI_File`) with the read/write families, views,
//! nonblocking requests and an aggregated collective access over explicit
//! extents.
//!
//! All I/O goes through memory type `MPI_UINT8_T` with count = buffer length, so a
//! call moves exactly the bytes of the buffer; offsets are in etypes of the
//! current view (MPI 3.1 §13.4). Errors carry the call, the path and
//! `MPI_Error_string` (files use `MPI_ERRORS_RETURN`, so every code is checked).

use std::cell::Cell;
use std::os::raw::{c_int, c_void};
use std::rc::Rc;

use mpi::ffi;
use piotwin_types::{OpenMode, View};

use crate::comm::Comm;
use crate::datatype::MpiType;
use crate::error::{RealError, RealResult, check, error_class, mpi_error, to_int};
use crate::info::{Info, c_string};

/// The amode of `MPI_File_open` for `mode`; an existing file is not truncated.
fn amode(mode: OpenMode) -> c_int {
    (match mode {
        OpenMode::Create => ffi::MPI_MODE_CREATE | ffi::MPI_MODE_WRONLY,
        OpenMode::CreateReadWrite => ffi::MPI_MODE_CREATE | ffi::MPI_MODE_RDWR,
        OpenMode::Read => ffi::MPI_MODE_RDONLY,
    }) as c_int
}

/// An open MPI-IO file. Closed by [`File::close`] (collective) or, failing that,
/// on drop (errors then ignored). Data calls take `&self`; view changes `&mut self`.
pub struct File {
    fh: ffi::MPI_File,
    /// A duplicate of the communicator the file was opened on (for agreeing on
    /// the phases of an aggregated access); freed at close.
    comm: ffi::MPI_Comm,
    path: String,
    view: View,
    /// Nonblocking requests posted on this file and not yet completed.
    pending: Rc<Cell<usize>>,
}

/// A posted nonblocking operation. It owns its buffer until [`wait_all`]; dropping
/// it unwaited waits for it (`MPI_Wait`), so MPI never touches freed memory.
pub struct Request {
    raw: ffi::MPI_Request,
    buf: Vec<u8>,
    path: String,
    pending: Rc<Cell<usize>>,
}

fn status_zeroed() -> ffi::MPI_Status {
    // SAFETY: MPI_Status is a plain C struct of integers in every MPI.
    unsafe { std::mem::zeroed() }
}

fn count_of(status: &ffi::MPI_Status, call: &'static str, path: &str) -> RealResult<usize> {
    let mut n: c_int = 0;
    // SAFETY: a status filled by MPI, out-parameter.
    check(
        unsafe { ffi::MPI_Get_count(status, ffi::RSMPI_UINT8_T, &mut n) },
        call,
        Some(path),
    )?;
    // MPI_UNDEFINED cannot occur for a byte type; treat anything negative as 0.
    Ok(n.max(0) as usize)
}

impl File {
    /// `MPI_File_open` on `comm` (collective over it) with `info`'s hints.
    pub fn open(comm: &Comm, path: &str, mode: OpenMode, info: &Info) -> RealResult<File> {
        File::open_with(comm, path, mode, false, info)
    }

    /// [`File::open`], adding `MPI_MODE_UNIQUE_OPEN` to the access mode where
    /// `unique_open` (the caller promises no concurrent open of the file elsewhere).
    pub fn open_with(
        comm: &Comm,
        path: &str,
        mode: OpenMode,
        unique_open: bool,
        info: &Info,
    ) -> RealResult<File> {
        let amode = if unique_open {
            amode(mode) | ffi::MPI_MODE_UNIQUE_OPEN as c_int
        } else {
            amode(mode)
        };
        let cpath = c_string(path, "MPI_File_open")?;
        let mut fh = unsafe { ffi::RSMPI_FILE_NULL };
        // SAFETY: valid communicator and info, NUL-terminated path, out-parameter.
        check(
            unsafe { ffi::MPI_File_open(comm.raw(), cpath.as_ptr(), amode, info.raw(), &mut fh) },
            "MPI_File_open",
            Some(path),
        )?;
        let mut dup = unsafe { ffi::RSMPI_COMM_NULL };
        // SAFETY: valid communicator, out-parameter freed at close.
        unsafe { ffi::MPI_Comm_dup(comm.raw(), &mut dup) };
        Ok(File {
            fh,
            comm: dup,
            path: path.to_string(),
            view: View::bytes(),
            pending: Rc::new(Cell::new(0)),
        })
    }

    /// The path the file was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The view in effect (set by [`File::set_view`]; bytes from 0 initially).
    pub fn view(&self) -> &View {
        &self.view
    }

    /// `MPI_File_set_view` with data representation `native` (collective). Resets
    /// the individual and shared file pointers to zero, as MPI does.
    pub fn set_view(&mut self, view: &View) -> RealResult<()> {
        let etype = MpiType::build(&view.etype)?;
        let filetype = MpiType::build(&view.filetype)?;
        self.set_view_raw(view.disp, &etype, &filetype)?;
        self.view = view.clone();
        Ok(())
    }

    fn set_view_raw(&self, disp: u64, etype: &MpiType, filetype: &MpiType) -> RealResult<()> {
        const CALL: &str = "MPI_File_set_view";
        let disp = self.offset(disp, CALL)?;
        let native = c"native";
        // SAFETY: live file and committed types; MPI keeps its own references.
        check(
            unsafe {
                ffi::MPI_File_set_view(
                    self.fh,
                    disp,
                    etype.raw(),
                    filetype.raw(),
                    native.as_ptr(),
                    ffi::RSMPI_INFO_NULL,
                )
            },
            CALL,
            Some(&self.path),
        )
    }

    fn offset(&self, offset: u64, call: &'static str) -> RealResult<ffi::MPI_Offset> {
        ffi::MPI_Offset::try_from(offset).map_err(|_| RealError::Invalid {
            call,
            path: Some(self.path.clone()),
            reason: format!("offset {offset} exceeds MPI_Offset's range"),
        })
    }

    fn count(&self, len: usize, call: &'static str) -> RealResult<c_int> {
        to_int(
            len as u64,
            "buffer length (count of MPI_UINT8_T)",
            call,
            Some(&self.path),
        )
    }

    /// Runs one blocking data call that fills a status; returns the bytes moved.
    fn blocking(
        &self,
        call: &'static str,
        len: usize,
        f: impl FnOnce(c_int, *mut ffi::MPI_Status) -> c_int,
    ) -> RealResult<usize> {
        let n = self.count(len, call)?;
        let mut status = status_zeroed();
        check(f(n, &mut status), call, Some(&self.path))?;
        count_of(&status, call, &self.path)
    }

    /// `MPI_File_write_at` (independent) at `offset` etypes; returns bytes written.
    pub fn write_at(&self, offset: u64, buf: &[u8]) -> RealResult<usize> {
        const CALL: &str = "MPI_File_write_at";
        let off = self.offset(offset, CALL)?;
        // SAFETY: `buf` is valid for `n` bytes for the duration of the call.
        self.blocking(CALL, buf.len(), |n, st| unsafe {
            ffi::MPI_File_write_at(
                self.fh,
                off,
                buf.as_ptr() as *const c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_read_at` (independent) at `offset` etypes; returns bytes read
    /// (fewer than `buf.len()` at end of file).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> RealResult<usize> {
        const CALL: &str = "MPI_File_read_at";
        let off = self.offset(offset, CALL)?;
        // SAFETY: `buf` is valid and writable for `n` bytes for the duration of the call.
        self.blocking(CALL, buf.len(), |n, st| unsafe {
            ffi::MPI_File_read_at(
                self.fh,
                off,
                buf.as_mut_ptr() as *mut c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_write_at_all` (collective) at `offset` etypes; returns bytes written.
    pub fn write_at_all(&self, offset: u64, buf: &[u8]) -> RealResult<usize> {
        const CALL: &str = "MPI_File_write_at_all";
        let off = self.offset(offset, CALL)?;
        // SAFETY: as in `write_at`.
        self.blocking(CALL, buf.len(), |n, st| unsafe {
            ffi::MPI_File_write_at_all(
                self.fh,
                off,
                buf.as_ptr() as *const c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_read_at_all` (collective) at `offset` etypes; returns bytes read.
    pub fn read_at_all(&self, offset: u64, buf: &mut [u8]) -> RealResult<usize> {
        const CALL: &str = "MPI_File_read_at_all";
        let off = self.offset(offset, CALL)?;
        // SAFETY: as in `read_at`.
        self.blocking(CALL, buf.len(), |n, st| unsafe {
            ffi::MPI_File_read_at_all(
                self.fh,
                off,
                buf.as_mut_ptr() as *mut c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_write_shared` (independent, shared file pointer).
    pub fn write_shared(&self, buf: &[u8]) -> RealResult<usize> {
        // SAFETY: as in `write_at`.
        self.blocking("MPI_File_write_shared", buf.len(), |n, st| unsafe {
            ffi::MPI_File_write_shared(
                self.fh,
                buf.as_ptr() as *const c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_read_shared` (independent, shared file pointer).
    pub fn read_shared(&self, buf: &mut [u8]) -> RealResult<usize> {
        // SAFETY: as in `read_at`.
        self.blocking("MPI_File_read_shared", buf.len(), |n, st| unsafe {
            ffi::MPI_File_read_shared(
                self.fh,
                buf.as_mut_ptr() as *mut c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_write_ordered` (collective, shared file pointer, rank order).
    pub fn write_ordered(&self, buf: &[u8]) -> RealResult<usize> {
        // SAFETY: as in `write_at`.
        self.blocking("MPI_File_write_ordered", buf.len(), |n, st| unsafe {
            ffi::MPI_File_write_ordered(
                self.fh,
                buf.as_ptr() as *const c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// `MPI_File_read_ordered` (collective, shared file pointer, rank order).
    pub fn read_ordered(&self, buf: &mut [u8]) -> RealResult<usize> {
        // SAFETY: as in `read_at`.
        self.blocking("MPI_File_read_ordered", buf.len(), |n, st| unsafe {
            ffi::MPI_File_read_ordered(
                self.fh,
                buf.as_mut_ptr() as *mut c_void,
                n,
                ffi::RSMPI_UINT8_T,
                st,
            )
        })
    }

    /// Posts one nonblocking call; the request takes `buf` (its heap storage does
    /// not move while the `Vec` is moved, so the pointer MPI holds stays valid).
    fn post(
        &self,
        call: &'static str,
        buf: Vec<u8>,
        f: impl FnOnce(*mut u8, c_int, *mut ffi::MPI_Request) -> c_int,
    ) -> RealResult<Request> {
        let n = self.count(buf.len(), call)?;
        let mut req = Request {
            raw: unsafe { ffi::RSMPI_REQUEST_NULL },
            buf,
            path: self.path.clone(),
            pending: Rc::clone(&self.pending),
        };
        let ptr = req.buf.as_mut_ptr();
        check(f(ptr, n, &mut req.raw), call, Some(&self.path))?;
        self.pending.set(self.pending.get() + 1);
        Ok(req)
    }

    /// `MPI_File_iwrite_at`: starts writing `buf` at `offset` etypes.
    pub fn iwrite_at(&self, offset: u64, buf: Vec<u8>) -> RealResult<Request> {
        const CALL: &str = "MPI_File_iwrite_at";
        let off = self.offset(offset, CALL)?;
        // SAFETY: the request owns the buffer until it completes.
        self.post(CALL, buf, |p, n, r| unsafe {
            ffi::MPI_File_iwrite_at(self.fh, off, p as *const c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    /// `MPI_File_iread_at`: starts reading `buf.len()` bytes at `offset` etypes into `buf`.
    pub fn iread_at(&self, offset: u64, buf: Vec<u8>) -> RealResult<Request> {
        const CALL: &str = "MPI_File_iread_at";
        let off = self.offset(offset, CALL)?;
        // SAFETY: the request owns the buffer until it completes.
        self.post(CALL, buf, |p, n, r| unsafe {
            ffi::MPI_File_iread_at(self.fh, off, p as *mut c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    /// `MPI_File_iwrite_at_all` (MPI 3.1 nonblocking collective): every process of
    /// the file must post it, in the same order. An error where
    /// [`crate::nonblocking_collective_io_supported`] is false.
    pub fn iwrite_at_all(&self, offset: u64, buf: Vec<u8>) -> RealResult<Request> {
        const CALL: &str = "MPI_File_iwrite_at_all";
        self.nonblocking_collective(CALL)?;
        let off = self.offset(offset, CALL)?;
        // SAFETY: the request owns the buffer until it completes.
        self.post(CALL, buf, |p, n, r| unsafe {
            ffi::MPI_File_iwrite_at_all(self.fh, off, p as *const c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    /// `MPI_File_iread_at_all` (MPI 3.1 nonblocking collective); see [`File::iwrite_at_all`].
    pub fn iread_at_all(&self, offset: u64, buf: Vec<u8>) -> RealResult<Request> {
        const CALL: &str = "MPI_File_iread_at_all";
        self.nonblocking_collective(CALL)?;
        let off = self.offset(offset, CALL)?;
        // SAFETY: the request owns the buffer until it completes.
        self.post(CALL, buf, |p, n, r| unsafe {
            ffi::MPI_File_iread_at_all(self.fh, off, p as *mut c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    fn nonblocking_collective(&self, call: &'static str) -> RealResult<()> {
        if crate::nonblocking_collective_io_supported() {
            return Ok(());
        }
        Err(RealError::Invalid {
            call,
            path: Some(self.path.clone()),
            reason: "Open MPI's romio321 component has no nonblocking collective file I/O (it crashes); \
                     use OMPIO (the default) or blocking collective calls"
                .into(),
        })
    }

    /// `MPI_File_iwrite_shared` (independent, shared file pointer).
    pub fn iwrite_shared(&self, buf: Vec<u8>) -> RealResult<Request> {
        // SAFETY: the request owns the buffer until it completes.
        self.post("MPI_File_iwrite_shared", buf, |p, n, r| unsafe {
            ffi::MPI_File_iwrite_shared(self.fh, p as *const c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    /// `MPI_File_iread_shared` (independent, shared file pointer).
    pub fn iread_shared(&self, buf: Vec<u8>) -> RealResult<Request> {
        // SAFETY: the request owns the buffer until it completes.
        self.post("MPI_File_iread_shared", buf, |p, n, r| unsafe {
            ffi::MPI_File_iread_shared(self.fh, p as *mut c_void, n, ffi::RSMPI_UINT8_T, r)
        })
    }

    /// One collective access over explicit absolute byte extents, for every
    /// process of the file (PnetCDF `ncmpi_wait_all` aggregation; Thakur, Gropp &
    /// Lusk, "Data sieving and collective I/O in ROMIO", 1999, for why one call
    /// beats many): `writes` are `(file offset, data)` pieces, `reads` are
    /// `(file offset, destination)` pieces.
    ///
    /// Each phase (all writes, then all reads) is one `MPI_File_write_at_all` /
    /// `MPI_File_read_at_all` through a temporary view whose filetype is an
    /// hindexed type of bytes over this process's pieces sorted by offset (ROMIO
    /// requires monotonically non-decreasing filetype offsets); the processes agree
    /// first (one `MPI_Allreduce`) on which phases anyone needs. The previous view
    /// is restored afterwards, which resets the file pointers to zero.
    /// Returns `(bytes written, bytes read)` by this process.
    pub fn xfer_extents_all(
        &mut self,
        writes: &[(u64, &[u8])],
        reads: &mut [(u64, &mut [u8])],
    ) -> RealResult<(usize, usize)> {
        const WRITE: u64 = 1;
        const READ: u64 = 2;
        let mine =
            if writes.is_empty() { 0 } else { WRITE } | if reads.is_empty() { 0 } else { READ };
        let mut any: u64 = 0;
        // SAFETY: one u64 each way over the file's (duplicated) communicator.
        unsafe {
            ffi::MPI_Allreduce(
                &mine as *const u64 as *const c_void,
                &mut any as *mut u64 as *mut c_void,
                1,
                ffi::RSMPI_UINT64_T,
                ffi::RSMPI_BOR,
                self.comm,
            )
        };
        if any == 0 {
            return Ok((0, 0));
        }
        let mut moved = (0, 0);
        let result = (|| {
            if any & WRITE != 0 {
                let mut order: Vec<usize> = (0..writes.len()).collect();
                order.sort_by_key(|&i| writes[i].0);
                let blocks: Vec<(u64, u64)> = order
                    .iter()
                    .map(|&i| (writes[i].0, writes[i].1.len() as u64))
                    .collect();
                let mut data = Vec::with_capacity(blocks.iter().map(|b| b.1 as usize).sum());
                for &i in &order {
                    data.extend_from_slice(writes[i].1);
                }
                self.set_blocks_view(&blocks)?;
                moved.0 = self.write_at_all(0, &data)?;
            }
            if any & READ != 0 {
                let mut order: Vec<usize> = (0..reads.len()).collect();
                order.sort_by_key(|&i| reads[i].0);
                let blocks: Vec<(u64, u64)> = order
                    .iter()
                    .map(|&i| (reads[i].0, reads[i].1.len() as u64))
                    .collect();
                let mut data = vec![0u8; blocks.iter().map(|b| b.1 as usize).sum()];
                self.set_blocks_view(&blocks)?;
                moved.1 = self.read_at_all(0, &mut data)?;
                let mut at = 0;
                for &i in &order {
                    let dst = &mut *reads[i].1;
                    dst.copy_from_slice(&data[at..at + dst.len()]);
                    at += dst.len();
                }
            }
            Ok(())
        })();
        let view = self.view.clone();
        let restored = self.set_view(&view);
        result.and(restored).map(|()| moved)
    }

    fn set_blocks_view(&self, blocks: &[(u64, u64)]) -> RealResult<()> {
        let byte = MpiType::byte();
        if blocks.is_empty() {
            // Nothing to move here: a plain byte view; the call passes count 0.
            self.set_view_raw(0, &byte, &byte)
        } else {
            self.set_view_raw(0, &byte, &MpiType::byte_blocks(blocks)?)
        }
    }

    /// `MPI_File_sync`: flush written data to storage (collective).
    pub fn sync(&self) -> RealResult<()> {
        // SAFETY: live file.
        check(
            unsafe { ffi::MPI_File_sync(self.fh) },
            "MPI_File_sync",
            Some(&self.path),
        )
    }

    /// `MPI_File_get_size` in bytes.
    pub fn size(&self) -> RealResult<u64> {
        let mut size: ffi::MPI_Offset = 0;
        // SAFETY: live file, out-parameter.
        check(
            unsafe { ffi::MPI_File_get_size(self.fh, &mut size) },
            "MPI_File_get_size",
            Some(&self.path),
        )?;
        Ok(size as u64)
    }

    /// `MPI_File_set_info` (collective): lays `info`'s hints over the file's.
    /// MPI may ignore hints it does not know or cannot change after open; read
    /// back what holds with [`File::info`].
    pub fn set_info(&self, info: &Info) -> RealResult<()> {
        // SAFETY: live file and info handle; MPI copies what it keeps.
        check(
            unsafe { ffi::MPI_File_set_info(self.fh, info.raw()) },
            "MPI_File_set_info",
            Some(&self.path),
        )
    }

    /// The hints in effect, read back with `MPI_File_get_info`.
    pub fn info(&self) -> RealResult<piotwin_types::Hints> {
        let mut raw = unsafe { ffi::RSMPI_INFO_NULL };
        // SAFETY: live file; the returned info is owned (freed by `Info`'s drop).
        check(
            unsafe { ffi::MPI_File_get_info(self.fh, &mut raw) },
            "MPI_File_get_info",
            Some(&self.path),
        )?;
        Info::from_raw(raw).to_hints()
    }

    /// `MPI_File_close` (collective). Fails while nonblocking requests on the file
    /// are pending: MPI forbids closing then, so the handle is abandoned unclosed
    /// (the requests still complete when waited for or dropped).
    pub fn close(mut self) -> RealResult<()> {
        let pending = self.pending.get();
        if pending > 0 {
            self.fh = unsafe { ffi::RSMPI_FILE_NULL };
            return Err(RealError::Invalid {
                call: "MPI_File_close",
                path: Some(self.path.clone()),
                reason: format!(
                    "{pending} nonblocking requests are still pending: wait for them first"
                ),
            });
        }
        self.close_inner()
    }

    fn close_inner(&mut self) -> RealResult<()> {
        // SAFETY: live file with no pending requests; MPI sets the handle to MPI_FILE_NULL.
        let rc = unsafe { ffi::MPI_File_close(&mut self.fh) };
        // SAFETY: the duplicate communicator is ours.
        unsafe { ffi::MPI_Comm_free(&mut self.comm) };
        check(rc, "MPI_File_close", Some(&self.path))
    }

    /// `MPI_File_delete`. Returns `false` where the file did not exist.
    pub fn delete(path: &str) -> RealResult<bool> {
        let cpath = c_string(path, "MPI_File_delete")?;
        // SAFETY: NUL-terminated path.
        let rc = unsafe { ffi::MPI_File_delete(cpath.as_ptr(), ffi::RSMPI_INFO_NULL) };
        if rc != ffi::MPI_SUCCESS as c_int && error_class(rc) == ffi::MPI_ERR_NO_SUCH_FILE as c_int
        {
            return Ok(false);
        }
        check(rc, "MPI_File_delete", Some(path)).map(|()| true)
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if self.fh == unsafe { ffi::RSMPI_FILE_NULL } || mpi::is_finalized() {
            return;
        }
        let result = if self.pending.get() > 0 {
            Err(RealError::Invalid {
                call: "MPI_File_close",
                path: Some(self.path.clone()),
                reason: "nonblocking requests are still pending: the handle is abandoned unclosed"
                    .into(),
            })
        } else {
            self.close_inner()
        };
        if let Err(e) = result {
            eprintln!("piotwin-real: closing a file on drop: {e}");
        }
    }
}

impl Request {
    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True for a zero-length request.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.raw != unsafe { ffi::RSMPI_REQUEST_NULL } {
            // SAFETY: an active request whose buffer we still own.
            unsafe { ffi::MPI_Wait(&mut self.raw, ffi::RSMPI_STATUS_IGNORE) };
            self.pending.set(self.pending.get() - 1);
        }
    }
}

/// `MPI_Waitall` over `requests`: returns each request's buffer and the bytes it
/// moved, in the same order. On error every request is still completed (or
/// waited for on drop) before the error is returned.
pub fn wait_all(mut requests: Vec<Request>) -> RealResult<Vec<(Vec<u8>, usize)>> {
    const CALL: &str = "MPI_Waitall";
    let n = to_int(requests.len() as u64, "request count", CALL, None)?;
    let mut raws: Vec<ffi::MPI_Request> = requests.iter().map(|r| r.raw).collect();
    let mut statuses: Vec<ffi::MPI_Status> = (0..requests.len()).map(|_| status_zeroed()).collect();
    // SAFETY: `n` live (or null) requests and as many statuses.
    let rc = unsafe { ffi::MPI_Waitall(n, raws.as_mut_ptr(), statuses.as_mut_ptr()) };
    let null = unsafe { ffi::RSMPI_REQUEST_NULL };
    for (r, raw) in requests.iter_mut().zip(&raws) {
        if r.raw != null && *raw == null {
            r.pending.set(r.pending.get() - 1);
        }
        r.raw = *raw;
    }
    if rc != ffi::MPI_SUCCESS as c_int {
        let path = requests.first().map(|r| r.path.clone());
        // MPI_ERR_IN_STATUS: the first failing request's own code is more telling.
        let code = statuses
            .iter()
            .map(|s| s.MPI_ERROR)
            .find(|&e| e != ffi::MPI_SUCCESS as c_int && e != ffi::MPI_ERR_PENDING as c_int)
            .unwrap_or(rc);
        return Err(mpi_error(code, CALL, path.as_deref()));
    }
    requests
        .iter_mut()
        .zip(&statuses)
        .map(|(r, s)| Ok((std::mem::take(&mut r.buf), count_of(s, CALL, &r.path)?)))
        .collect()
}
