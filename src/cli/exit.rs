//! The exit statuses webtune ends with, as `--help` and the man page list them.

/// Exit status of a run that completed but failed a `--fail-if` threshold.
pub const THRESHOLD_FAILED: u8 = 3;

/// Exit status of a tune that judged nothing (its time budget ran out first): the user's
/// configuration stays, and no diff is written.
pub const NOTHING_JUDGED: u8 = 4;

/// The exit statuses, as `--help` shows them and the man page's EXIT STATUS section lists them.
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success"),
    ("1", "the run failed: nothing succeeded, a server did not start, storing failed"),
    ("2", "bad input (one line on stderr)"),
    ("3", "a --fail-if threshold held (bench, compare, merge)"),
    ("4", "tune judged nothing before its time budget ran out: keep your configuration (no diff written)"),
    ("130", "tune interrupted by Ctrl-C; other commands stop cleanly and exit as above"),
];

/// `--help`'s closing paragraph: the exit statuses.
pub fn exit_status_help() -> String {
    let lines: Vec<String> = EXIT_STATUS.iter().map(|(code, what)| format!("  {code:<4} {what}")).collect();
    format!("Exit status:\n{}", lines.join("\n"))
}
