//! The benchmarks, one file each, written once against [`crate::ctx::IoCtx`].

pub mod btio;
pub mod ftio;
pub mod ior;
