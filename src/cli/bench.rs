//! `webtune bench`: the flags mapped onto a `BenchSpec`, the run, the report printed and stored.

use std::path::Path;
use std::process::ExitCode;

use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;

use super::args::BenchArgs;
use crate::bench::remote::{self, Remote};
use crate::bench::{self, BenchPlan, BenchSpec};
use crate::input::{self, InputError};
use crate::report::format::Numbered;
use crate::report::progress::ProgressLine;
use crate::sys::cpus::{CpuSet, Placement, PlacementSpec};

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
        rate: a.rate.as_deref().map(str::parse).transpose()?,
        arrival: a.arrival,
        access_log: a.access_log.clone(),
        log_format: a.log_format.clone(),
        loaded_log: None,
        stages: a.stages.clone(),
        open: a.open,
        urls: a.urls.clone(),
        order: a.order,
        cookies: a.cookies,
        scenario: a.scenario.clone(),
        throttle: a.throttle.as_deref().map(|t| input::bandwidth("--throttle", t)).transpose()?,
        slow_share: a.slow_share.as_deref().map(|s| input::share("--slow-share", s)).transpose()?,
        seed: a.seed,
        remote: a.remote.clone(),
        remote_only: a.remote_only,
        cpus: client_cpus(a)?,
        http2: a.h2,
        streams: a.streams,
    })
}

/// --cpus: bench places only its client (it does not start the server); checked against the
/// CPUs this process may use.
fn client_cpus(a: &BenchArgs) -> Result<Option<CpuSet>, InputError> {
    let Some(text) = &a.cpus else { return Ok(None) };
    let asked = PlacementSpec::parse("--cpus", text)?;
    if asked.server.is_some() {
        return Err(InputError(
            "--cpus server=: bench does not start the server, so it cannot place it; give client=CPUS (tune and launch place the server)".into(),
        ));
    }
    let allowed = CpuSet::allowed();
    let client = asked.client.unwrap_or_else(|| allowed.clone());
    client.check_usable("--cpus client", &allowed)?;
    Ok(Some(client))
}

/// Where the client runs and where the server is: a server listening on this machine at the
/// URL's port is found, and its processes' CPUs read; one elsewhere is not on this machine.
fn placement(client: Option<CpuSet>, url: &str) -> Placement {
    let client = client.unwrap_or_else(CpuSet::allowed);
    let local = url::Url::parse(url).ok().and_then(|u| {
        let loopback = match u.host()? {
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
            url::Host::Domain(d) => d == "localhost",
        };
        loopback.then_some(u.port_or_known_default()?)
    });
    let Some(port) = local else {
        return Placement { server: None, client, shared: false };
    };
    let pids = crate::procmem::select(&crate::procmem::Selector::Port(port)).unwrap_or_default();
    let server = pids.iter().filter_map(|&p| CpuSet::of_process(p)).reduce(|a, b| a.union(&b));
    // On this machine whatever its CPUs: shared unless they are known to be apart.
    let shared = server.as_ref().is_none_or(|s| s.intersects(&client));
    Placement { server, client, shared }
}

