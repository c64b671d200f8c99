//! Turns per-request records into run figures: per-thread sinks merged into a `BenchResult`.

pub mod breakdown;
pub mod codec;
pub mod intervals;
pub mod log_summary;
pub mod merge;
pub mod progress;
pub mod result;
pub mod summary;

pub use result::BenchReport;
pub use summary::Summary;
