//! The history commands: `runs`, `show`, `compare`, `export`, `report` over the store.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::args::{CompareArgs, ExportArgs, ReportArgs, RunsArgs, ShowArgs};
use super::output::{OutputFile, stdout_format};
use crate::gate;
use crate::input::InputError;
use crate::report::compare::Comparison;
use crate::report::format::Runs;
use crate::report::{Format, Report};
use crate::store::{self, Store, Stored};

fn open(db: Option<&Path>) -> anyhow::Result<Store> {
    Store::open(&store::default_path(db))
}

fn get(s: &Store, id: i64) -> anyhow::Result<Stored> {
    s.run(id)?.ok_or_else(|| InputError(format!("no run {id} in {}", s.path.display())).into())
}

/// `webtune runs`: lists the stored runs, filtered by kind, target and date.
pub fn runs(db: Option<&Path>, a: &RunsArgs) -> anyhow::Result<ExitCode> {
    let files = a.output.files::<Runs>()?;
    let s = open(db)?;
    let rows = Runs::new(s.runs(a.kind.as_deref(), a.target.as_deref(), a.since.as_deref())?);
    written(&rows, stdout_format(a.json), &files)
}

/// `webtune show ID`: one stored run as text, or as JSON with --json.
pub fn show(db: Option<&Path>, a: &ShowArgs) -> anyhow::Result<ExitCode> {
    let files = a.output.files::<Stored>()?;
    let s = open(db)?;
    let run = get(&s, a.id)?;
    written(&run, stdout_format(a.json), &files)
}

/// `webtune compare A B`: two stored runs' figures side by side, and the `--fail-if` gates
/// between them (exit 3 when one fails).
pub fn compare(db: Option<&Path>, a: &CompareArgs) -> anyhow::Result<ExitCode> {
    let gates = super::thresholds(&a.fail_if)?;
    let files = a.output.files::<Comparison>()?;
    let s = open(db)?;
    let (before, after) = (get(&s, a.before)?, get(&s, a.after)?);
    let rows = crate::report::compare::rows(&before, &after).map_err(|e| InputError(e.to_string()))?;
    let thresholds = match (gate::figures(&before), gate::figures(&after)) {
        (Some(b), Some(f)) => gates.iter().map(|g| g.judge_between(b, f)).collect::<Result<_, _>>()?,
        // rows() has refused runs without figures already.
        _ => Vec::new(),
    };
    let comparison = Comparison::new(a.before, a.after, rows, thresholds);
    let code = written(&comparison, stdout_format(a.json), &files)?;
    if code == ExitCode::SUCCESS && !gate::all_pass(&comparison.thresholds) {
        return Ok(ExitCode::from(super::THRESHOLD_FAILED));
    }
    Ok(code)
}

/// `webtune export ID`: one stored run on stdout as JSON, CSV or markdown, and in files.
pub fn export(db: Option<&Path>, a: &ExportArgs) -> anyhow::Result<ExitCode> {
    let files = a.output.files::<Stored>()?;
    let format = match (a.json, a.csv, a.markdown) {
        (true, _, _) => Some(Format::Json),
        (_, true, _) => Some(Format::Csv),
        (_, _, true) => Some(Format::Markdown),
        _ => None,
    };
    if format.is_none() && files.is_empty() {
        return Err(InputError("export: give --json, --csv, --markdown or -o FILE".into()).into());
    }
    let s = open(db)?;
    let run = get(&s, a.id)?;
    match format {
        Some(format) => written(&run, format, &files),
        None => written_files(&run, &files),
    }
}

/// Prints `report` on stdout in `format`, then writes the files: exit 1 when one cannot be
/// written (the others are).
fn written<R: Report>(report: &R, format: Format, files: &[OutputFile]) -> anyhow::Result<ExitCode> {
    super::emit(report, format)?;
    written_files(report, files)
}

fn written_files<R: Report>(report: &R, files: &[OutputFile]) -> anyhow::Result<ExitCode> {
    match super::output::write_files(report, files) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("webtune: {}", super::one_line(&e));
            Ok(ExitCode::from(1))
        }
    }
}

/// `webtune report ID --html FILE`: writes one stored run as an HTML page and prints its path.
pub fn report(db: Option<&Path>, a: &ReportArgs) -> anyhow::Result<ExitCode> {
    let s = open(db)?;
    let run = get(&s, a.id)?;
    let html = crate::report::html::render(&run);
    replace_file(&a.html, html.as_bytes())?;
    super::write_stdout(|o| writeln!(o, "{}", a.html.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `path` as editors do: a new file beside the real one (a symlink is
/// followed to it), given the old file's mode, then renamed over it, so a reader never sees
/// half a report. What is not an ordinary file of this user (a device, a directory, another
/// user's file) is refused, never replaced.
fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let cannot = |e: &dyn std::fmt::Display| anyhow::anyhow!("cannot write {}: {e}", path.display());
    let target = match std::fs::metadata(path) {
        Ok(m) => {
            if !m.is_file() {
                return Err(InputError(format!("{}: not a regular file; give a file name", path.display())).into());
            }
            if m.uid() != nix::unistd::geteuid().as_raw() {
                return Err(InputError(format!("{}: belongs to another user; not replaced", path.display())).into());
            }
            Some((std::fs::canonicalize(path).map_err(|e| cannot(&e))?, m.permissions().mode()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(cannot(&e)),
    };
    let (real, mode) = match target {
        Some((real, mode)) => (real, Some(mode)),
        None => (path.to_path_buf(), None),
    };
    let dir = real.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".webtune-report").tempfile_in(dir).map_err(|e| cannot(&e))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| cannot(&e))?;
    let mode = mode.unwrap_or(0o666 & !current_umask());
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode)).map_err(|e| cannot(&e))?;
    tmp.persist(&real).map_err(|e| cannot(&e.error))?;
    Ok(())
}

/// The process's file-creation mask (read by setting it and setting it back).
fn current_umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
}
