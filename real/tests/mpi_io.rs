//! Real MPI-IO checks of piotwin-real on 4 ranks (`mpiexec -n 4`, see `common`):
//! communicator collectives, independent and collective I/O through views,
//! shared-pointer and ordered I/O, nonblocking requests, the aggregated
//! collective access, hints, errors, datatypes and POSIX files. Every check
//! verifies the data read back byte by byte.
//!
//! Before the MPI job, a one-process run with `PMI_SIZE=4` in its environment
//! (a launcher that asked for 4 processes) must be refused by `init`.

mod common;

use std::path::Path;
use std::process::ExitCode;

use piotwin_real::{Comm, File, Info, MpiType, PosixFile, RealError, wait_all};
use piotwin_types::{Datatype, Hints, Order, View};
use piotwin_types::{OpenMode, ReduceOp};

use common::datatype_cases;

const NPROCS: usize = 4;
const MISMATCH_ARG: &str = "--expect-launcher-mismatch";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(MISMATCH_ARG) {
        return expect_mismatch();
    }
    if !piotwin_real::under_launcher() && !launcher_mismatch_is_refused() {
        return ExitCode::FAILURE;
    }
    common::main(
        NPROCS,
        &[
            ("collectives", collectives),
            ("write_at independent", write_at_independent),
            ("write_at_all with a subarray view", write_at_all_subarray),
            ("write_ordered / read_ordered", ordered),
            ("write_shared / read_shared", shared),
            ("nonblocking requests", nonblocking),
            ("aggregated collective over extents", extents_all),
            ("hints round trip", hints_round_trip),
            ("MPI errors carry MPI's text", mpi_errors),
            ("delete", delete),
            ("datatypes of every variant", datatypes),
            ("POSIX files", posix),
        ],
    )
}

/// Parent side: one process, no launcher, but `PMI_SIZE=4` as hydra would set it.
fn launcher_mismatch_is_refused() -> bool {
    let exe = std::env::current_exe().expect("own executable");
    let st = std::process::Command::new(exe)
        .arg(MISMATCH_ARG)
        .env("PMI_SIZE", "4")
        .status()
        .expect("start self");
    if !st.success() {
        eprintln!("FAILED: a world of 1 under PMI_SIZE=4 was not refused ({st})");
    }
    st.success()
}

fn expect_mismatch() -> ExitCode {
    match piotwin_real::init() {
        Err(
            e @ RealError::LauncherMismatch {
                launcher_size: 4,
                world_size: 1,
                ..
            },
        ) => {
            let text = e.to_string();
            println!("refused as expected: {text}");
            let again = matches!(
                piotwin_real::init(),
                Err(RealError::LauncherMismatch { .. })
            );
            if text.contains("PMI_SIZE=4") && text.contains("differs") && again {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        other => {
            eprintln!("expected a launcher mismatch, got {other:?}");
            ExitCode::FAILURE
        }
    }
}

fn err(e: RealError) -> String {
    e.to_string()
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().expect("UTF-8 path").to_string()
}

/// Deterministic content: byte `i` of rank `r`'s data in test `salt`.
fn pattern(salt: u8, rank: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(rank as u8 * 17)
                .wrapping_add(salt)
        })
        .collect()
}

fn collectives(_: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    ensure!(n == NPROCS, "world size {n}, expected {NPROCS}");
    ensure!(
        w.bcast_u64(if r == 2 { 77 } else { 0 }, 2) == 77,
        "bcast from rank 2"
    );
    ensure!(
        w.allreduce_f64(r as f64, ReduceOp::Sum) == 6.0,
        "allreduce sum"
    );
    ensure!(
        w.allreduce_f64(r as f64, ReduceOp::Min) == 0.0,
        "allreduce min"
    );
    ensure!(
        w.allreduce_f64(r as f64, ReduceOp::Max) == 3.0,
        "allreduce max"
    );
    ensure!(
        w.allgather_f64(r as f64 * 1.5) == vec![0.0, 1.5, 3.0, 4.5],
        "allgather"
    );
    let mut buf = pattern(1, r, 64);
    w.sendrecv_replace(&mut buf, (r + 1) % n, (r + n - 1) % n)
        .map_err(err)?;
    ensure!(
        buf == pattern(1, (r + n - 1) % n, 64),
        "sendrecv_replace ring: wrong data"
    );
    // Odd ranks form one communicator ordered by descending key; rank 0 stays out.
    let color = if r == 0 { None } else { Some(r % 2) };
    let sub = w.split(color, n - r).map_err(err)?;
    match (r, sub) {
        (0, None) => {}
        (0, Some(_)) => return Err("rank 0 passed no color but got a communicator".into()),
        (_, None) => return Err("no communicator for a colored rank".into()),
        (_, Some(c)) => {
            let expect = if r % 2 == 1 {
                (2, if r == 3 { 0 } else { 1 })
            } else {
                (1, 0)
            };
            ensure!(
                (c.size(), c.rank()) == expect,
                "split: (size, rank) = {:?}, expected {expect:?}",
                (c.size(), c.rank())
            );
            ensure!(
                c.allreduce_f64(1.0, ReduceOp::Sum) == expect.0 as f64,
                "allreduce on the split communicator"
            );
        }
    }
    let t0 = piotwin_real::wtime();
    w.barrier();
    ensure!(piotwin_real::wtime() >= t0, "MPI_Wtime went backwards");
    Ok(())
}

