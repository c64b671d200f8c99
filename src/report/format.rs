//! The output formats, and which report is written how in each: the one place a format is
//! added (its variant, its name and file extension, and a writer per report below).

use std::io::{self, Write};
use std::path::Path;

use serde::Serialize;

use crate::aggregate::BenchReport;
use crate::input::InputError;
use crate::report::compare::Comparison;
use crate::store::{RunRow, Stored};
use crate::syscalls::SyscallReport;
use crate::tune::Outcome;

use super::mem::MemReport;
use super::{csv, json, markdown};

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Csv,
    Markdown,
}

impl Format {
    /// Every format, in the order flags and messages list them: the one list the others derive from.
    pub const ALL: [Format; 4] = [Format::Text, Format::Json, Format::Csv, Format::Markdown];

    /// The format's name, as flags and messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
        }
    }

    /// The file name endings that choose this format for `-o FILE`.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Format::Text => &["txt"],
            Format::Json => &["json"],
            Format::Csv => &["csv"],
            Format::Markdown => &["md", "markdown"],
        }
    }

    /// The flag that writes a report in this format to a file as well (`--export-json FILE`);
    /// None for text, which is the terminal's.
    pub fn export_flag(self) -> Option<&'static str> {
        match self {
            Format::Text => None,
            Format::Json => Some("export-json"),
            Format::Csv => Some("export-csv"),
            Format::Markdown => Some("export-markdown"),
        }
    }

    /// The formats with an export flag, in `ALL`'s order: `webtune export` prints a stored run
    /// in each (`--json`, `--csv`, `--markdown`).
    pub fn exported() -> impl Iterator<Item = Format> {
        Format::ALL.into_iter().filter(|f| f.export_flag().is_some())
    }

    /// What a report is written as, in the flags' help: "JSON", "markdown tables".
    pub fn described(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "JSON",
            Format::Csv => "CSV",
            Format::Markdown => "markdown tables",
        }
    }

    /// `webtune export --NAME`'s help: what a stored run looks like on stdout in this format.
    pub fn stored_help(self) -> &'static str {
        match self {
            Format::Text => "The stored run as text on stdout",
            Format::Json => "The whole stored run as JSON on stdout",
            Format::Csv => {
                "CSV on stdout. Bench: one wide row of figures (docs/history.md lists the columns); tune: one row per measured point"
            }
            Format::Markdown => "Markdown tables on stdout",
        }
    }

    /// The format a file's extension names, as oha's `-o` and hyperfine's exports choose it.
    pub fn of_path(path: &Path) -> Result<Format, InputError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        Format::ALL.into_iter().find(|f| f.extensions().contains(&ext.as_str())).ok_or_else(|| {
            let known: Vec<String> = Format::ALL.iter().flat_map(|f| f.extensions()).map(|e| format!(".{e}")).collect();
            InputError(format!(
                "-o {}: the format is chosen by the file's extension: {}",
                path.display(),
                known.join(", ")
            ))
        })
    }
}

/// A report the commands print and write: text and JSON always, CSV and markdown where
/// `FORMATS` lists them.
pub trait Report: Serialize {
    /// The formats this report can be written in.
    const FORMATS: &'static [Format];
    /// What the report is called in messages ("bench report").
    const NAME: &'static str;

    fn text(&self, out: &mut dyn Write) -> io::Result<()>;

    fn csv(&self, _out: &mut dyn Write) -> io::Result<()> {
        Err(unsupported(Self::NAME, Format::Csv))
    }

    fn markdown(&self, _out: &mut dyn Write) -> io::Result<()> {
        Err(unsupported(Self::NAME, Format::Markdown))
    }
}

fn unsupported(name: &str, format: Format) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("a {name} cannot be written as {}", format.name()))
}

/// Refuses, before anything runs, a format the report cannot be written in.
pub fn check<R: Report + ?Sized>(format: Format) -> Result<(), InputError> {
    if R::FORMATS.contains(&format) {
        return Ok(());
    }
    let names: Vec<&str> = R::FORMATS.iter().map(|f| f.name()).collect();
    Err(InputError(format!("a {} cannot be written as {}; it can be {}", R::NAME, format.name(), names.join(", "))))
}

/// Writes `report` in `format`.
pub fn write<R: Report + ?Sized>(report: &R, format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Text => report.text(out),
        Format::Json => json::write(report, &mut { out }),
        Format::Csv => report.csv(out),
        Format::Markdown => report.markdown(out),
    }
}

const EVERY: &[Format] = &Format::ALL;
const TEXT_JSON: &[Format] = &[Format::Text, Format::Json];

impl Report for BenchReport {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "bench report";

    fn text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        super::text::write(self, &mut out)
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        csv::bench(None, self, &mut out)
    }

    fn markdown(&self, mut out: &mut dyn Write) -> io::Result<()> {
        markdown::bench(self, &mut out)
    }
}

/// A bench report with the id it was stored under (None: not stored): its JSON's `run_id`
/// and its CSV row's `id`.
#[derive(Serialize)]
pub struct Numbered<'a> {
    #[serde(flatten)]
    pub report: &'a BenchReport,
    #[serde(rename = "run_id", skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
}

impl Report for Numbered<'_> {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "bench report";

    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        self.report.text(out)
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        csv::bench(self.id, self.report, &mut out)
    }

    fn markdown(&self, out: &mut dyn Write) -> io::Result<()> {
        self.report.markdown(out)
    }
}

impl Report for Stored {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "stored run";

