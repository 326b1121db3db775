//! Ranks agreeing on an outcome: the lowest rank where something holds, the
//! first failure of a step (its message broadcast from the rank that had it),
//! the first data mismatch found, every rank's measurements. Each is a fixed sequence of collectives, the
//! same on every rank, so every rank takes the same branch afterwards.

use crate::ctx::{IoCtx, ReduceOp};

use super::pattern::Mismatch;

/// The lowest rank where `holds`, agreed by all (one all-reduce); `None` where
/// it holds nowhere.
pub async fn lowest_rank<C: IoCtx>(ctx: &C, holds: bool) -> Option<usize> {
    let mine = if holds {
        ctx.rank() as f64
    } else {
        f64::INFINITY
    };
    let who = ctx.allreduce_f64(mine, ReduceOp::Min).await;
    who.is_finite().then_some(who as usize)
}

/// A step failed on some rank: the message every rank agreed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StepFailed(pub String);

impl From<StepFailed> for String {
    fn from(e: StepFailed) -> String {
        e.0
    }
}

/// The outcome of a step every rank has finished (a collective: it also
/// synchronises the ranks like a barrier): `Ok` on every rank when every rank
/// succeeded; otherwise the same message on every rank, naming `step`, the
/// lowest failing rank and its error (broadcast from that rank).
pub async fn first_failure<C: IoCtx, E: std::fmt::Display>(
    ctx: &C,
    step: &str,
    result: Result<(), E>,
) -> Result<(), StepFailed> {
    let rank = ctx.rank();
    let Some(who) = lowest_rank(ctx, result.is_err()).await else {
        return Ok(());
    };
    let text = match &result {
        Err(e) if who == rank => format!("{step}: rank {rank}: {e}"),
        _ => String::new(),
    };
    Err(StepFailed(bcast_text(ctx, &text, who).await))
}

/// The failure a checkpoint reported ([`IoCtx::checkpoint`] said `failed`),
/// on every rank: the lowest failing rank's error (`mine`: this rank's, if it
/// failed), named by `step`.
pub async fn agreed_failure<C: IoCtx, E: std::fmt::Display>(
    ctx: &C,
    step: &str,
    mine: Option<E>,
) -> StepFailed {
    match first_failure(ctx, step, mine.map_or(Ok(()), Err)).await {
        Err(agreed) => agreed,
        Ok(()) => unreachable!("a checkpoint said that a rank failed"),
    }
}

/// `text` from `root` on every rank (its length, then 8 bytes per `bcast_u64`).
pub async fn bcast_text<C: IoCtx>(ctx: &C, text: &str, root: usize) -> String {
    let len = ctx.bcast_u64(text.len() as u64, root).await as usize;
    let mut bytes = Vec::with_capacity(len);
    let mine = text.as_bytes();
    for k in (0..len).step_by(8) {
        let mut word = [0u8; 8];
        if let Some(src) = mine.get(k..(k + 8).min(len)) {
            word[..src.len()].copy_from_slice(src);
        }
        let word = ctx.bcast_u64(u64::from_le_bytes(word), root).await;
        bytes.extend_from_slice(&word.to_le_bytes()[..(len - k).min(8)]);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The first mismatch of the lowest rank that found one (`mine`: this rank's
/// first, if any), on every rank: that rank and its mismatch. Call it only
/// when some rank found one.
pub async fn first_mismatch<C: IoCtx>(ctx: &C, mine: Option<Mismatch>) -> (usize, Mismatch) {
    let who = lowest_rank(ctx, mine.is_some())
        .await
        .expect("a rank found a mismatch");
    let m = mine.unwrap_or(Mismatch {
        offset: 0,
        expected: 0,
        got: 0,
    });
    let offset = ctx.bcast_u64(m.offset, who).await;
    let expected = ctx.bcast_u64(m.expected as u64, who).await as u8;
    let got = ctx.bcast_u64(m.got as u64, who).await as u8;
    (
        who,
        Mismatch {
            offset,
            expected,
            got,
        },
    )
}

/// Every rank's `fields` on every rank, indexed by rank (one `allgather_f64`
/// per field: a real process sees only its own rank's measurements, and so can
/// build the same report as the twin). Every rank passes as many fields.
pub async fn gather_fields<C: IoCtx>(ctx: &C, fields: Vec<f64>) -> Vec<Vec<f64>> {
    let mut columns = Vec::with_capacity(fields.len());
    for x in fields {
        columns.push(ctx.allgather_f64(x).await);
    }
    (0..ctx.size())
        .map(|r| columns.iter().map(|c| c[r]).collect())
        .collect()
}