fn open_shared(p: &str, mode: OpenMode) -> Result<File, String> {
    File::open(
        &Comm::world(),
        p,
        mode,
        &Info::from_hints(&Hints::new()).map_err(err)?,
    )
    .map_err(err)
}

fn write_at_independent(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    let p = path(dir, "indep.dat");
    let f = open_shared(&p, OpenMode::CreateReadWrite)?;
    let len = 1000;
    ensure!(
        f.write_at((r * len) as u64, &pattern(2, r, len))
            .map_err(err)?
            == len,
        "short write"
    );
    f.sync().map_err(err)?;
    w.barrier();
    f.sync().map_err(err)?;
    let peer = (r + 1) % n;
    let mut back = vec![0u8; len];
    ensure!(
        f.read_at((peer * len) as u64, &mut back).map_err(err)? == len,
        "short read"
    );
    ensure!(
        back == pattern(2, peer, len),
        "rank {peer}'s block read back wrong"
    );
    ensure!(f.size().map_err(err)? == (n * len) as u64, "file size");
    let mut tail = vec![0u8; 100];
    ensure!(
        f.read_at((n * len - 40) as u64, &mut tail).map_err(err)? == 40,
        "read across EOF must be short"
    );
    f.close().map_err(err)
}

/// An 8 × 12 array of doubles, block-decomposed over a 2 × 2 process grid.
const ROWS: u64 = 8;
const COLS: u64 = 12;

fn block_view(rank: usize) -> View {
    let (pr, pc) = (rank as u64 / 2, rank as u64 % 2);
    View {
        disp: 0,
        etype: Datatype::Double,
        filetype: Datatype::Subarray {
            sizes: vec![ROWS, COLS],
            subsizes: vec![ROWS / 2, COLS / 2],
            starts: vec![pr * ROWS / 2, pc * COLS / 2],
            order: Order::C,
            inner: Box::new(Datatype::Double),
        },
    }
}

fn block_data(rank: usize) -> Vec<u8> {
    let (pr, pc) = (rank as u64 / 2, rank as u64 % 2);
    let mut out = Vec::new();
    for i in 0..ROWS / 2 {
        for j in 0..COLS / 2 {
            let (gi, gj) = (pr * ROWS / 2 + i, pc * COLS / 2 + j);
            out.extend_from_slice(&((gi * COLS + gj) as f64).to_ne_bytes());
        }
    }
    out
}

fn check_global_array(p: &str) -> Result<(), String> {
    let f = File::open(
        &Comm::self_comm(),
        p,
        OpenMode::Read,
        &Info::from_hints(&Hints::new()).map_err(err)?,
    )
    .map_err(err)?;
    let mut all = vec![0u8; (ROWS * COLS * 8) as usize];
    ensure!(
        f.read_at(0, &mut all).map_err(err)? == all.len(),
        "short read of the whole array"
    );
    for (k, chunk) in all.chunks(8).enumerate() {
        let v = f64::from_ne_bytes(chunk.try_into().unwrap());
        ensure!(
            v == k as f64,
            "element {k} (row {}, col {}) is {v}",
            k as u64 / COLS,
            k as u64 % COLS
        );
    }
    f.close().map_err(err)
}

