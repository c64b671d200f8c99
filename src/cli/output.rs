//! Where a command's report goes: stdout in one format, and files (`-o`, `--export-*`) each
//! in its own, checked before anything runs.

use std::io::Write;
use std::path::PathBuf;

use super::args::OutputArgs;
use crate::input::InputError;
use crate::report::{self, Format, Report};

/// stdout's format: JSON with `--json`, else text.
pub fn stdout_format(json: bool) -> Format {
    if json { Format::Json } else { Format::Text }
}

/// An output file and its format.
#[derive(Debug, Clone)]
pub struct OutputFile {
    pub path: PathBuf,
    pub format: Format,
}

impl OutputArgs {
    /// Each file with its format; refuses, before anything runs, an unknown extension, a
    /// format the report cannot be written in, and a path that is a symlink or not a regular
    /// file.
    pub fn files<R: Report + ?Sized>(&self) -> Result<Vec<OutputFile>, InputError> {
        let by_extension = self.output.iter().map(|p| Ok(OutputFile { path: p.clone(), format: Format::of_path(p)? }));
        let exported = self
            .exports
            .iter()
            .flat_map(|(format, paths)| paths.iter().map(move |p| Ok(OutputFile { path: p.clone(), format: *format })));
        let files: Vec<OutputFile> = by_extension.chain(exported).collect::<Result<_, InputError>>()?;
        for f in &files {
            report::format::check::<R>(f.format).map_err(|e| e.at(&f.path.display().to_string()))?;
            crate::safe_write::check(&f.path)?;
        }
        Ok(files)
    }
}

/// Writes `report` to each file; every file is tried, the errors are joined.
pub fn write_files<R: Report + ?Sized>(report: &R, files: &[OutputFile]) -> anyhow::Result<()> {
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let written = crate::safe_write::create(&f.path).map_err(|e| std::io::Error::other(e.0)).and_then(|file| {
                let mut out = std::io::BufWriter::new(file);
                report::format::write(report, f.format, &mut out)?;
                out.flush()
            });
            written.err().map(|e| format!("cannot write {}: {e}", f.path.display()))
        })
        .collect();
    if failures.is_empty() { Ok(()) } else { Err(anyhow::anyhow!(failures.join("; "))) }
}
