//! The command line: parse, dispatch to a command, map errors to exit codes
//! (2 for bad input, 1 for a run that failed, 3 for a failed --fail-if threshold, 130 for an
//! interrupted tune, 0 otherwise).

pub mod args;
pub mod bench;
pub mod exit;
pub mod fileset;
pub mod gate;
pub mod history;
pub mod init;
pub mod lab;
pub mod launch;
pub mod manual;
pub mod mem;
pub mod merge;
pub mod output;
pub mod print;
pub mod syscalls;
pub mod thresholds;
pub mod tune;
pub mod urls;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

use crate::input::InputError;
use exit::THRESHOLD_FAILED;
use print::{emit, one_line};
use thresholds::{judge, one_run_thresholds};

/// The `webtune` binary's entry point: parses the arguments and runs the command.
pub fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e, &argv),
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
    // --db before the command (as it once was global) is still read, where there is a store.
    let before = cli.db;
    let db = |own: &args::DbArg| own.db.clone().or_else(|| before.clone());
    if before.is_some() && !cli.command.opens_the_store() {
        return Err(InputError("--db: this command does not use the history".into()).into());
    }
    match cli.command {
        Command::Bench(a) => bench::run(&a, db(&a.store).as_deref()),
        Command::Runs(a) => history::runs(db(&a.store).as_deref(), &a),
        Command::Show(a) => history::show(db(&a.store).as_deref(), &a),
        Command::Compare(a) => history::compare(db(&a.store).as_deref(), &a),
        Command::Export(a) => history::export(db(&a.store).as_deref(), &a),
        Command::Report(a) => history::report(db(&a.store).as_deref(), &a),
        Command::Merge(a) => {
            let thresholds = one_run_thresholds(&a.fail_if)?;
            let mut report = merge::run(&a.files)?;
            judge(&mut report, &thresholds)?;
            emit(&report, output::stdout_format(a.json))?;
            Ok(if crate::cli::gate::all_pass(&report.thresholds) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(THRESHOLD_FAILED)
            })
        }
        Command::Mem(a) => mem::run(&a),
        Command::Launch(a) => launch::run(&a),
        Command::Fileset(a) => fileset::run(&a),
        Command::Urls(a) => urls::run(&a),
        Command::Init(a) => init::run(&a),
        Command::Tune(a) => tune::run(&a, db(&a.store).as_deref()),
        Command::Syscalls(a) => syscalls::run(&a),
        Command::Completions(a) => manual::completions(&a),
        Command::Manpage(a) => manual::manpage(&a),
        Command::Lab(a) => {
            crate::lab::run(&lab::config(&a)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

impl Command {
    /// Whether the command reads or writes the history (and so takes --db).
    fn opens_the_store(&self) -> bool {
        matches!(
            self,
            Command::Bench(_)
                | Command::Tune(_)
                | Command::Runs(_)
                | Command::Show(_)
                | Command::Compare(_)
                | Command::Export(_)
                | Command::Report(_)
        )
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

/// Help and version print as clap has them; a parse error prints as one line, exit 2, with
/// clap's tips ("a similar argument exists") and the help of the command it was meant for.
fn clap_exit(e: clap::Error, argv: &[std::ffi::OsString]) -> ExitCode {
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
    // clap's message is a paragraph, then tips, usage and "try --help": keep the paragraph and
    // the tips, on one line; the usage is in the help named at the end.
    if quiet_taken_for_a_rate(&e) {
        eprintln!(
            "webtune: -q: webtune's request rate is --rate R (in all, as oha's -q; hey's -q is per worker); quiet is --quiet"
        );
        return ExitCode::from(2);
    }
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let mut line = message.join(" ").trim_start_matches("error: ").to_string();
    for tip in rendered.lines().map(str::trim).filter(|l| l.starts_with("tip: ")) {
        line = format!("{line}; {tip}");
    }
    let help = match subcommand_of(argv) {
        Some(name) => format!("webtune {name} --help"),
        None => "webtune --help".into(),
    };
    eprintln!("webtune: {line} (see {help})");
    ExitCode::from(2)
}

/// `-q`, which oha and hey users type for a rate: webtune's -q was quiet once, and is now
/// neither, so neither habit does the wrong thing silently.
fn quiet_taken_for_a_rate(e: &clap::Error) -> bool {
    use clap::error::{ContextKind, ContextValue};
    e.kind() == clap::error::ErrorKind::UnknownArgument
        && matches!(e.get(ContextKind::InvalidArg), Some(ContextValue::String(arg)) if arg == "-q" || arg.starts_with("-q"))
}

/// The subcommand the arguments name, if any: the first argument that is one.
fn subcommand_of(argv: &[std::ffi::OsString]) -> Option<String> {
    use clap::CommandFactory;
    let cli = Cli::command();
    argv.iter().skip(1).filter_map(|a| a.to_str()).find(|a| cli.find_subcommand(a).is_some()).map(str::to_string)
}
