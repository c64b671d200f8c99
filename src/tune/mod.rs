//! `webtune tune`: the seeds' method automated. A trial launches the server in one
//! configuration, warms it, loads it and samples its memory; strategies choose which trials
//! to run and what the evidence says; every point is saved as soon as it is measured.

pub mod baseline;
pub mod evidence;
pub mod journal;
pub mod kept;
pub mod launcher;
pub mod noise;
pub mod objective;
pub mod outcome;
pub mod point;
pub mod step;
pub mod strategies;
pub mod table;
pub mod trial;
pub mod tuner;

pub use crate::server::Settings;
pub use evidence::Evidence;
pub use objective::Objective;
pub use outcome::{Cost, Outcome};
pub use point::{ContainerUse, Point};
pub use step::{Step, Verdict};
pub use strategies::Strategy;
pub use tuner::{Eta, Judging, Measure, Observer, Plan, Tuner, fmt_secs, summary_line};
