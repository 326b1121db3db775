//! The back-end checks, written once against `IoCtx` and run on both back
//! ends: `tests/real_backend.rs` (4 MPI processes over MPI-IO, every byte read
//! back and compared) and `tests/sim_backend.rs` (4 twin ranks: the same calls,
//! sizes and errors; data checks where the back end keeps data).

use piotwin::ctx::{
    Access, Api, Coordination, Datatype, Hints, IoBuf, IoCtx, IoError, Kernel, Op, OpenMode,
    OpenOptions, RankProgram, ReduceOp, Scope, View,
};
use piotwin_types::Order;

/// Ranks the checks expect.
pub const NPROCS: usize = 4;
const ROWS: u64 = 8;
const COLS: u64 = 12;

/// The checks, run on every rank; `dir` is where their files go.
pub struct Checks {
    /// The directory their files go in.
    pub dir: String,
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

fn e(err: IoError) -> String {
    err.to_string()
}

fn pattern(salt: u8, rank: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u8)
                .wrapping_mul(13)
                .wrapping_add(rank as u8 * 29)
                .wrapping_add(salt)
        })
        .collect()
}

/// A buffer holding `data` where the back end keeps data (real), else its
/// length (twin).
fn buf_from<C: IoCtx>(ctx: &C, data: &[u8]) -> Result<C::Buf, String> {
    let mut b = ctx.alloc(data.len());
    if let Some(bytes) = b.bytes_mut() {
        bytes.copy_from_slice(data);
    }
    Ok(b)
}

/// Whether `b` holds `expected`: its data where the back end keeps data, else
/// (twin) its length.
fn holds<B: IoBuf>(b: &B, expected: &[u8]) -> bool {
    match b.bytes() {
        Some(bytes) => bytes == expected,
        None => b.len() == expected.len(),
    }
}

fn opts(mode: OpenMode, scope: Scope, api: Api) -> OpenOptions {
    OpenOptions {
        mode,
        scope,
        api,
        hints: Hints::new(),
        unique_open: false,
    }
}

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
            out.extend_from_slice(
                &(((pr * ROWS / 2 + i) * COLS + pc * COLS / 2 + j) as f64).to_ne_bytes(),
            );
        }
    }
    out
}

async fn check_global_array<C: IoCtx>(ctx: &C, path: &str) -> Result<(), String> {
    let mut f = ctx
        .open(path, &opts(OpenMode::Read, Scope::Private, Api::MpiIo))
        .await
        .map_err(e)?;
    let mut all = ctx.alloc((ROWS * COLS * 8) as usize);
    ensure!(
        ctx.xfer(&mut f, Op::read_at(0), &mut all)
            .await
            .map_err(e)?
            == all.len(),
        "short read"
    );
    for (k, c) in all.bytes().unwrap_or_default().chunks(8).enumerate() {
        let v = f64::from_ne_bytes(c.try_into().unwrap());
        ensure!(v == k as f64, "element {k} of {path} is {v}");
    }
    ctx.close(f).await.map_err(e)
}

