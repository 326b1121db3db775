//! The in-process probes: timed copies over sizes, for the twin's
//! `nodes.compute.memcpy` (the rate of page-cache copies and intra-node
//! messages), and IOR's data pattern filled and checked over sizes, for
//! `nodes.compute.pattern` and `nodes.compute.pattern_check` (what real IOR
//! spends on its fills and checks inside the timed region), file deletion over file sizes, for `metadata.delete` and
//! `metadata.delete_bw`, and MADbench2's busy-work loop over loop counts, for
//! `nodes.compute.flops` (the rate the twin charges plain loops at), and Fortran
//! direct-access `WRITE` statements over statement counts, for
//! `nodes.fortran_statement` (the runtime's cost per statement), and rewrites a
//! wait after a delete, for `nodes.cache.release_time` (how long freed
//! page-cache memory stays backed), and the benchmark kernels alone and on
//! every core at once, for `nodes.compute.<kernel>_all_cores`. They run in the
//! calibrating process itself: no MPI is involved.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One timed copy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CopySample {
    /// Bytes copied.
    pub bytes: u64,
    /// Seconds the copy took.
    pub seconds: f64,
}

/// Copies `reps` times at each size between two buffers of the largest size and
/// times each copy. Both buffers are written once first (page faults are not a
/// copy cost), and each size gets one untimed copy so it starts warm.
pub fn measure(sizes: &[u64], reps: usize) -> Vec<CopySample> {
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let src: Vec<u8> = (0..max).map(|i| (i * 31 % 251) as u8).collect();
    let mut dst = vec![1u8; max];
    let mut out = Vec::with_capacity(sizes.len() * reps);
    for &s in sizes {
        let n = s as usize;
        dst[..n].copy_from_slice(&src[..n]);
        for _ in 0..reps {
            let t0 = Instant::now();
            dst[..n].copy_from_slice(std::hint::black_box(&src[..n]));
            std::hint::black_box(&dst);
            out.push(CopySample {
                bytes: s,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    out
}

/// Writes a file of each size in `dir` (synced, its pages cached clean, as a
/// benchmark leaves it), then times its deletion: `reps` samples per size.
pub fn measure_delete(
    dir: &std::path::Path,
    sizes: &[u64],
    reps: usize,
) -> std::io::Result<Vec<CopySample>> {
    use std::io::Write;
    let chunk = vec![0x5au8; 1 << 20];
    let mut out = Vec::with_capacity(sizes.len() * reps);
    for &s in sizes {
        for rep in 0..reps {
            let path = dir.join(format!("delete-probe-{s}-{rep}.tmp"));
            let mut f = std::fs::File::create(&path)?;
            let mut left = s as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                f.write_all(&chunk[..n])?;
                left -= n;
            }
            f.sync_all()?;
            drop(f);
            let t0 = Instant::now();
            std::fs::remove_file(&path)?;
            out.push(CopySample {
                bytes: s,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    Ok(out)
}

/// One rewrite of the release probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReleaseSample {
    /// Bytes written (the freed file's size and the rewrite's).
    pub bytes: u64,
    /// Seconds between the delete and the rewrite.
    pub wait_s: f64,
    /// Seconds the rewrite took (page-cache writes, no sync).
    pub seconds: f64,
}

/// One write of the huge-page probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HugeSample {
    /// Bytes per write request.
    pub request: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Seconds the writes took (page-cache writes, no sync).
    pub seconds: f64,
}

/// Seconds to create `path` and write `size` bytes into it in requests of
/// `request` bytes (page-cache writes, no sync).
fn write_timed(path: &std::path::Path, size: u64, request: u64) -> std::io::Result<f64> {
    use std::io::Write;
    let buf = vec![0x5au8; request.min(size) as usize];
    let t0 = Instant::now();
    let mut f = std::fs::File::create(path)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(request) as usize;
        f.write_all(&buf[..n])?;
        left -= n as u64;
    }
    drop(f);
    Ok(t0.elapsed().as_secs_f64())
}

/// The huge-page probe, run settled (after [`measure_release`]): in each of
/// `rounds` rounds, for each request size, times writing a file of `bytes` in
/// `dir` in requests of that size, deletes it and waits `settle`, so that each
/// write starts from memory handed back. Requests the kernel caches in small
/// pages find the warm floor (free memory in blocks smaller than free page
/// reporting hands back); those it caches in huge pages take fresh memory, at
/// a rate that varies from write to write (on one host here, 240 MB/s in one
/// write and 268 to 291 MB/s in four more an hour later), hence the rounds.
pub fn measure_huge(
    dir: &std::path::Path,
    bytes: u64,
    requests: &[u64],
    rounds: usize,
    settle: f64,
) -> std::io::Result<Vec<HugeSample>> {
    let path = dir.join("huge-probe.tmp");
    let mut out = Vec::with_capacity(rounds * requests.len());
    for &request in requests.iter().cycle().take(rounds * requests.len()) {
        let seconds = write_timed(&path, bytes, request)?;
        std::fs::remove_file(&path)?;
        out.push(HugeSample {
            request,
            bytes,
            seconds,
        });
        std::thread::sleep(std::time::Duration::from_secs_f64(settle));
    }
    Ok(out)
}

/// The fresh-stall probe, run settled after [`measure_huge`]: a file of
/// `bytes` written in requests of `request` bytes (huge ones, which take fresh
/// memory) while `spinners` threads spin beside the writer, so that it has only
/// a share of a core. A guest's vCPU that waits in the hypervisor while the
/// host backs a page is busy for its scheduler all the while: the fresh part
/// of the write then stretches with the share, as the copy does; where the host
/// backs memory on its own time, only the copy does. The file is deleted and
/// the memory left to settle again.
pub fn measure_fresh_stall(
    dir: &std::path::Path,
    bytes: u64,
    request: u64,
    spinners: usize,
    settle: f64,
) -> std::io::Result<HugeSample> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let path = dir.join("fresh-stall-probe.tmp");
    let stop = AtomicBool::new(false);
    let seconds = std::thread::scope(|s| {
        for _ in 0..spinners {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        // the spinners on their cores before the clock starts
        std::thread::sleep(std::time::Duration::from_millis(50));
        let t = write_timed(&path, bytes, request);
        stop.store(true, Ordering::Relaxed);
        t
    });
    // the scratch file goes whether the write finished or not
    let removed = match path.exists() {
        true => std::fs::remove_file(&path),
        false => Ok(()),
    };
    let seconds = seconds?;
    removed?;
    std::thread::sleep(std::time::Duration::from_secs_f64(settle));
    Ok(HugeSample {
        request,
        bytes,
        seconds,
    })
}

/// One timing of the inode-lock probe: `writers` threads rewrote `bytes`
/// together (each its share, in 1 MiB requests), into one file or a file each.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LockSample {
    /// Threads writing at once.
    pub writers: usize,
    /// Whether they wrote one shared file (else a file each).
    pub shared: bool,
    /// Bytes written in all.
    pub bytes: u64,
    /// Seconds from the start until the last writer was done.
    pub seconds: f64,
}

/// `threads` threads started together, thread `i` running `work(i, buf)`
/// with a 1 MiB buffer of its own; the seconds from the first start to the
/// last end. Each thread clocks itself: with a thread per core, the caller
/// may not run again until they are done.
fn together(
    threads: usize,
    work: impl Fn(usize, &mut [u8]) -> std::io::Result<()> + Sync,
) -> std::io::Result<f64> {
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let running: Vec<_> = (0..threads)
            .map(|i| {
                let (start, work) = (&start, &work);
                s.spawn(move || -> std::io::Result<(Instant, Instant)> {
                    let mut buf = vec![0x5au8; 1 << 20];
                    start.wait();
                    let t0 = Instant::now();
                    work(i, &mut buf)?;
                    Ok((t0, Instant::now()))
                })
            })
            .collect();
        let mut spans = Vec::with_capacity(threads);
        for t in running {
            spans.push(t.join().expect("a probe thread panicked")?);
        }
        let first = spans
            .iter()
            .map(|s| s.0)
            .min()
            .expect("at least one thread");
        let last = spans
            .iter()
            .map(|s| s.1)
            .max()
            .expect("at least one thread");
        Ok((last - first).as_secs_f64())
    })
}

/// `writers` threads, thread `i` rewriting `bytes` at `bytes * i` of
/// `files[i % files.len()]` in 1 MiB requests, started together; the seconds
/// until the last is done.
fn rewrite_together(files: &[std::fs::File], writers: usize, bytes: u64) -> std::io::Result<f64> {
    use std::os::unix::fs::FileExt;
    together(writers, |i, buf| {
        let f = &files[i % files.len()];
        let base = if files.len() == 1 {
            bytes * i as u64
        } else {
            0
        };
        let mut off = 0;
        while off < bytes {
            let n = (bytes - off).min(buf.len() as u64) as usize;
            f.write_all_at(&buf[..n], base + off)?;
            off += n as u64;
        }
        Ok(())
    })
}

/// The bus-read probe, the reading twin of the inode-lock probe's writers of a
/// file each: `readers` files of `bytes` written and read once (cached), then
/// `reps` times `readers` threads read a file each together, in 1 MiB
/// requests into a buffer of their own (which the private cache holds, so
/// each byte crosses the memory bus once, where a write into the page cache
/// moves it more than once). The files are deleted at the end.
pub fn measure_bus_read(
    dir: &std::path::Path,
    readers: usize,
    bytes: u64,
    reps: usize,
) -> std::io::Result<Vec<LockSample>> {
    with_cached_files(dir, "bus-read-probe", readers, bytes, |files| {
        (0..reps)
            .map(|_| {
                Ok(LockSample {
                    writers: readers,
                    shared: false,
                    bytes: bytes * readers as u64,
                    seconds: read_together(files, bytes)?,
                })
            })
            .collect()
    })
}

/// The bus-write probe, the new-page twin of the inode-lock probe's writers
/// of a file each: `writers` files of `bytes` written once and emptied (so
/// the pages the timed writes take were just freed: warm, as IOzone's
/// writes), then `reps` times one writer and then `writers` threads at once
/// write a file each anew, in 1 MiB requests, each file emptied after. Its
/// samples: one writer (`writers` 1) and all at once. The files are deleted
/// at the end.
pub fn measure_bus_write(
    dir: &std::path::Path,
    writers: usize,
    bytes: u64,
    reps: usize,
) -> std::io::Result<Vec<LockSample>> {
    let paths: Vec<std::path::PathBuf> = (0..writers)
        .map(|i| dir.join(format!("bus-write-probe-{i}.tmp")))
        .collect();
    let run = || -> std::io::Result<Vec<LockSample>> {
        let files = paths
            .iter()
            .map(|p| open_scratch(p))
            .collect::<std::io::Result<Vec<_>>>()?;
        let empty = |files: &[std::fs::File]| files.iter().try_for_each(|f| f.set_len(0));
        rewrite_together(&files, writers, bytes)?;
        empty(&files)?;
        let mut out = Vec::with_capacity(2 * reps);
        for _ in 0..reps {
            for w in [1, writers] {
                let seconds = rewrite_together(&files[..w], w, bytes)?;
                empty(&files[..w])?;
                out.push(LockSample {
                    writers: w,
                    shared: false,
                    bytes: bytes * w as u64,
                    seconds,
                });
            }
        }
        Ok(out)
    };
    let out = run();
    remove_scratch(&paths)?;
    out
}

/// `count` scratch files `<name>-<i>.tmp` in `dir` of `bytes` each, written
/// and read once by a thread each (so their pages are cached), for `body`;
/// removed after it.
fn with_cached_files<T>(
    dir: &std::path::Path,
    name: &str,
    count: usize,
    bytes: u64,
    body: impl FnOnce(&[std::fs::File]) -> std::io::Result<T>,
) -> std::io::Result<T> {
    let paths: Vec<std::path::PathBuf> = (0..count)
        .map(|i| dir.join(format!("{name}-{i}.tmp")))
        .collect();
    let run = || -> std::io::Result<T> {
        let files = paths
            .iter()
            .map(|p| open_scratch(p))
            .collect::<std::io::Result<Vec<_>>>()?;
        rewrite_together(&files, count, bytes)?;
        read_together(&files, bytes)?;
        body(&files)
    };
    let out = run();
    remove_scratch(&paths)?;
    out
}

/// One pass of the aliasing probe: `bytes` of a cached file read in 1 MiB
/// requests at page-aligned offsets into a buffer `placed` bytes past a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AliasSample {
    /// Bytes past a page boundary the buffer starts.
    pub placed: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Seconds the pass took.
    pub seconds: f64,
}

