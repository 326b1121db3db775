//! piotwin's twin (skeleton: filled in by the core issue).
#![warn(missing_docs, unreachable_pub)]

/// A storage-system scenario loaded from TOML.
#[derive(Debug, Clone)]
pub struct Scenario {}

/// An error in the simulation.
#[derive(Debug, thiserror::Error)]
#[error("simulation error")]
pub struct SimError;
