//! piotwin's real back end (skeleton: filled in by the core issue).
#![warn(missing_docs, unreachable_pub)]

/// An error from MPI or the OS, carrying MPI's error string.
#[derive(Debug, thiserror::Error)]
#[error("MPI error")]
pub struct RealError;
