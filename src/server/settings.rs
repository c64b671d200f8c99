//! A configuration: knob name -> value, in the target file's order. What the tuner varies,
//! what the evidence names and the store keeps (`Settings`, text); and the same read once for
//! the adapters (`Typed`: the canonical knobs typed), which render it.

use serde::{Deserialize, Serialize};

use crate::input;

/// The knob names every adapter understands, mapped to each server's own.
pub const CANONICAL: [&str; 9] = [
    "workers",
    "max_requests",
    "start_workers",
    "min_spare",
    "max_spare",
    "keepalive",
    "keepalive_timeout",
    "preload",
    "backlog",
];

/// One configuration of the server: (knob, value) pairs, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settings(pub Vec<(String, String)>);

/// A knob's value among `values`.
pub fn get<'a>(values: &'a [(String, String)], knob: &str) -> Option<&'a str> {
    values.iter().find(|(k, _)| k == knob).map(|(_, v)| v.as_str())
}

impl std::ops::Deref for Settings {
    type Target = [(String, String)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Settings {
    /// The value of `knob`, None when these settings do not set it.
    pub fn get(&self, knob: &str) -> Option<&str> {
        get(&self.0, knob)
    }

    /// A copy with every `knob = value` of `overrides` set, in their order.
    pub fn with_all(&self, overrides: &[(String, String)]) -> Settings {
        overrides.iter().fold(self.clone(), |s, (k, v)| s.with(k, v))
    }

    /// A copy with `knob` set to `value` (appended when new).
    pub fn with(&self, knob: &str, value: &str) -> Settings {
        let mut s = self.clone();
        match s.0.iter_mut().find(|(k, _)| k == knob) {
            Some(slot) => slot.1 = value.to_string(),
            None => s.0.push((knob.to_string(), value.to_string())),
        }
        s
    }

    /// "workers=4 keepalive=off", for labels and logs.
    pub fn label(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The knobs whose values differ from `other`'s.
    pub fn changed_from(&self, other: &Settings) -> Vec<String> {
        self.0.iter().filter(|(k, v)| other.get(k) != Some(v.as_str())).map(|(k, _)| k.clone()).collect()
    }
}

/// A canonical count (workers, max_requests, the spares, backlog): as written, which a
/// configuration prints, and as a whole number when it is one (nginx also takes
/// `workers = "auto"`, which passes as written and counts no workers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    text: String,
    number: Option<usize>,
}

impl Count {
    fn read(text: &str) -> Count {
        Count { text: text.to_string(), number: text.parse().ok() }
    }

    /// The whole number, None when the text is not one.
    pub fn number(&self) -> Option<usize> {
        self.number
    }

    /// The whole number, or why not, for an adapter that must count (`knob` names it).
    pub fn whole(&self, knob: &str) -> anyhow::Result<usize> {
        self.number.ok_or_else(|| anyhow::anyhow!("{knob} = {:?}: expected a whole number", self.text))
    }

    /// As written.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The keep-alive timeout: in whole seconds, or why its text is no duration (an error where an
/// adapter writes it; a recommendation leaves it out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeout(Result<u64, input::InputError>);

impl Timeout {
    /// "5s", "500ms", "2m" or a bare number of seconds -> whole seconds (at least 0).
    fn read(text: &str) -> Timeout {
        Timeout(input::duration("keepalive_timeout", text).map(|d| d.as_secs_f64().round() as u64))
    }

    /// Whole seconds, or the error for a text that is no duration (bad input: exit status 2).
    pub fn seconds(&self) -> anyhow::Result<u64> {
        Ok(self.0.clone()?)
    }
}

/// One knob of a configuration, its value read once: the canonical ones typed (switches
/// are on for on/yes/true/1, off for anything else), the server's own as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Knob {
    Workers(Count),
    MaxRequests(Count),
    StartWorkers(Count),
    MinSpare(Count),
    MaxSpare(Count),
    Keepalive(bool),
    KeepaliveTimeout(Timeout),
    /// Whether to load the app before forking (the lab's `preload` is a size, and keeps
    /// its text in `Typed::pairs`).
    Preload(bool),
    Backlog(Count),
    /// A directive or flag of the server's own (or an adapter's own knob), as written.
    Native(String, String),
}

impl Knob {
    /// The knob's name.
    pub fn name(&self) -> &str {
        match self {
            Knob::Workers(_) => "workers",
            Knob::MaxRequests(_) => "max_requests",
            Knob::StartWorkers(_) => "start_workers",
            Knob::MinSpare(_) => "min_spare",
            Knob::MaxSpare(_) => "max_spare",
            Knob::Keepalive(_) => "keepalive",
            Knob::KeepaliveTimeout(_) => "keepalive_timeout",
            Knob::Preload(_) => "preload",
            Knob::Backlog(_) => "backlog",
            Knob::Native(name, _) => name,
        }
    }

    fn read(name: &str, text: &str) -> Knob {
        match name {
            "workers" => Knob::Workers(Count::read(text)),
            "max_requests" => Knob::MaxRequests(Count::read(text)),
            "start_workers" => Knob::StartWorkers(Count::read(text)),
            "min_spare" => Knob::MinSpare(Count::read(text)),
            "max_spare" => Knob::MaxSpare(Count::read(text)),
            "keepalive" => Knob::Keepalive(input::is_on(text)),
            "keepalive_timeout" => Knob::KeepaliveTimeout(Timeout::read(text)),
            "preload" => Knob::Preload(input::is_on(text)),
            "backlog" => Knob::Backlog(Count::read(text)),
            _ => Knob::Native(name.to_string(), text.to_string()),
        }
    }
}

/// A configuration read once for the adapters (ripgrep's low args -> high args): every
/// knob typed, in the order given (command lines and a tree's edits follow it), the text
/// as written kept beside for adapters that pass values on verbatim (the lab's flags).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Typed {
    knobs: Vec<Knob>,
    given: Vec<(String, String)>,
}

impl Typed {
    /// Reads `values` (knob names unique, as `Settings` keeps them).
    pub fn read(values: &[(String, String)]) -> Typed {
        Typed { knobs: values.iter().map(|(k, v)| Knob::read(k, v)).collect(), given: values.to_vec() }
    }