/// Runs the bench, prints the report and stores it; exit 1 when storing fails or nothing
/// succeeded, 3 when a `--fail-if` threshold failed.
pub fn run(a: &BenchArgs, db: Option<&Path>) -> anyhow::Result<ExitCode> {
    let thresholds = super::thresholds::one_run_thresholds(&a.fail_if)?;
    // A database that cannot be one is said before any load, not after.
    crate::store::check_path(&crate::store::default_path(db))?;
    let files = a.output.files::<crate::aggregate::BenchReport>()?;
    let spec = spec(a)?;
    if let Some(client) = &spec.cpus {
        // Every thread started from here on (the engine's, the progress line's) stays on them.
        client.confine_this_thread().map_err(|e| anyhow::anyhow!("cannot move webtune to CPUs {client}: {e}"))?;
    }
    let mut plan = spec.plan()?;
    if a.agent {
        return agent(&plan);
    }
    // ab's -t is a time limit; here it is threads, as wrk's: more than the cores says which
    // one the user meant.
    let cores = spec.cpus.as_ref().map_or_else(crate::sys::available_cores, CpuSet::len);
    if let Some(threads) = a.threads.filter(|&t| t > cores as u64) {
        // What runs: a thread serves one connection at least, so -t is capped by -c.
        let running = plan.engine.threads;
        let capped = if running as u64 == threads {
            String::new()
        } else {
            format!(" (of {threads} asked: one per connection)")
        };
        eprintln!(
            "webtune: -t {threads}: {running} engine threads{capped} on {cores} core(s) (wrk's -t); ab's time limit is -d {threads}s"
        );
    }
    plan.hdr_log = a.hdr_log.clone();
    let (mut report, hdr_log) = match Remote::of(&spec)? {
        Some(remote) => {
            if a.hdr_log.is_some() {
                return Err(
                    InputError("--hdr-log cannot be used with --remote (each host has its own clock)".into()).into()
                );
            }
            remote.check()?;
            (remote.run(&spec, &crate::sys::interrupt_flag())?, Ok(()))
        }
        None => {
            plan.placement = Some(placement(spec.cpus.clone(), &plan.url));
            let mut line = ProgressLine::new(a.quiet || a.json);
            let report = bench::run_watched(&plan, &crate::sys::interrupt_flag(), &mut |t| {
                line.draw(t.elapsed, t.succeeded, t.failed, t.rate, t.goal)
            });
            line.clear();
            let bench::Ran { report, hdr_log } = report?;
            (report, hdr_log)
        }
    };
    super::thresholds::judge(&mut report, &thresholds)?;
    // Stored before it is printed, so the JSON (and a file's CSV row) can carry its id; a
    // store that fails loses nothing the user sees: the report is printed all the same.
    let saved = crate::store::Store::open(&crate::store::default_path(db))
        .and_then(|mut s| s.save_bench(&report).map(|id| (id, s)));
    let id = saved.as_ref().ok().map(|(id, _)| *id);
    let numbered = Numbered { id, report: &report };
    super::print::emit(&numbered, super::output::stdout_format(a.json))?;
    let mut failed = false;
    match saved {
        Ok((id, store)) if !a.quiet => eprintln!("{}", stored_line("bench", id, &store)),
        Ok(_) => {}
        Err(e) => {
            eprintln!("webtune: {}; the result above was not saved", super::print::one_line(&e));
            failed = true;
        }
    }
    if let Err(e) = super::output::write_files(&numbered, &files) {
        eprintln!("webtune: {}", super::print::one_line(&e));
        failed = true;
    }
    if let Err(e) = hdr_log {
        eprintln!("webtune: {}; the HdrHistogram log is incomplete (the report is whole)", super::print::one_line(&e));
        failed = true;
    }
    if report.result.succeeded == 0 {
        let cause = report
            .warnings
            .iter()
            .find(|w| *w == crate::bench::H2C_REFUSED || w.starts_with(crate::bench::NOTHING_LISTENS));
        match report.target.tls_failure.as_ref().or(cause) {
            Some(why) => eprintln!("webtune: no request succeeded: {why}"),
            None => eprintln!("webtune: no request succeeded"),
        }
        failed = true;
    }
    if failed {
        return Ok(ExitCode::from(1));
    }
    if !crate::cli::gate::all_pass(&report.thresholds) {
        return Ok(ExitCode::from(super::exit::THRESHOLD_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}

/// The line that says where a run was stored, the same for bench and tune (scripts read it):
/// `bench: stored as run 12 in PATH (webtune show 12; webtune compare bench~1 bench)`, the
/// comparison with the run of its kind before it (whatever ran between), when there is one.
pub fn stored_line(command: &str, id: i64, store: &crate::store::Store) -> String {
    let compare = match store.count(Some(command)) {
        Ok(n) if n > 1 => format!("; webtune compare {command}~1 {command}"),
        _ => String::new(),
    };
    format!("{command}: stored as run {id} in {} (webtune show {id}{compare})", store.path.display())
}

/// A remote host's share (`--agent`, started by `--remote` over ssh): says it is ready, starts
/// on "go", prints its --json report. "stop", or the end of standard input (the SSH session
/// ended, whatever the reason), stops the run at once: nothing is left running on the host.
fn agent(plan: &BenchPlan) -> anyhow::Result<ExitCode> {
    let stop = crate::sys::interrupt_flag();
    let mut out = std::io::stdout();
    writeln!(out, "{}", remote::READY)?;
    out.flush()?;
    let mut first = String::new();
    if std::io::stdin().read_line(&mut first).is_err() || first.trim() != remote::GO {
        return Ok(ExitCode::from(130));
    }
    let watch = stop.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if !matches!(line, Ok(l) if l.trim() != remote::STOP) {
                break;
            }
        }
        watch.store(true, Ordering::SeqCst);
    });
    let report = bench::run(plan, &stop)?;
    super::print::emit(&report, crate::report::Format::Json)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::args::{Cli, Command};

    fn spec_of(argv: &[&str]) -> crate::bench::BenchSpec {
        let cli = Cli::try_parse_from(["webtune", "bench"].iter().chain(argv)).expect("parses");
        let Command::Bench(a) = cli.command else { panic!("not bench") };
        super::spec(&a).expect("a spec")
    }

    /// A remote host runs the arguments `to_args` writes: they must ask for the same spec.
    #[test]
    fn a_spec_written_as_arguments_reads_back_the_same() {
        let full = [
            "http://127.0.0.1:1/x",
            "-c",
            "7",
            "-n",
            "99",
            "-t",
            "3",
            "-m",
            "PUT",
            "-H",
            "A: b",
            "-H",
            "C: d e",
            "-T",
            "text/plain",
            "--body",
            "it's \"quoted\"",
            "--timeout",
            "2.5s",
            "--connect-timeout",
            "250ms",
            "--insecure",
            "--no-keepalive",
            "--no-coalesce",
            "--cookies",
            "--throttle",
            "33.6kbps",
            "--slow-share",
            "20%",
            "--seed",
            "42",
        ];
        let spec = spec_of(&full);
        let args = spec.to_args();
        assert_eq!(spec_of(&args.iter().map(String::as_str).collect::<Vec<_>>()), spec);
        let open = spec_of(&["http://h/", "-d", "1m30s", "--rate", "333.3", "--arrival", "poisson", "--urls", "/u"]);
        let args = open.to_args();
        assert_eq!(spec_of(&args.iter().map(String::as_str).collect::<Vec<_>>()), open);
    }
}
