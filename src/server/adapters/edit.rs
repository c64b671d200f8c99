//! Edits of a user's configuration texts by byte range: the knobs' (the diff) and the run's
//! (the copy) are lists of these over the same files, applied together or apart.

use std::ops::Range;

use crate::server::tree::{Edits, UserTree};

/// A change of one file's text: `at` replaced by `text` (an insertion when `at` is empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// The file's index in its tree.
    pub file: usize,
    pub at: Range<usize>,
    pub text: String,
}

/// The texts of `tree`'s files with `edits` applied, for the files they change: in file
/// order, an insertion before a replacement at the same place, and of two replacements that
/// meet only the first given (a file included twice gives the same edit twice).
pub fn apply(tree: &UserTree, edits: &[Edit]) -> Edits {
    let mut out = Edits::new();
    for (i, f) in tree.files.iter().enumerate() {
        let mut mine: Vec<(usize, &Edit)> = edits.iter().enumerate().filter(|(_, e)| e.file == i).collect();
        if mine.is_empty() {
            continue;
        }
        mine.sort_by_key(|(seq, e)| (e.at.start, !e.at.is_empty(), *seq));
        let mut text = String::new();
        let mut cursor = 0;
        let mut last: Option<&Edit> = None;
        for (_, e) in mine {
            if e.at.start < cursor || last == Some(e) {
                continue;
            }
            text.push_str(&f.text[cursor..e.at.start]);
            text.push_str(&e.text);
            cursor = e.at.end;
            last = Some(e);
        }
        text.push_str(&f.text[cursor..]);
        out.insert(f.path.clone(), text);
    }
    out
}

/// The copy's edits: the run's, and the knobs' where the run does not rewrite the same text
/// (insertions never collide; two replacements do when their ranges meet).
pub fn layered(knobs: &[Edit], run: &[Edit]) -> Vec<Edit> {
    let overlaps = |k: &Edit| run.iter().any(|r| r.file == k.file && r.at.start < k.at.end && k.at.start < r.at.end);
    run.iter().cloned().chain(knobs.iter().filter(|k| !overlaps(k)).cloned()).collect()
}
