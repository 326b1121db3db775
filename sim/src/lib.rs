//! piotwin's twin (skeleton: filled in by the core issue).
#![warn(missing_docs, unreachable_pub)]

/// A storage-system scenario loaded from TOML.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name.
    pub name: String,
    /// The scenario's default RNG seed.
    pub seed: u64,
}

impl Scenario {
    /// Loads and checks a scenario file.
    pub fn load(path: &std::path::Path) -> Result<Scenario, ScenarioError> {
        let _ = path;
        todo!("piotwin-sim: Scenario::load (placeholder in h-ior; the sim branch defines it)")
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "scenario {}", self.name)
    }
}

/// An error in a scenario file.
#[derive(Debug, thiserror::Error)]
#[error("scenario error")]
pub struct ScenarioError;

/// An error in the simulation.
#[derive(Debug, thiserror::Error)]
#[error("simulation error")]
pub struct SimError;
