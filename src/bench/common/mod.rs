//! What the benchmarks share: option types ([`options`]), the data pattern
//! they write and check ([`pattern`]), ranks agreeing on an outcome
//! ([`agree`]) and summary statistics ([`stats`]). Nothing here knows a
//! particular benchmark.

pub mod agree;
pub mod options;
pub mod pattern;
pub mod stats;
