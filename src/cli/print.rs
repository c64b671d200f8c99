//! What the CLI prints on stdout and how an error reads: reports in a format, a closed pipe
//! not an error, an error as one line.

use std::io::Write;

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

/// An error as one line (the context chain joined with ": "): newlines become spaces, other control characters are escaped, and
/// whatever input it quotes, it stays within MAX_ERROR_LINE characters.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    crate::input::echo_max(&format!("{e:#}").replace('\n', " "), MAX_ERROR_LINE)
}

/// The longest error line printed: room for a path, a place and a quoted value or two.
const MAX_ERROR_LINE: usize = 1000;