fn write_at_all_subarray(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let r = w.rank();
    let p = path(dir, "subarray.dat");
    let mut f = open_shared(&p, OpenMode::CreateReadWrite)?;
    f.set_view(&block_view(r)).map_err(err)?;
    let data = block_data(r);
    ensure!(
        f.write_at_all(0, &data).map_err(err)? == data.len(),
        "short collective write"
    );
    let mut back = vec![0u8; data.len()];
    f.sync().map_err(err)?;
    w.barrier();
    f.sync().map_err(err)?;
    ensure!(
        f.read_at_all(0, &mut back).map_err(err)? == data.len(),
        "short collective read"
    );
    ensure!(back == data, "collective read through the view differs");
    f.close().map_err(err)?;
    if r == 0 {
        check_global_array(&p)?;
    }
    w.barrier();
    Ok(())
}

fn ordered(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    let p = path(dir, "ordered.dat");
    let f = open_shared(&p, OpenMode::CreateReadWrite)?;
    let len = |rank: usize| (rank + 1) * 10;
    ensure!(
        f.write_ordered(&vec![r as u8 + 1; len(r)]).map_err(err)? == len(r),
        "short ordered write"
    );
    f.close().map_err(err)?;
    let f = open_shared(&p, OpenMode::Read)?;
    let mut back = vec![0u8; len(r)];
    ensure!(
        f.read_ordered(&mut back).map_err(err)? == len(r),
        "short ordered read"
    );
    ensure!(
        back.iter().all(|&b| b == r as u8 + 1),
        "ordered read returned another rank's data"
    );
    if r == 0 {
        let mut all = vec![0u8; (0..n).map(len).sum()];
        ensure!(
            f.read_at(0, &mut all).map_err(err)? == all.len(),
            "short read of the ordered file"
        );
        let expect: Vec<u8> = (0..n).flat_map(|q| vec![q as u8 + 1; len(q)]).collect();
        ensure!(all == expect, "ordered file is not in rank order: {all:?}");
    }
    f.close().map_err(err)
}

fn shared(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    let p = path(dir, "shared.dat");
    let f = open_shared(&p, OpenMode::CreateReadWrite)?;
    ensure!(
        f.write_shared(&[r as u8 + 10; 16]).map_err(err)? == 16,
        "short shared write"
    );
    f.sync().map_err(err)?;
    w.barrier();
    f.sync().map_err(err)?;
    let mut all = vec![0u8; 16 * n];
    ensure!(
        f.read_at(0, &mut all).map_err(err)? == all.len(),
        "short read"
    );
    let mut seen: Vec<u8> = all.chunks(16).map(|c| c[0]).collect();
    ensure!(
        all.chunks(16).all(|c| c.iter().all(|&b| b == c[0])),
        "interleaved shared writes"
    );
    seen.sort();
    ensure!(
        seen == (0..n as u8).map(|q| q + 10).collect::<Vec<_>>(),
        "each rank's block exactly once: {seen:?}"
    );
    f.close().map_err(err)
}

fn nonblocking(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    let p = path(dir, "nonblocking.dat");
    let f = open_shared(&p, OpenMode::CreateReadWrite)?;
    let len = 512;
    // Two independent writes per rank, then one collective pair.
    let reqs = vec![
        f.iwrite_at((2 * r * len) as u64, pattern(3, r, len))
            .map_err(err)?,
        f.iwrite_at(((2 * r + 1) * len) as u64, pattern(4, r, len))
            .map_err(err)?,
    ];
    let done = wait_all(reqs).map_err(err)?;
    ensure!(
        done.iter()
            .all(|(b, moved)| b.len() == len && *moved == len),
        "independent iwrite counts"
    );
    let coll_base = (2 * n * len) as u64;
    let coll_at = coll_base + (r * len) as u64;
    let nb_coll = piotwin_real::nonblocking_collective_io_supported();
    if nb_coll {
        let req = f.iwrite_at_all(coll_at, pattern(5, r, len)).map_err(err)?;
        ensure!(
            wait_all(vec![req]).map_err(err)?[0].1 == len,
            "iwrite_at_all count"
        );
    } else {
        // Open MPI's romio321: refused rather than crashing; write the block blocking.
        let refused = f.iwrite_at_all(coll_at, pattern(5, r, len));
        ensure!(
            matches!(refused, Err(RealError::Invalid { .. })),
            "iwrite_at_all under romio321 not refused"
        );
        f.write_at_all(coll_at, &pattern(5, r, len)).map_err(err)?;
    }
    f.sync().map_err(err)?;
    w.barrier();
    f.sync().map_err(err)?;
    let peer = (r + 2) % n;
    let reqs = vec![
        f.iread_at(((2 * peer + 1) * len) as u64, vec![0; len])
            .map_err(err)?,
        f.iread_at((2 * peer * len) as u64, vec![0; len])
            .map_err(err)?,
    ];
    let back = wait_all(reqs).map_err(err)?;
    ensure!(
        back[0] == (pattern(4, peer, len), len),
        "iread_at of the second block"
    );
    ensure!(
        back[1] == (pattern(3, peer, len), len),
        "iread_at of the first block"
    );
    let peer_at = coll_base + (peer * len) as u64;
    let back = if nb_coll {
        let req = f.iread_at_all(peer_at, vec![0; len]).map_err(err)?;
        wait_all(vec![req]).map_err(err)?.remove(0)
    } else {
        let mut b = vec![0; len];
        let n = f.read_at_all(peer_at, &mut b).map_err(err)?;
        (b, n)
    };
    ensure!(
        back == (pattern(5, peer, len), len),
        "collective read of the block"
    );
    // While a request is pending, close must refuse.
    let pending = f.iread_at(0, vec![0; 8]).map_err(err)?;
    let f = match f.close() {
        Err(RealError::Invalid { reason, .. }) if reason.contains("pending") => {
            drop(pending);
            open_shared(&p, OpenMode::Read)?
        }
        other => return Err(format!("close with a pending request: {other:?}")),
    };
    ensure!(f.size().map_err(err)? == (3 * n * len) as u64, "file size");
    f.close().map_err(err)
}