    fn text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        match self {
            Stored::Bench { report, .. } => super::text::write(report, &mut out),
            Stored::Tune { row, points, outcome, .. } => {
                writeln!(out, "tune {} on {} ({}), started {}", row.id, row.target, row.status, row.started_at)?;
                match outcome {
                    Some(o) => {
                        let at = crate::tune::table::Pointers { run_id: Some(row.id), diff_dir: None };
                        write!(out, "{}", crate::tune::table::report(o, crate::tune::table::Detail::Full, at))
                    }
                    // Interrupted or killed before its outcome: the points measured.
                    None => points.iter().try_for_each(|p| {
                        let figures = p.cause().map_or_else(
                            || format!("{:.1} req/s, p99 {:.2} ms", p.rps(), p.p99()),
                            |c| format!("failed: {c}"),
                        );
                        writeln!(out, "  {}: {figures}", p.step)
                    }),
                }
            }
        }
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        match self {
            Stored::Bench { row, report } => csv::bench(Some(row.id), report, &mut out),
            Stored::Tune { points, .. } => csv::points(points, &mut out),
        }
    }

    fn markdown(&self, mut out: &mut dyn Write) -> io::Result<()> {
        match self {
            Stored::Bench { report, .. } => markdown::bench(report, &mut out),
            Stored::Tune { row, points, outcome, .. } => markdown::tune(row, outcome.as_deref(), points, &mut out),
        }
    }
}

/// The `schema` value of `webtune tune --json`.
pub const TUNE_SCHEMA_ID: &str = "webtune.tune.v1";

/// A tune run's outcome as `webtune tune` prints it: the outcome with its schema id.
#[derive(Serialize)]
pub struct Tuned<'a> {
    /// Always TUNE_SCHEMA_ID for this layout.
    pub schema: &'static str,
    #[serde(flatten)]
    pub outcome: &'a Outcome,
    /// The id the history stored it under (None: not stored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// The text's detail: a line a step (tune), or every step's table (--verbose).
    #[serde(skip)]
    pub detail: crate::tune::table::Detail,
    /// Where `--diff` wrote the diffs, for the answer's last lines.
    #[serde(skip)]
    pub diff_dir: Option<std::path::PathBuf>,
}

impl<'a> Tuned<'a> {
    /// A tune's outcome as reported, not stored yet (no run id).
    pub fn new(outcome: &'a Outcome) -> Tuned<'a> {
        Tuned {
            schema: TUNE_SCHEMA_ID,
            outcome,
            run_id: None,
            detail: crate::tune::table::Detail::Summary,
            diff_dir: None,
        }
    }
}

impl Report for Tuned<'_> {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "tune outcome";

    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        let at = crate::tune::table::Pointers { run_id: self.run_id, diff_dir: self.diff_dir.as_deref() };
        write!(out, "{}", crate::tune::table::report(self.outcome, self.detail, at))
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        csv::points(&self.outcome.points, &mut out)
    }

    fn markdown(&self, mut out: &mut dyn Write) -> io::Result<()> {
        markdown::outcome(self.outcome, &mut out)
    }
}

impl Report for Comparison {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "comparison";

    fn text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        super::compare::write_text(self, &mut out)
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        csv::comparison(self, &mut out)
    }

    fn markdown(&self, mut out: &mut dyn Write) -> io::Result<()> {
        markdown::comparison(self, &mut out)
    }
}

/// `webtune runs`: the listing.
#[derive(Serialize)]
pub struct Runs {
    /// Always RUNS_SCHEMA_ID for this layout.
    pub schema: &'static str,
    /// Newest first.
    pub runs: Vec<RunRow>,
}

/// The `schema` value of `webtune runs --json`.
pub const RUNS_SCHEMA_ID: &str = "webtune.runs.v1";

impl Runs {
    /// The stored runs as `webtune runs` lists them.
    pub fn new(runs: Vec<RunRow>) -> Runs {
        Runs { schema: RUNS_SCHEMA_ID, runs }
    }
}

impl Report for Runs {
    const FORMATS: &'static [Format] = EVERY;
    const NAME: &'static str = "run list";

    fn text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{:>5}  {:<5}  {:<24}  {:<11}  {:<40}  summary", "id", "kind", "started", "status", "target")?;
        let cwd = std::env::current_dir().ok();
        for r in &self.runs {
            // A target file's path from here when it is below here, else whole.
            let target = match cwd.as_deref().and_then(|d| Path::new(&r.target).strip_prefix(d).ok()) {
                Some(rel) if r.kind == "tune" => rel.display().to_string(),
                _ => r.target.clone(),
            };
            writeln!(
                out,
                "{:>5}  {:<5}  {:<24}  {:<11}  {:<40}  {}",
                r.id, r.kind, r.started_at, r.status, target, r.summary
            )?;
        }
        Ok(())
    }

    fn csv(&self, mut out: &mut dyn Write) -> io::Result<()> {
        csv::runs(&self.runs, &mut out)
    }

    fn markdown(&self, mut out: &mut dyn Write) -> io::Result<()> {
        markdown::runs(&self.runs, &mut out)
    }
}

impl Report for MemReport {
    const FORMATS: &'static [Format] = TEXT_JSON;
    const NAME: &'static str = "memory report";

    fn text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        super::mem::write_text(self, &mut out)
    }
}

impl Report for SyscallReport {
    const FORMATS: &'static [Format] = TEXT_JSON;
    const NAME: &'static str = "system-call report";

    fn text(&self, mut out: &mut dyn Write) -> io::Result<()> {
        super::syscalls::write_text(self, &mut out)
    }
}
