//! `webtune merge`: one report from the JSON reports of runs made at once on several client
//! machines.

use std::path::PathBuf;

use crate::aggregate::BenchReport;
use crate::aggregate::result::READABLE_SCHEMAS;
use crate::input::InputError;

/// Reads two or more bench --json reports and merges them into one.
pub fn run(files: &[PathBuf]) -> anyhow::Result<BenchReport> {
    if files.len() < 2 {
        return Err(InputError("merge needs at least two reports".into()).into());
    }
    let mut reports: Vec<BenchReport> = Vec::with_capacity(files.len());
    let mut texts: Vec<String> = Vec::with_capacity(files.len());
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    for (file, name) in files.iter().zip(&names) {
        let text = crate::input::read_text(file, "report")?;
        let report: BenchReport = serde_json::from_str(&text)
            .map_err(|e| InputError(format!("{name} is not a webtune bench --json report: {e}")))?;
        if !READABLE_SCHEMAS.contains(&report.schema.as_str()) {
            return Err(InputError(format!(
                "{name} has schema {:?}, not {}",
                report.schema,
                READABLE_SCHEMAS.join(" or ")
            ))
            .into());
        }
        // The same run given twice (a copy under another name too) would count its requests twice.
        if let Some(i) = (0..reports.len()).find(|&i| texts[i] == text || same_run(&reports[i], &report)) {
            return Err(InputError(format!(
                "{name} is the same run as {} (started {}): each run merges once",
                names[i], report.started_at
            ))
            .into());
        }
        texts.push(text);
        reports.push(report);
    }
    crate::aggregate::merge::merge(&reports, &names).map_err(|e| InputError(format!("{e:#}")).into())
}

/// Two reports of one run: the same start (to the millisecond), seed, URL and counts. Runs
/// made at once from several machines differ at least in their counts or start.
fn same_run(a: &BenchReport, b: &BenchReport) -> bool {
    (&a.started_at, a.options.seed, &a.target.url, a.result.succeeded, a.result.failed)
        == (&b.started_at, b.options.seed, &b.target.url, b.result.succeeded, b.result.failed)
}
