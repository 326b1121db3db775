//! The benchmarks, one file each, written once against [`crate::ctx::IoCtx`].

pub mod beff_io;
pub mod btio;
pub mod common;
pub mod ftio;
pub mod ior;
pub mod iozone;
pub mod pingpong;
