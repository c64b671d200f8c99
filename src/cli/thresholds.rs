//! `--fail-if` flags: parsed before any load runs, judged against a run's report.

use crate::aggregate::BenchReport;
use crate::cli::gate::Threshold;
use crate::input::InputError;

/// The `--fail-if` flags, parsed (all of them, before any load runs).
pub fn thresholds(texts: &[String]) -> Result<Vec<Threshold>, InputError> {
    texts.iter().map(|t| t.parse().map_err(|e: InputError| e.at("--fail-if"))).collect()
}

/// The `--fail-if` flags of a command that judges one run: a change is refused (it needs two).
pub fn one_run_thresholds(texts: &[String]) -> Result<Vec<Threshold>, InputError> {
    let thresholds = thresholds(texts)?;
    match thresholds.iter().find(|t| t.is_change()) {
        Some(t) => Err(t.needs_two_runs().at("--fail-if")),
        None => Ok(thresholds),
    }
}

/// Judges the thresholds against the report; the verdicts go into it.
pub fn judge(report: &mut BenchReport, thresholds: &[Threshold]) -> Result<(), InputError> {
    report.thresholds =
        thresholds.iter().map(|t| t.judge(crate::cli::gate::Figures::Bench(report))).collect::<Result<_, _>>()?;
    Ok(())
}