/// The aliasing probe: a file of `bytes` written and read once (cached), then
/// `reps` rounds of reading it whole into a buffer placed each of `places`
/// bytes past a page in turn (the kernel's copy from a page-aligned page
/// cache page: its destination lies that far past its source). The file is
/// deleted at the end.
pub fn measure_aliased(
    dir: &std::path::Path,
    bytes: u64,
    places: &[u64],
    reps: usize,
) -> std::io::Result<Vec<AliasSample>> {
    use std::os::unix::fs::FileExt;
    const PAGE: usize = 4096;
    const REQUEST: usize = 1 << 20;
    let path = dir.join("alias-probe.tmp");
    let run = || -> std::io::Result<Vec<AliasSample>> {
        let file = open_scratch(&path)?;
        let mut memory = vec![1u8; REQUEST + 2 * PAGE];
        let page = (PAGE - memory.as_ptr() as usize % PAGE) % PAGE;
        let mut off = 0;
        while off < bytes {
            let n = (bytes - off).min(REQUEST as u64) as usize;
            file.write_all_at(&memory[..n], off)?;
            off += n as u64;
        }
        let read = |memory: &mut [u8], at: usize| -> std::io::Result<f64> {
            let t = Instant::now();
            read_whole(&file, &mut memory[at..at + REQUEST], bytes)?;
            Ok(t.elapsed().as_secs_f64())
        };
        read(&mut memory, page)?;
        let mut out = Vec::new();
        for _ in 0..reps {
            for &placed in places {
                let seconds = read(&mut memory, page + placed as usize % PAGE)?;
                out.push(AliasSample {
                    placed,
                    bytes,
                    seconds,
                });
            }
        }
        Ok(out)
    };
    let out = run();
    if path.exists() {
        std::fs::remove_file(&path)?;
    }
    out
}

