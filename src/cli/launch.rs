//! `webtune launch FILE`: start a target as the tuner would, show where it is, keep it up
//! until Ctrl-C (or --for), then stop everything it started.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use std::time::{Duration, Instant};

use super::args::LaunchArgs;
use crate::input::InputError;
use crate::server::{self, TargetFile};

/// `knob=value` pairs from --set.
pub fn parse_sets(file: &TargetFile, sets: &[String]) -> Result<Vec<(String, String)>, InputError> {
    let sets: Vec<(String, String)> = sets.iter().map(|s| crate::input::setting(s)).collect::<Result<_, _>>()?;
    // An old spelling (--set dirty_kb=64) under its one name (dirty=64KiB).
    let sets: Vec<(String, String)> =
        sets.iter().map(|(k, v)| crate::server::adapters::respell(file.adapter(), k, v)).collect();
    // Judged as the target file's own knobs are, before anything starts: bad input, exit 2.
    for (k, v) in &sets {
        crate::server::adapters::check_knob(file.adapter(), k, v).map_err(|e| InputError(format!("--set {e}")))?;
    }
    Ok(sets)
}

/// --cpus over the file's placement (checked against the CPUs this process may use); then
/// webtune itself moves to the client's CPUs, so that every thread it starts afterwards (the
/// engine's, the sampler's, the signal handler's) stays off the server's.
pub fn place(file: &mut TargetFile, cpus: Option<&str>) -> anyhow::Result<()> {
    if let Some(text) = cpus {
        let allowed = crate::sys::cpus::CpuSet::allowed();
        file.placement = crate::sys::cpus::PlacementSpec::parse("--cpus", text)?.resolve("--cpus", &allowed)?;
    }
    let client = &file.placement.client;
    client.confine_this_thread().with_context(|| format!("cannot move webtune to the client's CPUs {client}"))
}

/// Launches and warms the target, prints where it is, waits for Ctrl-C or --for, then stops it.
pub fn run(a: &LaunchArgs) -> anyhow::Result<ExitCode> {
    let mut file = TargetFile::load(&a.file)?;
    place(&mut file, a.cpus.as_deref())?;
    let sets = parse_sets(&file, &a.set)?;
    let limit = a.run_for.as_deref().map(|d| crate::input::duration("--for", d)).transpose()?;
    // Install the signal handler before anything starts, so Ctrl-C always stops the server.
    let interrupt = crate::sys::interrupt_flag();
    let running = server::launch_until(&file, &sets, &interrupt)?;
    if let Some(refused) = running.container_refused() {
        eprintln!("webtune: warning: {refused}");
    }
    // Warm it as the tuner would: every worker serves requests before anyone measures it.
    let workers = running.worker_pids().len().max(1) as u64;
    let url = format!("{}{}", running.base_url(), file.ready);
    let client = Some(&file.placement.client);
    crate::bench::drive(&url, workers, workers * 20, true, client, &interrupt)
        .with_context(|| format!("warming {url}"))?;
    // Status lines only: a closed or failing stdout (`| head`) must not end the launch before
    // Ctrl-C or --for does (nor leave the server running), so their errors are dropped.
    let _ = super::print::write_stdout(|o| {
        writeln!(o, "{} ({}) ready at {}", file.path.display(), running_name(&file), running.base_url())?;
        writeln!(o, "master pid {}, worker pids {:?}", running.master_pid(), running.worker_pids())?;
        if let Some(front) = running.front_pid() {
            writeln!(o, "front nginx pid {front} (the server behind it on port {})", running.back_port())?;
        }
        writeln!(o, "run directory {}", running.dir().display())?;
        writeln!(o, "placement: {}", file.placement.describe())?;
        if let Some(limits) = running.container_limits() {
            writeln!(o, "container: {} (cgroup {})", limits.describe(), running.container_name().unwrap_or_default())?;
        }
        if let Some(c) = running.counters() {
            writeln!(o, "counters {c}")?;
        }
        writeln!(o, "Ctrl-C stops it.")
    });
    let started = Instant::now();
    let mut looked = Instant::now();
    while !crate::sys::interrupted() && limit.is_none_or(|l| started.elapsed() < l) {
        std::thread::sleep(Duration::from_millis(50));
        // A port opened late (an app, a daemon) stops the server as one at launch does.
        if looked.elapsed() >= Duration::from_secs(1) {
            looked = Instant::now();
            if let Some(outside) = running.listening_outside() {
                drop(running);
                anyhow::bail!(outside);
            }
        }
    }
    let saturation = running.saturation();
    let container = running.container_usage().map(|u| container_summary(running.container_limits(), &u));
    drop(running);
    let _ = super::print::write_stdout(|o| {
        for line in saturation {
            writeln!(o, "saturation: {line}")?;
        }
        if let Some(c) = container {
            writeln!(o, "container: {c}")?;
        }
        writeln!(o, "stopped")
    });
    Ok(ExitCode::SUCCESS)
}

/// "charged at most 45.2MiB of 200MiB, 0 OOM kills, throttled in 12 of 40 periods (1.3 s)".
fn container_summary(limits: Option<&crate::sys::cgroup::Limits>, u: &crate::sys::cgroup::Usage) -> String {
    use crate::input::format_bytes;
    let of = limits.and_then(|l| l.memory).map_or(String::new(), |m| format!(" of {}", format_bytes(m)));
    let peak = format_bytes(u.peak.unwrap_or(u.charge));
    format!(
        "charged at most {peak}{of}, {} OOM kills, throttled in {} of {} periods ({:.1} s)",
        u.oom_kills,
        u.throttled_periods,
        u.periods,
        u.throttled_us as f64 / 1e6
    )
}

fn running_name(f: &TargetFile) -> &'static str {
    f.adapter().name()
}
