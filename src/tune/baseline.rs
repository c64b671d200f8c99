//! The baseline: what the user runs now. Every knob a tune sweeps starts from the value the
//! user's configuration sets (their tree, `[target.config]`, `--set`), else from the server's
//! own default; a value moves from there only when a verdict adopted another (`guard`). A
//! target file with no configuration at all describes no server anyone runs: its knobs start
//! at their first listed value, as they always did.

use serde::{Deserialize, Serialize};

use super::strategies::vocabulary::Knobs;
use crate::server::TargetFile;
use crate::server::adapters::adapter;
use crate::server::settings::Settings;
use crate::tune::evidence::Evidence;
use crate::tune::step::{Step, Verdict};

/// Where a knob's baseline value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The user's configuration sets it (the file or table named).
    Configured(String),
    /// The configuration is silent: the server's own default applies.
    ServerDefault,
    /// No configuration was given: the first value listed in [knobs].
    FirstListed,
}

/// One knob's baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub knob: String,
    pub value: String,
    pub source: Source,
    /// The value was not among the knob's listed values: it was added to them.
    pub added: bool,
}

impl Origin {
    /// "workers=2 (set in nginx.conf)".
    pub fn describe(&self) -> String {
        let from = match &self.source {
            Source::Configured(at) => format!("set in {at}"),
            Source::ServerDefault => "the server's default: your configuration does not set it".to_string(),
            Source::FirstListed => "first listed: the target file gives no configuration".to_string(),
        };
        let added = if self.added { ", added to the values to try" } else { "" };
        format!("{}={} ({from}{added})", self.knob, self.value)
    }

    /// Whether it is what the user's server runs (not a value picked from the list).
    pub fn is_users(&self) -> bool {
        self.source != Source::FirstListed
    }
}

/// Every swept knob's baseline, and the settings the search starts from.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// The base settings: --set and the configuration's values, with the user's baseline of
    /// every swept knob (not the first-listed ones: the strategies start there themselves).
    pub settings: Settings,
    pub origins: Vec<Origin>,
}

impl Baseline {
    /// The baseline of `knobs` for `file` with `sets` (--set) applied; a knob's list that
    /// lacks its baseline value gets it, first.
    pub fn of(file: &TargetFile, sets: &[(String, String)], knobs: &mut Knobs) -> anyhow::Result<Baseline> {
        let adapter = adapter(file.adapter);
        let given = file.config.settings();
        let tree: Vec<(String, String)> = adapter.current(file)?;
        let tree_name = file.config.file().map(|c| c.written.clone()).unwrap_or_default();
        let has_configuration = file.config.file().is_some() || !given.is_empty();
        let mut settings = file.settings(sets);
        let mut origins = Vec::new();
        for (knob, values) in knobs.iter_mut() {
            let found = if let Some(v) = crate::server::settings::get(given, knob) {
                Some((v.to_string(), Source::Configured("[target.config]".into())))
            } else if let Some(v) = crate::server::settings::get(&tree, knob) {
                Some((v.to_string(), Source::Configured(tree_name.clone())))
            } else if has_configuration {
                adapter.default_value(knob).map(|v| (v.to_string(), Source::ServerDefault))
            } else {
                None
            };
            let (value, source) = match found {
                Some(f) => f,
                None => match values.first() {
                    Some(first) => (first.clone(), Source::FirstListed),
                    None => continue,
                },
            };
            let added = !values.iter().any(|v| same_value(v, &value));
            if added {
                values.insert(0, value.clone());
            }
            // The list's own spelling of the value, so labels and the journal agree.
            let value = values.iter().find(|v| same_value(v, &value)).cloned().unwrap_or(value);
            if source != Source::FirstListed {
                settings = settings.with(knob, &value);
            }
            origins.push(Origin { knob: knob.clone(), value, source, added });
        }
        Ok(Baseline { settings, origins })
    }

    /// `recommended` less the knobs it leaves at the user's own values: what a patch of their
    /// files must change (a server default written out is no change, and no hunk).
    pub fn changes(&self, recommended: &Settings) -> Settings {
        let kept = |k: &str, v: &str| self.users().any(|o| o.knob == k && same_value(&o.value, v));
        Settings(recommended.iter().filter(|(k, v)| !kept(k, v)).cloned().collect())
    }

    /// The knobs whose baseline is what the user runs.
    pub fn users(&self) -> impl Iterator<Item = &Origin> {
        self.origins.iter().filter(|o| o.is_users())
    }

    /// "baseline: workers=2 (set in nginx.conf), max_requests=0 (the server's default...)".
    pub fn describe(&self) -> String {
        self.origins.iter().map(Origin::describe).collect::<Vec<_>>().join(", ")
    }
}

/// Whether two spellings of a value are the same value: equal text, ignoring case, or equal
/// numbers ("2" and "2.0"; "on" and "On").
pub fn same_value(a: &str, b: &str) -> bool {
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// The rule every strategy obeys: a knob whose baseline is the user's moves from it only
/// where a step's verdict adopted the new value (a gain settled by its interval, or a
/// constraint it alone meets). Any other move in `recommended` (a rule's pick, a cheaper
/// value no round could settle, the best measured before a stop) is undone, and its evidence
/// line says so. Returns the knobs put back.
pub fn guard(
    baseline: &Baseline,
    steps: &[Step],
    recommended: &mut Settings,
    evidence: &mut Vec<Evidence>,
) -> Vec<String> {
    let unadopted = |o: &Origin, recommended: &Settings| {
        let now = recommended.get(&o.knob)?.to_string();
        (!same_value(&now, &o.value) && !adopted_by_verdict(steps, &o.knob, &now)).then_some(now)
    };
    // A knob of the user's moved without a verdict: the whole unadopted change goes back,
    // the knobs picked with it included, so the answer is a configuration that was measured
    // (the user's), not half of one.
    let any = baseline.users().any(|o| unadopted(o, recommended).is_some());
    let mut undone = Vec::new();
    for o in baseline.origins.iter().filter(|_| any) {
        let Some(now) = unadopted(o, recommended) else { continue };
        *recommended = recommended.with(&o.knob, &o.value);
        let why = evidence.iter().find(|e| e.knob == o.knob).map_or(String::new(), |e| e.why.clone());
        let line = format!(
            "{} stays {} ({}): no verdict adopted {now}, and nothing moves from what you run without one{}",
            o.knob,
            o.value,
            if o.is_users() { "your configuration" } else { "the baseline, with the knobs of your configuration" },
            if why.is_empty() { String::new() } else { format!(" [the search said: {why}]") }
        );
        let cut_short = evidence.iter().any(|e| e.knob == o.knob && e.cut_short);
        super::evidence::replace(evidence, Evidence { cut_short, ..Evidence::new(&o.knob, &o.value, line) });
        undone.push(o.knob.clone());
    }
    undone
}

/// Whether a step adopted `value` for `knob` by a verdict.
fn adopted_by_verdict(steps: &[Step], knob: &str, value: &str) -> bool {
    steps.iter().any(|s| {
        s.adopted
            && s.verdict == Some(Verdict::Adopted)
            && s.after.settings.get(knob).is_some_and(|v| same_value(v, value))
            && s.before.settings.get(knob).is_none_or(|v| !same_value(v, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_value() {
        assert!(same_value("2", "2.0"));
        assert!(same_value("On", "on"));
        assert!(!same_value("2", "4"));
        assert!(!same_value("5s", "5"));
    }
}