impl Checks {
    async fn collectives<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        let (r, n) = (ctx.rank(), ctx.size());
        ensure!(n == NPROCS, "size {n}");
        ctx.barrier().await;
        ensure!(ctx.bcast_u64(r as u64 + 40, 1).await == 41, "bcast");
        ensure!(
            ctx.allreduce_f64(r as f64, ReduceOp::Sum).await == 6.0,
            "allreduce sum"
        );
        ensure!(
            ctx.allreduce_f64(r as f64, ReduceOp::Max).await == 3.0,
            "allreduce max"
        );
        ensure!(
            ctx.allreduce_f64(r as f64, ReduceOp::Min).await == 0.0,
            "allreduce min"
        );
        ensure!(
            ctx.allgather_f64(r as f64).await == vec![0.0, 1.0, 2.0, 3.0],
            "allgather"
        );
        let mut b = buf_from(ctx, &pattern(1, r, 100))?;
        ctx.sendrecv_replace(&mut b, (r + n - 1) % n, (r + 1) % n)
            .await;
        ensure!(holds(&b, &pattern(1, (r + 1) % n, 100)), "sendrecv_replace");
        let sub = ctx.split((r >= 1).then_some(0), 0).await;
        match sub {
            Some(s) => ensure!(
                r >= 1 && s.size() == 3 && s.rank() == r - 1,
                "split rank/size"
            ),
            None => ensure!(r == 0, "split: rank {r} got no context"),
        }
        ensure!(
            ctx.compute(Kernel::memcpy(8), || 6 * 7)
                .await
                .is_none_or(|v| v == 42),
            "compute runs the work where it runs it"
        );
        let t = ctx.wtime();
        ensure!(ctx.wtime() >= t, "wtime");
        Ok(())
    }

    async fn mpiio_families<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        let (r, n) = (ctx.rank(), ctx.size());
        let path = format!("{}/families.dat", self.dir);
        let mut o = opts(OpenMode::CreateReadWrite, Scope::Shared, Api::MpiIo);
        o.hints.set("cb_buffer_size", "2097152");
        let mut f = ctx.open(&path, &o).await.map_err(e)?;
        let h = ctx.hints_in_effect(&f);
        ensure!(
            h.get("cb_buffer_size") == Some("2097152"),
            "hints in effect: {h:?}"
        );
        let len = 256;
        // Independent block r, collective block n + r.
        let mut b = buf_from(ctx, &pattern(2, r, len))?;
        ensure!(
            ctx.xfer(&mut f, Op::write_at((r * len) as u64), &mut b)
                .await
                .map_err(e)?
                == len,
            "write_at"
        );
        let mut b = buf_from(ctx, &pattern(3, r, len))?;
        ensure!(
            ctx.xfer(&mut f, Op::write_at_all(((n + r) * len) as u64), &mut b)
                .await
                .map_err(e)?
                == len,
            "write_at_all"
        );
        ctx.sync(&mut f).await.map_err(e)?;
        ctx.barrier().await;
        ctx.sync(&mut f).await.map_err(e)?;
        let peer = (r + 1) % n;
        let mut b = ctx.alloc(len);
        ctx.xfer(&mut f, Op::read_at((peer * len) as u64), &mut b)
            .await
            .map_err(e)?;
        ensure!(
            holds(&b, &pattern(2, peer, len)),
            "read_at of rank {peer}'s block"
        );
        ctx.xfer(&mut f, Op::read_at_all(((n + peer) * len) as u64), &mut b)
            .await
            .map_err(e)?;
        ensure!(
            holds(&b, &pattern(3, peer, len)),
            "read_at_all of rank {peer}'s block"
        );
        ensure!(
            ctx.file_size(&mut f).await.map_err(e)? == (2 * n * len) as u64,
            "file size"
        );
        // Nonblocking independent: two posts, returned in order.
        let reqs = vec![
            ctx.post(&mut f, Op::read_at(((n + r) * len) as u64), ctx.alloc(len))
                .await
                .map_err(e)?,
            ctx.post(&mut f, Op::read_at((r * len) as u64), ctx.alloc(len))
                .await
                .map_err(e)?,
        ];
        let back = ctx.wait_all(&mut f, reqs).await.map_err(e)?;
        ensure!(
            holds(&back[0], &pattern(3, r, len)),
            "iread_at order/data (0)"
        );
        ensure!(
            holds(&back[1], &pattern(2, r, len)),
            "iread_at order/data (1)"
        );
        ctx.close(f).await.map_err(e)?;
        // Ordered: rank order, sizes differ per rank.
        let path = format!("{}/ordered.dat", self.dir);
        ctx.delete(&path).await.map_err(e)?;
        let mut f = ctx
            .open(
                &path,
                &opts(OpenMode::CreateReadWrite, Scope::Shared, Api::MpiIo),
            )
            .await
            .map_err(e)?;
        let mut b = buf_from(ctx, &vec![r as u8 + 1; r + 1])?;
        ctx.xfer(&mut f, Op::write_ordered(), &mut b)
            .await
            .map_err(e)?;
        ctx.close(f).await.map_err(e)?;
        let mut f = ctx
            .open(&path, &opts(OpenMode::Read, Scope::Shared, Api::MpiIo))
            .await
            .map_err(e)?;
        let mut b = ctx.alloc(r + 1);
        ctx.xfer(&mut f, Op::read_ordered(), &mut b)
            .await
            .map_err(e)?;
        ensure!(holds(&b, &vec![r as u8 + 1; r + 1]), "read_ordered");
        let mut all = ctx.alloc(10);
        ctx.xfer(&mut f, Op::read_at(0), &mut all)
            .await
            .map_err(e)?;
        ensure!(
            holds(&all, &[1, 2, 2, 3, 3, 3, 4, 4, 4, 4]),
            "ordered layout {:?}",
            all.bytes()
        );
        ctx.close(f).await.map_err(e)
    }

    async fn subarray_view<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        let r = ctx.rank();
        let path = format!("{}/view.dat", self.dir);
        let mut f = ctx
            .open(
                &path,
                &opts(OpenMode::CreateReadWrite, Scope::Shared, Api::MpiIo),
            )
            .await
            .map_err(e)?;
        ctx.set_view(&mut f, &block_view(r)).await.map_err(e)?;
        let mut b = buf_from(ctx, &block_data(r))?;
        ctx.xfer(&mut f, Op::write_at_all(0), &mut b)
            .await
            .map_err(e)?;
        ctx.close(f).await.map_err(e)?;
        ctx.barrier().await;
        if r == 0 {
            check_global_array(ctx, &path).await?;
        }
        ctx.barrier().await;
        Ok(())
    }

    async fn posix_and_errors<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        let r = ctx.rank();
        let path = format!("{}/posix-{r}.dat", self.dir);
        let mut f = ctx
            .open(
                &path,
                &opts(OpenMode::CreateReadWrite, Scope::Private, Api::Posix),
            )
            .await
            .map_err(e)?;
        let mut b = buf_from(ctx, &pattern(4, r, 500))?;
        ctx.xfer(&mut f, Op::write_at(0), &mut b).await.map_err(e)?;
        // "Collective" on POSIX is independent.
        let req = ctx.post(
            &mut f,
            Op::at(Access::Write, Coordination::Collective, 500),
            buf_from(ctx, &[9; 20])?,
        );
        let req = req.await.map_err(e)?;
        ctx.wait_all(&mut f, vec![req]).await.map_err(e)?;
        ctx.sync(&mut f).await.map_err(e)?;
        ensure!(ctx.file_size(&mut f).await.map_err(e)? == 520, "POSIX size");
        let mut back = ctx.alloc(600);
        ensure!(
            ctx.xfer(&mut f, Op::read_at(0), &mut back)
                .await
                .map_err(e)?
                == 520,
            "short POSIX read"
        );
        let mut expected = pattern(4, r, 500);
        expected.extend([9; 20]);
        ensure!(
            back.bytes().is_none_or(|b| b[..520] == expected[..]),
            "POSIX data"
        );
        ensure!(
            matches!(
                ctx.set_view(&mut f, &View::bytes()).await,
                Err(IoError::Invalid(_))
            ),
            "set_view on a POSIX file must be refused"
        );
        ensure!(
            matches!(
                ctx.xfer(&mut f, Op::write_shared(), &mut back).await,
                Err(IoError::Invalid(_))
            ),
            "shared pointer on a POSIX file must be refused"
        );
        ensure!(
            ctx.hints_in_effect(&f).is_empty(),
            "POSIX files have no hints"
        );
        ctx.close(f).await.map_err(e)?;
        // Errors name the call, the file and the back end's words (MPI's in
        // real mode); deleting a missing file is fine.
        let missing = format!("{}/missing-{r}.dat", self.dir);
        match ctx
            .open(&missing, &opts(OpenMode::Read, Scope::Private, Api::MpiIo))
            .await
        {
            Err(IoError::Call { op, path, message }) => {
                ensure!(
                    op.contains("open") && path == missing && !message.is_empty(),
                    "error {op} {path} {message}"
                )
            }
            Err(other) => return Err(format!("unexpected error kind: {other}")),
            Ok(_) => return Err("opening a missing file succeeded".into()),
        }
        ctx.delete(&missing).await.map_err(e)?;
        ctx.delete(&path).await.map_err(e)?;
        ensure!(
            !std::path::Path::new(&path).exists(),
            "delete left the file"
        );
        Ok(())
    }

    async fn collective_requests<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        let r = ctx.rank();
        let path = format!("{}/wait_all.dat", self.dir);
        let mut f = ctx
            .open(
                &path,
                &opts(OpenMode::CreateReadWrite, Scope::Shared, Api::MpiIo),
            )
            .await
            .map_err(e)?;
        ctx.set_view(&mut f, &block_view(r)).await.map_err(e)?;
        let data = block_data(r);
        let half = data.len() / 2;
        // The second half first: offsets are in etypes (doubles) of the view.
        let reqs = vec![
            ctx.post(
                &mut f,
                Op::write_at_all((half / 8) as u64),
                buf_from(ctx, &data[half..])?,
            )
            .await
            .map_err(e)?,
            ctx.post(&mut f, Op::write_at_all(0), buf_from(ctx, &data[..half])?)
                .await
                .map_err(e)?,
        ];
        ctx.wait_all(&mut f, reqs).await.map_err(e)?;
        ctx.sync(&mut f).await.map_err(e)?;
        ctx.barrier().await;
        ctx.sync(&mut f).await.map_err(e)?;
        let reqs = vec![
            ctx.post(&mut f, Op::read_at_all(0), ctx.alloc(half))
                .await
                .map_err(e)?,
            ctx.post(&mut f, Op::read_at_all((half / 8) as u64), ctx.alloc(half))
                .await
                .map_err(e)?,
        ];
        let back = ctx.wait_all(&mut f, reqs).await.map_err(e)?;
        ensure!(
            holds(&back[0], &data[..half]) && holds(&back[1], &data[half..]),
            "collective reads"
        );
        ctx.close(f).await.map_err(e)?;
        if r == 0 {
            check_global_array(ctx, &path).await?;
        }
        Ok(())
    }
}

impl RankProgram for Checks {
    type Output = Result<(), String>;
    async fn run<C: IoCtx>(&self, ctx: &C) -> Result<(), String> {
        self.collectives(ctx)
            .await
            .map_err(|m| format!("collectives: {m}"))?;
        self.mpiio_families(ctx)
            .await
            .map_err(|m| format!("MPI-IO families: {m}"))?;
        self.subarray_view(ctx)
            .await
            .map_err(|m| format!("subarray view: {m}"))?;
        self.posix_and_errors(ctx)
            .await
            .map_err(|m| format!("POSIX and errors: {m}"))?;
        self.collective_requests(ctx)
            .await
            .map_err(|m| format!("collective requests: {m}"))?;
        Ok(())
    }
}
