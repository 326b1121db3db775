//! A request to stop the run early: the signal (SIGINT, SIGTERM) this process
//! received. The binary's handler records it here; the back ends read it at a
//! benchmark's checkpoints ([`requested`]) and at a time-driven loop's
//! decision, so every layer sees the same request without knowing signals.

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal number received, 0 for none. Written from a signal handler:
/// an atomic store is async-signal-safe.
static REQUESTED: AtomicI32 = AtomicI32::new(0);

/// Records that `signal` asked the run to stop (the first request wins).
pub fn request(signal: i32) {
    let _ = REQUESTED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
}

/// The signal that asked the run to stop, if one did.
pub fn requested() -> Option<i32> {
    match REQUESTED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The conventional name of a stop signal: `SIGINT`, `SIGTERM`, else `signal N`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        s => format!("signal {s}"),
    }
}

/// What every rank agreed at a checkpoint: whether a stop request came, and
/// whether some rank failed (a failing rank keeps taking part in checkpoints
/// until they say stop, so that no partner waits for it in a collective).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checkpoint {
    /// The stop request (signal number) some rank received.
    pub signal: Option<i32>,
    /// Some rank reported a failure.
    pub failed: bool,
}
