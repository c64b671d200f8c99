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
    let mut reports = Vec::with_capacity(files.len());
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
        reports.push(report);
    }
    crate::aggregate::merge::merge(&reports, &names).map_err(|e| InputError(format!("{e:#}")).into())
}
