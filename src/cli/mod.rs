//! The command line: parse, dispatch to a command, map errors to exit codes
//! (2 for bad input, 1 for a run that failed, 3 for a failed --fail-if threshold, 130 for an
//! interrupted tune, 0 otherwise).

pub mod args;
pub mod bench;
pub mod fileset;
pub mod history;
pub mod lab;
pub mod launch;
pub mod manual;
pub mod mem;
pub mod merge;
pub mod output;
pub mod syscalls;
pub mod tune;
pub mod urls;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

use crate::aggregate::BenchReport;
use crate::gate::Threshold;
use crate::input::InputError;

/// The `webtune` binary's entry point: parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            let code = if e.downcast_ref::<InputError>().is_some() { 2 } else { 1 };
            eprintln!("webtune: {}", one_line(&e));
            ExitCode::from(code)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let db = cli.db.as_deref();
    match cli.command {
        Command::Bench(a) => bench::run(&a, db),
        Command::Runs(a) => history::runs(db, &a),
        Command::Show(a) => history::show(db, &a),
        Command::Compare(a) => history::compare(db, &a),
        Command::Export(a) => history::export(db, &a),
        Command::Report(a) => history::report(db, &a),
        Command::Merge(a) => {
            let thresholds = one_run_thresholds(&a.fail_if)?;
            let mut report = merge::run(&a.files)?;
            judge(&mut report, &thresholds)?;
            emit(&report, output::stdout_format(a.json))?;
            Ok(if crate::gate::all_pass(&report.thresholds) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(THRESHOLD_FAILED)
            })
        }
        Command::Mem(a) => mem::run(&a),
        Command::Launch(a) => launch::run(&a),
        Command::Fileset(a) => fileset::run(&a),
        Command::Urls(a) => urls::run(&a),
        Command::Tune(a) => tune::run(&a, db),
        Command::Syscalls(a) => syscalls::run(&a),
        Command::Completions(a) => manual::completions(&a),
        Command::Manpage(a) => manual::manpage(&a),
        Command::Lab(a) => {
            crate::lab::run(&lab::config(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

impl args::ServerArgs {
    /// The selector the flags name (clap has checked that exactly one is given).
    pub fn selector(&self) -> Result<crate::procmem::Selector, InputError> {
        use crate::procmem::Selector;
        match (self.pid, &self.name, self.port) {
            (Some(pid), _, _) => Ok(Selector::Pid(pid)),
            (_, Some(name), _) => Ok(Selector::Name(name.clone())),
            (_, _, Some(port)) => Ok(Selector::Port(port)),
            _ => Err(InputError("give --pid, --name or --port".into())),
        }
    }
}

/// Exit status of a run that completed but failed a `--fail-if` threshold.
pub const THRESHOLD_FAILED: u8 = 3;

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
        thresholds.iter().map(|t| t.judge(crate::gate::Figures::Bench(report))).collect::<Result<_, _>>()?;
    Ok(())
}

/// Prints a report on stdout in `format`.
pub fn emit<R: crate::report::Report + ?Sized>(report: &R, format: crate::report::Format) -> anyhow::Result<()> {
    write_stdout(|out| crate::report::format::write(report, format, out))
}

/// Writes on stdout through `write`, then flushes. A closed pipe (`| head`) is not an error.
pub fn write_stdout(
    write: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Help and version print as clap has them; a parse error prints as one line, exit 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        _ => {}
    }
    // clap's message is a paragraph (then usage and a hint): keep the paragraph, on one line.
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let message = message.join(" ");
    eprintln!("webtune: {} (see webtune --help)", message.trim_start_matches("error: "));
    ExitCode::from(2)
}

/// Errors print as one line: the context chain joined with ": ".
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace('\n', " ")
}