/// Reads the first `bytes` of `file` in requests of `buf`'s length into `buf`.
fn read_whole(file: &std::fs::File, buf: &mut [u8], bytes: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut off = 0;
    while off < bytes {
        let n = (bytes - off).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

/// Removes those of a probe's scratch files that are there.
fn remove_scratch(paths: &[std::path::PathBuf]) -> std::io::Result<()> {
    for p in paths {
        if p.exists() {
            std::fs::remove_file(p)?;
        }
    }
    Ok(())
}

/// A probe's scratch file at `path`, created empty (truncated if it was
/// there) for reading and writing.
fn open_scratch(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)
}

/// A thread per file reading its first `bytes` in 1 MiB requests, started
/// together; the seconds until the last is done.
fn read_together(files: &[std::fs::File], bytes: u64) -> std::io::Result<f64> {
    together(files.len(), |i, buf| read_whole(&files[i], buf, bytes))
}

/// The inode-lock probe: whether a node's buffered writes to one file copy
/// into the page cache one at a time. Files written once first (so the
/// timed rewrites find their pages cached and take no fresh memory): one
/// shared file of `writers * bytes` and a file of `bytes` per writer. Then,
/// `reps` times in turn, one writer rewrites `bytes`, `writers` writers
/// rewrite a share each of the shared file, and as many rewrite a file each.
/// The files are deleted at the end.
pub fn measure_inode_lock(
    dir: &std::path::Path,
    writers: usize,
    bytes: u64,
    reps: usize,
) -> std::io::Result<Vec<LockSample>> {
    let open = |name: String| -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
        let path = dir.join(name);
        let f = open_scratch(&path)?;
        Ok((path, f))
    };
    let shared = vec![open("lock-probe-shared.tmp".into())?];
    let separate = (0..writers)
        .map(|i| open(format!("lock-probe-{i}.tmp")))
        .collect::<std::io::Result<Vec<_>>>()?;
    let files = |v: &[(std::path::PathBuf, std::fs::File)]| -> Vec<std::fs::File> {
        v.iter()
            .map(|(_, f)| f.try_clone().expect("a file handle"))
            .collect()
    };
    let (one, each) = (files(&shared), files(&separate));
    let run = || -> std::io::Result<Vec<LockSample>> {
        rewrite_together(&one, writers, bytes)?;
        rewrite_together(&each, writers, bytes)?;
        let mut out = Vec::with_capacity(3 * reps);
        for _ in 0..reps {
            for (w, shared, files) in [
                (1, false, &each[..1]),
                (writers, true, &one[..]),
                (writers, false, &each[..]),
            ] {
                let seconds = rewrite_together(files, w, bytes)?;
                out.push(LockSample {
                    writers: w,
                    shared,
                    bytes: bytes * w as u64,
                    seconds,
                });
            }
        }
        Ok(out)
    };
    let out = run();
    for (path, _) in shared.iter().chain(&separate) {
        std::fs::remove_file(path)?;
    }
    out
}

