//! The JSON exporter: the `BenchReport` as documented by schema/bench-report.v1.json.

use std::io::Write;

use crate::aggregate::BenchReport;

pub fn write(report: &BenchReport, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}
