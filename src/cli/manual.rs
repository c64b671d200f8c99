//! What installs beside the binary, generated from the flags themselves so it never drifts
//! from them: shell completion scripts (clap_complete) and man pages (clap_mangen).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs, ManpageArgs};
use super::exit::EXIT_STATUS;
use super::print::write_stdout;

/// `webtune completions SHELL`: the completion script on stdout.
pub fn completions(a: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "webtune", &mut out);
    print(&out)
}

/// The environment variables webtune reads, for the man page's ENVIRONMENT section.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("WEBTUNE_DB", "The history database, unless --db names one."),
    (
        "WEBTUNE_SSH",
        "The command that replaces ssh for --remote and a target file's [load] remote, split into words as a shell would (e.g. \"ssh -F my_config\").",
    ),
    ("XDG_DATA_HOME", "Where the default database lives (default ~/.local/share)."),
    ("HOME", "The home directory, for the default database when XDG_DATA_HOME is not set."),
    (
        "XDG_RUNTIME_DIR",
        "Where tune and launch make their servers' private run directories (default /tmp/webtune-UID).",
    ),
    ("PATH", "Where the servers a target file names (nginx, apache2, gunicorn...) and strace are found."),
];

/// The files webtune reads and writes, for the man page's FILES section.
pub const FILES: &[(&str, &str)] = &[
    (
        "$XDG_DATA_HOME/webtune/webtune.db",
        "The history database (SQLite; ~/.local/share/webtune/webtune.db by default): every bench run and tune point, for runs, show, compare, export and report. --db or WEBTUNE_DB choose another.",
    ),
    (
        "$XDG_DATA_HOME/webtune/journals/tune-ID.jsonl",
        "The tune journals, beside the history database, named by their run (--journal chooses another file): every point as it is measured, one JSON line each, for tune --resume, which takes the newest journal of the same tune.",
    ),
    (
        "$XDG_RUNTIME_DIR/webtune/",
        "The servers' private run directories (configuration, pid and log files), removed when the server stops.",
    ),
];

/// Commands a new user types, for the man page's EXAMPLES section.
pub const EXAMPLES: &[(&str, &str)] = &[
    ("webtune bench -c 50 -d 30s http://127.0.0.1:8080/", "Load a URL over 50 connections for 30 seconds."),
    (
        "webtune bench -n 10000 http://127.0.0.1:8080/ -o run.json -o run.csv -o run.md",
        "The text on the terminal, and the report as JSON, CSV and markdown files.",
    ),
    (
        "webtune bench --rate 500 -d 1m --fail-if 'p99 > 50ms' http://127.0.0.1:8080/",
        "Open loop at 500 requests/s; exit 3 when the p99 is over 50 ms.",
    ),
    ("webtune runs", "The stored runs, newest first, with their ids."),
    ("webtune compare 3 4 --fail-if 'rps < -5%'", "Run 4 against run 3; exit 3 when throughput fell by more than 5%."),
    ("webtune export 4 --csv > run4.csv", "One wide row of run 4's figures."),
    (
        "webtune mem --port 8080 --budget 2GiB",
        "What the server on port 8080 really costs, and how many workers fit 2 GiB.",
    ),
    (
        "webtune tune examples/nginx.toml -o tune.md",
        "Tune a target file's knobs; the tables on the terminal and in markdown.",
    ),
    ("webtune manpage --dir /usr/local/share/man/man1", "Install this page and one per command (webtune-bench(1)...)."),
];

/// `webtune manpage`: webtune(1) on stdout; with `--dir`, it and a page per command
/// (webtune-bench(1)...), which webtune(1) refers to, written there.
pub fn manpage(a: &ManpageArgs) -> anyhow::Result<ExitCode> {
    match &a.dir {
        None => print(&main_page(Pages::Absent)?),
        Some(dir) => {
            write_pages(dir)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Whether the per-command pages are written beside webtune(1): only with `--dir` do they
/// exist to be referred to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pages {
    Beside,
    Absent,
}

/// webtune(1): clap_mangen's sections, with EXIT STATUS in place of its untitled "EXTRA",
/// then ENVIRONMENT, FILES and EXAMPLES.
fn main_page(pages: Pages) -> std::io::Result<Vec<u8>> {
    let mut cmd = Cli::command().after_help(None::<&str>).after_long_help(None::<&str>);
    cmd.build();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    let mut roff = roff::Roff::new();
    if pages == Pages::Beside {
        man.render_subcommands_section(&mut out)?;
    } else {
        // Printed alone, the per-command pages do not exist: name the commands, and say
        // where their flags are.
        roff.control("SH", ["SUBCOMMANDS"]);
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            roff.control("TP", []).text([roff::bold(format!("webtune {}", sub.get_name()))]).text([roff::roman(about)]);
        }
        roff.control("PP", []).text([roff::roman(
            "Each command's flags: webtune COMMAND --help. A page per command (webtune-bench(1), webtune-tune(1)...) \
             exists only where webtune manpage --dir DIR wrote them (the Debian package installs them).",
        )]);
    }
    roff.control("SH", ["EXIT STATUS"]);
    for (code, what) in EXIT_STATUS {
        roff.control("TP", []).text([roff::bold(*code)]).text([roff::roman(*what)]);
    }
    for (title, entries) in [("ENVIRONMENT", ENVIRONMENT), ("FILES", FILES)] {
        roff.control("SH", [title]);
        for (name, what) in entries {
            roff.control("TP", []).text([roff::bold(*name)]).text([roff::roman(*what)]);
        }
    }
    roff.control("SH", ["EXAMPLES"]);
    for (command, what) in EXAMPLES {
        roff.control("TP", []).text([roff::bold(*command)]).text([roff::roman(*what)]);
    }
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

fn write_pages(dir: &Path) -> anyhow::Result<()> {
    let cannot = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot write man pages to {}: {e}", dir.display());
    crate::safe_write::directory(dir)?;
    // generate_to writes every page (following symlinks): into a private directory first,
    // then each page to `dir` by the rule of every output file.
    let staging = tempfile::tempdir().map_err(|e| cannot(&e))?;
    clap_mangen::generate_to(Cli::command(), staging.path()).map_err(|e| cannot(&e))?;
    // Ours replaces its webtune.1.
    std::fs::write(staging.path().join("webtune.1"), main_page(Pages::Beside)?).map_err(|e| cannot(&e))?;
    // A command's --help ends with the exit statuses; clap_mangen titles that section EXTRA.
    for sub in Cli::command().get_subcommands().filter(|s| s.get_after_help().is_some()) {
        let page = staging.path().join(format!("webtune-{}.1", sub.get_name()));
        let text = std::fs::read_to_string(&page).map_err(|e| cannot(&e))?;
        std::fs::write(&page, text.replace(".SH EXTRA\n", ".SH \"EXIT STATUS\"\n")).map_err(|e| cannot(&e))?;
    }
    let mut pages: Vec<_> = std::fs::read_dir(staging.path()).map_err(|e| cannot(&e))?.flatten().collect();
    pages.sort_by_key(|e| e.file_name());
    for page in pages {
        let text = std::fs::read(page.path()).map_err(|e| cannot(&e))?;
        crate::safe_write::replace(&dir.join(page.file_name()), &text)?;
    }
    Ok(())
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    write_stdout(|out| out.write_all(bytes))?;
    Ok(ExitCode::SUCCESS)
}
