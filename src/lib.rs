//! webtune: find, by measurement, the configuration that makes a web server serve the most
//! within its memory.
//!
//! The modules follow the data flow:
//!
//! - [`cli`]: the command line, parsed (raw flags) then validated into plans.
//! - [`engine`]: the load engine. Drives requests, emits one record per request to sinks;
//!   never prints.
//! - [`aggregate`]: sinks that turn records into figures (histograms, counters) and the
//!   plain-data result every exporter reads.
//! - [`lab`]: the embedded pre-forking test server (`webtune lab`), the default target.
//! - [`report`]: exporters, one per format (text, JSON, HdrHistogram log, progress line).
//! - [`sys`]: the OS facts the tool needs (its CPU use, file-descriptor limits).

pub mod aggregate;
pub mod bench;
pub mod cli;
pub mod engine;
pub mod input;
pub mod lab;
pub mod procmem;
pub mod report;
pub mod server;
pub mod stats;
pub mod store;
pub mod sys;
pub mod syscalls;
pub mod tune;