fn extents_all(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let (r, n) = (w.rank(), w.size());
    let p = path(dir, "extents.dat");
    let mut f = open_shared(&p, OpenMode::CreateReadWrite)?;
    // A view of doubles from byte 64 stays in effect around the aggregated calls.
    let view = View {
        disp: 64,
        etype: Datatype::Double,
        filetype: Datatype::Double,
    };
    f.set_view(&view).map_err(err)?;
    // Rank r owns pieces k·n + r of 40 bytes each, given in reverse file order;
    // the last rank contributes nothing.
    let piece = 40u64;
    let pieces: Vec<(u64, Vec<u8>)> = if r == n - 1 {
        Vec::new()
    } else {
        (0..5u64)
            .rev()
            .map(|k| {
                (
                    (k * n as u64 + r as u64) * piece,
                    pattern(6 + k as u8, r, piece as usize),
                )
            })
            .collect()
    };
    let writes: Vec<(u64, &[u8])> = pieces.iter().map(|(o, d)| (*o, d.as_slice())).collect();
    let (wrote, read) = f.xfer_extents_all(&writes, &mut []).map_err(err)?;
    ensure!(
        (wrote, read) == (pieces.len() * piece as usize, 0),
        "moved ({wrote}, {read})"
    );
    ensure!(f.view() == &view, "the previous view was not kept");
    f.sync().map_err(err)?;
    w.barrier();
    f.sync().map_err(err)?;
    // Read the next rank's pieces back in a different order.
    let peer = (r + 1) % n;
    let mut bufs: Vec<(u64, Vec<u8>)> = if peer == n - 1 {
        Vec::new()
    } else {
        (0..5u64)
            .map(|k| {
                (
                    (k * n as u64 + peer as u64) * piece,
                    vec![0u8; piece as usize],
                )
            })
            .collect()
    };
    let mut reads: Vec<(u64, &mut [u8])> = bufs
        .iter_mut()
        .map(|(o, b)| (*o, b.as_mut_slice()))
        .collect();
    let (_, read) = f.xfer_extents_all(&[], &mut reads).map_err(err)?;
    ensure!(read == bufs.len() * piece as usize, "read {read} bytes");
    for (k, (_, b)) in bufs.iter().enumerate() {
        ensure!(
            *b == pattern(6 + k as u8, peer, piece as usize),
            "piece {k} of rank {peer} read back wrong"
        );
    }
    // The restored view is really in effect: element 0 of the view is file byte 64.
    if r == 0 {
        let mut via_view = [0u8; 8];
        let mut direct = [0u8; 8];
        f.read_at(0, &mut via_view).map_err(err)?;
        let g = File::open(
            &Comm::self_comm(),
            &p,
            OpenMode::Read,
            &Info::from_hints(&Hints::new()).map_err(err)?,
        )
        .map_err(err)?;
        g.read_at(64, &mut direct).map_err(err)?;
        g.close().map_err(err)?;
        ensure!(
            via_view == direct,
            "offset 0 of the restored view is not file byte 64"
        );
    }
    f.close().map_err(err)
}

