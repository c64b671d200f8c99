//! The JSON exporter: any report as pretty JSON (the bench report's layout is documented by
//! schema/bench-report.v2.json; mem and syscalls carry their schema id in the document).

use std::io::Write;

use serde::Serialize;

/// Writes `report` as pretty-printed JSON, with a final newline.
pub fn write<T: Serialize + ?Sized>(report: &T, out: &mut impl Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)
}
