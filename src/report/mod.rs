//! Exporters: each turns a report (plain data, never engine types) into one format.

pub mod compare;
pub mod csv;
pub mod format;
pub mod html;
pub mod json;
pub mod markdown;
pub mod mem;
pub mod progress;
pub mod svg;
pub mod syscalls;
pub mod text;

pub use format::{Format, Report};
