//! One line of evidence: the value recommended for a knob, and why.

use serde::{Deserialize, Serialize};

/// One line of evidence per recommended value. Stored and printed as `[knob, value, why]`
/// (schema/tune.v1.json, and every run stored before this type): `cut_short` is not stored,
/// the text says so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "(String, String, String)", into = "(String, String, String)")]
pub struct Evidence {
    pub knob: String,
    pub value: String,
    pub why: String,
    /// The line already says that the run stopped before this knob was judged in full, so
    /// nothing needs adding to it (the strategies' caller qualifies the others).
    pub cut_short: bool,
}

impl Evidence {
    /// The evidence for `knob` at `value`, judged in full.
    pub fn new(knob: impl Into<String>, value: impl Into<String>, why: impl Into<String>) -> Evidence {
        Evidence { knob: knob.into(), value: value.into(), why: why.into(), cut_short: false }
    }

    /// A line that says the run stopped before the knob was judged in full.
    pub fn after_stop(knob: impl Into<String>, value: impl Into<String>, why: impl Into<String>) -> Evidence {
        Evidence { cut_short: true, ..Evidence::new(knob, value, why) }
    }
}

impl From<(String, String, String)> for Evidence {
    fn from((knob, value, why): (String, String, String)) -> Evidence {
        Evidence::new(knob, value, why)
    }
}

impl From<Evidence> for (String, String, String) {
    fn from(e: Evidence) -> Self {
        (e.knob, e.value, e.why)
    }
}

/// `knob`'s line in `lines`, if it has one.
pub fn line_of<'a>(lines: &'a mut [Evidence], knob: &str) -> Option<&'a mut Evidence> {
    lines.iter_mut().find(|e| e.knob == knob)
}

/// `line` in place of whatever `lines` said of its knob, at the end (the caller orders them).
pub fn replace(lines: &mut Vec<Evidence>, line: Evidence) {
    lines.retain(|e| e.knob != line.knob);
    lines.push(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_stored_as_the_three_strings_it_always_was() {
        let e = Evidence::after_stop("workers", "4", "not judged, the run stopped");
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(json, r#"["workers","4","not judged, the run stopped"]"#);
        // An old stored line reads back; what the text says is not re-derived.
        let back: Evidence = serde_json::from_str(&json).unwrap();
        assert_eq!(back, Evidence::new("workers", "4", "not judged, the run stopped"));
    }

    #[test]
    fn replace_keeps_one_line_per_knob() {
        let mut lines = vec![Evidence::new("a", "1", "x"), Evidence::new("b", "2", "y")];
        replace(&mut lines, Evidence::new("a", "3", "z"));
        assert_eq!(lines, [Evidence::new("b", "2", "y"), Evidence::new("a", "3", "z")]);
    }
}