    /// `pairs` read, for the unit tests that write them as literals.
    #[cfg(test)]
    pub fn of(pairs: &[(&str, &str)]) -> Typed {
        Typed::read(&pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>())
    }

    /// Every knob, typed, in order.
    pub fn knobs(&self) -> &[Knob] {
        &self.knobs
    }

    /// Every knob, typed and as written, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&Knob, &str)> {
        self.knobs.iter().zip(self.given.iter().map(|(_, v)| v.as_str()))
    }

    /// Every knob as (name, text), in order.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.given.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Only the knobs named in `names`, in their order here.
    pub fn only(&self, names: &[&str]) -> Typed {
        let kept: Vec<(String, String)> =
            self.given.iter().filter(|(k, _)| names.contains(&k.as_str())).cloned().collect();
        Typed::read(&kept)
    }

    /// Whether `knob` is set.
    pub fn has(&self, knob: &str) -> bool {
        self.given.iter().any(|(k, _)| k == knob)
    }

    /// The server's own knobs, (name, text), in order.
    pub fn natives(&self) -> impl Iterator<Item = (&str, &str)> {
        self.knobs.iter().filter_map(|k| match k {
            Knob::Native(n, v) => Some((n.as_str(), v.as_str())),
            _ => None,
        })
    }

    /// A knob of the server's own, as written.
    pub fn native(&self, name: &str) -> Option<&str> {
        self.natives().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The knob named `name`, when set.
    fn knob(&self, name: &str) -> Option<&Knob> {
        self.knobs.iter().find(|k| k.name() == name)
    }

    /// The count named `name` (workers, max_requests, the spares, backlog), when set.
    fn count(&self, name: &str) -> Option<&Count> {
        match self.knob(name)? {
            Knob::Workers(c) | Knob::MaxRequests(c) | Knob::StartWorkers(c) => Some(c),
            Knob::MinSpare(c) | Knob::MaxSpare(c) | Knob::Backlog(c) => Some(c),
            _ => None,
        }
    }

    /// The switch named `name` (keepalive, preload), when set.
    fn switch(&self, name: &str) -> Option<bool> {
        match self.knob(name)? {
            Knob::Keepalive(on) | Knob::Preload(on) => Some(*on),
            _ => None,
        }
    }

    /// `workers`: the pool's size (processes or, threaded, threads).
    pub fn workers(&self) -> Option<&Count> {
        self.count("workers")
    }

    /// `max_requests`: what a worker serves before it is recycled.
    pub fn max_requests(&self) -> Option<&Count> {
        self.count("max_requests")
    }

    /// `start_workers`: the workers started at launch.
    pub fn start_workers(&self) -> Option<&Count> {
        self.count("start_workers")
    }

    /// `min_spare`: the fewest idle workers kept.
    pub fn min_spare(&self) -> Option<&Count> {
        self.count("min_spare")
    }

    /// `max_spare`: the most idle workers kept.
    pub fn max_spare(&self) -> Option<&Count> {
        self.count("max_spare")
    }

    /// `backlog`: the listen queue.
    pub fn backlog(&self) -> Option<&Count> {
        self.count("backlog")
    }

    /// `keepalive`: whether connections are kept alive.
    pub fn keepalive(&self) -> Option<bool> {
        self.switch("keepalive")
    }

    /// `keepalive_timeout`: how long an idle kept-alive connection waits.
    pub fn keepalive_timeout(&self) -> Option<&Timeout> {
        match self.knob("keepalive_timeout")? {
            Knob::KeepaliveTimeout(t) => Some(t),
            _ => None,
        }
    }

    /// `preload`: whether the app is loaded before the fork.
    pub fn preload(&self) -> Option<bool> {
        self.switch("preload")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_replaces_in_place_and_appends() {
        let s = Settings(vec![("workers".into(), "2".into()), ("keepalive".into(), "on".into())]);
        let t = s.with("workers", "4").with("backlog", "128");
        assert_eq!(t.label(), "workers=4 keepalive=on backlog=128");
        assert_eq!(t.changed_from(&s), ["workers", "backlog"]);
        assert_eq!(s.get("keepalive"), Some("on"));
    }

    #[test]
    fn typed_reads_every_canonical_knob_and_keeps_the_rest_as_written() {
        for knob in CANONICAL {
            let read = Knob::read(knob, "1");
            assert!(!matches!(read, Knob::Native(..)) && read.name() == knob, "{knob}");
        }
        let t = Typed::of(&[
            ("workers", "auto"),
            ("keepalive", "yes"),
            ("sendfile", "on"),
            ("keepalive_timeout", "soon"),
            ("backlog", "64"),
        ]);
        assert_eq!((t.workers().unwrap().number(), t.workers().unwrap().to_string()), (None, "auto".into()));
        assert_eq!(
            t.workers().unwrap().whole("workers").unwrap_err().to_string(),
            "workers = \"auto\": expected a whole number"
        );
        assert_eq!((t.keepalive(), t.backlog().and_then(Count::number)), (Some(true), Some(64)));
        assert!(
            t.keepalive_timeout()
                .unwrap()
                .seconds()
                .unwrap_err()
                .to_string()
                .starts_with("keepalive_timeout: bad duration")
        );
        assert_eq!(t.natives().collect::<Vec<_>>(), [("sendfile", "on")]);
        assert_eq!(
            t.pairs().map(|(k, _)| k).collect::<Vec<_>>(),
            ["workers", "keepalive", "sendfile", "keepalive_timeout", "backlog"]
        );
        assert_eq!(t.only(&["backlog"]).pairs().collect::<Vec<_>>(), [("backlog", "64")]);
    }
}
