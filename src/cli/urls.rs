//! `webtune urls --from-log PATH`: an access log's workload as a URL list, to inspect, edit and
//! commit, then load with `bench --urls`.

use std::io::Write;
use std::process::ExitCode;

use super::args::UrlsArgs;
use crate::bench::access_log::{AccessLog, wire_target};
use crate::bench::workload::MAX_URLS;

/// Writes the list to standard output; what was left out goes into its comments.
pub fn run(a: &UrlsArgs) -> anyhow::Result<ExitCode> {
    let log = AccessLog::read(&a.from_log, a.log_format.as_deref(), MAX_URLS)?;
    let s = &log.summary;
    super::print::write_stdout(|o| {
        writeln!(o, "# webtune urls: from {} ({})", s.files.join(", "), s.format)?;
        writeln!(o, "# {}", s.account())?;
        if let Some(rates) = s.rates() {
            writeln!(o, "# {rates}")?;
        }
        writeln!(o, "# load it: webtune bench --urls THIS_FILE http://127.0.0.1:PORT/")?;
        for r in &log.requests {
            // As sent on the wire, which `--urls` sends as written.
            let target = wire_target(&r.target);
            match r.method.as_str() {
                "GET" => writeln!(o, "{target} weight={}", r.count)?,
                m => writeln!(o, "{m} {target} weight={}", r.count)?,
            }
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
