//! webtune: find, by measurement, the configuration that makes a web server serve the most
//! within its memory.
//!
//! The modules follow the data flow, target file -> server -> bench engine + /proc sampler ->
//! aggregate -> store -> report, with the tuner driving trials through that chain. They are
//! listed here from the top down, and nothing lower imports anything higher: a module imports
//! only from the modules listed after it (tests/architecture.rs checks this, and that no two
//! files import each other in a circle).
//!
//! - [`cli`]: the command line: flags mapped onto the library's types, printing, exit codes,
//!   and `--fail-if` thresholds (`cli::gate`), judged against a bench run or between two
//!   stored runs.
//! - [`report`]: exporters: the output formats (text, JSON, CSV, markdown: `report::format`
//!   says which report is written how), HTML, the progress line, and output files.
//! - [`store`]: the SQLite history of every bench run and tune point.
//! - [`tune`]: the tuner: trials (launch, warm, load, sample memory), strategies, evidence.
//! - [`server`]: the real servers, launched from a target file through one adapter each, in
//!   private run directories and process groups; stopped on drop.
//! - [`bench`]: the bench pipeline as a library: [`bench::BenchSpec`] -> [`bench::BenchPlan`]
//!   -> [`bench::run`] / [`bench::drive`] -> [`aggregate::BenchReport`].
//! - [`aggregate`]: sinks that turn records into figures (histograms, counters) and the
//!   plain-data result every exporter reads.
//! - [`procmem`]: what processes really cost, from /proc (RSS, PSS, USS, shared), and the
//!   seeds' memory arithmetic.
//! - [`lab`]: the embedded pre-forking test server (`webtune lab`), the default target.
//! - [`fileset`]: a static workload: a SPECweb96 file set on disk and its weighted
//!   URL list.
//! - [`safe_write`]: the one rule for every file written at a path the user named.
//! - [`sys`]: the OS facts the tool needs (its CPU use, file-descriptor limits, Ctrl-C).
//! - [`syscalls`]: system calls per request, from strace.
//! - [`stats`]: the statistics the tuner and the history share.
//! - [`engine`]: the load engine. Drives requests, emits one record per request to sinks;
//!   never prints.
//! - [`input`]: the input vocabulary (durations, sizes, bandwidths, shares, headers) and
//!   [`input::InputError`], the bad-input error every layer returns.

/// The version and the commit built from (build.rs), as `webtune --version` prints them and
/// `--remote` compares them: "0.1.0 (0123456789ab)", "-dirty" after it for uncommitted changes.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WEBTUNE_COMMIT"), ")");

pub mod aggregate;
pub mod bench;
pub mod cli;
pub mod engine;
pub mod fileset;
pub mod input;
pub mod lab;
pub mod procmem;
pub mod report;
pub mod safe_write;
pub mod server;
pub mod stats;
pub mod store;
pub mod sys;
pub mod syscalls;
pub mod tune;