fn hints_round_trip(dir: &Path) -> Result<(), String> {
    let p = path(dir, "hints.dat");
    let mut h = Hints::new();
    h.set("cb_buffer_size", "1048576");
    let f = File::open(
        &Comm::world(),
        &p,
        OpenMode::CreateReadWrite,
        &Info::from_hints(&h).map_err(err)?,
    )
    .map_err(err)?;
    let back = f.info().map_err(err)?;
    ensure!(
        back.get("cb_buffer_size") == Some("1048576"),
        "cb_buffer_size read back as {:?}; all: {back:?}",
        back.get("cb_buffer_size")
    );
    f.close().map_err(err)
}

fn mpi_errors(dir: &Path) -> Result<(), String> {
    let p = path(dir, "no-such-file.dat");
    match open_shared(&p, OpenMode::Read).map(|_| ()) {
        Ok(()) => Err("opening a missing file for reading succeeded".into()),
        Err(text) => {
            ensure!(
                text.starts_with("MPI_File_open on `") && text.contains(&p),
                "error does not name the call and file: {text}"
            );
            ensure!(text.contains("MPI error code"), "no MPI error code: {text}");
            let msg = text.split(": ").nth(1).unwrap_or("");
            ensure!(
                msg.len() > 5 && !msg.starts_with("unknown"),
                "no MPI error text: {text}"
            );
            Ok(())
        }
    }
}

fn delete(dir: &Path) -> Result<(), String> {
    let w = Comm::world();
    let p = path(dir, &format!("delete-{}.dat", w.rank()));
    ensure!(
        !File::delete(&p).map_err(err)?,
        "deleting a missing file reported a deletion"
    );
    std::fs::write(&p, b"x").map_err(|e| e.to_string())?;
    ensure!(
        File::delete(&p).map_err(err)?,
        "deleting an existing file reported none"
    );
    ensure!(!Path::new(&p).exists(), "the file is still there");
    Ok(())
}

fn datatypes(_: &Path) -> Result<(), String> {
    let r = Comm::world().rank() as u64;
    for (name, d, size, extent) in datatype_cases(r) {
        let t = MpiType::build(&d).map_err(|e| format!("{name}: {e}"))?;
        let got = (t.size().map_err(err)?, t.lb_extent().map_err(err)?.1);
        ensure!(
            got == (size, extent),
            "{name}: MPI says (size, extent) = {got:?}, expected {:?}",
            (size, extent)
        );
    }
    // Counts beyond MPI's int are errors, not wraps.
    let big = Datatype::Contiguous {
        count: 1 << 31,
        inner: Box::new(Datatype::Byte),
    };
    match MpiType::build(&big) {
        Err(RealError::Invalid {
            call: "MPI_Type_contiguous",
            ..
        }) => {}
        other => {
            return Err(format!(
                "count 2^31: expected an Invalid error, got {:?}",
                other.map(|_| ())
            ));
        }
    }
    let nested = Datatype::Vector {
        count: 2,
        blocklen: 1,
        stride: -(1 << 33),
        inner: Box::new(Datatype::Double),
    };
    ensure!(MpiType::build(&nested).is_err(), "stride -2^33 accepted");
    Ok(())
}

fn posix(dir: &Path) -> Result<(), String> {
    let r = Comm::world().rank();
    let p = path(dir, &format!("posix-{r}.dat"));
    let f = PosixFile::open(&p, OpenMode::Create).map_err(err)?;
    let data = pattern(9, r, 3000);
    ensure!(f.write_at(100, &data).map_err(err)? == 3000, "short pwrite");
    f.sync().map_err(err)?;
    ensure!(f.size().map_err(err)? == 3100, "size after pwrite");
    drop(f);
    let f = PosixFile::open(&p, OpenMode::Read).map_err(err)?;
    let mut back = vec![0u8; 4000];
    ensure!(
        f.read_at(100, &mut back).map_err(err)? == 3000,
        "pread across EOF must be short"
    );
    ensure!(back[..3000] == data[..], "pread data");
    match f.write_at(0, b"no") {
        Err(e @ RealError::Os { call: "pwrite", .. }) => {
            ensure!(e.to_string().contains(&p), "error lacks the path: {e}")
        }
        other => return Err(format!("pwrite on a read-only file: {other:?}")),
    }
    match PosixFile::open(&path(dir, "missing/x"), OpenMode::Read) {
        Err(e) => ensure!(e.to_string().contains("No such file"), "open error: {e}"),
        Ok(_) => return Err("opening a missing file succeeded".into()),
    }
    Ok(())
}