/// The release probe: for each step (bytes, wait), writes a file of that
/// size in `dir`, deletes it, sleeps the wait and times writing another file
/// of that size into the page cache (then deleted); at the end it waits the
/// longest wait again, so that what it freed is handed back before the next
/// probe. A rewrite right after the delete reuses the freed memory; one after
/// a long wait finds it handed back to the host (free page reporting) and
/// takes it fresh.
pub fn measure_release(
    dir: &std::path::Path,
    steps: &[(u64, f64)],
) -> std::io::Result<Vec<ReleaseSample>> {
    let write = |path: &std::path::Path, size: u64| write_timed(path, size, 1 << 20);
    let (freed, rewrite) = (
        dir.join("release-probe-a.tmp"),
        dir.join("release-probe-b.tmp"),
    );
    let mut out = Vec::with_capacity(steps.len());
    for &(size, wait) in steps {
        write(&freed, size)?;
        std::fs::remove_file(&freed)?;
        std::thread::sleep(std::time::Duration::from_secs_f64(wait));
        let seconds = write(&rewrite, size);
        std::fs::remove_file(&rewrite)?;
        out.push(ReleaseSample {
            bytes: size,
            wait_s: wait,
            seconds: seconds?,
        });
    }
    let settle = steps.iter().map(|s| s.1).fold(0.0, f64::max);
    std::thread::sleep(std::time::Duration::from_secs_f64(settle));
    Ok(out)
}

