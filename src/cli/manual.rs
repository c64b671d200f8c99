//! What installs beside the binary, generated from the flags themselves so it never drifts
//! from them: shell completion scripts (clap_complete) and man pages (clap_mangen).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs, ManpageArgs};

/// The exit statuses, as `--help` shows them and the man page's EXIT STATUS section lists them.
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success"),
    ("1", "the run failed: nothing succeeded, a server did not start, storing failed"),
    ("2", "bad input (one line on stderr)"),
    ("3", "a --fail-if threshold held (bench, compare, merge)"),
    ("130", "tune interrupted by Ctrl-C; other commands stop cleanly and exit as above"),
];

/// `--help`'s closing paragraph: the exit statuses.
pub fn exit_status_help() -> String {
    let lines: Vec<String> = EXIT_STATUS.iter().map(|(code, what)| format!("  {code:<4} {what}")).collect();
    format!("Exit status:\n{}", lines.join("\n"))
}

/// `webtune completions SHELL`: the completion script on stdout.
pub fn completions(a: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "webtune", &mut out);
    print(&out)
}

/// `webtune manpage`: webtune(1) on stdout; with `--dir`, it and a page per command
/// (webtune-bench(1)...), which webtune(1) refers to, written there.
pub fn manpage(a: &ManpageArgs) -> anyhow::Result<ExitCode> {
    match &a.dir {
        None => print(&main_page()?),
        Some(dir) => {
            write_pages(dir)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// webtune(1): clap_mangen's sections, with EXIT STATUS in place of its untitled "EXTRA".
fn main_page() -> std::io::Result<Vec<u8>> {
    let mut cmd = Cli::command().after_help(None::<&str>).after_long_help(None::<&str>);
    cmd.build();
    let man = clap_mangen::Man::new(cmd);
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    man.render_subcommands_section(&mut out)?;
    let mut roff = roff::Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, what) in EXIT_STATUS {
        roff.control("TP", []).text([roff::bold(*code)]).text([roff::roman(*what)]);
    }
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    Ok(out)
}

fn write_pages(dir: &Path) -> anyhow::Result<()> {
    let cannot = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot write man pages to {}: {e}", dir.display());
    crate::output::directory(dir)?;
    // generate_to writes every page (following symlinks): into a private directory first,
    // then each page to `dir` by the rule of every output file.
    let staging = tempfile::tempdir().map_err(|e| cannot(&e))?;
    clap_mangen::generate_to(Cli::command(), staging.path()).map_err(|e| cannot(&e))?;
    // Ours replaces its webtune.1.
    std::fs::write(staging.path().join("webtune.1"), main_page()?).map_err(|e| cannot(&e))?;
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
        crate::output::replace(&dir.join(page.file_name()), &text)?;
    }
    Ok(())
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    super::write_stdout(|out| out.write_all(bytes))?;
    Ok(ExitCode::SUCCESS)
}
