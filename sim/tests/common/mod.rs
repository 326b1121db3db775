//! Helpers shared by the twin's integration tests.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use piotwin_sim::{Rank, Scenario, SimError, SimOptions, Twin};

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Runs `body` on each of `n` ranks of a twin of `scn` seeded with `seed`;
/// returns what each rank returned, in rank order, or the twin's error
/// (a deadlock, a bad scenario).
pub fn try_run<T: 'static>(
    scn: &Scenario,
    n: usize,
    seed: u64,
    body: impl AsyncFn(&Rank) -> T,
) -> Result<Vec<T>, SimError> {
    let twin = Twin::new(scn, n, SimOptions::seeded(seed))?;
    let ranks: Vec<Rank> = (0..n).map(|r| twin.rank(r)).collect();
    let out: Vec<RefCell<Option<T>>> = (0..n).map(|_| RefCell::new(None)).collect();
    let body = &body;
    let tasks: Vec<Task<'_>> = ranks
        .iter()
        .zip(&out)
        .map(|(r, o)| Box::pin(async move { *o.borrow_mut() = Some(body(r).await) }) as Task<'_>)
        .collect();
    twin.run(tasks)?;
    Ok(out.into_iter().map(|o| o.into_inner().unwrap()).collect())
}

/// Runs `body` on each of `n` ranks of a twin of `scn` (seed 1); returns what
/// each rank returned, in rank order.
#[allow(dead_code)] // not every test file that shares this module uses it
pub fn run<T: 'static>(scn: &Scenario, n: usize, body: impl AsyncFn(&Rank) -> T) -> Vec<T> {
    try_run(scn, n, 1, body).unwrap()
}
