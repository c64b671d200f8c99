//! The system-call report: calls per request, missing files, flags.

use std::io::{self, Write};

use crate::syscalls::SyscallReport;

/// Writes the system-call report as text: the table of calls, then missing files and flags.
pub fn write_text(r: &SyscallReport, out: &mut impl Write) -> io::Result<()> {
    let pids: Vec<String> = r.pids.iter().map(i32::to_string).collect();
    writeln!(out, "System calls per request ({} requests; traced pids {})", r.requests, pids.join(" "))?;
    writeln!(out, "{:<20} {:>12} {:>12} {:>14}", "call", "per request", "errors/req", "us/request")?;
    for c in &r.calls {
        writeln!(
            out,
            "{:<20} {:>12.2} {:>12.2} {:>14.1}",
            c.name, c.per_request, c.errors_per_request, c.us_per_request
        )?;
    }
    if !r.missing_files.is_empty() {
        writeln!(out)?;
        writeln!(out, "Files looked up that do not exist:")?;
        for m in r.missing_files.iter().take(30) {
            writeln!(out, "  {:>8.2}/req  {}  ({})", m.per_request, m.path, m.calls.join(", "))?;
        }
        if r.missing_files.len() > 30 {
            writeln!(out, "  ... and {} more paths (--json lists all)", r.missing_files.len() - 30)?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Per request: {:.2} missing-file lookups, {:.2} .htaccess reads, {:.2} fork/clone/execve, {:.2} writes",
        r.missing_lookups_per_request, r.htaccess_reads_per_request, r.spawns_per_request, r.writes_per_request
    )?;
    for f in &r.flags {
        writeln!(out, "FLAG: {f}")?;
    }
    Ok(())
}
