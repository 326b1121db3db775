//! [`PosixFile`]: a file accessed with `pwrite`/`pread`/`fsync` (IOR's `-a POSIX`,
//! BTIO's `fortran` subtype): always independent, byte offsets, no views, no hints.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;

use crate::error::{RealError, RealResult};
use piotwin_types::OpenMode;

/// An open POSIX file of this process alone.
pub struct PosixFile {
    file: fs::File,
    path: String,
}

fn os<'a>(call: &'static str, path: &'a str) -> impl FnOnce(std::io::Error) -> RealError + 'a {
    move |source| RealError::Os {
        call,
        path: path.to_string(),
        source,
    }
}

/// The error of an OS call that just failed (`errno`), on `path`.
pub(crate) fn os_error(call: &'static str, path: &str) -> RealError {
    os(call, path)(std::io::Error::last_os_error())
}

impl PosixFile {
    /// `open(2)` with the flags `mode` implies (`Create`: `O_CREAT|O_WRONLY`,
    /// `CreateReadWrite`: `O_CREAT|O_RDWR`, `Read`: `O_RDONLY`); never truncates.
    pub fn open(path: &str, mode: OpenMode) -> RealResult<PosixFile> {
        let mut o = fs::OpenOptions::new();
        match mode {
            OpenMode::Create => o.write(true).create(true),
            OpenMode::CreateReadWrite => o.read(true).write(true).create(true),
            OpenMode::Read => o.read(true),
        };
        let file = o.open(path).map_err(os("open", path))?;
        Ok(PosixFile {
            file,
            path: path.to_string(),
        })
    }

    /// The path the file was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `pwrite(2)` of all of `buf` at byte `offset` (retried until complete); returns `buf.len()`.
    pub fn write_at(&self, offset: u64, buf: &[u8]) -> RealResult<usize> {
        self.file
            .write_all_at(buf, offset)
            .map_err(os("pwrite", &self.path))?;
        Ok(buf.len())
    }

    /// `pread(2)` into `buf` at byte `offset`, retried until `buf` is full or end
    /// of file; returns the bytes read.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> RealResult<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(os("pread", &self.path)(e)),
            }
        }
        Ok(done)
    }

    /// `fsync(2)`: data and metadata to storage.
    pub fn sync(&self) -> RealResult<()> {
        self.file.sync_all().map_err(os("fsync", &self.path))
    }

    /// Drops the page cache's copy of the file: `fsync(2)`, then
    /// `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file (see [`drop_cache`]).
    pub fn drop_cache(&self) -> RealResult<()> {
        self.sync()?;
        fadvise_dontneed(&self.file, &self.path)
    }

    /// Size in bytes (`fstat(2)`).
    pub fn size(&self) -> RealResult<u64> {
        Ok(self.file.metadata().map_err(os("fstat", &self.path))?.len())
    }
}

/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)`: the kernel drops the file's
/// clean cached pages (those no process has mapped or locked). Dirty pages stay:
/// sync first.
fn fadvise_dontneed(file: &fs::File, path: &str) -> RealResult<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid open descriptor for the call's duration; no memory is passed.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    match rc {
        0 => Ok(()),
        errno => Err(os("posix_fadvise", path)(
            std::io::Error::from_raw_os_error(errno),
        )),
    }
}

/// Drops the page cache's copy of the file at `path` (opened by any means, e.g.
/// through MPI-IO, which hides its descriptor): opens it read-only,
/// `fdatasync(2)` (written data reaches storage, so its pages become clean and
/// can go), then `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file. The
/// IOzone-style probe's `-I` (cold reads) uses it.
pub fn drop_cache(path: &str) -> RealResult<()> {
    let file = fs::File::open(path).map_err(os("open", path))?;
    file.sync_data().map_err(os("fdatasync", path))?;
    fadvise_dontneed(&file, path)
}