/// Fills `reps` times at each size a buffer with IOR's data pattern, and checks
/// it as often: each fill and each check is one timed sample of its size;
/// the fills, and the checks.
pub fn measure_pattern(sizes: &[u64], reps: usize) -> (Vec<CopySample>, Vec<CopySample>) {
    use crate::bench::common::pattern::{fill, verify};
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let mut buf = vec![0u8; max];
    let mut fills = Vec::with_capacity(sizes.len() * reps);
    let mut checks = Vec::with_capacity(sizes.len() * reps);
    for &s in sizes {
        let b = &mut buf[..s as usize];
        fill(b, 1, 0, 0);
        for rep in 0..reps as u64 {
            let t0 = Instant::now();
            fill(std::hint::black_box(&mut *b), 1, 0, rep * s);
            fills.push(CopySample {
                bytes: s,
                seconds: t0.elapsed().as_secs_f64(),
            });
            let t0 = Instant::now();
            let (bad, _) = verify(std::hint::black_box(&*b), 1, 0, rep * s);
            checks.push(CopySample {
                bytes: s,
                seconds: t0.elapsed().as_secs_f64(),
            });
            assert_eq!(bad, 0, "the pattern checks what it filled");
        }
    }
    (fills, checks)
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_probes_time_each_amount_and_side_with_the_twin_s_flop_counts() {
        let bt = super::measure_bt(&[(12, 1), (12, 4)], 2);
        assert_eq!(bt.len(), 4);
        // Class S on 1 rank: 3 860 428 counted flops a step (see bt::flops' tests).
        assert_eq!(bt[0].flops, 3_860_428.0);
        assert!(bt[3].flops < bt[0].flops / 2.0);
        assert!(bt.iter().all(|s| s.seconds > 0.0), "{bt:?}");
        // I = 4 and 8: bands of 4³ and 8³ elements of 16 bytes.
        let signal = super::measure_signal(&[4, 8], 2);
        assert_eq!(
            signal.iter().map(|s| s.bytes).collect::<Vec<_>>(),
            [1024, 1024, 8192, 8192]
        );
        assert!(signal.iter().all(|s| s.seconds > 0.0), "{signal:?}");
        // Class S on 1 and 4 ranks: 12³ points, and rank 0's 2 cells of 6³, of 40 bytes.
        let norm = super::measure_error_norm(&[(12, 1), (12, 4)], 2);
        assert_eq!(
            norm.iter().map(|s| s.bytes).collect::<Vec<_>>(),
            [69120, 69120, 17280, 17280]
        );
        assert!(norm.iter().all(|s| s.seconds > 0.0), "{norm:?}");
        // I = 4 on 4 bands: N = 16 · 4 = 64, 4 transforms of 5 · 64 · 6 flops.
        let fft = super::measure_fft(&[4], 3);
        assert_eq!(fft.len(), 3);
        assert!(
            fft.iter().all(|s| s.flops == 7680.0 && s.seconds > 0.0),
            "{fft:?}"
        );
    }

    #[test]
    fn pattern_samples_a_fill_and_a_check_per_repetition() {
        let (fills, checks) = super::measure_pattern(&[4096, 65536], 2);
        assert_eq!((fills.len(), checks.len()), (4, 4));
        assert!(fills.iter().chain(&checks).all(|s| s.seconds >= 0.0));
        assert_eq!(fills[3].bytes, 65536);
    }

    #[test]
    fn one_sample_per_size_and_repetition() {
        let v = super::measure(&[4096, 65536], 3);
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].bytes, 4096);
        assert_eq!(v[5].bytes, 65536);
        assert!(v.iter().all(|s| s.seconds >= 0.0));
    }
}

/// One timed run of MADbench2's busy-work loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlopSample {
    /// Floating-point operations done (a multiply and an add per element and loop).
    pub flops: f64,
    /// Seconds it took.
    pub seconds: f64,
}

/// The SBLOCKSIZE the busy-work probe runs at: MADbench2's usual block size.
pub const BUSY_WORK_BLOCK: usize = 32;

/// One timed run of Fortran data-transfer statements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StatementSample {
    /// Statements made (one record each).
    pub statements: u64,
    /// Seconds they took.
    pub seconds: f64,
}

/// The Fortran probe's record: BTIO `fortran`'s, one grid point's five reals.
pub const FORTRAN_PROBE_RECL: u32 = 40;

/// The statement counts of the Fortran probe.
pub const FORTRAN_PROBE_COUNTS: [u64; 4] = [1024, 4096, 16384, 65536];

/// Times `WRITE(REC=)` statements of [`FORTRAN_PROBE_RECL`]-byte records through the
/// Fortran runtime (the very statements BTIO's `fortran` subtype makes), `reps`
/// runs at each count of consecutive records, after one untimed run, in a file in
/// `dir` (removed after). Consecutive records let the runtime write its buffer out
/// in large `write(2)`s, so the time per statement is the runtime's own work (the
/// twin charges a subtype's system calls separately).
#[cfg(feature = "mpi")]
pub fn measure_fortran(
    dir: &std::path::Path,
    counts: &[u64],
    reps: usize,
) -> Result<Vec<StatementSample>, String> {
    use piotwin_real::FortranUnit;
    use piotwin_types::{FortranAccess, OpenMode};
    let path = dir.join("fortran-probe.tmp");
    let name = path.to_string_lossy().into_owned();
    let max = counts.iter().copied().max().unwrap_or(0) as usize;
    let reals: Vec<f64> = (0..max * FORTRAN_PROBE_RECL as usize / 8)
        .map(|i| i as f64)
        .collect();
    let bytes: Vec<u8> = reals.iter().flat_map(|r| r.to_ne_bytes()).collect();
    // 8-byte aligned as the statements want: a copy into u64s, seen as bytes.
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect();
    // SAFETY: u64s are 8-byte aligned; the slice covers exactly the vector's bytes.
    let data = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    let access = FortranAccess::Direct {
        recl: FORTRAN_PROBE_RECL,
    };
    let run = || -> Result<Vec<StatementSample>, piotwin_real::RealError> {
        let mut unit = FortranUnit::open(&name, OpenMode::CreateReadWrite, access)?;
        let mut out = Vec::with_capacity(counts.len() * reps);
        for &n in counts {
            let part = &data[..n as usize * FORTRAN_PROBE_RECL as usize];
            unit.write_at(0, part)?;
            for _ in 0..reps {
                let t0 = Instant::now();
                unit.write_at(0, part)?;
                out.push(StatementSample {
                    statements: n,
                    seconds: t0.elapsed().as_secs_f64(),
                });
            }
        }
        unit.close()?;
        Ok(out)
    };
    let out = run().map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&path);
    out
}

