//! `webtune fileset DIR`: writes the SPECweb96 file set and says how to load it.

use std::io::Write;
use std::process::ExitCode;

use super::args::FilesetArgs;
use crate::fileset;

/// Writes the set and prints what was written and the commands that use it.
pub fn run(a: &FilesetArgs) -> anyhow::Result<ExitCode> {
    let w = fileset::write(&a.dir, a.ops)?;
    let root = std::fs::canonicalize(&a.dir).unwrap_or_else(|_| a.dir.clone());
    let urls = root.join(fileset::URL_LIST);
    super::print::write_stdout(|o| {
        writeln!(
            o,
            "{}: SPECweb96 file set for {} ops/s: {} directories, {} files, {:.1} MB",
            root.display(),
            w.ops,
            w.directories,
            w.files,
            w.bytes as f64 / 1e6
        )?;
        writeln!(o, "URL list (weighted, class mix 35/50/14/1 %): {}", urls.display())?;
        writeln!(o, "load it:  webtune bench --urls {} http://127.0.0.1:PORT/", urls.display())?;
        writeln!(o, "tune it:  app = \"{}\" and [load] urls = \"{}\" in a target file", root.display(), urls.display())
    })?;
    Ok(ExitCode::SUCCESS)
}
