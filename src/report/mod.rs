//! Exporters: each turns a `BenchReport` (plain data, never engine types) into one format.

pub mod hdrlog;
pub mod json;
pub mod progress;
pub mod text;