/// Runs MADbench2's busy-work loop (`crate::bench::madbench2::busy_loop`, the
/// very code real runs execute) `reps` times at each loop count, each run one
/// timed sample, after one untimed run at each count.
pub fn measure_busy_work(loop_counts: &[u64], reps: usize) -> Vec<FlopSample> {
    use crate::bench::madbench2::busy_loop;
    let mut out = Vec::with_capacity(loop_counts.len() * reps);
    for &loops in loop_counts {
        std::hint::black_box(busy_loop(loops, BUSY_WORK_BLOCK));
        for _ in 0..reps {
            let t0 = Instant::now();
            std::hint::black_box(busy_loop(loops, BUSY_WORK_BLOCK));
            out.push(FlopSample {
                flops: 2.0 * loops as f64 * BUSY_WORK_BLOCK as f64,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    out
}

/// `reps` timings of each case's unit, after an untimed one: `setup(case)`
/// gives the unit's amount (bytes or counted flops) and the unit to run;
/// `sample` makes a timing of it a sample.
fn time_cases<C: Copy, A: Copy, U: FnMut(), S>(
    cases: &[C],
    reps: usize,
    setup: impl Fn(C) -> (A, U),
    sample: impl Fn(A, f64) -> S,
) -> Vec<S> {
    let mut out = Vec::with_capacity(cases.len() * reps);
    for &case in cases {
        let (amount, mut unit) = setup(case);
        unit();
        for _ in 0..reps {
            let t0 = Instant::now();
            unit();
            out.push(sample(amount, t0.elapsed().as_secs_f64()));
        }
    }
    out
}

fn copy_sample(bytes: u64, seconds: f64) -> CopySample {
    CopySample { bytes, seconds }
}

fn flop_sample(flops: f64, seconds: f64) -> FlopSample {
    FlopSample { flops, seconds }
}

/// NPB BT's time step as real BTIO runs it ([`crate::bench::btio::bt`]) on the
/// cells of rank 0 of an `n³` grid on `ranks` ranks, for each `(n, ranks)` of
/// `cases`: `reps` timings of one step after an untimed one, each with the
/// step's counted flops (what the twin charges at `bt`). The neighbours'
/// messages are zeros: their arithmetic is the same.
pub fn measure_bt(cases: &[(u64, usize)], reps: usize) -> Vec<FlopSample> {
    time_cases(cases, reps, |(n, ranks)| bt_step(n, ranks), flop_sample)
}

/// Rank 0's BT step of an `n³` grid on `ranks` ranks: its counted flops, and
/// the step to run (on its own state, its sums kept from the optimiser).
fn bt_step(n: u64, ranks: usize) -> (f64, impl FnMut()) {
    use crate::bench::btio::bt::{BtRank, flops};
    use crate::bench::btio::decomp::Decomposition;
    let d = Decomposition::new([n; 3], ranks).expect("the probe's cases decompose");
    let cells = d.cells(0);
    let shapes: Vec<_> = cells.iter().map(|c| flops::Shape::of(c, d.p)).collect();
    let mut rank: BtRank = BtRank::new([n; 3], 0.0008, &cells, d.p as usize);
    (flops::step(&shapes), move || {
        rank.step_alone();
        std::hint::black_box(rank.rhs_sums());
    })
}

/// BTIO's verification of a dump as real BTIO does it after reading the dump
/// back (its bytes as doubles, then NPB's error norm against BT's exact
/// solution, [`crate::bench::btio::bt::BtRank::dump_error_sums`]), on the cells
/// of rank 0 of an `n³` grid on `ranks` ranks, for each `(n, ranks)` of
/// `cases`: `reps` timings each, in bytes of the dump (as the twin charges
/// them at `error_norm`).
pub fn measure_error_norm(cases: &[(u64, usize)], reps: usize) -> Vec<CopySample> {
    time_cases(
        cases,
        reps,
        |(n, ranks)| error_norm_dump(n, ranks),
        copy_sample,
    )
}

/// Rank 0's dump of an `n³` grid on `ranks` ranks: its bytes, and its
/// verification to run (on the rank's initial `u`, written out as a dump).
fn error_norm_dump(n: u64, ranks: usize) -> (u64, impl FnMut()) {
    use crate::bench::btio::bt::BtRank;
    use crate::bench::btio::decomp::Decomposition;
    use crate::bench::btio::layout::POINT_BYTES;
    use crate::bench::btio::program::extend_doubles;
    let d = Decomposition::new([n; 3], ranks).expect("the probe's cases decompose");
    let cells = d.cells(0);
    let rank: BtRank = BtRank::new([n; 3], 0.0008, &cells, d.p as usize);
    let mut dump = vec![0u8; (POINT_BYTES * d.rank_points(0)) as usize];
    rank.write_u(&mut dump);
    (dump.len() as u64, move || {
        let mut stream = Vec::new();
        extend_doubles(&mut stream, std::hint::black_box(&dump));
        std::hint::black_box(rank.dump_error_sums(&stream));
    })
}

/// FTIO's input as real FTIO computes it before writing it
/// ([`crate::bench::ftio::fill_band`]: the closed-form signal of one band, `I³`
/// elements of 16 bytes) at each Mini-Square side `I` (4 bands): `reps`
/// timings each, of bands in turn, in bytes of output (as the twin charges
/// them at `signal`).
pub fn measure_signal(sides: &[u64], reps: usize) -> Vec<CopySample> {
    time_cases(sides, reps, signal_band, copy_sample)
}

/// FTIO's input of one band at Mini-Square side `i` (4 bands): its bytes, and
/// the computation to run, of the band's blocks in turn.
fn signal_band(i: u64) -> (u64, impl FnMut()) {
    use crate::bench::ftio::{ELEM_BYTES, Geometry, Signal, fill_band};
    let geo = Geometry { i, c: 4 };
    let bytes = geo.band_elems() * ELEM_BYTES;
    let sig = Signal::new(geo.n());
    let mut band = vec![0u8; bytes as usize];
    let mut rep = 0;
    (bytes, move || {
        fill_band(std::hint::black_box(&mut band), geo, &sig, 1, 2, rep % i);
        rep += 1;
    })
}

/// FTIO's FFT kernel as real FTIO runs it (gather `I` columns of length
/// `N = I²·c` from the `c` bands, rustfft forward transforms, scatter back;
/// [`crate::bench::ftio::fft_band`]), on 4 bands at each Mini-Square side
/// `I`: `reps` timings each, flops counted as FTIO counts them (5·N·log2 N per
/// transform, as the twin charges them at `fft`).
pub fn measure_fft(sides: &[u64], reps: usize) -> Vec<FlopSample> {
    time_cases(sides, reps, fft_bands, flop_sample)
}

/// FTIO's FFT kernel on 4 bands at Mini-Square side `i`: its counted flops,
/// and the kernel to run (on its own bands).
fn fft_bands(i: u64) -> (f64, impl FnMut()) {
    use crate::bench::ftio::layout::{Geometry, LineFft, fft_band, timing_bands};
    let geo = Geometry { i, c: 4 };
    let n = geo.n() as usize;
    let mut bands = timing_bands(geo);
    let mut fft = LineFft::new(n);
    (5.0 * n as f64 * (n as f64).log2() * i as f64, move || {
        let mut slices: Vec<&mut [u8]> = bands.iter_mut().map(|b| b.as_mut_slice()).collect();
        fft_band(&mut slices, geo, &mut fft);
        std::hint::black_box(&slices);
    })
}

/// The all-cores probe of one kernel: rounds of `reps` units of it on one
/// thread alone, then on `threads` threads at once (each its own buffers,
/// started together; a thread done early runs units on, untimed, until every
/// thread is done), then alone again after the last round, so that each
/// round's rates alone and together see the same host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRounds {
    /// The kernel: `busy_work`, `bt`, `error_norm`, `fft`, `signal` or
    /// `aliased_read`.
    pub kernel: String,
    /// Units each timed run does.
    pub reps: u64,
    /// Seconds of the runs alone: one before each round, one after the last.
    pub alone_s: Vec<f64>,
    /// Per round, each thread's seconds for its units.
    pub together_s: Vec<Vec<f64>>,
}

impl KernelRounds {
    /// Per round: the threads' aggregate rate (units per second, summed)
    /// over `cores` times the mean rate alone before and after it — the part
    /// of its rate alone each core keeps while every core runs the kernel.
    pub fn kept(&self, cores: usize) -> Vec<f64> {
        let per_s = |s: f64| self.reps as f64 / s;
        self.together_s
            .iter()
            .enumerate()
            .filter_map(|(i, threads)| {
                let (before, after) = (self.alone_s.get(i)?, self.alone_s.get(i + 1)?);
                let alone = (per_s(*before) + per_s(*after)) / 2.0;
                let together: f64 = threads.iter().map(|&s| per_s(s)).sum();
                Some(together / (cores as f64 * alone))
            })
            .collect()
    }
}

/// The benchmark kernels on several threads at once: their rates while every
/// core of the node is busy, as when a node runs a rank per core or more
/// (MPI's waiting ranks poll, so their cores stay busy too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelsTogether {
    /// Threads that ran them at once.
    pub threads: usize,
    /// One entry per kernel.
    pub kernels: Vec<KernelRounds>,
}

/// How long each timed run of [`KernelRounds`] takes alone, at least.
const ROUND_RUN_S: f64 = 0.2;
/// Rounds per kernel.
const ROUNDS: usize = 3;

/// [`KernelRounds`] of the kernel whose unit `make(thread)` sets up (per
/// thread, its own buffers; the thread alone is thread 0) and returns.
fn kernel_rounds<U: FnMut()>(
    kernel: &str,
    threads: usize,
    make: &(impl Fn(usize) -> U + Sync),
) -> KernelRounds {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let timed = |unit: &mut U, reps: u64| {
        let t0 = Instant::now();
        for _ in 0..reps {
            unit();
        }
        t0.elapsed().as_secs_f64()
    };
    let mut unit = make(0);
    unit();
    let one = timed(&mut unit, 1).max(1e-6);
    let reps = ((ROUND_RUN_S / one).ceil() as u64).max(1);
    let mut alone_s = vec![timed(&mut unit, reps)];
    let mut together_s = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = std::sync::Barrier::new(threads);
        let measuring = AtomicUsize::new(threads);
        together_s.push(std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|thread| {
                    let (start, measuring) = (&start, &measuring);
                    s.spawn(move || {
                        let mut unit = make(thread);
                        unit();
                        start.wait();
                        let t = timed(&mut unit, reps);
                        measuring.fetch_sub(1, Ordering::SeqCst);
                        while measuring.load(Ordering::SeqCst) > 0 {
                            unit();
                        }
                        t
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a kernel thread"))
                .collect()
        }));
        alone_s.push(timed(&mut unit, reps));
    }
    KernelRounds {
        kernel: kernel.into(),
        reps,
        alone_s,
        together_s,
    }
}

/// The all-cores probe ([`KernelsTogether`]) on `threads` threads, of the
/// plan's largest case of each kernel: MADbench2's busy-work at the largest
/// loop count, BT's step and BTIO's error norm on the largest grid's rank 0,
/// FTIO's FFT kernel and its input at the largest Mini-Square side; and IOR's
/// data pattern filled into a buffer of `pattern_bytes` (a transfer), each
/// thread its own file's pattern.
pub fn measure_kernels_together(
    threads: usize,
    busy_loops: &[u64],
    bt_steps: &[(u64, usize)],
    fft_sides: &[u64],
    pattern_bytes: u64,
) -> KernelsTogether {
    use crate::bench::madbench2::busy_loop;
    let mut kernels = Vec::new();
    if pattern_bytes > 0 {
        kernels.push(kernel_rounds("pattern", threads, &|thread| {
            let mut buf = vec![0u8; pattern_bytes as usize];
            let mut offset = 0;
            move || {
                crate::bench::common::pattern::fill(
                    std::hint::black_box(&mut buf),
                    1,
                    thread as u64,
                    offset,
                );
                offset += pattern_bytes;
            }
        }));
    }
    if let Some(&loops) = busy_loops.iter().max() {
        kernels.push(kernel_rounds("busy_work", threads, &|_| {
            move || {
                std::hint::black_box(busy_loop(loops, BUSY_WORK_BLOCK));
            }
        }));
    }
    if let Some(&(n, ranks)) = bt_steps.iter().max_by_key(|c| c.0.pow(3) / c.1 as u64) {
        kernels.push(kernel_rounds("bt", threads, &|_| bt_step(n, ranks).1));
        kernels.push(kernel_rounds("error_norm", threads, &|_| {
            error_norm_dump(n, ranks).1
        }));
    }
    if let Some(&i) = fft_sides.iter().max() {
        kernels.push(kernel_rounds("fft", threads, &|_| fft_bands(i).1));
        kernels.push(kernel_rounds("signal", threads, &|_| signal_band(i).1));
    }
    KernelsTogether { threads, kernels }
}

/// The aliasing probe's reads on all cores at once, for
/// `nodes.cache.aliased_all_cores`: a file of `bytes` per thread, written and
/// read once (cached), then [`KernelRounds`] whose unit reads a thread's file
/// whole in 1 MiB requests at page-aligned offsets into a buffer `placed`
/// bytes past a page (as [`measure_aliased`] times them alone). The files are
/// deleted at the end.
pub fn measure_aliased_together(
    dir: &std::path::Path,
    threads: usize,
    bytes: u64,
    placed: u64,
) -> std::io::Result<KernelRounds> {
    const PAGE: usize = 4096;
    const REQUEST: usize = 1 << 20;
    with_cached_files(dir, "alias-together-probe", threads, bytes, |files| {
        let failed = std::sync::Mutex::new(None);
        let rounds = kernel_rounds("aliased_read", threads, &|thread| {
            let file = &files[thread];
            let failed = &failed;
            let mut memory = vec![1u8; REQUEST + 2 * PAGE];
            let at = (PAGE - memory.as_ptr() as usize % PAGE) % PAGE + placed as usize % PAGE;
            move || {
                if let Err(e) = read_whole(file, &mut memory[at..at + REQUEST], bytes) {
                    failed.lock().expect("no thread panicked").get_or_insert(e);
                }
            }
        });
        match failed.into_inner().expect("no thread panicked") {
            Some(e) => Err(e),
            None => Ok(rounds),
        }
    })
}
