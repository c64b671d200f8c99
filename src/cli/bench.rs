//! `webtune bench`: the flags mapped onto a `BenchSpec`, the run, the report printed and stored.

use std::path::Path;
use std::process::ExitCode;

use super::args::BenchArgs;
use crate::bench::{self, BenchSpec};
use crate::input::{self, InputError};
use crate::report::progress::ProgressLine;

/// What the flags ask for, in the library's terms. Values with units are parsed here so their
/// errors name the flag.
pub fn spec(a: &BenchArgs) -> Result<BenchSpec, InputError> {
    let duration = |flag: &str, v: &Option<String>| v.as_deref().map(|v| input::duration(flag, v)).transpose();
    Ok(BenchSpec {
        url: a.url.clone(),
        path: None,
        connections: a.connections,
        requests: a.requests,
        duration: duration("-d", &a.duration)?,
        threads: a.threads,
        no_keepalive: a.no_keepalive,
        no_coalesce: a.no_coalesce,
        method: a.method.clone(),
        headers: a.headers.clone(),
        post_file: a.post_file.clone(),
        content_type: a.content_type.clone(),
        body: a.body.clone(),
        timeout: duration("--timeout", &Some(a.timeout.clone()))?,
        connect_timeout: duration("--connect-timeout", &a.connect_timeout)?,
        insecure: a.insecure,
        rate: a.rate,
        arrival: a.arrival,
        stages: a.stages.clone(),
        open: a.open,
        urls: a.urls.clone(),
        order: a.order,
        cookies: a.cookies,
        scenario: a.scenario.clone(),
        throttle: a.throttle.as_deref().map(|t| input::bandwidth("--throttle", t)).transpose()?,
        slow_share: a.slow_share.as_deref().map(|s| input::share("--slow-share", s)).transpose()?,
        seed: a.seed,
    })
}

/// Runs the bench, prints the report and stores it; exit 1 when storing fails or nothing succeeded.
pub fn run(a: &BenchArgs, db: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut plan = spec(a)?.plan()?;
    plan.hdr_log = a.hdr_log.clone();
    let mut line = ProgressLine::new(a.quiet || a.json);
    let report = bench::run_watched(&plan, &crate::sys::interrupt_flag(), &mut |t| {
        line.draw(t.elapsed, t.succeeded, t.failed, t.rate, t.goal)
    });
    line.clear();
    let bench::Ran { report, hdr_log } = report?;
    super::emit(&report, a.json, crate::report::text::write)?;
    // The result is printed first: a store that fails loses nothing the user sees.
    let saved = crate::store::Store::open(&crate::store::default_path(db)).and_then(|mut s| s.save_bench(&report));
    let mut failed = false;
    if let Err(e) = saved {
        eprintln!("webtune: {}; the result above was not saved", super::one_line(&e));
        failed = true;
    }
    if let Err(e) = hdr_log {
        eprintln!("webtune: {}; the HdrHistogram log is incomplete (the report is whole)", super::one_line(&e));
        failed = true;
    }
    if report.result.succeeded == 0 {
        match &report.target.tls_failure {
            Some(why) => eprintln!("webtune: no request succeeded: {why}"),
            None => eprintln!("webtune: no request succeeded"),
        }
        failed = true;
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
